// The CUDA kernels (csrc/kernels/kernels_cuda.cu), run on the CPU through the stand-in runtime beside this file,
// must write exactly the C kernels' bytes (csrc/kernels/loops.c) for every op (normal, truncated normal, bernoulli
// with a scalar and a per-element p, randint, exponential, multinomial's race, normal with tensor mean and std,
// alpha dropout, rrelu, cauchy, log_normal, geometric and stochastic_round's every (input, target) pair included),
// dtype (bits and randint at 8/16/32/64 bits
// too), layout, offset and key source: one key by value, one key in "device" memory, and batched keys in device
// memory (per sample, per channel, broadcast dims with key stride 0, per element, runs of odd length, keys padded
// apart). rngx_cuda_split / rngx_cuda_fold_in must equal rngx_split / rngx_fold_in. And the CUDA kernels give stream
// 1.0's known answers (tests/kat/stream-1.0.h, generated from tests/kat/stream-1.0.json). This checks the GPU code's
// indexing, key lookup, word fetching and math where CI has no GPU; the real GPU run is benchmarks/gpu_check.py.
// The C kernels themselves are checked against the spec in tests/c.
//
// Every buffer a kernel touches is a Dev copy of the host data ("device" memory). Built with nvcc and
// -DRNGX_REAL_CUDA (see the comment at the end of this file), the same test runs the kernels on a real GPU.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "check.h"
#include "convert.h"
#include "kernels.h"
#include "kernels_cuda.h"
#include "stream-1.0.h"

#ifdef RNGX_REAL_CUDA
#include <cuda_runtime.h>
#endif

namespace {

// A buffer in device memory holding a copy of `host`: cudaMalloc'd on a real GPU, a separate host copy under the
// stand-in (so a kernel that reads or writes the caller's host pointers instead would show).
template <class T>
class Dev {
 public:
  explicit Dev(const std::vector<T> &host) : n_(host.size()) {
#ifdef RNGX_REAL_CUDA
    if (cudaMalloc(&p_, n_ * sizeof(T) + 1) != cudaSuccess ||
        cudaMemcpy(p_, host.data(), n_ * sizeof(T), cudaMemcpyHostToDevice) != cudaSuccess) {
      std::fprintf(stderr, "cuda: allocation or copy failed\n");
      std::abort();
    }
#else
    copy_ = host;
    p_ = copy_.data();
#endif
  }
  Dev(const Dev &) = delete;
  Dev &operator=(const Dev &) = delete;
  ~Dev() {
#ifdef RNGX_REAL_CUDA
    cudaFree(p_);
#endif
  }
  T *get() const { return p_; }
  // The buffer's contents now, after the kernels launched so far have finished.
  std::vector<T> read() const {
    std::vector<T> h(n_);
#ifdef RNGX_REAL_CUDA
    if (cudaDeviceSynchronize() != cudaSuccess ||
        cudaMemcpy(h.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost) != cudaSuccess) {
      std::fprintf(stderr, "cuda: kernel or copy failed: %s\n", cudaGetErrorString(cudaGetLastError()));
      std::abort();
    }
#else
    h = copy_;
#endif
    return h;
  }

 private:
  size_t n_;
  T *p_ = nullptr;
#ifndef RNGX_REAL_CUDA
  std::vector<T> copy_;
#endif
};

struct Layout {
  const char *name;
  std::vector<int64_t> sizes, in_strides, out_strides;
  int64_t in_shift;  // elements between the input buffer's start and logical element 0 (misaligns it)
};

int64_t extent(const std::vector<int64_t> &sizes, const std::vector<int64_t> &strides) {
  int64_t e = 1;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 0) return 0;
    e += (sizes[d] - 1) * strides[d];
  }
  return e;
}

std::vector<int64_t> row_major(const std::vector<int64_t> &sizes) {
  std::vector<int64_t> s(sizes.size());
  int64_t e = 1;
  for (size_t d = sizes.size(); d-- > 0;) {
    s[d] = e;
    e *= sizes[d];
  }
  return s;
}

// N, C, H, W views: each gets the strides torch would give it (and empty_like's output strides).
std::vector<Layout> layouts(int64_t N, int64_t C, int64_t H, int64_t W) {
  const std::vector<int64_t> sz = {N, C, H, W}, cont = row_major(sz), cl = {H * W * C, 1, W * C, C};
  const std::vector<int64_t> tr = {W * H * C, 1, C, H * C};                        // (N,W,H,C).transpose(1, 3)
  const std::vector<int64_t> wide = row_major({N, C + 1, 2 * H, W + 2});           // [:, 1:, ::2, 1:-1]
  const std::vector<int64_t> sl = {wide[0], wide[1], 2 * wide[2], wide[3]};
  return {
      {"contiguous", sz, cont, cont, 0},
      {"misaligned", sz, cont, cont, 1},
      {"channels_last", sz, cl, cl, 0},
      {"channels_last->contiguous", sz, cl, cont, 0},
      {"transposed", sz, tr, tr, 0},
      {"sliced", sz, sl, cont, wide[1] + 1},
      {"expanded", sz, {0, W, 0, 1}, cont, 0},
      {"matrix.t()", {C, W}, {1, C}, {1, C}, 0},
      {"0-dim", {}, {}, {}, 0},
      {"empty", {N, 0, W}, {0, W, 1}, {0, W, 1}, 0},
  };
}

int64_t elem_size(rngx_dtype dt) { return rngx_dtype_size(dt); }

const char *dtype_name(rngx_dtype dt) {
  static const char *const names[] = {"float16", "bfloat16", "float32", "float64",       "bits8",
                                      "bits16",  "bits32",   "bits64",  "float8_e4m3fn", "float8_e5m2"};
  return names[dt];
}

// Input values: mostly ordinary, with a few zeros, infinities and NaNs, stored in the dtype. A real GPU's
// arithmetic returns its canonical NaN rather than the input's payload (the CPU keeps it), so there NaNs are
// left out: both still give NaN, but not the same bytes.
#ifdef RNGX_REAL_CUDA
constexpr bool kNaNs = false;
#else
constexpr bool kNaNs = true;
#endif

// `wide`: ordinary values scaled by 2^-40 .. 2^19 (stochastic_round's subnormal and out-of-range targets).
std::vector<unsigned char> make_input(rngx_dtype dt, int64_t n, std::mt19937 &rng, bool wide = false) {
  std::vector<unsigned char> buf(n * elem_size(dt));
  std::uniform_real_distribution<float> val(-4.f, 4.f);
  for (int64_t i = 0; i < n; ++i) {
    const unsigned pick = rng() % 64;
    const float scale = wide ? std::ldexp(1.f, (int)(rng() % 60) - 40) : 1.f;
    const float f = pick == 0 ? (kNaNs ? NAN : INFINITY) : pick == 1 ? -INFINITY : pick == 2 ? 0.f : val(rng) * scale;
    unsigned char *p = &buf[i * elem_size(dt)];
    if (dt == RNGX_FLOAT32) std::memcpy(p, &f, 4);
    if (dt == RNGX_FLOAT64) {
      const double d = (double)f * (1 + 1e-9 * (double)(rng() % 1000));
      std::memcpy(p, &d, 8);
    }
    if (dt == RNGX_FLOAT16 || dt == RNGX_BFLOAT16) {
      const uint16_t h = dt == RNGX_FLOAT16 ? rngx_f32_to_f16(f) : rngx_f32_to_bf16(f);
      std::memcpy(p, &h, 2);
    }
  }
  return buf;
}

// ---- keys ----

// A state of shape (*B, 2) for the layout's sizes: B_d = sizes[d] where batched[d], else 1. `pad` spaces the
// pairs apart in memory. An empty `batched` is one key: by value and as a (2,) state in device memory.
struct KeyCfg {
  const char *name;
  std::vector<int> batched;
  int pad;
};

struct Keys {
  std::vector<int64_t> pairs, strides, pos;  // pairs: exactly the state's span; pos: a global view's strides
  rngx_keys keys{};
};

Keys make_keys(const KeyCfg &cfg, const std::vector<int64_t> &sizes, uint64_t seed, uint64_t offset,
               std::mt19937_64 &rng) {
  Keys k;
  const int nd = (int)sizes.size();
  k.strides.assign(nd + 1, 0);  // + 1: never empty, so .data() is a real pointer
  int64_t stride = 2 * cfg.pad, npairs = 1;
  for (int d = nd - 1; d >= 0; --d) {
    const int64_t b = cfg.batched.empty() || !cfg.batched[d] ? 1 : sizes[d];
    k.strides[d] = b == 1 ? 0 : stride;
    if (b != 1 && k.keys.key_dims == 0) k.keys.key_dims = d + 1;
    stride *= b;
    npairs *= b;
  }
  k.keys.event = 1;
  for (int d = k.keys.key_dims; d < nd; ++d) k.keys.event *= sizes[d];
  if (k.keys.event == 0) k.keys.event = 1;  // as the glue does for an empty output
  k.pairs.assign(2 * cfg.pad * npairs, (int64_t)0x5A5A5A5A5A5A5A5Aull);
  static const uint64_t offsets[] = {0, 1, 3, (1ull << 32) - 2, 0 - 1ull, 0 - 2ull, 0 - 5ull, 0x0123456789ABCDEFull};
  for (int64_t p = 0; p < npairs; ++p) {
    k.pairs[2 * cfg.pad * p] = (int64_t)(npairs == 1 ? seed : rng());
    k.pairs[2 * cfg.pad * p + 1] = (int64_t)(npairs == 1 ? offset : offsets[rng() % 8]);
  }
  k.keys.pairs = k.pairs.data();
  k.keys.key_strides = k.strides.data();
  k.keys.seed = ~seed;  // must be ignored while pairs is set
  k.keys.offset = offset + 4;
  return k;
}

// ---- running ----

enum Op {
  BITS, UNIFORM, NOISE, DROPOUT, NORMAL, TRUNCNORM, BERNOULLI, BERNOULLI_P, RANDINT, EXPONENTIAL, RACE, ROUND,
  NORMAL_TENSOR, ALPHA_DROPOUT, RRELU, CAUCHY, LOG_NORMAL, GEOMETRIC  // issue 43's
};

// The op's parameters, derived once on the host (rngx_*_params) and read by both kernels. randint's are the
// kernels' numbers themselves (low, and a range up to 2^64 - 1 from any low); stochastic_round's a = x's dtype,
// b = saturate.
rngx_params params_of(Op op, rngx_dtype dt, double a, double b) {
  rngx_params p{};
  const char *refused = nullptr;
  if (op == UNIFORM) refused = rngx_uniform_params(dt, a, b, &p);
  if (op == NOISE) refused = rngx_quantize_noise_params(dt, a, &p);
  if (op == DROPOUT) refused = rngx_dropout_params(dt, a, &p);
  if (op == BERNOULLI) refused = rngx_bernoulli_params(dt, a, &p);
  if (op == NORMAL) refused = rngx_normal_params(dt, a, b, &p);
  if (op == EXPONENTIAL) refused = rngx_exponential_params(dt, a, &p);
  if (op == TRUNCNORM) refused = rngx_truncnorm_params(dt, 0.25, 1.5, a, b, &p);
  if (op == RANDINT) p.low = (uint64_t)(int64_t)a, p.range = (uint64_t)b;
  if (op == ROUND) refused = rngx_sround_params(dt, (rngx_dtype)(int)a, b != 0, &p);
  if (op == ALPHA_DROPOUT) refused = rngx_alpha_dropout_params(dt, a, &p);
  if (op == RRELU) refused = rngx_rrelu_params(dt, a, b, &p);
  if (op == CAUCHY) refused = rngx_cauchy_params(dt, a, b, &p);
  if (op == LOG_NORMAL) refused = rngx_log_normal_params(dt, a, b, &p);
  if (op == GEOMETRIC) refused = rngx_geometric_params(dt, a, &p);
  if (refused != nullptr) std::abort();
  return p;
}

void run_cpu(Op op, const rngx_job &job, int64_t n, double a, double b) {
  const rngx_params p = params_of(op, job.dtype, a, b);
  if (op == BITS) rngx_bits(&job, 0, n);
  if (op == UNIFORM) rngx_uniform(&job, &p, 0, n);
  if (op == NOISE) rngx_quantize_noise(&job, &p, 0, n);
  if (op == DROPOUT) rngx_dropout(&job, &p, 0, n);
  if (op == NORMAL) rngx_normal(&job, &p, 0, n);
  if (op == TRUNCNORM) rngx_truncnorm(&job, &p, 0, n);
  if (op == BERNOULLI) rngx_bernoulli(&job, &p, 0, n);
  if (op == BERNOULLI_P) rngx_bernoulli_tensor(&job, 0, n);
  if (op == RANDINT) rngx_randint(&job, &p, 0, n);
  if (op == EXPONENTIAL) rngx_exponential(&job, &p, 0, n);
  if (op == RACE) rngx_race(&job, 0, n);
  if (op == ROUND) rngx_sround(&job, &p, 0, n);
  if (op == NORMAL_TENSOR) rngx_normal_tensor(&job, 0, n);
  if (op == ALPHA_DROPOUT) rngx_alpha_dropout(&job, &p, 0, n);
  if (op == RRELU) rngx_rrelu(&job, &p, 0, n);
  if (op == CAUCHY) rngx_cauchy(&job, &p, 0, n);
  if (op == LOG_NORMAL) rngx_log_normal(&job, &p, 0, n);
  if (op == GEOMETRIC) rngx_geometric(&job, &p, 0, n);
}

int run_cuda(Op op, const rngx_job &job, double a, double b) {
  const rngx_params p = params_of(op, job.dtype, a, b);
  if (op == BITS) return rngx_cuda_bits(&job, nullptr);
  if (op == UNIFORM) return rngx_cuda_uniform(&job, nullptr, &p);
  if (op == NOISE) return rngx_cuda_quantize_noise(&job, nullptr, &p);
  if (op == NORMAL) return rngx_cuda_normal(&job, nullptr, &p);
  if (op == TRUNCNORM) return rngx_cuda_truncnorm(&job, nullptr, &p);
  if (op == BERNOULLI) return rngx_cuda_bernoulli(&job, nullptr, &p);
  if (op == BERNOULLI_P) return rngx_cuda_bernoulli_tensor(&job, nullptr);
  if (op == RANDINT) return rngx_cuda_randint(&job, nullptr, &p);
  if (op == EXPONENTIAL) return rngx_cuda_exponential(&job, nullptr, &p);
  if (op == RACE) return rngx_cuda_race(&job, nullptr);
  if (op == ROUND) return rngx_cuda_sround(&job, nullptr, &p);
  if (op == NORMAL_TENSOR) return rngx_cuda_normal_tensor(&job, nullptr);
  if (op == ALPHA_DROPOUT) return rngx_cuda_alpha_dropout(&job, nullptr, &p);
  if (op == RRELU) return rngx_cuda_rrelu(&job, nullptr, &p);
  if (op == CAUCHY) return rngx_cuda_cauchy(&job, nullptr, &p);
  if (op == LOG_NORMAL) return rngx_cuda_log_normal(&job, nullptr, &p);
  if (op == GEOMETRIC) return rngx_cuda_geometric(&job, nullptr, &p);
  return rngx_cuda_dropout(&job, nullptr, &p);
}

const char *op_name(Op op) {
  static const char *const names[] = {"bits", "uniform", "noise", "dropout", "normal", "truncnorm", "bernoulli",
                                      "bernoulli_p", "randint", "exponential", "race", "stochastic_round",
                                      "normal_tensor", "alpha_dropout", "rrelu", "cauchy", "log_normal", "geometric"};
  return names[op];
}

long compares;

// One op on one layout with one key source: the C kernel with the keys in host memory, the CUDA kernel with the
// same keys in "device" memory, and, for a single key, the CUDA kernel with it by value. The input is of dtype
// in_dt: dt's but for stochastic_round.
void compare_from(Op op, rngx_dtype dt, rngx_dtype in_dt, const Layout &L, const Keys &K, bool single, double a,
                  double b, const char *keys_name, std::mt19937 &rng) {
  int64_t n = 1;
  for (int64_t s : L.sizes) n *= s;
  const int64_t es = elem_size(dt), ies = elem_size(in_dt), out_n = extent(L.sizes, L.out_strides);
  std::vector<unsigned char> in = make_input(in_dt, L.in_shift + extent(L.sizes, L.in_strides) + 1, rng, op == ROUND);
  // normal_tensor's std (its second input): the same layout as its mean, other values, no NaN (a NaN std scales
  // as any value would: left out for the real GPU's canonical NaN, as above)
  std::vector<unsigned char> in2 = make_input(in_dt, L.in_shift + extent(L.sizes, L.in_strides) + 1, rng);
  std::vector<unsigned char> cpu(out_n * es + 64, 0xAB);
  const Dev<unsigned char> d_in(in), d_in2(in2), d_out(cpu), d_out_val(cpu);
  const Dev<int64_t> d_pairs(K.pairs);
  rngx_job job{};
  job.keys = K.keys;
  job.dtype = dt;
  job.ndim = (int)L.sizes.size();
  job.sizes = L.sizes.data();
  job.in = {in.data() + L.in_shift * ies, L.in_strides.data()};
  job.out = {cpu.data(), L.out_strides.data()};
  // ops with no input operand at all: bernoulli with a scalar p, and the like-samplers of issue 43
  const bool no_input = op == BERNOULLI || op == CAUCHY || op == LOG_NORMAL || op == GEOMETRIC;
  if (no_input) job.in.data = nullptr;
  if (op == NORMAL_TENSOR) job.in2 = {in2.data() + L.in_shift * es, L.in_strides.data()};
  run_cpu(op, job, n, a, b);
  job.in.data = no_input ? nullptr : d_in.get() + L.in_shift * ies;
  if (op == NORMAL_TENSOR) job.in2.data = d_in2.get() + L.in_shift * ies;
  job.out.data = d_out.get();
  job.keys.pairs = d_pairs.get() + (K.keys.pairs - K.pairs.data());  // a global view starts inside the state
  CHECK(run_cuda(op, job, a, b) == 0);
  const std::string what = std::string(op_name(op)) + " " + dtype_name(in_dt) + "->" + dtype_name(dt) + " " + L.name +
                           " keys " + keys_name;
  CHECK_MSG(cpu == d_out.read(), "  %s, offset %llu (keys on device)\n", what.c_str(), (unsigned long long)K.pairs[1]);
  if (single) {
    job.keys.pairs = nullptr;
    job.keys.seed = (uint64_t)K.pairs[0];
    job.keys.offset = (uint64_t)K.pairs[1];
    job.out.data = d_out_val.get();
    CHECK(run_cuda(op, job, a, b) == 0);
    CHECK_MSG(cpu == d_out_val.read(), "  %s, offset %llu (key by value)\n", what.c_str(), (unsigned long long)K.pairs[1]);
  }
  ++compares;
}

void compare(Op op, rngx_dtype dt, const Layout &L, const Keys &K, bool single, double a, double b, const char *keys_name,
             std::mt19937 &rng) {
  compare_from(op, dt, dt, L, K, single, a, b, keys_name, rng);
}

// stochastic_round's (input, target) pairs, each with and without saturate; without `full`, one pair per pair of
// element sizes.
void compare_rounds(const Layout &L, const Keys &K, bool single, const char *keys_name, bool full, std::mt19937 &rng) {
  const rngx_dtype floats[] = {RNGX_FLOAT16, RNGX_BFLOAT16, RNGX_FLOAT32, RNGX_FLOAT64};
  const rngx_dtype targets[] = {RNGX_BFLOAT16, RNGX_FLOAT16, RNGX_FLOAT8_E4M3FN, RNGX_FLOAT8_E5M2};
  for (rngx_dtype from : floats)
    for (rngx_dtype to : targets) {
      const bool some = (to == RNGX_BFLOAT16 && from != RNGX_FLOAT64) || (to == RNGX_FLOAT8_E5M2 && from != RNGX_FLOAT16);
      if (!rngx_sround_pair(from, to) || !(full || some)) continue;
      for (int saturate : {0, 1})
        if (full || saturate == (to == RNGX_FLOAT8_E5M2))
          compare_from(ROUND, to, from, L, K, single, (double)from, saturate, keys_name, rng);
    }
}

// Every op and dtype; `full` adds more parameters (bits has none).
void compare_all_ops(const Layout &L, const Keys &K, bool single, const char *keys_name, bool full, std::mt19937 &rng) {
  for (rngx_dtype dt : {RNGX_BITS8, RNGX_BITS16, RNGX_BITS32, RNGX_BITS64}) {
    compare(BITS, dt, L, K, single, 0, 0, keys_name, rng);
    compare(RANDINT, dt, L, K, single, -7, 201, keys_name, rng);
  }
  compare(RANDINT, RNGX_BITS64, L, K, single, -7, 0x1p63 + 0x1p40, keys_name, rng);  // above 2^32: four words
  compare(RANDINT, RNGX_BITS64, L, K, single, -7, 0x1p32, keys_name, rng);           // 2^32: two, the first word
  for (rngx_dtype dt : {RNGX_FLOAT16, RNGX_BFLOAT16, RNGX_FLOAT32, RNGX_FLOAT64}) {
    compare(UNIFORM, dt, L, K, single, -1.5, 2.3, keys_name, rng);
    compare(NOISE, dt, L, K, single, 0.5, 0, keys_name, rng);
    compare(DROPOUT, dt, L, K, single, 0.3, 0, keys_name, rng);
    compare(NORMAL, dt, L, K, single, 0.25, 1.5, keys_name, rng);
    compare(TRUNCNORM, dt, L, K, single, -1.0, 3.3, keys_name, rng);
    compare(BERNOULLI, dt, L, K, single, 0.3, 0, keys_name, rng);
    compare(BERNOULLI_P, dt, L, K, single, 0, 0, keys_name, rng);  // p from the input's values
    compare(EXPONENTIAL, dt, L, K, single, 1.5, 0, keys_name, rng);
    if (dt == RNGX_FLOAT64) compare(RACE, dt, L, K, single, 0, 0, keys_name, rng);  // weights: the input's values
    compare(NORMAL_TENSOR, dt, L, K, single, 0, 0, keys_name, rng);  // mean and std: the two inputs' values
    compare(ALPHA_DROPOUT, dt, L, K, single, 0.3, 0, keys_name, rng);
    compare(RRELU, dt, L, K, single, 0.125, 1.0 / 3, keys_name, rng);
    compare(CAUCHY, dt, L, K, single, 0.5, 2.0, keys_name, rng);
    compare(LOG_NORMAL, dt, L, K, single, 0.25, 1.5, keys_name, rng);
    compare(GEOMETRIC, dt, L, K, single, 0.3, 0, keys_name, rng);
    if (!full) continue;
    compare(ALPHA_DROPOUT, dt, L, K, single, 1.0, 0, keys_name, rng);   // x * 0
    compare(GEOMETRIC, dt, L, K, single, 1e-5, 0, keys_name, rng);      // counts past float16's range
    compare(LOG_NORMAL, dt, L, K, single, 700.0, 30.0, keys_name, rng); // exp's overflow and underflow
    // rates whose E / rate overflows or underflows float32 (1e-38, 1e44) or float64 (1e-310): the clamps
    for (double rate : {1e-38, 1e44, 1e-310}) compare(EXPONENTIAL, dt, L, K, single, rate, 0, keys_name, rng);
    compare(NOISE, dt, L, K, single, 0.375, 0, keys_name, rng);
    for (double p : {0.0, 1.0}) compare(DROPOUT, dt, L, K, single, p, 0, keys_name, rng);
  }
  compare_rounds(L, K, single, keys_name, full, rng);
}

void check_ops() {
  std::mt19937 rng(1234);
  std::mt19937_64 key_rng(99);
  // Aligned and odd block offsets, block counters past 2^32, and block numbers wrapping past 2^64.
  const uint64_t offsets[] = {0, 1, (1ull << 32) - 6, UINT64_MAX - 5};
  // Key runs (event) of 105, 35 (odd), 7, 1 on the first shape; 9, 3 on the second; and so on.
  const std::vector<KeyCfg> batched4 = {
      {"(N,1,1,1)", {1, 0, 0, 0}, 1},           {"(N,C,1,1)", {1, 1, 0, 0}, 1},
      {"(1,C,1,1) broadcast N", {0, 1, 0, 0}, 1}, {"(N,1,H,1) broadcast C, pad 2", {1, 0, 1, 0}, 2},
      {"(N,C,H,W) per element", {1, 1, 1, 1}, 1}, {"(1,C,1,W) per element, broadcast", {0, 1, 0, 1}, 3},
  };
  const std::vector<KeyCfg> batched2 = {{"(C,1)", {1, 0}, 1}, {"(1,W)", {0, 1}, 2}, {"(C,W)", {1, 1}, 1}};
  const std::vector<KeyCfg> batched3 = {{"(N,1,1)", {1, 0, 0}, 1}};
  const int64_t shapes[][4] = {{2, 3, 5, 7}, {1, 35, 3, 3}, {3, 40, 9, 11}, {2, 33, 4, 33}};
  for (size_t s = 0; s < sizeof shapes / sizeof *shapes; ++s)
    for (const Layout &L : layouts(shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3])) {
      const bool small = s < 2;  // the large shapes run fewer offsets and parameters
      for (size_t o = 0; o < (small ? 4u : 2u); ++o) {
        const uint64_t offset = offsets[small ? o : 3 - 2 * o], seed = 0x9E3779B97F4A7C15ull ^ offset;
        const Keys K = make_keys({"single", {}, 1}, L.sizes, seed, offset, key_rng);
        compare_all_ops(L, K, true, "single", small, rng);
      }
      const auto &cfgs = L.sizes.size() == 4 ? batched4 : L.sizes.size() == 3 ? batched3 : L.sizes.size() == 2 ? batched2
                                                                                                     : std::vector<KeyCfg>{};
      for (const KeyCfg &cfg : cfgs) {
        const Keys K = make_keys(cfg, L.sizes, key_rng(), 0, key_rng);
        compare_all_ops(L, K, false, cfg.name, false, rng);
      }
    }
  // A long contiguous run: many groups, both wide and tail paths of one kernel; with one key and with runs of 997.
  std::mt19937_64 krng(7);
  const Layout big = {"long", {100003}, {1}, {1}, 0}, big2 = {"long 2-d", {101, 997}, {997, 1}, {997, 1}, 0};
  const Keys one = make_keys({"single", {}, 1}, big.sizes, 42, 12, krng);
  const Keys rows = make_keys({"(101,1)", {1, 0}, 1}, big2.sizes, 0, 0, krng);
  for (rngx_dtype dt : {RNGX_FLOAT16, RNGX_BFLOAT16, RNGX_FLOAT32, RNGX_FLOAT64}) {
    compare(NOISE, dt, big, one, true, 0.5, 0, "single", rng);
    compare(NOISE, dt, big2, rows, false, 0.5, 0, "(101,1)", rng);
  }
  compare(BITS, RNGX_BITS64, big2, rows, false, 0, 0, "(101,1)", rng);
}

// The layouts' tensors as blocks of larger ones (rngx_global_view): 0 to 3 more indices on each dim, the block
// at a random start; one key, and batched keys over the global batch dims.
void check_global_view() {
  std::mt19937 rng(77);
  std::mt19937_64 key_rng(78);
  const std::vector<KeyCfg> cfgs = {{"single", {}, 1}, {"(N,1,1,1)", {1, 0, 0, 0}, 1}, {"(1,C,1,W)", {0, 1, 0, 1}, 1},
                                    {"(N,C,H,W)", {1, 1, 1, 1}, 2}};
  for (const Layout &L : layouts(2, 3, 5, 7)) {
    const int nd = (int)L.sizes.size();
    for (int trial = 0; trial < 3; ++trial) {
      std::vector<int64_t> global(nd), start(nd);
      for (int d = 0; d < nd; ++d) {
        const int64_t extra = trial == 0 && d == nd - 1 ? 0 : (int64_t)(rng() % 4);
        global[d] = L.sizes[d] + extra;
        start[d] = (int64_t)(rng() % (extra + 1));
      }
      for (const KeyCfg &cfg : cfgs) {
        if (!cfg.batched.empty() && (int)cfg.batched.size() != nd) continue;
        Keys K = make_keys(cfg, global, key_rng(), cfg.batched.empty() ? 0 - 3ull : 0, key_rng);
        K.pos.assign(nd, 0);
        rngx_global_view(&K.keys, nd, L.sizes.data(), global.data(), start.data(), K.pos.data());
        const std::string name = std::string(cfg.name) + ", global view";
        compare_all_ops(L, K, cfg.batched.empty(), name.c_str(), false, rng);
      }
    }
  }
}

// Blocks of a tensor of nearly 2^63 elements (a global view), just below, at and past 2^62, where randint's word index
// 4 j (int64, a range above 2^32) passes 2^64, and at its end: the CUDA kernels must form no k*j (element j's words
// start in block offset + k j / 4). The C kernels are checked against the spec there (tests/c/test_huge_index.c).
void check_huge_index() {
  std::mt19937 rng(62);
  std::mt19937_64 key_rng(63);
  const int64_t two62 = 1ll << 62;
  const Layout rows{"huge, 1-D", {67}, {1}, {1}, 0}, block{"huge, 2-D", {2, 37}, {37, 1}, {37, 1}, 0};
  const struct {
    const Layout &L;
    std::vector<int64_t> global, start;
  } views[] = {
      {rows, {INT64_MAX}, {two62 - 31}},
      {rows, {INT64_MAX}, {two62}},
      {rows, {INT64_MAX}, {3 * (two62 / 2) + 1}},
      {rows, {INT64_MAX}, {INT64_MAX - 67}},
      {block, {1ll << 31, (1ll << 32) - 1}, {1ll << 30, (1ll << 32) - 40}},  // a row below 2^62, the next past it
  };
  for (const auto &v : views)
    for (uint64_t offset : {0ull, 0 - 5ull}) {
      Keys K = make_keys({"single", {}, 1}, v.global, key_rng(), offset, key_rng);
      K.pos.assign(v.global.size(), 0);
      rngx_global_view(&K.keys, (int)v.global.size(), v.L.sizes.data(), v.global.data(), v.start.data(), K.pos.data());
      compare_all_ops(v.L, K, true, "single, global view", false, rng);
    }
}

// ---- split and fold_in ----

void check_split_fold_in() {
  std::mt19937_64 rng(5);
  const uint64_t offsets[] = {0, 7, (1ull << 32) - 1, 0 - 1ull, 0 - 3ull};
  for (int64_t n : {1, 2, 3, 300, 1000})
    for (int64_t num : {1, 2, 3, 5}) {
      std::vector<int64_t> keys(2 * n);
      for (int64_t k = 0; k < n; ++k) {
        keys[2 * k] = (int64_t)rng();
        keys[2 * k + 1] = (int64_t)offsets[rng() % 5];
      }
      std::vector<int64_t> cpu(2 * n * num + 4, -7);
      const Dev<int64_t> d_keys(keys), d_out(cpu);
      rngx_split(keys.data(), n, num, cpu.data());
      CHECK(rngx_cuda_split(d_keys.get(), n, num, d_out.get(), nullptr) == 0);
      CHECK_MSG(cpu == d_out.read(), "  split n=%lld num=%lld\n", (long long)n, (long long)num);
      for (int64_t stride : {0, 1}) {
        std::vector<int64_t> data(n);
        for (int64_t k = 0; k < n; ++k) data[k] = (int64_t)(k % 3 == 0 ? rng() : k % 3 == 1 ? 0 - (rng() % 4) : rng() % 9);
        std::vector<int64_t> fcpu(2 * n + 4, -7);
        const Dev<int64_t> d_data(data), d_fout(fcpu);
        rngx_fold_in(keys.data(), n, data.data(), stride, fcpu.data());
        CHECK(rngx_cuda_fold_in(d_keys.get(), n, d_data.get(), stride, d_fout.get(), nullptr) == 0);
        CHECK_MSG(fcpu == d_fout.read(), "  fold_in n=%lld stride=%lld\n", (long long)n, (long long)stride);
      }
    }
  const std::vector<int64_t> untouched(8, -7), keys(2, 1), data(1, 0);  // nothing to do: no writes
  const Dev<int64_t> d_out(untouched), d_keys(keys), d_data(data);
  CHECK(rngx_cuda_split(d_keys.get(), 0, 3, d_out.get(), nullptr) == 0);
  CHECK(rngx_cuda_split(d_keys.get(), 1, 0, d_out.get(), nullptr) == 0);
  CHECK(rngx_cuda_fold_in(d_keys.get(), 0, d_data.get(), 0, d_out.get(), nullptr) == 0);
  CHECK(d_out.read() == untouched);
}

// Adam's update (the optimizer's fused step, adam.h): the CUDA kernel's weights and moments are the CPU loop's, bit
// for bit, for both weight dtypes and every form of the step, on values across the weight dtype's range (its
// subnormals, zeros of both signs, infinities and NaN included) and moments from earlier steps.
void check_adam() {
  std::mt19937 rng(11);
  const int64_t n = 5000;
  for (rngx_dtype dt : {RNGX_BFLOAT16, RNGX_FLOAT16})
    for (int form = 0; form < 8; ++form) {
      std::vector<uint16_t> param(n), grad(n);
      std::vector<float> m(n), v(n);
      for (int64_t j = 0; j < n; ++j) {
        param[j] = (uint16_t)(j < 16 ? (j * 0x0F91u) : rng());  // the first few: special values of both types
        grad[j] = (uint16_t)rng();
        m[j] = j % 3 ? std::ldexp((float)(int32_t)rng(), -40) : 0.0f;
        v[j] = j % 3 ? std::ldexp((float)(rng() >> 1), -45) : 0.0f;
      }
      rngx_adam a{};
      a.dtype = dt;
      a.maximize = form & 1;
      a.l2 = (form >> 1) & 1;
      a.decay = !a.l2 && ((form >> 2) & 1);
      a.weight_decay = 0.01f, a.decay_factor = 0.9999f;
      a.lerp_weight = (form >> 2) & 1 ? 0.1f : 0.7f;  // both of torch's lerp forms
      a.beta2 = 0.999f, a.one_minus_beta2 = 0.001f, a.bias_correction2_sqrt = 0.0447f, a.eps = 1e-8f;
      a.neg_step_size = -0.0123f;
      std::vector<float> m_cpu = m, v_cpu = v, out_cpu(n);
      rngx_adam cpu = a;
      cpu.param = param.data(), cpu.grad = grad.data(), cpu.exp_avg = m_cpu.data(), cpu.exp_avg_sq = v_cpu.data();
      rngx_adam_update(&cpu, 0, n, out_cpu.data());
      const Dev<uint16_t> d_param(param), d_grad(grad);
      const Dev<float> d_m(m), d_v(v), d_out(std::vector<float>(n, -1.0f));
      rngx_adam dev = a;
      dev.param = d_param.get(), dev.grad = d_grad.get(), dev.exp_avg = d_m.get(), dev.exp_avg_sq = d_v.get();
      CHECK(rngx_cuda_adam_update(&dev, d_out.get(), n, nullptr) == 0);
      const std::vector<float> out_dev = d_out.read(), m_dev = d_m.read(), v_dev = d_v.read();
      CHECK_MSG(std::memcmp(out_cpu.data(), out_dev.data(), n * 4) == 0 &&
                    std::memcmp(m_cpu.data(), m_dev.data(), n * 4) == 0 &&
                    std::memcmp(v_cpu.data(), v_dev.data(), n * 4) == 0,
                "  adam dtype=%d form=%d\n", (int)dt, form);
      ++compares;
    }
}

// ---- stream 1.0's known answers ----

rngx_dtype kat_dtype(const std::string &d) {
  if (d == "float16") return RNGX_FLOAT16;
  if (d == "bfloat16") return RNGX_BFLOAT16;
  if (d == "float32") return RNGX_FLOAT32;
  if (d == "float64") return RNGX_FLOAT64;
  if (d == "int8" || d == "uint8") return RNGX_BITS8;
  if (d == "int16" || d == "uint16") return RNGX_BITS16;
  if (d == "int32" || d == "uint32") return RNGX_BITS32;
  if (d == "float8_e4m3fn") return RNGX_FLOAT8_E4M3FN;
  if (d == "float8_e5m2") return RNGX_FLOAT8_E5M2;
  return RNGX_BITS64;
}

// The input of the ops that read one at row-major index i of the global tensor (tests/kat/kat.py: input_values;
// bernoulli_tensor's p: probabilities).
void kat_input(rngx_dtype dt, int64_t i, unsigned char *p, bool probability = false) {
  const double v = probability ? (double)((i * 5) % 9) / 8 : (double)((i * 7) % 11 - 5) * 0.375;
  const float f = (float)v;
  const uint16_t h = dt == RNGX_FLOAT16 ? rngx_f32_to_f16(f) : rngx_f32_to_bf16(f);
  if (dt == RNGX_FLOAT64) std::memcpy(p, &v, 8);
  else if (dt == RNGX_FLOAT32) std::memcpy(p, &f, 4);
  else std::memcpy(p, &h, 2);
}

// A job over `sizes` (row-major output; `in` read with in_strides, or row-major) with one key in "device" memory,
// or one per index of dim 0 (nkeys == 2). Points into itself: not copied.
struct KatJob {
  std::vector<int64_t> sizes, strides, in_strides, key_strides{2};
  rngx_job job{};
  KatJob(rngx_dtype dt, std::vector<int64_t> shape, const int64_t *pairs, int nkeys, void *out, void *in,
         std::vector<int64_t> in_str)
      : sizes(std::move(shape)), strides(row_major(sizes)), in_strides(in_str.empty() ? strides : std::move(in_str)) {
    job.dtype = dt;
    job.ndim = (int)sizes.size();
    job.sizes = sizes.data();
    job.out = {out, strides.data()};
    job.in = {in, in_strides.data()};
    job.keys.pairs = pairs;
    job.keys.event = 1;
    for (size_t d = nkeys == 2 ? 1 : 0; d < sizes.size(); ++d) job.keys.event *= sizes[d];
    if (nkeys == 2) job.keys.key_dims = 1, job.keys.key_strides = key_strides.data();
  }
  KatJob(const KatJob &) = delete;
};

// randperm, multinomial, split and fold_in (not elementwise): their kernels (bits, race, split, fold_in), then the
// sort or argmin the Python layer does (tests/kat/kat.py: _not_elementwise), on the host.
std::vector<uint64_t> kat_not_elementwise(const rngx_kat_case &c) {
  const std::string op = c.op;
  const std::vector<int64_t> pairs(c.keys, c.keys + 2 * c.nkeys);
  const Dev<int64_t> d_pairs(pairs);
  const int64_t n = c.shape[c.ndim - 1], rows = c.nkeys;
  std::vector<uint64_t> got;
  if (op == "split" || op == "fold_in") {
    const std::vector<int64_t> data(1, (int64_t)c.u0);
    const Dev<int64_t> d_data(data), d_out(std::vector<int64_t>(op == "split" ? 2 * rows * c.u0 : 2 * rows, -7));
    const int rc = op == "split" ? rngx_cuda_split(d_pairs.get(), rows, (int64_t)c.u0, d_out.get(), nullptr)
                                 : rngx_cuda_fold_in(d_pairs.get(), rows, d_data.get(), 0, d_out.get(), nullptr);
    CHECK(rc == 0);
    for (int64_t v : d_out.read()) got.push_back((uint64_t)v);
    return got;
  }
  if (op == "randperm") {  // the int64 bits of (rows, n), each row's indices sorted by them (stable)
    const Dev<int64_t> d_out(std::vector<int64_t>(rows * n));
    KatJob kj(RNGX_BITS64, rows == 2 ? std::vector<int64_t>{2, n} : std::vector<int64_t>{n}, d_pairs.get(), c.nkeys,
              d_out.get(), nullptr, {});
    CHECK(rngx_cuda_bits(&kj.job, nullptr) == 0);
    const std::vector<int64_t> keys = d_out.read();
    for (int64_t r = 0; r < rows; ++r) {
      std::vector<int64_t> idx(n);
      for (int64_t i = 0; i < n; ++i) idx[i] = i;
      std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) { return keys[r * n + a] < keys[r * n + b]; });
      for (int64_t i : idx) got.push_back(std::string(c.dtype) == "float16" ? rngx_f32_to_f16((float)i) : (uint64_t)i);
    }
    return got;
  }
  // multinomial: the race's scores (rows, D, C) over float64 weights (rows, C) read with stride 0 across D, then
  // per (row, draw) the argmin (with replacement, D = n), or per row the n smallest in order (without, D = 1)
  const bool replacement = c.p0 != 0;
  const int64_t C = 9, D = replacement ? n : 1;
  std::vector<double> w(rows * C);
  for (int64_t i = 0; i < rows * C; ++i) w[i] = (double)((i * 7) % 5) / 4;
  const Dev<double> d_w(w), d_out(std::vector<double>(rows * D * C));
  KatJob kj(RNGX_FLOAT64, {rows, D, C}, d_pairs.get(), c.nkeys, d_out.get(), d_w.get(), {C, 0, 1});
  CHECK(rngx_cuda_race(&kj.job, nullptr) == 0);
  const std::vector<double> score = d_out.read();
  for (int64_t r = 0; r < rows; ++r) {
    if (replacement) {
      for (int64_t d = 0; d < D; ++d) {
        const double *s = &score[(r * D + d) * C];
        got.push_back((uint64_t)(std::min_element(s, s + C) - s));
      }
      continue;
    }
    std::vector<int64_t> idx(C);
    for (int64_t i = 0; i < C; ++i) idx[i] = i;
    std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) { return score[r * C + a] < score[r * C + b]; });
    for (int64_t i = 0; i < n; ++i) got.push_back((uint64_t)idx[i]);
  }
  return got;
}

// Each case's params as the Python layer derives them (rngx_*_params), then the CUDA kernel, its bits compared.
void check_kat() {
  for (const rngx_kat_case &c : RNGX_KAT) {
    const std::string op = c.op;
    if (op == "randperm" || op == "multinomial" || op == "split" || op == "fold_in") {
      const std::vector<uint64_t> got = kat_not_elementwise(c);
      CHECK_MSG(got == std::vector<uint64_t>(c.bits, c.bits + c.n), "  %s: the CUDA kernels' values differ\n", c.name);
      continue;
    }
    // stochastic_round: x of the case's dtype (its bits in the case), out of the target's
    const bool round = op == "stochastic_round";
    const rngx_dtype in_dt = kat_dtype(c.dtype), dt = round ? kat_dtype(c.to) : in_dt;
    const int64_t es = elem_size(dt), ies = elem_size(in_dt);
    const bool view = c.global_shape[0] != 0;
    std::vector<int64_t> strides(c.ndim, 1), pos(c.ndim, 0), key_strides(1, 2);
    for (int d = c.ndim - 2; d >= 0; --d) strides[d] = strides[d + 1] * c.shape[d + 1];
    const int64_t n = c.shape[0] * (c.ndim == 2 ? c.shape[1] : 1);
    std::vector<unsigned char> in(n * ies), in2(n * es), out(n * es, 0xAB);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t r = c.ndim == 2 ? i / c.shape[1] : 0, col = c.ndim == 2 ? i % c.shape[1] : i;
      const int64_t at = view ? (c.global_start[0] + r) * c.global_shape[1] + c.global_start[1] + col : i;
      if (round) {
        std::memcpy(&in[i * ies], &c.x[i], ies);  // little-endian: the low bytes
      } else {
        kat_input(dt, at, &in[i * es], op == "bernoulli_tensor");
        kat_input(dt, at, &in2[i * es], true);
      }
    }
    const std::vector<int64_t> pairs(c.keys, c.keys + 2 * c.nkeys);
    const Dev<int64_t> d_pairs(pairs);
    const Dev<unsigned char> d_in(in), d_in2(in2), d_out(out);
    rngx_job job{};
    job.dtype = dt;
    job.ndim = c.ndim;
    job.sizes = c.shape;
    job.in = {d_in.get(), strides.data()};
    job.out = {d_out.get(), strides.data()};
    job.keys.pairs = d_pairs.get();
    job.keys.event = c.nkeys == 2 ? c.shape[1] : n;
    if (c.nkeys == 2) {
      job.keys.key_dims = 1;
      job.keys.key_strides = key_strides.data();
    }
    if (view) rngx_global_view(&job.keys, c.ndim, c.shape, c.global_shape, c.global_start, pos.data());
    rngx_params p{};
    int rc = -1;
    const auto accepted = [](const char *refused) { return refused == nullptr; };  // the derivation accepts
    if (op == "bits") rc = rngx_cuda_bits(&job, nullptr);
    if (op == "uniform" && accepted(rngx_uniform_params(dt, c.p0, c.p1, &p))) rc = rngx_cuda_uniform(&job, nullptr, &p);
    if (op == "quantize_noise" && accepted(rngx_quantize_noise_params(dt, c.p0, &p)))
      rc = rngx_cuda_quantize_noise(&job, nullptr, &p);
    if (op == "dropout" && accepted(rngx_dropout_params(dt, c.p0, &p))) rc = rngx_cuda_dropout(&job, nullptr, &p);
    if (op == "normal" && accepted(rngx_normal_params(dt, c.p0, c.p1, &p))) rc = rngx_cuda_normal(&job, nullptr, &p);
    if (op == "truncated_normal" && accepted(rngx_truncnorm_params(dt, c.p0, c.p1, c.p2, c.p3, &p)))
      rc = rngx_cuda_truncnorm(&job, nullptr, &p);
    if (op == "bernoulli" && accepted(rngx_bernoulli_params(dt, c.p0, &p))) {
      job.in.data = nullptr;
      rc = rngx_cuda_bernoulli(&job, nullptr, &p);
    }
    if (op == "randint" && accepted(rngx_randint_params(dt, INT64_MIN, INT64_MAX, (int64_t)c.p0, (int64_t)c.p1, &p)))
      rc = rngx_cuda_randint(&job, nullptr, &p);
    if (op == "bernoulli_tensor") rc = rngx_cuda_bernoulli_tensor(&job, nullptr);
    if (op == "exponential" && accepted(rngx_exponential_params(dt, c.p0, &p)))
      rc = rngx_cuda_exponential(&job, nullptr, &p);
    if (op == "alpha_dropout" && accepted(rngx_alpha_dropout_params(dt, c.p0, &p)))
      rc = rngx_cuda_alpha_dropout(&job, nullptr, &p);
    if (op == "rrelu" && accepted(rngx_rrelu_params(dt, c.p0, c.p1, &p))) rc = rngx_cuda_rrelu(&job, nullptr, &p);
    if (op == "cauchy" && accepted(rngx_cauchy_params(dt, c.p0, c.p1, &p))) {
      job.in.data = nullptr;
      rc = rngx_cuda_cauchy(&job, nullptr, &p);
    }
    if (op == "log_normal" && accepted(rngx_log_normal_params(dt, c.p0, c.p1, &p))) {
      job.in.data = nullptr;
      rc = rngx_cuda_log_normal(&job, nullptr, &p);
    }
    if (op == "geometric" && accepted(rngx_geometric_params(dt, c.p0, &p))) {
      job.in.data = nullptr;
      rc = rngx_cuda_geometric(&job, nullptr, &p);
    }
    if (op == "normal_tensor") {  // mean: the input's values (kat.py: input_values), std: probabilities
      job.in2 = {d_in2.get(), strides.data()};
      rc = rngx_cuda_normal_tensor(&job, nullptr);
    }
    if (round && accepted(rngx_sround_params(dt, in_dt, c.p0 != 0, &p))) rc = rngx_cuda_sround(&job, nullptr, &p);
    CHECK_MSG(rc == 0, "  %s: not run\n", c.name);
    const std::vector<unsigned char> got = d_out.read();
    bool ok = c.n == n;
    for (int64_t i = 0; i < n && ok; ++i) {
      uint64_t v = 0;
      std::memcpy(&v, &got[i * es], es);  // little-endian: the low bytes
      ok = v == c.bits[i];
    }
    CHECK_MSG(ok, "  %s: the CUDA kernel's bits differ from stream 1.0's\n", c.name);
  }
}

}  // namespace

int main() {
  check_ops();
  check_global_view();
  check_huge_index();
  check_split_fold_in();
  check_adam();
  check_kat();
  std::printf("%ld op comparisons, %zu known answers\n", compares, sizeof RNGX_KAT / sizeof *RNGX_KAT);
  return check_summary();
}

// On a machine with a GPU and nvcc (not part of `make`), with the C kernels built as the Makefile builds them:
//   mkdir -p /tmp/rc && for f in csrc/kernels/*.c; do cc -std=c11 -O2 -ffp-contract=off -Icsrc -c -o /tmp/rc/$(basename $f .c).o $f; done
//   for f in csrc/kernels/kernels_cuda.cu tests/cuda_emu/test_cuda_emu.cpp; do nvcc -std=c++17 -O2 -arch=native -DRNGX_REAL_CUDA -Icsrc/kernels -Itests/c -Itests/kat -c -x cu -o /tmp/rc/$(basename $f).o $f; done
//   nvcc -arch=native -o /tmp/rc/test_cuda_real /tmp/rc/*.o && /tmp/rc/test_cuda_real
