// CUDA versions of the ops in loops.c: the same stream (philox.h), conversions (convert.h) and element math
// (elements.h, dists.h), so every element equals the CPU's bit for bit. Multiplies and adds go through
// __fmul_rn/__fadd_rn (and the double versions), which the compiler never fuses into an FMA; the CPU side builds
// with -ffp-contract=off. Each functor below only picks the storage format and the shared function.

#include "convert.h"
#include "elements.h"
#include "ops_cuda.h"
#include "layouts.cuh"

namespace rngx {

// Storage formats of the float types: how an element is read as float32, written back, the uniform's
// significand width (docs/stream.md), and exponential's clamp inside the positive finite values (elements.h).
struct F32 {
  using T = float;
  static __device__ __forceinline__ float load(float v) { return v; }
  static __device__ __forceinline__ float store(float v) { return v; }
  static __device__ __forceinline__ float u(uint32_t w) { return rngx_u24(w); }
  static __device__ __forceinline__ float exp_clamp(float v) { return rngx_exp_clamp_f32(v); }
};
struct F16 {
  using T = uint16_t;
  static __device__ __forceinline__ float load(uint16_t v) { return rngx_f16_to_f32(v); }
  static __device__ __forceinline__ uint16_t store(float v) { return rngx_f32_to_f16(v); }
  static __device__ __forceinline__ float u(uint32_t w) { return rngx_u11(w); }
  static __device__ __forceinline__ uint16_t exp_clamp(uint16_t h) { return rngx_exp_clamp_16(h, 0x7C00u); }
};
struct BF16 {
  using T = uint16_t;
  static __device__ __forceinline__ float load(uint16_t v) { return rngx_bf16_to_f32(v); }
  static __device__ __forceinline__ uint16_t store(float v) { return rngx_f32_to_bf16(v); }
  static __device__ __forceinline__ float u(uint32_t w) { return rngx_u8(w); }
  static __device__ __forceinline__ uint16_t exp_clamp(uint16_t h) { return rngx_exp_clamp_16(h, 0x7F80u); }
};

// bits: the low bits of one word, or two words first-word-high
template <class U>
struct Bits {
  using T = U;
  static constexpr int K = 1;
  static constexpr bool kReads = false;
  __device__ T operator()(T, const uint32_t *w) const { return (T)w[0]; }
};
struct Bits64 {
  using T = uint64_t;
  static constexpr int K = 2;
  static constexpr bool kReads = false;
  __device__ T operator()(T, const uint32_t *w) const { return (uint64_t)w[0] << 32 | w[1]; }
};

// split / fold_in: one child key (keys.h) per thread
__global__ void split_kernel(const int64_t *keys, int64_t n, int64_t num, int64_t *out) {
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < n * num; t += step)
    rngx_child_key(keys + 2 * (t % n), (uint64_t)(t / n), out + 2 * t);
}

__global__ void fold_in_kernel(const int64_t *keys, int64_t n, const int64_t *data, int64_t data_stride, int64_t *out) {
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t b = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; b < n; b += step)
    rngx_child_key(keys + 2 * b, (uint64_t)data[b * data_stride], out + 2 * b);
}

// low + u * (high - low)
template <class F>
struct Uniform {
  using T = typename F::T;
  static constexpr int K = 1;
  static constexpr bool kReads = false;
  float lo, width;
  __device__ T operator()(T, const uint32_t *w) const { return F::store(rngx_uniform_value(F::u(w[0]), lo, width)); }
};
struct UniformF64 {
  using T = double;
  static constexpr int K = 2;
  static constexpr bool kReads = false;
  double lo, width;
  __device__ T operator()(T, const uint32_t *w) const { return rngx_uniform_f64(w[0], w[1], lo, width); }
};

// x + (-half + u * 2 half), with the 24-bit u for every type up to 32 bits
template <class F>
struct Noise {
  using T = typename F::T;
  static constexpr int K = 1;
  static constexpr bool kReads = true;
  float lo, width;
  __device__ T operator()(T x, const uint32_t *w) const {
    return F::store(rngx_noise_f32(F::load(x), w[0], lo, width));
  }
};
struct NoiseF64 {
  using T = double;
  static constexpr int K = 2;
  static constexpr bool kReads = true;
  double lo, width;
  __device__ T operator()(T x, const uint32_t *w) const { return rngx_noise_f64(x, w[0], w[1], lo, width); }
};

// keep iff the integer behind u is >= keep_from = ceil(p * 2^bits), i.e. iff u >= p exactly
template <class F>
struct Dropout {
  using T = typename F::T;
  static constexpr int K = 1;
  static constexpr bool kReads = true;
  uint32_t keep_from;
  float scale;
  __device__ T operator()(T x, const uint32_t *w) const {
    return F::store(rngx_dropout_f32(F::load(x), w[0], keep_from, scale));
  }
};
struct DropoutF64 {
  using T = double;
  static constexpr int K = 2;
  static constexpr bool kReads = true;
  uint64_t keep_from;
  double scale;
  __device__ T operator()(T x, const uint32_t *w) const { return rngx_dropout_f64(x, w[0], w[1], keep_from, scale); }
};

// normal: one Box-Muller step in double (dists.h: plain IEEE operations, never fused under --fmad=false) per pair
// of elements, r cos to the even stream index and r sin to the odd one (layouts.cuh: group_values), each rounded
// to float32, then z * std + mean in float32; float64 takes four words per pair and computes in double
template <class F>
struct Normal {
  using T = typename F::T;
  static constexpr int K = 1;
  static constexpr bool kReads = false;
  static constexpr bool kPaired = true;
  float mean, std;
  __device__ T value(double z) const { return F::store(rngx_normal_scale_f32(z, mean, std)); }
  __device__ void pair(const uint32_t *w, T &c, T &s) const {
    const rngx_pair z = rngx_normal32(w[0], w[1]);
    c = value(z.c);
    s = value(z.s);
  }
};
struct NormalF64 {
  using T = double;
  static constexpr int K = 2;
  static constexpr bool kReads = false;
  static constexpr bool kPaired = true;
  double mean, std;
  __device__ void pair(const uint32_t *w, T &c, T &s) const {
    const rngx_pair z = rngx_normal64(w);
    c = rngx_normal_scale_f64(z.c, mean, std);
    s = rngx_normal_scale_f64(z.s, mean, std);
  }
};

// truncated normal: the inverse CDF in double, clamped to [a, b]; <= 32-bit types round it to the type and clamp
// to the type's values inside [a, b]
template <class F>
struct TruncNormal {
  using T = typename F::T;
  static constexpr int K = 2;
  static constexpr bool kReads = false;
  rngx_tn tn;
  float lo, hi;
  __device__ T operator()(T, const uint32_t *w) const {
    const float v = F::load(F::store(__double2float_rn(rngx_truncnorm_value(rngx_m53(w[0], w[1]), &tn))));
    return F::store(rngx_clamp_f32(v, lo, hi));
  }
};
struct TruncNormalF64 {
  using T = double;
  static constexpr int K = 2;
  static constexpr bool kReads = false;
  rngx_tn tn;
  __device__ T operator()(T, const uint32_t *w) const { return rngx_truncnorm_value(rngx_m53(w[0], w[1]), &tn); }
};

// bernoulli: 1 iff u < p with dropout's u: below dropout's keep threshold, or below a p read per element
template <class F>
struct Bernoulli {
  using T = typename F::T;
  static constexpr int K = 1;
  static constexpr bool kReads = false;
  uint32_t below;
  __device__ T operator()(T, const uint32_t *w) const { return F::store(rngx_kept_f32(w[0], below) ? 0.0f : 1.0f); }
};
struct BernoulliF64 {
  using T = double;
  static constexpr int K = 2;
  static constexpr bool kReads = false;
  uint64_t below;
  __device__ T operator()(T, const uint32_t *w) const { return rngx_kept_f64(w[0], w[1], below) ? 0.0 : 1.0; }
};
template <class F>
struct BernoulliP {
  using T = typename F::T;
  static constexpr int K = 1;
  static constexpr bool kReads = true;
  __device__ T operator()(T p, const uint32_t *w) const { return F::store(rngx_u24(w[0]) < F::load(p) ? 1.0f : 0.0f); }
};
struct BernoulliPF64 {
  using T = double;
  static constexpr int K = 2;
  static constexpr bool kReads = true;
  __device__ T operator()(T p, const uint32_t *w) const { return rngx_u53(w[0], w[1]) < p ? 1.0 : 0.0; }
};

// randint: low + floor(range * x / 2^bits), modulo 2^64, in the type's low bits; two words for ranges up to 2^32
// (L: the type the sum is formed in), four for int64 above (params.c: rngx_randint_words)
template <class U, class L = uint32_t>
struct Randint {
  using T = U;
  static constexpr int K = 2;
  static constexpr bool kReads = false;
  L low;
  uint32_t range;
  __device__ T operator()(T, const uint32_t *w) const { return (T)(low + rngx_randint32(range, w[0], w[1])); }
};
struct Randint64 {
  using T = uint64_t;
  static constexpr int K = 4;
  static constexpr bool kReads = false;
  uint64_t low, range;
  __device__ T operator()(T, const uint32_t *w) const { return low + rngx_randint64(range, w); }
};

// exponential: E / rate in double (dists.h), rounded to the type, then kept inside its positive finite values

template <class F>
struct Exponential {
  using T = typename F::T;
  static constexpr int K = 1;
  static constexpr bool kReads = false;
  double rate;
  __device__ T operator()(T, const uint32_t *w) const {
    return F::exp_clamp(F::store(__double2float_rn(__ddiv_rn(rngx_exponential32(w[0]), rate))));
  }
};
struct ExponentialF64 {
  using T = double;
  static constexpr int K = 2;
  static constexpr bool kReads = false;
  double rate;
  __device__ T operator()(T, const uint32_t *w) const {
    return rngx_exp_clamp_f64(__ddiv_rn(rngx_exponential64(w[0], w[1]), rate));
  }
};

// multinomial's race: E / w per (draw, category), float64, w read per element
struct Race {
  using T = double;
  static constexpr int K = 2;
  static constexpr bool kReads = true;
  __device__ T operator()(T weight, const uint32_t *w) const {
    return rngx_race_score(rngx_exponential64(w[0], w[1]), weight);
  }
};

}  // namespace rngx

using namespace rngx;

// The parameters come from params.c's rngx_*_params, so the CUDA and C kernels read the same numbers.

extern "C" int rngx_cuda_bits(const rngx_job *job, void *stream) {
  switch (job->dtype) {
    case RNGX_BITS8: return launch(Bits<uint8_t>{}, job, stream);
    case RNGX_BITS16: return launch(Bits<uint16_t>{}, job, stream);
    case RNGX_BITS32: return launch(Bits<uint32_t>{}, job, stream);
    case RNGX_BITS64: return launch(Bits64{}, job, stream);
    default: return (int)cudaErrorInvalidValue;
  }
}

extern "C" int rngx_cuda_uniform(const rngx_job *job, void *stream, const rngx_params *p) {
  switch (job->dtype) {
    case RNGX_FLOAT64: return launch(UniformF64{p->lo64, p->width64}, job, stream);
    case RNGX_FLOAT32: return launch(Uniform<F32>{p->lo, p->width}, job, stream);
    case RNGX_FLOAT16: return launch(Uniform<F16>{p->lo, p->width}, job, stream);
    case RNGX_BFLOAT16: return launch(Uniform<BF16>{p->lo, p->width}, job, stream);
    default: return (int)cudaErrorInvalidValue;
  }
}

extern "C" int rngx_cuda_quantize_noise(const rngx_job *job, void *stream, const rngx_params *p) {
  switch (job->dtype) {
    case RNGX_FLOAT64: return launch(NoiseF64{p->lo64, p->width64}, job, stream);
    case RNGX_FLOAT32: return launch(Noise<F32>{p->lo, p->width}, job, stream);
    case RNGX_FLOAT16: return launch(Noise<F16>{p->lo, p->width}, job, stream);
    case RNGX_BFLOAT16: return launch(Noise<BF16>{p->lo, p->width}, job, stream);
    default: return (int)cudaErrorInvalidValue;
  }
}

extern "C" int rngx_cuda_dropout(const rngx_job *job, void *stream, const rngx_params *p) {
  switch (job->dtype) {
    case RNGX_FLOAT64: return launch(DropoutF64{p->keep64, p->scale64}, job, stream);
    case RNGX_FLOAT32: return launch(Dropout<F32>{p->keep, p->scale}, job, stream);
    case RNGX_FLOAT16: return launch(Dropout<F16>{p->keep, p->scale}, job, stream);
    case RNGX_BFLOAT16: return launch(Dropout<BF16>{p->keep, p->scale}, job, stream);
    default: return (int)cudaErrorInvalidValue;
  }
}

extern "C" int rngx_cuda_normal(const rngx_job *job, void *stream, const rngx_params *p) {
  switch (job->dtype) {
    case RNGX_FLOAT64: return launch(NormalF64{p->mean64, p->std64}, job, stream);
    case RNGX_FLOAT32: return launch(Normal<F32>{p->mean, p->std}, job, stream);
    case RNGX_FLOAT16: return launch(Normal<F16>{p->mean, p->std}, job, stream);
    case RNGX_BFLOAT16: return launch(Normal<BF16>{p->mean, p->std}, job, stream);
    default: return (int)cudaErrorInvalidValue;
  }
}

extern "C" int rngx_cuda_truncnorm(const rngx_job *job, void *stream, const rngx_params *p) {
  switch (job->dtype) {
    case RNGX_FLOAT64: return launch(TruncNormalF64{p->tn}, job, stream);
    case RNGX_FLOAT32: return launch(TruncNormal<F32>{p->tn, p->tn_lo, p->tn_hi}, job, stream);
    case RNGX_FLOAT16: return launch(TruncNormal<F16>{p->tn, p->tn_lo, p->tn_hi}, job, stream);
    case RNGX_BFLOAT16: return launch(TruncNormal<BF16>{p->tn, p->tn_lo, p->tn_hi}, job, stream);
    default: return (int)cudaErrorInvalidValue;
  }
}

extern "C" int rngx_cuda_bernoulli(const rngx_job *job, void *stream, const rngx_params *p) {
  if (job->in.data != nullptr) {
    switch (job->dtype) {
      case RNGX_FLOAT64: return launch(BernoulliPF64{}, job, stream);
      case RNGX_FLOAT32: return launch(BernoulliP<F32>{}, job, stream);
      case RNGX_FLOAT16: return launch(BernoulliP<F16>{}, job, stream);
      case RNGX_BFLOAT16: return launch(BernoulliP<BF16>{}, job, stream);
      default: return (int)cudaErrorInvalidValue;
    }
  }
  switch (job->dtype) {
    case RNGX_FLOAT64: return launch(BernoulliF64{p->keep64}, job, stream);
    case RNGX_FLOAT32: return launch(Bernoulli<F32>{p->keep}, job, stream);
    case RNGX_FLOAT16: return launch(Bernoulli<F16>{p->keep}, job, stream);
    case RNGX_BFLOAT16: return launch(Bernoulli<BF16>{p->keep}, job, stream);
    default: return (int)cudaErrorInvalidValue;
  }
}

extern "C" int rngx_cuda_randint(const rngx_job *job, void *stream, const rngx_params *p) {
  const uint32_t low = (uint32_t)p->low, range = (uint32_t)p->range;
  switch (job->dtype) {
    case RNGX_BITS8: return launch(Randint<uint8_t>{low, range}, job, stream);
    case RNGX_BITS16: return launch(Randint<uint16_t>{low, range}, job, stream);
    case RNGX_BITS32: return launch(Randint<uint32_t>{low, range}, job, stream);
    case RNGX_BITS64:
      return rngx_randint_words(RNGX_BITS64, p->range) == 2 ? launch(Randint<uint64_t, uint64_t>{p->low, range}, job, stream)
                                                            : launch(Randint64{p->low, p->range}, job, stream);
    default: return (int)cudaErrorInvalidValue;
  }
}

extern "C" int rngx_cuda_split(const int64_t *keys, int64_t n, int64_t num, int64_t *out, void *stream) {
  if (n * num == 0) return (int)cudaSuccess;
  RNGX_LAUNCH(split_kernel, blocks_for(n * num), kThreads, (cudaStream_t)stream, keys, n, num, out);
  return (int)cudaGetLastError();
}

extern "C" int rngx_cuda_fold_in(const int64_t *keys, int64_t n, const int64_t *data, int64_t data_stride,
                                 int64_t *out, void *stream) {
  if (n == 0) return (int)cudaSuccess;
  RNGX_LAUNCH(fold_in_kernel, blocks_for(n), kThreads, (cudaStream_t)stream, keys, n, data, data_stride, out);
  return (int)cudaGetLastError();
}

extern "C" int rngx_cuda_exponential(const rngx_job *job, void *stream, const rngx_params *p) {
  switch (job->dtype) {
    case RNGX_FLOAT64: return launch(ExponentialF64{p->rate}, job, stream);
    case RNGX_FLOAT32: return launch(Exponential<F32>{p->rate}, job, stream);
    case RNGX_FLOAT16: return launch(Exponential<F16>{p->rate}, job, stream);
    case RNGX_BFLOAT16: return launch(Exponential<BF16>{p->rate}, job, stream);
    default: return (int)cudaErrorInvalidValue;
  }
}

extern "C" int rngx_cuda_race(const rngx_job *job, void *stream) {
  if (job->dtype != RNGX_FLOAT64) return (int)cudaErrorInvalidValue;
  return launch(Race{}, job, stream);
}
