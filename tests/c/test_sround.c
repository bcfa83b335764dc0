/* stochastic_round's elements (<torch_rngx/elements.h>, the header users' kernels include) against a brute-force
 * reference written from docs/stream.md without the kernels' bit tricks: the target's values decoded from their
 * bits, lo found by binary search over them and hi = the next one, the distance |x| - lo and the gap in doubles
 * (both exact here), F = floor(2^R (|x| - lo) / (hi - lo)), and the result hi iff u < F. For every (input, target)
 * pair, with and without saturate; inputs: every float16 and bfloat16 bit pattern, float32 and float64 patterns
 * next to every target value and between them, deep in and below the subnormals, past the range, and the specials;
 * words u: 0, 1, 2^R - 1, F - 1, F, F + 1 and random ones. Then the kernel (loops.c) on a whole tensor gives each
 * element the header's value from its own words. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <torch_rngx/elements.h>

#include "check.h"
#include "kernels/kernels.h"

typedef struct {
  const char *name;
  rngx_dtype dt;
  double top, over; /* the largest finite value; where x.to(dtype) turns past it (0: never, float8_e4m3fn) */
  uint32_t max_bits, over_bits, nan_bits, sign_bit;
} target;

static const target TARGETS[] = {
    {"bfloat16", RNGX_BFLOAT16, 0x1.fep127, 0x1.ffp127, 0x7F7F, 0x7F80, 0x7FC0, 0x8000},
    {"float16", RNGX_FLOAT16, 65504.0, 65520.0, 0x7BFF, 0x7C00, 0x7E00, 0x8000},
    {"float8_e4m3fn", RNGX_FLOAT8_E4M3FN, 448.0, 0.0, 0x7E, 0x7E, 0x7F, 0x80},
    {"float8_e5m2", RNGX_FLOAT8_E5M2, 57344.0, 61440.0, 0x7B, 0x7C, 0x7F, 0x80},
};

/* A target's non-negative value from its bits: bfloat16 is float32's top half, float8_e5m2 float16's top byte. */
static double decode(rngx_dtype dt, uint32_t b) {
  switch (dt) {
    case RNGX_BFLOAT16: return rngx_bf16_to_f32((uint16_t)b);
    case RNGX_FLOAT16: return rngx_f16_to_f32((uint16_t)b);
    case RNGX_FLOAT8_E5M2: return rngx_f16_to_f32((uint16_t)(b << 8));
    default: { /* e4m3fn: 4 exponent bits (bias 7), 3 mantissa bits, no infinity */
      const uint32_t e = (b >> 3) & 0xF, m = b & 7;
      return e == 0 ? ldexp(m, -9) : ldexp(8 + m, (int)e - 10);
    }
  }
}

/* The expected element, from the spec's steps. */
static uint32_t expected(const target *t, double x, uint64_t u, int R, int saturate, uint64_t *F_out) {
  *F_out = 0;
  const uint32_t sign = signbit(x) ? t->sign_bit : 0;
  const double a = fabs(x);
  if (isnan(x)) return sign | t->nan_bits;
  if (a > t->top) {
    if (saturate) return sign | t->max_bits;
    const float f = (float)a; /* fl32: exact for <= 32-bit inputs, rounded to nearest for float64 */
    return sign | (t->over != 0 && f >= t->over ? t->over_bits : t->max_bits);
  }
  uint32_t lo = 0, hi = t->max_bits; /* the largest bits whose value is <= a */
  while (lo < hi) {
    const uint32_t mid = (lo + hi + 1) / 2;
    if (decode(t->dt, mid) <= a) lo = mid;
    else hi = mid - 1;
  }
  const double vlo = decode(t->dt, lo);
  if (vlo == a) return sign | lo;
  const double gap = decode(t->dt, lo + 1) - vlo, dist = a - vlo; /* both exact */
  const double F = floor(ldexp(dist / gap, R));                    /* dist / gap: a power-of-two division, exact */
  *F_out = (uint64_t)F;
  return sign | (u < *F_out ? lo + 1 : lo);
}

/* The header's element for the pair (from, t) on x (as float64: exact in `from`) with the word(s) of u. */
static uint32_t element(rngx_dtype from, rngx_dtype to, const rngx_params *p, double x, uint64_t u) {
  const uint32_t w[2] = {from == RNGX_FLOAT64 ? (uint32_t)(u >> 32) : (uint32_t)u, (uint32_t)u};
  const float f = (float)x;
  const uint16_t h = from == RNGX_FLOAT16 ? rngx_f32_to_f16(f) : rngx_f32_to_bf16(f);
#define RNGX_TEST_PAIR(in, IN, out, OUT, TO, k, ...)                                                              \
  if (from == RNGX_##IN && to == RNGX_##OUT)                                                                      \
    return from == RNGX_FLOAT64   ? (uint32_t)rngx_sround_element_f64_##out(p, w, x)                              \
           : from == RNGX_FLOAT32 ? (uint32_t)rngx_sround_element_f32_##out(p, w, f)                              \
                                  : (uint32_t)rngx_sround_element_##in##_##out(p, w, h);
  RNGX_ROUND_PAIRS(RNGX_TEST_PAIR, ~)
#undef RNGX_TEST_PAIR
  abort();
}

static uint64_t next64(void) { /* the test's own random numbers: Philox blocks of a seed of its own */
  static uint64_t block;
  const rngx_ctr c = rngx_block(0x5EED5EED, block++);
  return (uint64_t)c.v[0] << 32 | c.v[1];
}

static long elements_checked;

static void check_x(rngx_dtype from, const target *t, double x) {
  const int R = from == RNGX_FLOAT64 ? 64 : 32;
  const uint64_t top = R == 64 ? UINT64_MAX : 0xFFFFFFFFull;
  for (int saturate = 0; saturate <= 1; ++saturate) {
    rngx_params p;
    CHECK(rngx_sround_params(t->dt, from, saturate, &p) == NULL);
    uint64_t F;
    expected(t, x, 0, R, saturate, &F);
    const uint64_t us[] = {0, 1, top, F - 1, F, F + 1, next64() & top, next64() & top};
    for (size_t i = 0; i < sizeof us / sizeof *us; ++i) {
      const uint64_t u = us[i] & top;
      uint64_t unused;
      const uint32_t want = expected(t, x, u, R, saturate, &unused), got = element(from, t->dt, &p, x, u);
      CHECK_MSG(got == want, "    %d -> %s, saturate %d: x = %a, u = %llx (F = %llx): got %x, want %x\n", (int)from,
                t->name, saturate, x, (unsigned long long)u, (unsigned long long)F, got, want);
      ++elements_checked;
    }
  }
}

/* Every pattern of the 16-bit input types. */
static void check_16bit(rngx_dtype from, const target *t) {
  for (uint32_t b = 0; b < 0x10000; ++b)
    check_x(from, t, from == RNGX_FLOAT16 ? rngx_f16_to_f32((uint16_t)b) : rngx_bf16_to_f32((uint16_t)b));
}

/* float32 and float64: the neighbours of every target value (a few ulps of the input type either side) and the
 * midpoints between target values, random values across and below the target's range, and the specials. */
static void check_wide(rngx_dtype from, const target *t) {
  const int f64 = from == RNGX_FLOAT64;
  const uint32_t stride = t->max_bits > 0x100 ? 7 : 1; /* the 16-bit targets: every 7th value */
  for (uint32_t b = 0; b <= t->max_bits; b += stride) {
    const double v = decode(t->dt, b);
    for (int s = -1; s <= 1; s += 2) {
      double y = s * v;
      for (int k = 0; k < 3; ++k) y = f64 ? nextafter(y, INFINITY) : (double)nextafterf((float)y, INFINITY);
      for (int k = 0; k < 7; ++k) {
        check_x(from, t, y);
        y = f64 ? nextafter(y, -INFINITY) : (double)nextafterf((float)y, -INFINITY);
      }
      if (b < t->max_bits) {
        const double mid = s * (v + decode(t->dt, b + 1)) / 2; /* exact: a target value and its neighbour */
        check_x(from, t, f64 ? mid : (double)(float)mid);
      }
    }
  }
  for (int i = 0; i < 50000; ++i) { /* exponents from 2^-150 below the target's subnormals to 4x past its top */
    const int e = (int)(next64() % (uint64_t)(ilogb(t->top) + 150 + 3)) - 150;
    const double m = (double)(next64() >> 11) * 0x1p-53 + 1.0, x = ldexp(m, e) * ((next64() & 1) ? -1 : 1);
    check_x(from, t, f64 ? x : (double)(float)x);
  }
  const double specials[] = {0.0, -0.0, NAN, -NAN, INFINITY, -INFINITY, 0x1p-149, -0x1p-149, 0x1p-126, 0x1.fffffep127,
                             0x1p-1074, 0x1p-1022, 0x1.fffffffffffffp1023, t->top, -t->top, t->over, -t->over,
                             nextafter(t->over, 0), nextafter(t->top, INFINITY), 2 * t->top};
  for (size_t i = 0; i < sizeof specials / sizeof *specials; ++i)
    check_x(from, t, f64 ? specials[i] : (double)(float)specials[i]);
}

/* The kernel on a whole tensor (contiguous, with batches of words) gives element j the header's value from words
 * k j .. k j + k - 1 of the key: spans within the target's range and spans with NaN, infinities or values past it
 * (which loops.c's fast span hands back to the element). */
static void check_kernel(rngx_dtype from, const target *t) {
  enum { N = 3001 };
  const int64_t size = N, stride = 1;
  const int64_t isz = rngx_dtype_size(from), osz = rngx_dtype_size(t->dt), k = from == RNGX_FLOAT64 ? 2 : 1;
  unsigned char *in = malloc(N * isz), *out = malloc(N * osz);
  double xs[N];
  for (int64_t j = 0; j < N; ++j) { /* NaN, inf and past-the-range values in a few spans (loops.c redoes those) */
    const double special = j % 3 == 0 ? NAN : j % 3 == 1 ? -INFINITY : 1e30;
    const double x = j % 700 == 13 ? special : ldexp((double)(next64() >> 11) * 0x1p-53 + 0.5, (int)(next64() % 40) - 30);
    const float f = (float)x;
    const uint16_t h = from == RNGX_FLOAT16 ? rngx_f32_to_f16(f) : rngx_f32_to_bf16(f);
    if (from == RNGX_FLOAT64) memcpy(in + 8 * j, &x, 8), xs[j] = x;
    else if (from == RNGX_FLOAT32) memcpy(in + 4 * j, &f, 4), xs[j] = f;
    else memcpy(in + 2 * j, &h, 2), xs[j] = from == RNGX_FLOAT16 ? rngx_f16_to_f32(h) : rngx_bf16_to_f32(h);
  }
  rngx_params p;
  CHECK(rngx_sround_params(t->dt, from, from == RNGX_FLOAT64, &p) == NULL);
  const rngx_job job = {.keys = {.seed = 77, .offset = (1ull << 32) - 5, .event = N}, .dtype = t->dt, .ndim = 1,
                        .sizes = &size, .out = {out, &stride}, .in = {in, &stride}};
  rngx_sround(&job, &p, 0, N);
  int same = 1;
  for (int64_t j = 0; j < N; ++j) {
    uint32_t w[2];
    rngx_element_words(77, (1ull << 32) - 5, (uint64_t)j, (int)k, w);
    const uint64_t u = k == 2 ? (uint64_t)w[0] << 32 | w[1] : w[0];
    uint32_t got = 0;
    memcpy(&got, out + j * osz, (size_t)osz); /* little-endian: the low bytes */
    same &= got == element(from, t->dt, &p, xs[j], u);
  }
  CHECK_MSG(same, "    the kernel differs from the header's elements: %d -> %s\n", (int)from, t->name);
  free(in), free(out);
}

int main(void) {
  const rngx_dtype froms[] = {RNGX_FLOAT16, RNGX_BFLOAT16, RNGX_FLOAT32, RNGX_FLOAT64};
  for (size_t f = 0; f < 4; ++f)
    for (size_t t = 0; t < 4; ++t) {
      rngx_params p;
      if (!rngx_sround_pair(froms[f], TARGETS[t].dt)) { /* refused, with the reason */
        CHECK(rngx_sround_params(TARGETS[t].dt, froms[f], 0, &p) != NULL);
        continue;
      }
      if (froms[f] == RNGX_FLOAT16 || froms[f] == RNGX_BFLOAT16) check_16bit(froms[f], &TARGETS[t]);
      else check_wide(froms[f], &TARGETS[t]);
      check_kernel(froms[f], &TARGETS[t]);
    }
  printf("stochastic_round: %ld elements against the brute-force reference\n", elements_checked);
  return check_summary();
}
