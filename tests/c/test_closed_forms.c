/* Guarantee: the math of issue 43's samplers (docs/stream.md, "log_normal", "cauchy", "geometric") is accurate and
 * safe. EXP (rngx_exp) is within 1 ulp of expl over its whole range and rounds once into the subnormals and to +inf
 * where e^y lies there; cauchy's cot of the angle is within 2 ulp of the long double one as float32 values
 * (fl32(cot)) and within 16 as float64 ones, never 0 and never infinite, and each elementwise value is finite;
 * geometric's lambda = -ln(1 - p) is within 4 ulp of -log1pl(-p) for p from 2^-60 to 1 - 2^-53, and every count is
 * >= 1; alpha dropout at p = 1 is x * 0 (signed zeros, NaN kept). The largest errors are printed. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "kernels/dists.h"
#include "kernels/elements.h"

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static uint64_t next64(void) { /* splitmix64: test inputs only */
  uint64_t z = (rng += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* |got - want| in units of the spacing of a type of `bits` significand bits at want (subnormal doubles: 2^-1074). */
static double ulps(long double got, long double want, int bits) {
  int e;
  frexpl(want, &e);
  const long double unit = ldexpl(1.0L, e - bits < -1074 ? -1074 : e - bits);
  return (double)(fabsl(got - want) / unit);
}

static void check_exp(void) {
  double worst = 0;
  const double edges[] = {0.0, -0.0, 1.0, -1.0, 0x1p-60, -0x1p-60, 0.34657359027997264, -0.34657359027997264,
                          709.0, 709.782712893384, -708.39641853226408, -744.44007192138122, -745.1, -745.2,
                          -746.0, -800.0, 710.0, 1e9, -1e9};
  for (size_t i = 0; i < sizeof edges / sizeof *edges; ++i) {
    const double y = edges[i], got = rngx_exp(y);
    const long double want = expl((long double)(y < -746.0 ? -746.0 : y > 710.0 ? 710.0 : y));
    if (want > (long double)DBL_MAX) {
      CHECK_MSG(got == INFINITY, "  exp(%.17g) = %.17g, want +inf\n", y, got);
    } else if (want < 0x1p-1075L) {
      CHECK_MSG(got == 0.0, "  exp(%.17g) = %.17g, want 0\n", y, got);
    } else {
      const double err = ulps(got, want, 53);
      CHECK_MSG(err <= 1.0, "  exp(%.17g): %.3f ulp\n", y, err);
      worst = err > worst ? err : worst;
    }
  }
  for (int i = 0; i < 1 << 22; ++i) {  /* y uniform over [-745, 709.78], and a band around 0 */
    const double u = (double)(next64() >> 11) * 0x1p-53;
    const double y = i & 1 ? -745.0 + u * (709.78 + 745.0) : (u - 0.5) * 4;
    const double got = rngx_exp(y);
    const long double want = expl((long double)y);
    const double err = ulps(got, want, 53);
    CHECK_MSG(err <= 1.0, "  exp(%.17g) = %.17g: %.3f ulp\n", y, got, err);
    worst = err > worst ? err : worst;
  }
  printf("exp: max error %.3f ulp over 2^22 arguments and the edges\n", worst);
}

/* cot of the angle 2 pi t / 2^b in long double, folded exactly as the kernels fold it (an identity), so that the
 * reference keeps its precision where cot is near 0. */
static long double cot_ref(uint64_t t, int b) {
  const uint64_t half = 1ull << (b - 1), quarter = half >> 1, eighth = quarter >> 1;
  const int sin_neg = t > half;
  if (sin_neg) t = 2 * half - t;
  const int cos_neg = t > quarter;
  if (cos_neg) t = half - t;
  const int swap = t > eighth;
  if (swap) t = quarter - t;
  const long double x = (long double)t * 3.14159265358979323846264338327950288L * ldexpl(1.0L, 1 - b);
  const long double c = swap ? sinl(x) : cosl(x), s = swap ? cosl(x) : sinl(x);
  return (cos_neg ? -c : c) / (sin_neg ? -s : s);
}

static void check_cauchy(void) {
  double worst32 = 0, worst64 = 0;
  for (int i = 0; i < 1 << 22; ++i) {
    const uint64_t r = next64();
    const uint32_t w = i < 4 ? (uint32_t)i : i < 8 ? 0xFFFFFFFFu - (uint32_t)(i - 4) : (uint32_t)r;
    const double c = rngx_cauchy32(w);
    CHECK(isfinite(c) && c != 0);
    const double err = ulps((float)c, cot_ref((uint64_t)w * 2 + 1, 33), 24);
    worst32 = err > worst32 ? err : worst32;
    const uint32_t w0 = (uint32_t)(r >> 32), w1 = (uint32_t)r;
    const double c64 = rngx_cauchy64(w0, w1);
    const uint64_t m = ((uint64_t)(w0 & 0xFFFFFu) << 32) | w1;
    CHECK(isfinite(c64) && c64 != 0);
    const double err64 = ulps(c64, cot_ref(m * 2 + 1, 53), 53);
    worst64 = err64 > worst64 ? err64 : worst64;
  }
  CHECK_MSG(worst32 <= 2.0 && worst64 <= 16.0, "  cauchy: %.3f ulp (float32), %.3f ulp (float64)\n", worst32, worst64);
  printf("cauchy: fl32(cot) max error %.3f ulp, float64 cot %.3f ulp, over 2^22 words each\n", worst32, worst64);
  /* every dtype's element finite, with the largest sigma and median a float32 holds */
  rngx_params p = rngx_zero_params();
  CHECK(rngx_cauchy_params(RNGX_FLOAT32, 0.0, 1e20, &p) == NULL);
  const uint32_t w[2] = {0, 0};
  CHECK(isfinite(rngx_cauchy_element_f32(&p, w, 0.0f)));
  CHECK(rngx_cauchy_params(RNGX_FLOAT32, 0.0, 0.0, &p) != NULL && rngx_cauchy_params(RNGX_FLOAT32, 0.0, 1e39, &p) != NULL);
}

static void check_geometric(void) {
  double worst = 0;
  for (int i = -60; i <= -1; ++i)
    for (int j = 0; j < 64; ++j) {
      const double p = ldexp(1.0 + j / 64.0, i) > 1 - 0x1p-53 ? 1 - 0x1p-53 : ldexp(1.0 + j / 64.0, i);
      rngx_params g = rngx_zero_params();
      CHECK(rngx_geometric_params(RNGX_FLOAT64, p, &g) == NULL);
      const double err = ulps(g.rate, -log1pl(-(long double)p), 53);
      worst = err > worst ? err : worst;
      const uint32_t w[2] = {0xFFFFFFFFu, 0xFFFFFFFFu}; /* u near 1: E smallest */
      CHECK(rngx_geometric_element_f64(&g, w, 0.0) >= 1.0 && rngx_geometric_element_f32(&g, w, 0.0f) >= 1.0f);
    }
  CHECK_MSG(worst <= 4.0, "  geometric: lambda %.3f ulp\n", worst);
  printf("geometric: lambda max error %.3f ulp for p in [2^-60, 1 - 2^-53]\n", worst);
  rngx_params g = rngx_zero_params();
  CHECK(rngx_geometric_params(RNGX_FLOAT32, 0.0, &g) != NULL && rngx_geometric_params(RNGX_FLOAT32, 1.0, &g) != NULL);
  CHECK(rngx_ceil_nonneg(0x1p52) == 0x1p52 && rngx_ceil_nonneg(0.5) == 1.0 && rngx_ceil_nonneg(2.0) == 2.0 &&
        rngx_ceil_nonneg(0x1p52 - 0.5) == 0x1p52 && rngx_ceil_nonneg(1e300) == 1e300);
}

static void check_alpha_dropout_all(void) {
  rngx_params p = rngx_zero_params();
  CHECK(rngx_alpha_dropout_params(RNGX_FLOAT32, 1.0, &p) == NULL);
  const uint32_t w[2] = {0xFFFFFFFFu, 0xFFFFFFFFu}; /* u as large as it gets: still dropped at p = 1 */
  const float minus = rngx_alpha_dropout_element_f32(&p, w, -2.0f), plus = rngx_alpha_dropout_element_f32(&p, w, 3.0f);
  CHECK(minus == 0 && signbit(minus) && plus == 0 && !signbit(plus)); /* x * 0 */
  CHECK(isnan(rngx_alpha_dropout_element_f32(&p, w, NAN)));
  CHECK(rngx_alpha_dropout_params(RNGX_FLOAT32, 1.5, &p) != NULL);
}

int main(void) {
  check_exp();
  check_cauchy();
  check_geometric();
  check_alpha_dropout_all();
  return check_summary();
}
