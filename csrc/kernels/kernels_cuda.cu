// The CUDA kernels, generated from the op table (csrc/kernels/op_table.h) as loops.c generates the CPU ones: the same
// stream (philox.h) and elements (elements.h), so every element equals the CPU's bit for bit. Multiplies and adds
// there go through __fmul_rn/__fadd_rn (and the double versions) in device code, which the compiler never fuses
// into an FMA; the CPU side builds with -ffp-contract=off. No op is written out here.

#include "adam.h"
#include "elements.h"
#include "kernels_cuda.h"
#include "layouts.cuh"

namespace rngx {

// The type an element function takes x in (T but for stochastic_round's pairs): its third parameter's.
template <class R, class X>
X input_of(R (*)(const rngx_params *, const uint32_t *, X));

// A kernel's element for one output dtype as the walks (layouts.cuh) take it: the element type T, the input's TI,
// K words per element (the row's), whether it reads its input, and the element; a paired kernel gives a pair's two.
#define RNGX_CUDA_ELEMENTS(kernel, sfx, T_, K_, reads)                                                            \
  struct kernel##_##sfx {                                                                                         \
    using T = T_;                                                                                                 \
    using TI = decltype(input_of(&rngx_##kernel##_element_##sfx));                                                \
    static constexpr int K = K_;                                                                                  \
    static constexpr int kReads = reads;                                                                          \
    rngx_params p;                                                                                                \
    __device__ T operator()(TI x, const uint32_t *w) const { return rngx_##kernel##_element_##sfx(&p, w, x); }   \
  };
// A paired kernel that reads two inputs (normal_tensor) takes each element's: the even one's and the odd one's.
#define RNGX_CUDA_PAIR_0(kernel, sfx)                                                                             \
  __device__ void pair(const uint32_t *w, T &c, T &s) const { rngx_##kernel##_pair_##sfx(&p, w, &c, &s); }
#define RNGX_CUDA_PAIR_2(kernel, sfx)                                                                             \
  __device__ void pair(const uint32_t *w, T xc, T xs, T yc, T ys, T &c, T &s) const {                             \
    rngx_##kernel##_pair_##sfx(&p, w, xc, xs, yc, ys, &c, &s);                                                    \
  }
#define RNGX_CUDA_PAIRS(kernel, sfx, T_, K_, reads)                                                               \
  struct kernel##_##sfx {                                                                                         \
    using T = T_;                                                                                                 \
    using TI = T_;                                                                                                \
    static constexpr int K = K_;                                                                                  \
    static constexpr int kReads = reads;                                                                          \
    static constexpr bool kPaired = true;                                                                         \
    rngx_params p;                                                                                                \
    RNGX_CAT(RNGX_CUDA_PAIR_, reads)(kernel, sfx)                                                                 \
  };

// One launch per job, by its dtype (and, for an int64 output past the row's narrow range, the wide form).
template <class F16, class BF16, class F32, class F64>
int launch_floats(const rngx_job *job, void *stream, const rngx_params &p) {
  switch (job->dtype) {
    case RNGX_FLOAT16: return launch(F16{p}, job, stream);
    case RNGX_BFLOAT16: return launch(BF16{p}, job, stream);
    case RNGX_FLOAT32: return launch(F32{p}, job, stream);
    case RNGX_FLOAT64: return launch(F64{p}, job, stream);
    default: return (int)cudaErrorInvalidValue;
  }
}

template <class B8, class B16, class B32, class B64>
int launch_ints(const rngx_job *job, void *stream, const rngx_params &p) {
  switch (job->dtype) {
    case RNGX_BITS8: return launch(B8{p}, job, stream);
    case RNGX_BITS16: return launch(B16{p}, job, stream);
    case RNGX_BITS32: return launch(B32{p}, job, stream);
    case RNGX_BITS64: return launch(B64{p}, job, stream);
    default: return (int)cudaErrorInvalidValue;
  }
}

template <class B8, class B16, class B32, class B64, class Wide>
int launch_ints_wide(const rngx_job *job, void *stream, const rngx_params &p, bool wide) {
  return wide ? launch(Wide{p}, job, stream) : launch_ints<B8, B16, B32, B64>(job, stream, p);
}

template <class F64>
int launch_f64(const rngx_job *job, void *stream, const rngx_params &p) {
  return job->dtype == RNGX_FLOAT64 ? launch(F64{p}, job, stream) : (int)cudaErrorInvalidValue;
}

#define RNGX_CUDA_LAUNCH_FLOATS(kernel, job, stream, p, words)                                                    \
  launch_floats<kernel##_f16, kernel##_bf16, kernel##_f32, kernel##_f64>(job, stream, *(p))
#define RNGX_CUDA_LAUNCH_INTS(kernel, job, stream, p, words)                                                      \
  launch_ints<kernel##_b8, kernel##_b16, kernel##_b32, kernel##_b64>(job, stream, *(p))
#define RNGX_CUDA_LAUNCH_INTS_WIDE(kernel, job, stream, p, words)                                                 \
  launch_ints_wide<kernel##_b8, kernel##_b16, kernel##_b32, kernel##_b64, kernel##_b64_wide>(                     \
      job, stream, *(p), RNGX_WIDE((job)->dtype, p, words))
#define RNGX_CUDA_LAUNCH_F64(kernel, job, stream, p, words) launch_f64<kernel##_f64>(job, stream, *(p))
// stochastic_round: by the pair (x's dtype, the target's).
#define RNGX_CUDA_LAUNCH_ROUND(in, IN, out, OUT, TO, k, kernel, job, stream, p)                                   \
  if ((p)->from == RNGX_##IN && (job)->dtype == RNGX_##OUT) return launch(kernel##_##in##_##out{*(p)}, job, stream);
#define RNGX_CUDA_LAUNCH_ROUNDS(kernel, job, stream, p, words)                                                    \
  [&] {                                                                                                           \
    RNGX_ROUND_PAIRS(RNGX_CUDA_LAUNCH_ROUND, kernel, job, stream, p)                                              \
    return (int)cudaErrorInvalidValue;                                                                            \
  }()

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

// Adam's update (adam.h): one element per thread, each the CPU's bits (the element's _rn operations).
__global__ void adam_update_kernel(rngx_adam a, float *out, int64_t n) {
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  const int bf16 = a.dtype == RNGX_BFLOAT16;
  for (int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; j < n; j += step)
    out[j] = rngx_adam_element(&a, j, bf16, a.maximize, a.l2, a.decay);
}

}  // namespace rngx

// The parameters come from elements.h's rngx_<kernel>_params on the host, so the CUDA and C kernels read the same
// numbers.
#define RNGX_CUDA_SAMPLER(name, first, out, kernel, params, args, schema, words, form, fused)                      \
  namespace rngx {                                                                                                \
  RNGX_CAT(RNGX_FOR_, RNGX_TYPES_##out)(RNGX_CUDA_##form, kernel, RNGX_READS_##first, words)                     \
  }                                                                                                               \
  extern "C" int rngx_cuda_##kernel(const rngx_job *job, void *stream, const rngx_params *p) {                    \
    using namespace rngx;                                                                                         \
    return RNGX_CAT(RNGX_CUDA_LAUNCH_, RNGX_TYPES_##out)(kernel, job, stream, p, words);                        \
  }
RNGX_SAMPLERS(RNGX_CUDA_SAMPLER)

#define RNGX_CUDA_KERNEL(kernel, types, reads, words, form)                                                       \
  namespace rngx {                                                                                                \
  RNGX_FOR_##types(RNGX_CUDA_##form, kernel, reads, words)                                                        \
  }                                                                                                               \
  extern "C" int rngx_cuda_##kernel(const rngx_job *job, void *stream) {                                          \
    using namespace rngx;                                                                                         \
    const rngx_params none{};                                                                                     \
    return RNGX_CUDA_LAUNCH_##types(kernel, job, stream, &none, words);                                           \
  }
RNGX_DEVICE_KERNELS(RNGX_CUDA_KERNEL)

extern "C" int rngx_cuda_split(const int64_t *keys, int64_t n, int64_t num, int64_t *out, void *stream) {
  using namespace rngx;
  if (n * num == 0) return (int)cudaSuccess;
  RNGX_LAUNCH(split_kernel, blocks_for(n * num), kThreads, (cudaStream_t)stream, keys, n, num, out);
  return (int)cudaGetLastError();
}

extern "C" int rngx_cuda_fold_in(const int64_t *keys, int64_t n, const int64_t *data, int64_t data_stride,
                                 int64_t *out, void *stream) {
  using namespace rngx;
  if (n == 0) return (int)cudaSuccess;
  RNGX_LAUNCH(fold_in_kernel, blocks_for(n), kThreads, (cudaStream_t)stream, keys, n, data, data_stride, out);
  return (int)cudaGetLastError();
}

extern "C" int rngx_cuda_adam_update(const rngx_adam *a, float *out, int64_t n, void *stream) {
  using namespace rngx;
  if (n == 0) return (int)cudaSuccess;
  RNGX_LAUNCH(adam_update_kernel, blocks_for(n), kThreads, (cudaStream_t)stream, *a, out, n);
  return (int)cudaGetLastError();
}
