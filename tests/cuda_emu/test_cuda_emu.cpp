// The CUDA kernels (csrc/kernels/ops_cuda.cu), run on the CPU through the stand-in runtime beside this file,
// must write exactly the C kernels' bytes (csrc/kernels/ops.c) for every op, dtype, layout, offset and state
// source. This checks the GPU code's indexing, word fetching and math where CI has no GPU; the real GPU run
// is benchmarks/gpu_check.py.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "check.h"
#include "convert.h"
#include "ops.h"
#include "ops_cuda.h"

namespace {

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

int64_t elem_size(rngx_dtype dt) {
  return dt == RNGX_FLOAT16 || dt == RNGX_BFLOAT16 ? 2 : dt == RNGX_FLOAT32 ? 4 : 8;
}

// Input values: mostly ordinary, with a few zeros, infinities and NaNs, stored in the dtype.
std::vector<unsigned char> make_input(rngx_dtype dt, int64_t n, std::mt19937 &rng) {
  std::vector<unsigned char> buf(n * elem_size(dt));
  std::uniform_real_distribution<float> val(-4.f, 4.f);
  for (int64_t i = 0; i < n; ++i) {
    const unsigned pick = rng() % 64;
    const float f = pick == 0 ? NAN : pick == 1 ? -INFINITY : pick == 2 ? 0.f : val(rng);
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

enum Op { BITS, UNIFORM, NOISE, DROPOUT };

void run_cpu(Op op, const rngx_job &job, int64_t n, double a, double b) {
  if (op == BITS) rngx_bits(&job, 0, n);
  if (op == UNIFORM) rngx_uniform(&job, a, b, 0, n);
  if (op == NOISE) rngx_quantize_noise(&job, a, 0, n);
  if (op == DROPOUT) rngx_dropout(&job, a, 0, n);
}

int run_cuda(Op op, const rngx_job &job, const int64_t *state, double a, double b) {
  if (op == BITS) return rngx_cuda_bits(&job, state, nullptr);
  if (op == UNIFORM) return rngx_cuda_uniform(&job, state, nullptr, a, b);
  if (op == NOISE) return rngx_cuda_quantize_noise(&job, state, nullptr, a);
  return rngx_cuda_dropout(&job, state, nullptr, a);
}

const char *op_name(Op op) { return op == BITS ? "bits" : op == UNIFORM ? "uniform" : op == NOISE ? "noise" : "dropout"; }

// One op on one layout: CPU, CUDA with the state by value, CUDA with the state in "device" memory.
void compare(Op op, rngx_dtype dt, const Layout &L, uint64_t seed, uint64_t offset, double a, double b,
             std::mt19937 &rng) {
  int64_t n = 1;
  for (int64_t s : L.sizes) n *= s;
  const int64_t es = elem_size(dt), out_n = extent(L.sizes, L.out_strides);
  std::vector<unsigned char> in = make_input(dt, L.in_shift + extent(L.sizes, L.in_strides) + 1, rng);
  std::vector<unsigned char> cpu(out_n * es + 64, 0xAB), gpu = cpu, gpu_dev = cpu;
  rngx_job job{};
  job.seed = seed;
  job.offset = offset;
  job.dtype = dt;
  job.ndim = (int)L.sizes.size();
  job.sizes = L.sizes.data();
  job.in = {in.data() + L.in_shift * es, L.in_strides.data()};
  job.out = {cpu.data(), L.out_strides.data()};
  run_cpu(op, job, n, a, b);
  job.out.data = gpu.data();
  CHECK(run_cuda(op, job, nullptr, a, b) == 0);
  const int64_t dev_state[2] = {(int64_t)seed, (int64_t)offset};
  job.out.data = gpu_dev.data();
  job.seed = ~seed;  // must be ignored: the kernel reads dev_state
  job.offset = offset + 4;
  CHECK(run_cuda(op, job, dev_state, a, b) == 0);
  CHECK_MSG(cpu == gpu, "  %s dtype=%d %s offset=%llu (state by value)\n", op_name(op), (int)dt, L.name,
            (unsigned long long)offset);
  CHECK_MSG(cpu == gpu_dev, "  %s dtype=%d %s offset=%llu (state on device)\n", op_name(op), (int)dt, L.name,
            (unsigned long long)offset);
}

}  // namespace

int main() {
  std::mt19937 rng(1234);
  const rngx_dtype floats[] = {RNGX_FLOAT16, RNGX_BFLOAT16, RNGX_FLOAT32, RNGX_FLOAT64};
  // Aligned and unaligned offsets, block counters past 2^32, and word indices wrapping past 2^64.
  const uint64_t offsets[] = {0, 8, 1, 3, (4ull << 32) - 6, UINT64_MAX - 5};
  const int64_t shapes[][4] = {{2, 3, 5, 7}, {1, 35, 3, 3}, {3, 40, 9, 11}, {2, 33, 4, 33}};
  for (const auto &s : shapes)
    for (const Layout &L : layouts(s[0], s[1], s[2], s[3]))
      for (uint64_t offset : offsets) {
        const uint64_t seed = 0x9E3779B97F4A7C15ull ^ offset;
        compare(BITS, RNGX_INT64, L, seed, offset, 0, 0, rng);
        for (rngx_dtype dt : floats) {
          compare(UNIFORM, dt, L, seed, offset, -1.5, 2.0, rng);
          compare(NOISE, dt, L, seed, offset, 0.5, 0, rng);
          compare(NOISE, dt, L, seed, offset, 0.375, 0, rng);
          for (double p : {0.0, 0.3, 1.0}) compare(DROPOUT, dt, L, seed, offset, p, 0, rng);
        }
      }
  // A long contiguous run: many groups, both wide and tail paths of one kernel.
  const Layout big = {"long", {100003}, {1}, {1}, 0};
  for (rngx_dtype dt : floats) compare(NOISE, dt, big, 42, 12, 0.5, 0, rng);
  return check_summary();
}
