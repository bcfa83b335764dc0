/* The numbers each op's loop reads, derived once from its arguments (docs/stream.md), for the C and the CUDA
 * kernels alike, and the words each element takes from its key's stream. */
#include <math.h>

#include "convert.h"
#include "ops.h"

int rngx_words_per_element(rngx_dtype dtype) { return dtype == RNGX_FLOAT64 || dtype == RNGX_BITS64 ? 2 : 1; }
int rngx_normal_words(rngx_dtype dtype) { return dtype == RNGX_FLOAT64 ? 2 : 1; }
int rngx_truncnorm_words(rngx_dtype dtype) { (void)dtype; return 2; }
int rngx_randint_words(rngx_dtype dtype, uint64_t range) {
  return dtype == RNGX_BITS64 && range > RNGX_RANDINT_NARROW ? 4 : 2;
}

float rngx_round_to(rngx_dtype dtype, double v) {
  const float f = (float)v; /* out of float32's range: +-inf */
  if (dtype == RNGX_FLOAT16) return rngx_f16_to_f32(rngx_f32_to_f16(f));
  if (dtype == RNGX_BFLOAT16) return rngx_bf16_to_f32(rngx_f32_to_bf16(f));
  return f;
}

/* As torch.func._random: the bounds rounded to the output dtype, their difference in float32 rounded again. */
rngx_params rngx_uniform_params(rngx_dtype dtype, double low, double high) {
  const float lo = rngx_round_to(dtype, low), hi = rngx_round_to(dtype, high);
  const rngx_params p = {.lo = lo, .width = rngx_round_to(dtype, hi - lo), .lo64 = low, .width64 = high - low};
  return p;
}

rngx_params rngx_noise_params(double half) {
  const rngx_params p = {.lo = (float)-half, .width = (float)(2 * half), .lo64 = -half, .width64 = 2 * half};
  return p;
}

/* keep iff u >= p, i.e. iff the integer m behind u = m * 2^-bits is >= ceil(p * 2^bits) (exact). */
rngx_params rngx_dropout_params(double p) {
  const double scale = 1.0 / (1.0 - p);
  const rngx_params params = {.scale = (float)scale, .scale64 = scale, .keep = (uint32_t)ceil(p * 0x1p24),
                              .keep64 = (uint64_t)ceil(p * 0x1p53)};
  return params;
}
rngx_params rngx_normal_params(double mean, double std) {
  const rngx_params p = {.mean = (float)mean, .std = (float)std, .mean64 = mean, .std64 = std};
  return p;
}

/* e^y for -745 < y <= 0: y = k ln2 + r with |r| <= ln2 / 2, e^r by its Taylor series to r^14 (nested), then times
 * 2^k in two steps of normal powers of two. Only the truncated normal's bounds use it, once per call. */
static double exp_neg(double y) {
  const double kd = (double)(int64_t)(y * 1.44269504088896338700 - 0.5); /* round(y / ln 2) for y <= 0 */
  const double r = (y - kd * RNGX_LN2_HI) - kd * RNGX_LN2_LO;
  double e = 1.0;
  for (int n = 14; n >= 1; --n) e = 1.0 + r / n * e;
  const int64_t k = (int64_t)kd, k1 = k / 2, k2 = k - k1;
  return e * rngx_bits_f64((uint64_t)(1023 + k1) << 52) * rngx_bits_f64((uint64_t)(1023 + k2) << 52);
}

/* Phi(x) for x <= 0: 1/2 + pdf(x) * sum x^(2n+1) / (2n+1)!! above -3 (Marsaglia's series), below it the
 * continued fraction pdf(x) / (|x| + 1/(|x| + 2/(|x| + 3/(...)))), both to a fixed depth. */
static double cdf_lower(double x) {
  const double pdf = 0.398942280401432677940 * exp_neg(-0.5 * (x * x));
  if (x > -3.0) {
    double s = x, t = x;
    for (int n = 1; n < 120; ++n) s += (t = t * (x * x) / (2 * n + 1));
    return 0.5 + pdf * s;
  }
  double f = -x;
  for (int n = 400; n >= 1; --n) f = -x + n / f;
  return pdf / f;
}

double rngx_normal_cdf(double x) {
  x = x < -38.0 ? -38.0 : x > 38.0 ? 38.0 : x;
  return x <= 0 ? cdf_lower(x) : 1.0 - cdf_lower(-x);
}

/* The dtype's value next to v (a value of the dtype) towards +inf (up) or -inf. */
static float step_in(rngx_dtype dt, float v, int up) {
  if (dt == RNGX_FLOAT32) {
    const uint32_t b = rngx_f32_bits(v);
    if ((b & 0x7FFFFFFFu) == 0) return rngx_bits_f32(up ? 1u : 0x80000001u);
    return rngx_bits_f32((v > 0) == up ? b + 1 : b - 1);
  }
  const uint16_t h = dt == RNGX_FLOAT16 ? rngx_f32_to_f16(v) : rngx_f32_to_bf16(v);
  const uint16_t s = (h & 0x7FFFu) == 0 ? (up ? 1u : 0x8001u) : (uint16_t)((v > 0) == up ? h + 1 : h - 1);
  return dt == RNGX_FLOAT16 ? rngx_f16_to_f32(s) : rngx_bf16_to_f32(s);
}

/* Sampling happens on the side where both bounds are in the lower tail or straddle 0 (flip when alpha + beta > 0),
 * where Phi keeps its relative precision. Bounds past 37 standard deviations are taken at 37. */
int rngx_truncnorm_params(rngx_dtype dtype, double mean, double std, double a, double b, rngx_params *out) {
  double al = (a - mean) / std, be = (b - mean) / std;
  al = al < -37.0 ? -37.0 : al > 37.0 ? 37.0 : al;
  be = be < -37.0 ? -37.0 : be > 37.0 ? 37.0 : be;
  const int flip = al + be > 0;
  const double lo = flip ? -be : al, hi = flip ? -al : be;
  const double pa = rngx_normal_cdf(lo), pb = rngx_normal_cdf(hi);
  rngx_params p = {0};
  p.tn = (rngx_tn){pa, pb - pa, mean, std, a, b, flip};
  if (dtype != RNGX_FLOAT64) {
    const float ra = rngx_round_to(dtype, a), rb = rngx_round_to(dtype, b);
    p.tn_lo = ra < a ? step_in(dtype, ra, 1) : ra;
    p.tn_hi = rb > b ? step_in(dtype, rb, 0) : rb;
    if (!(p.tn_lo <= p.tn_hi)) return -1;
  }
  *out = p;
  return 0;
}

rngx_params rngx_randint_params(int64_t low, uint64_t range) {
  const rngx_params p = {.low = (uint64_t)low, .range = range};
  return p;
}

rngx_params rngx_exponential_params(double rate) {
  const rngx_params p = {.rate = rate};
  return p;
}
