/* Guarantee: exponential and multinomial's race compute the numbers docs/stream.md defines. E = -ln u is within
 * 1 ulp of -logl(u) in long double (float32 values: fl32(E), over 2^24 random words and the edge words; float64
 * over 2^21 random word pairs and the edges), the largest error printed; every E is finite and > 0. The loops
 * (their target_clones builds) equal the element formulas bit for bit, contiguous and strided, including the
 * rates whose E / rate underflows or overflows the dtype (then the smallest positive or largest finite value);
 * the race gives +inf for a zero, negative or NaN weight and at most DBL_MAX for a positive one. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "kernels/convert.h"
#include "kernels/dists.h"
#include "kernels/kernels.h"
#include "kernels/stream.h"

static uint64_t rng = 0x452821E638D01377ull;
static uint32_t next32(void) { /* splitmix64: test inputs only */
  uint64_t z = (rng += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return (uint32_t)((z ^ (z >> 31)) >> 32);
}

/* |got - want| in units of the spacing of the type (24 or 53 significand bits) at want. */
static double ulps(long double got, long double want, int bits) {
  int e;
  frexpl(want, &e);
  return (double)(fabsl(got - want) / ldexpl(1.0L, e - bits));
}

static double max32, max64;
static double min_e = INFINITY, max_e;
static int all_positive = 1;

static void check32(uint32_t w) {
  const double e = rngx_exponential32(w);
  const long double want = -logl(((long double)w * 2 + 1) * 0x1p-33L);
  const double err = ulps((float)e, want, 24);
  max32 = err > max32 ? err : max32;
  min_e = e < min_e ? e : min_e;
  max_e = e > max_e ? e : max_e;
  all_positive &= e > 0 && isfinite(e);
}

static void check64(uint32_t w0, uint32_t w1) {
  const double e = rngx_exponential64(w0, w1);
  const uint64_t m = ((uint64_t)(w0 & 0xFFFFFu) << 32) | w1;
  const long double want = -logl(((long double)m * 2 + 1) * 0x1p-53L);
  const double err = ulps(e, want, 53);
  max64 = err > max64 ? err : max64;
  all_positive &= e > 0 && isfinite(e);
}

static void check_accuracy(void) {
  static const uint32_t edges[] = {0, 1, 2, 0x7FFFFFFFu, 0x80000000u, 0xFFFFFFFEu, 0xFFFFFFFFu, 0xB504F333u};
  for (size_t i = 0; i < sizeof edges / sizeof *edges; ++i) {
    check32(edges[i]);
    for (size_t j = 0; j < sizeof edges / sizeof *edges; ++j) check64(edges[i], edges[j]);
  }
  for (long i = 0; i < 1L << 24; ++i) check32(next32());
  for (long i = 0; i < 1L << 21; ++i) check64(next32(), next32());
  printf("exponential: fl32(E) within %.3f ulp, float64 E within %.3f ulp; E in [%.6g, %.6g]\n", max32, max64, min_e,
         max_e);
  CHECK(all_positive);
  CHECK(max32 <= 1.0);
  CHECK(max64 <= 1.0);
}

enum { N = 4099 };
static uint32_t WORDS[2 * N];

static void run(rngx_dtype dt, const rngx_params *p, void *out, int64_t stride) {
  const int64_t size = N, strides = stride;
  const rngx_job job = {.keys = {.seed = 91, .offset = 3, .event = N}, .dtype = dt, .ndim = 1, .sizes = &size,
                        .out = {out, &strides}};
  rngx_exponential(&job, p, 0, N);
}

/* The element formula, written plainly: E / rate rounded to the type, 0 and inf moved inside. */
static float want32(uint32_t w, double rate) {
  const float v = (float)(rngx_exponential32(w) / rate);
  return v == 0 ? 0x1p-149f : isinf(v) ? FLT_MAX : v;
}

static uint16_t want16(uint16_t (*to16)(float), uint16_t inf, uint32_t w, double rate) {
  const uint16_t h = to16((float)(rngx_exponential32(w) / rate));
  return h == 0 ? 1 : h == inf ? (uint16_t)(inf - 1) : h;
}

static double want64(uint32_t w0, uint32_t w1, double rate) {
  const double v = rngx_exponential64(w0, w1) / rate;
  return v == 0 ? 0x1p-1074 : isinf(v) ? DBL_MAX : v;
}

static void check_loops(void) {
  for (int i = 0; i < 2 * N; ++i) WORDS[i] = rngx_key_word(91, 3, (uint64_t)i);
  static float f[2 * N];
  static double d[2 * N];
  static uint16_t h[2 * N], b[2 * N];
  long clamped = 0;
  for (int64_t s = 1; s <= 2; ++s)
    for (int r = 0; r < 5; ++r) {
      const double rate = (const double[]){1.0, 0.3, 1e-38, 1e44, 1e-310}[r];
      rngx_params p = {0};
      CHECK(rngx_exponential_params(RNGX_FLOAT32, rate, &p) == NULL);
      run(RNGX_FLOAT32, &p, f, s);
      run(RNGX_FLOAT16, &p, h, s);
      run(RNGX_BFLOAT16, &p, b, s);
      run(RNGX_FLOAT64, &p, d, s);
      int ok = 1;
      for (int i = 0; i < N; ++i) {
        ok &= f[i * s] == want32(WORDS[i], rate) && f[i * s] > 0 && isfinite(f[i * s]);
        ok &= h[i * s] == want16(rngx_f32_to_f16, 0x7C00, WORDS[i], rate);
        ok &= b[i * s] == want16(rngx_f32_to_bf16, 0x7F80, WORDS[i], rate);
        ok &= d[i * s] == want64(WORDS[2 * i], WORDS[2 * i + 1], rate) && d[i * s] > 0 && isfinite(d[i * s]);
        clamped += f[i * s] == FLT_MAX || f[i * s] == 0x1p-149f || d[i * s] == DBL_MAX;
      }
      CHECK_MSG(ok, "    exponential loops, rate %g, stride %lld\n", rate, (long long)s);
    }
  CHECK(clamped > 0);  /* the clamps were reached */
}

/* The race on a (2, C) weight tensor read with stride 0 across 3 draws: out (2, 3, C). */
static void check_race(void) {
  enum { C = 7, D = 3 };
  const double w[2 * C] = {0.5, 0.0, -1.0, NAN, 1e-320, 2.0, INFINITY, 1.0, 1.0, 1.0, 0.0, 3.0, 1e300, 0.25};
  const int64_t sizes[3] = {2, D, C}, so[3] = {D * C, C, 1}, si[3] = {C, 0, 1};
  double out[2 * D * C];
  const rngx_job job = {.keys = {.seed = 5, .offset = 9, .event = 2 * D * C}, .dtype = RNGX_FLOAT64, .ndim = 3,
                        .sizes = sizes, .out = {out, so}, .in = {(void *)w, si}};
  rngx_race(&job, 0, 2 * D * C);
  int ok = 1;
  for (int r = 0; r < 2; ++r)
    for (int k = 0; k < D; ++k)
      for (int c = 0; c < C; ++c) {
        const int64_t j = (r * D + k) * C + c;
        const double e = rngx_exponential64(rngx_key_word(5, 9, 2 * j), rngx_key_word(5, 9, 2 * j + 1));
        const double x = w[r * C + c], got = out[j];
        const double want = x > 0 ? (isinf(e / x) ? DBL_MAX : e / x) : INFINITY;
        ok &= got == want;
        ok &= x > 0 ? isfinite(got) : isinf(got);
      }
  CHECK(ok);
  CHECK(out[4] == DBL_MAX); /* weight 1e-320: E / w overflows, and still beats a zero weight */
}

int main(void) {
  check_accuracy();
  check_loops();
  check_race();
  return check_summary();
}
