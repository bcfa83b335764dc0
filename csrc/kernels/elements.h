/* Each op's numbers and elements (docs/stream.md), the one definition that the C loops (loops.c), the CUDA kernels
 * (kernels_cuda.cu) and users' own C, C++ and CUDA code (docs/device_api.md) all call, so a custom kernel draws the
 * bits the ops give. Installed with the package next to philox.h, convert.h, convert_lanes.h and dists.h
 * (torch_rngx.include_dir()).
 *
 * Per op (its `kernel` in csrc/kernels/op_table.h):
 *   rngx_<kernel>_params(dtype, arguments..., &p)   host: checks the call's arguments and derives the numbers its
 *       elements read, once per call; returns NULL, or what is wrong (the glue names the op and the values).
 *   rngx_<kernel>_element_<dtype>(&p, w, x)         the element from its words w (its row's words per element,
 *       rngx_element_words) and, for an op that reads one, its input x: <dtype> f16, bf16 (bit patterns), f32,
 *       f64, or b8 .. b64 (integers); rngx_<kernel>_pair_<dtype>(&p, w, &c, &s) for a paired op.
 * Some ops also have a form with the numbers as plain arguments (rngx_uniform_f32(w, lo, width), ...).
 *
 * On a GPU every multiply and add here is an explicitly rounded intrinsic, so nvcc's default multiply-add
 * contraction cannot change bits; normal's math (dists.h) needs --fmad=false. Host code needs -ffp-contract=off
 * (GCC contracts across statements by default outside ISO C mode). The 16-bit types round through
 * convert_lanes.h, the branch-free forms of convert.h's roundings (the same bits), so loops of them vectorize. */
#ifndef RNGX_ELEMENTS_H
#define RNGX_ELEMENTS_H

#include <stdint.h>
#ifndef __CUDACC__
#include <math.h> /* isfinite, ceil: the host-side derivations */
#endif

#include "convert.h"
#include "convert_lanes.h"
#include "dists.h"

#if defined(__CUDA_ARCH__)
#define RNGX_FMUL(a, b) __fmul_rn(a, b)
#define RNGX_FADD(a, b) __fadd_rn(a, b)
#define RNGX_DMUL(a, b) __dmul_rn(a, b)
#define RNGX_DADD(a, b) __dadd_rn(a, b)
#else
#define RNGX_FMUL(a, b) ((a) * (b))
#define RNGX_FADD(a, b) ((a) + (b))
#define RNGX_DMUL(a, b) ((a) * (b))
#define RNGX_DADD(a, b) ((a) + (b))
#endif

/* The per-call derivations run on the host only. */
#define RNGX_HOST_FN static inline

/* The float types the ops compute in, the integer widths (signedness does not change the bits written) and the
 * float8 types stochastic_round writes. */
typedef enum {
  RNGX_FLOAT16, RNGX_BFLOAT16, RNGX_FLOAT32, RNGX_FLOAT64,
  RNGX_BITS8, RNGX_BITS16, RNGX_BITS32, RNGX_BITS64,
  RNGX_FLOAT8_E4M3FN, RNGX_FLOAT8_E5M2
} rngx_dtype;

/* The numbers an op's elements read, from its rngx_<kernel>_params. */
typedef struct {
  float lo, width, scale; /* <= 32-bit types: lo + u * width (uniform, noise); x * scale (dropout) */
  double lo64, width64, scale64;
  uint32_t keep; /* dropout keeps iff the integer behind u is >= keep, i.e. iff u >= p, exactly */
  uint64_t keep64;
  float mean, std;        /* normal, <= 32-bit types: fl32(z) * std + mean in float32 */
  double mean64, std64;   /* normal, float64 */
  rngx_tn tn;             /* truncated normal, in double */
  float tn_lo, tn_hi;     /* truncated normal, <= 32-bit types: the dtype's values nearest inside [a, b] */
  uint64_t low, range;    /* randint: low + floor(range * x / 2^bits), modulo 2^64 */
  double rate;            /* exponential: E / rate in double; geometric: lambda = -ln(1 - p) */
  float alpha_a, alpha_b1, alpha_b2;        /* alpha dropout, <= 32-bit types: keep * a, (keep - 1) b1 + b2 */
  double alpha_a64, alpha_b164, alpha_b264; /* alpha dropout, float64 */
  rngx_dtype from;        /* stochastic_round: x's dtype (its words per element follow it) */
  int saturate;           /* stochastic_round: values past the target's range clamp to its largest finite value */
} rngx_params;

/* All zeros: the start of every derivation. */
RNGX_FN rngx_params rngx_zero_params(void) {
  rngx_params p;
  memset(&p, 0, sizeof p);
  return p;
}

/* v rounded to a float dtype (through float32 for the 16-bit ones, as torch converts a double), as float32. */
RNGX_FN float rngx_round_to(rngx_dtype dtype, double v) {
  const float f = (float)v; /* out of float32's range: +-inf */
  if (dtype == RNGX_FLOAT16) return rngx_f16_to_f32(rngx_f32_to_f16(f));
  if (dtype == RNGX_BFLOAT16) return rngx_bf16_to_f32(rngx_f32_to_bf16(f));
  return f;
}

/* A double that rounds to a finite float32: below FLT_MAX + half its ulp (the tie rounds to infinity). */
RNGX_FN int rngx_finite_as_float(double v) { return (v < 0 ? -v : v) < 0x1.ffffffp+127; }

/* Element j of an op that takes k = 1, 2 or 4 words per element (docs/stream.md's table): words k j .. k j + k - 1
 * of the key (seed, offset), all in one Philox block. */
RNGX_FN void rngx_element_words(uint64_t seed, uint64_t offset, uint64_t j, int k, uint32_t *w) {
  const rngx_ctr r = rngx_block(seed, offset + rngx_element_block(j, (unsigned)k));
  const unsigned lane = rngx_element_lane(j, (unsigned)k);
  for (int i = 0; i < k; ++i) w[i] = r.v[lane + (unsigned)i];
}

/* ---- bits: the low bits of one word, or two words first-word-high (torch.func._random.bits) ---- */

RNGX_FN uint8_t rngx_bits_element_b8(const rngx_params *p, const uint32_t *w, uint8_t x) {
  (void)p, (void)x;
  return (uint8_t)w[0];
}
RNGX_FN uint16_t rngx_bits_element_b16(const rngx_params *p, const uint32_t *w, uint16_t x) {
  (void)p, (void)x;
  return (uint16_t)w[0];
}
RNGX_FN uint32_t rngx_bits_element_b32(const rngx_params *p, const uint32_t *w, uint32_t x) {
  (void)p, (void)x;
  return w[0];
}
RNGX_FN uint64_t rngx_bits_element_b64(const rngx_params *p, const uint32_t *w, uint64_t x) {
  (void)p, (void)x;
  return (uint64_t)w[0] << 32 | w[1];
}

/* ---- uniform: lo + u * width in float32 (u the dtype's: rngx_u24, u11 or u8), rounded to the dtype ---- */

/* As torch.func._random: the bounds rounded to the output dtype, their difference in float32 rounded again; the
 * three must be finite in the dtype. */
RNGX_HOST_FN const char *rngx_uniform_params(rngx_dtype dtype, double low, double high, rngx_params *out) {
  if (!(isfinite(low) && isfinite(high) && isfinite(high - low))) return "low, high and high - low must be finite";
  if (!(low <= high)) return "low must be <= high";
  rngx_params p = rngx_zero_params();
  const float lo = rngx_round_to(dtype, low), hi = rngx_round_to(dtype, high);
  p.lo = lo, p.width = rngx_round_to(dtype, hi - lo), p.lo64 = low, p.width64 = high - low;
  if (dtype != RNGX_FLOAT64 && !(isfinite(p.lo) && isfinite(hi) && isfinite(p.width)))
    return "low, high and high - low must be finite in the output dtype";
  *out = p;
  return 0;
}

RNGX_FN float rngx_uniform_value(float u, float lo, float width) { return RNGX_FADD(lo, RNGX_FMUL(u, width)); }
RNGX_FN float rngx_uniform_f32(uint32_t w, float lo, float width) { return rngx_uniform_value(rngx_u24(w), lo, width); }
RNGX_FN uint16_t rngx_uniform_f16(uint32_t w, float lo, float width) {
  return rngx_f32_to_f16_lanes(rngx_uniform_value(rngx_u11(w), lo, width));
}
RNGX_FN uint16_t rngx_uniform_bf16(uint32_t w, float lo, float width) {
  return rngx_f32_to_bf16_lanes(rngx_uniform_value(rngx_u8(w), lo, width));
}
RNGX_FN double rngx_uniform_f64(uint32_t w0, uint32_t w1, double low, double width) {
  return RNGX_DADD(low, RNGX_DMUL(rngx_u53(w0, w1), width));
}

RNGX_FN uint16_t rngx_uniform_element_f16(const rngx_params *p, const uint32_t *w, uint16_t x) {
  (void)x;
  return rngx_uniform_f16(w[0], p->lo, p->width);
}
RNGX_FN uint16_t rngx_uniform_element_bf16(const rngx_params *p, const uint32_t *w, uint16_t x) {
  (void)x;
  return rngx_uniform_bf16(w[0], p->lo, p->width);
}
RNGX_FN float rngx_uniform_element_f32(const rngx_params *p, const uint32_t *w, float x) {
  (void)x;
  return rngx_uniform_f32(w[0], p->lo, p->width);
}
RNGX_FN double rngx_uniform_element_f64(const rngx_params *p, const uint32_t *w, double x) {
  (void)x;
  return rngx_uniform_f64(w[0], w[1], p->lo64, p->width64);
}

/* ---- quantize_noise: x + (lo + u24 * width), lo = fl32(-half), width = fl32(2 half); x widened to float32 ---- */

RNGX_HOST_FN const char *rngx_quantize_noise_params(rngx_dtype dtype, double half, rngx_params *out) {
  if (!(isfinite(half) && half >= 0)) return "half must be finite and >= 0";
  if (dtype == RNGX_FLOAT64 ? !isfinite(2 * half) : !rngx_finite_as_float(2 * half))
    return "half is too large: 2 * half must be finite in the compute type";
  rngx_params p = rngx_zero_params();
  p.lo = (float)-half, p.width = (float)(2 * half), p.lo64 = -half, p.width64 = 2 * half;
  *out = p;
  return 0;
}

RNGX_FN float rngx_noise_f32(float x, uint32_t w, float lo, float width) {
  return RNGX_FADD(x, RNGX_FADD(lo, RNGX_FMUL(rngx_u24(w), width)));
}
RNGX_FN double rngx_noise_f64(double x, uint32_t w0, uint32_t w1, double lo, double width) {
  return RNGX_DADD(x, RNGX_DADD(lo, RNGX_DMUL(rngx_u53(w0, w1), width)));
}

RNGX_FN uint16_t rngx_quantize_noise_element_f16(const rngx_params *p, const uint32_t *w, uint16_t x) {
  return rngx_f32_to_f16_lanes(rngx_noise_f32(rngx_f16_to_f32_lanes(x), w[0], p->lo, p->width));
}
RNGX_FN uint16_t rngx_quantize_noise_element_bf16(const rngx_params *p, const uint32_t *w, uint16_t x) {
  return rngx_f32_to_bf16_lanes(rngx_noise_f32(rngx_bf16_to_f32(x), w[0], p->lo, p->width));
}
RNGX_FN float rngx_quantize_noise_element_f32(const rngx_params *p, const uint32_t *w, float x) {
  return rngx_noise_f32(x, w[0], p->lo, p->width);
}
RNGX_FN double rngx_quantize_noise_element_f64(const rngx_params *p, const uint32_t *w, double x) {
  return rngx_noise_f64(x, w[0], w[1], p->lo64, p->width64);
}

/* ---- dropout: x * scale where u >= p, else +0; bernoulli is 1 exactly where dropout drops ---- */

/* keep iff u >= p, i.e. iff the integer m behind u = m * 2^-bits is >= ceil(p * 2^bits) (exact). */
RNGX_HOST_FN const char *rngx_dropout_params(rngx_dtype dtype, double p, rngx_params *out) {
  (void)dtype;
  if (!(p >= 0 && p <= 1)) return "p must be in [0, 1]"; /* NaN too */
  const double scale = 1.0 / (1.0 - p);
  rngx_params d = rngx_zero_params();
  d.scale = (float)scale, d.scale64 = scale, d.keep = (uint32_t)ceil(p * 0x1p24), d.keep64 = (uint64_t)ceil(p * 0x1p53);
  *out = d;
  return 0;
}

RNGX_FN int rngx_kept_f32(uint32_t w, uint32_t keep) { return (w & RNGX_U24_MASK) >= keep; }
RNGX_FN int rngx_kept_f64(uint32_t w0, uint32_t w1, uint64_t keep) { return rngx_m53(w0, w1) >= keep; }
/* v where keep, else +0: its bits and-ed with all ones or all zeros. A select, not a multiply by 0 (a dropped NaN
 * gives 0), and branch free, as the keep/drop pattern is random (and a loop of it vectorizes). */
RNGX_FN float rngx_masked_f32(int keep, float v) { return rngx_bits_f32(rngx_f32_bits(v) & (0u - (uint32_t)keep)); }
RNGX_FN double rngx_masked_f64(int keep, double v) { return rngx_bits_f64(rngx_f64_bits(v) & (0u - (uint64_t)keep)); }
RNGX_FN float rngx_dropout_f32(float x, uint32_t w, uint32_t keep, float scale) {
  return rngx_masked_f32(rngx_kept_f32(w, keep), RNGX_FMUL(x, scale));
}
RNGX_FN double rngx_dropout_f64(double x, uint32_t w0, uint32_t w1, uint64_t keep, double scale) {
  return rngx_masked_f64(rngx_kept_f64(w0, w1, keep), RNGX_DMUL(x, scale));
}

/* The 16-bit types mask after the rounding (+0 is all zero bits in both). */
RNGX_FN uint16_t rngx_dropout_element_f16(const rngx_params *p, const uint32_t *w, uint16_t x) {
  return (uint16_t)(rngx_f32_to_f16_lanes(RNGX_FMUL(rngx_f16_to_f32_lanes(x), p->scale)) &
                    (0u - (uint32_t)rngx_kept_f32(w[0], p->keep)));
}
RNGX_FN uint16_t rngx_dropout_element_bf16(const rngx_params *p, const uint32_t *w, uint16_t x) {
  return (uint16_t)(rngx_f32_to_bf16_lanes(RNGX_FMUL(rngx_bf16_to_f32(x), p->scale)) &
                    (0u - (uint32_t)rngx_kept_f32(w[0], p->keep)));
}
RNGX_FN float rngx_dropout_element_f32(const rngx_params *p, const uint32_t *w, float x) {
  return rngx_dropout_f32(x, w[0], p->keep, p->scale);
}
RNGX_FN double rngx_dropout_element_f64(const rngx_params *p, const uint32_t *w, double x) {
  return rngx_dropout_f64(x, w[0], w[1], p->keep64, p->scale64);
}

/* ---- normal: one Box-Muller step in double (dists.h) per pair of elements ---- */

/* mean and std finite (std >= 0), and finite in float32 for the <= 32-bit types, which compute in it. */
RNGX_HOST_FN const char *rngx_normal_params(rngx_dtype dtype, double mean, double std, rngx_params *out) {
  if (!isfinite(mean)) return "mean must be finite";
  if (!(isfinite(std) && std >= 0)) return "std must be finite and >= 0";
  if (dtype != RNGX_FLOAT64 && !(rngx_finite_as_float(mean) && rngx_finite_as_float(std)))
    return "mean and std must be finite in float32, the compute type";
  rngx_params p = rngx_zero_params();
  p.mean = (float)mean, p.std = (float)std, p.mean64 = mean, p.std64 = std;
  *out = p;
  return 0;
}

/* Element j is pair j / 2's cosine output (j even) or its sine output (j odd), z * std + mean: fl32(z) in float32
 * for the float32 family. A pair's words: rngx_element_words(seed, offset, j / 2, 2, w), four for float64. */
RNGX_FN float rngx_normal_scale_f32(double z, float mean, float std) {
  return RNGX_FADD(RNGX_FMUL((float)z, std), mean);
}
RNGX_FN double rngx_normal_scale_f64(double z, double mean, double std) { return RNGX_DADD(RNGX_DMUL(z, std), mean); }
RNGX_FN float rngx_normal_f32(uint32_t w0, uint32_t w1, int odd, float mean, float std) {
  const rngx_pair z = rngx_normal32(w0, w1);
  return rngx_normal_scale_f32(odd ? z.s : z.c, mean, std);
}
RNGX_FN double rngx_normal_f64(const uint32_t *w, int odd, double mean, double std) {
  const rngx_pair z = rngx_normal64(w);
  return rngx_normal_scale_f64(odd ? z.s : z.c, mean, std);
}

/* Both elements of a pair: c the even one, s the odd one. */
RNGX_FN void rngx_normal_pair_f16(const rngx_params *p, const uint32_t *w, uint16_t *c, uint16_t *s) {
  const rngx_pair z = rngx_normal32(w[0], w[1]);
  *c = rngx_f32_to_f16_lanes(rngx_normal_scale_f32(z.c, p->mean, p->std));
  *s = rngx_f32_to_f16_lanes(rngx_normal_scale_f32(z.s, p->mean, p->std));
}
RNGX_FN void rngx_normal_pair_bf16(const rngx_params *p, const uint32_t *w, uint16_t *c, uint16_t *s) {
  const rngx_pair z = rngx_normal32(w[0], w[1]);
  *c = rngx_f32_to_bf16_lanes(rngx_normal_scale_f32(z.c, p->mean, p->std));
  *s = rngx_f32_to_bf16_lanes(rngx_normal_scale_f32(z.s, p->mean, p->std));
}
RNGX_FN void rngx_normal_pair_f32(const rngx_params *p, const uint32_t *w, float *c, float *s) {
  const rngx_pair z = rngx_normal32(w[0], w[1]);
  *c = rngx_normal_scale_f32(z.c, p->mean, p->std);
  *s = rngx_normal_scale_f32(z.s, p->mean, p->std);
}
RNGX_FN void rngx_normal_pair_f64(const rngx_params *p, const uint32_t *w, double *c, double *s) {
  const rngx_pair z = rngx_normal64(w);
  *c = rngx_normal_scale_f64(z.c, p->mean64, p->std64);
  *s = rngx_normal_scale_f64(z.s, p->mean64, p->std64);
}

/* ---- truncated normal: the inverse CDF in double (dists.h), clamped to [a, b] ---- */

/* e^y for -745 < y <= 0: y = k ln2 + r with |r| <= ln2 / 2, e^r by its Taylor series to r^14 (nested), then times
 * 2^k in two steps of normal powers of two. Only the bounds use it, once per call. */
RNGX_HOST_FN double rngx_exp_neg(double y) {
  const double kd = (double)(int64_t)(y * 1.44269504088896338700 - 0.5); /* round(y / ln 2) for y <= 0 */
  const double r = (y - kd * RNGX_LN2_HI) - kd * RNGX_LN2_LO;
  double e = 1.0;
  for (int n = 14; n >= 1; --n) e = 1.0 + r / n * e;
  const int64_t k = (int64_t)kd, k1 = k / 2, k2 = k - k1;
  return e * rngx_bits_f64((uint64_t)(1023 + k1) << 52) * rngx_bits_f64((uint64_t)(1023 + k2) << 52);
}

/* Phi(x) for x <= 0: 1/2 + pdf(x) * sum x^(2n+1) / (2n+1)!! above -3 (Marsaglia's series), below it the
 * continued fraction pdf(x) / (|x| + 1/(|x| + 2/(|x| + 3/(...)))), both to a fixed depth. */
RNGX_HOST_FN double rngx_cdf_lower(double x) {
  const double pdf = 0.398942280401432677940 * rngx_exp_neg(-0.5 * (x * x));
  if (x > -3.0) {
    double s = x, t = x;
    for (int n = 1; n < 120; ++n) s += (t = t * (x * x) / (2 * n + 1));
    return 0.5 + pdf * s;
  }
  double f = -x;
  for (int n = 400; n >= 1; --n) f = -x + n / f;
  return pdf / f;
}

/* Phi(x), the standard normal CDF, with the project's own exp. */
RNGX_HOST_FN double rngx_normal_cdf(double x) {
  x = x < -38.0 ? -38.0 : x > 38.0 ? 38.0 : x;
  return x <= 0 ? rngx_cdf_lower(x) : 1.0 - rngx_cdf_lower(-x);
}

/* The dtype's value next to v (a value of the dtype) towards +inf (up) or -inf. */
RNGX_HOST_FN float rngx_step_in(rngx_dtype dt, float v, int up) {
  if (dt == RNGX_FLOAT32) {
    const uint32_t b = rngx_f32_bits(v);
    if ((b & 0x7FFFFFFFu) == 0) return rngx_bits_f32(up ? 1u : 0x80000001u);
    return rngx_bits_f32((v > 0) == up ? b + 1 : b - 1);
  }
  const uint16_t h = dt == RNGX_FLOAT16 ? rngx_f32_to_f16(v) : rngx_f32_to_bf16(v);
  const uint16_t s = (h & 0x7FFFu) == 0 ? (up ? 1u : 0x8001u) : (uint16_t)((v > 0) == up ? h + 1 : h - 1);
  return dt == RNGX_FLOAT16 ? rngx_f16_to_f32(s) : rngx_bf16_to_f32(s);
}

/* mean finite, std finite and > 0, a < b finite, and a value of the dtype in [a, b]. Sampling happens on the side
 * where both bounds are in the lower tail or straddle 0 (flip when alpha + beta > 0), where Phi keeps its relative
 * precision. Bounds past 37 standard deviations are taken at 37. */
RNGX_HOST_FN const char *rngx_truncnorm_params(rngx_dtype dtype, double mean, double std, double a, double b,
                                               rngx_params *out) {
  if (!isfinite(mean)) return "mean must be finite";
  if (!(isfinite(std) && std > 0)) return "std must be finite and > 0";
  if (!(isfinite(a) && isfinite(b))) return "a and b must be finite";
  if (!(a < b)) return "a must be < b";
  double al = (a - mean) / std, be = (b - mean) / std;
  al = al < -37.0 ? -37.0 : al > 37.0 ? 37.0 : al;
  be = be < -37.0 ? -37.0 : be > 37.0 ? 37.0 : be;
  const int flip = al + be > 0;
  const double lo = flip ? -be : al, hi = flip ? -al : be;
  const double pa = rngx_normal_cdf(lo), pb = rngx_normal_cdf(hi);
  rngx_params p = rngx_zero_params();
  p.tn.pa = pa, p.tn.pw = pb - pa, p.tn.mean = mean, p.tn.std = std, p.tn.a = a, p.tn.b = b, p.tn.flip = flip;
  if (dtype != RNGX_FLOAT64) {
    const float ra = rngx_round_to(dtype, a), rb = rngx_round_to(dtype, b);
    p.tn_lo = ra < a ? rngx_step_in(dtype, ra, 1) : ra;
    p.tn_hi = rb > b ? rngx_step_in(dtype, rb, 0) : rb;
    if (!(p.tn_lo <= p.tn_hi)) return "no value of the output dtype lies in [a, b]";
  }
  *out = p;
  return 0;
}

/* <= 32-bit types: the value rounded to the dtype (through float32), then clamped to [tn_lo, tn_hi]. */
RNGX_FN float rngx_clamp_f32(float v, float lo, float hi) { return v < lo ? lo : v > hi ? hi : v; }

/* The output of the standard-space value z = Phi^-1(rngx_truncnorm_p(..)): the CPU loops compute z in passes. */
RNGX_FN uint16_t rngx_truncnorm_of_z_f16(const rngx_params *p, double z) {
  const float v = rngx_f16_to_f32_lanes(rngx_f32_to_f16_lanes((float)rngx_truncnorm_scale(z, &p->tn)));
  return rngx_f32_to_f16_lanes(rngx_clamp_f32(v, p->tn_lo, p->tn_hi));
}
RNGX_FN uint16_t rngx_truncnorm_of_z_bf16(const rngx_params *p, double z) {
  const float v = rngx_bf16_to_f32(rngx_f32_to_bf16_lanes((float)rngx_truncnorm_scale(z, &p->tn)));
  return rngx_f32_to_bf16_lanes(rngx_clamp_f32(v, p->tn_lo, p->tn_hi));
}
RNGX_FN float rngx_truncnorm_of_z_f32(const rngx_params *p, double z) {
  return rngx_clamp_f32((float)rngx_truncnorm_scale(z, &p->tn), p->tn_lo, p->tn_hi);
}
RNGX_FN double rngx_truncnorm_of_z_f64(const rngx_params *p, double z) { return rngx_truncnorm_scale(z, &p->tn); }

#define RNGX_TRUNCNORM_ELEMENT(sfx, T)                                                                            \
  RNGX_FN T rngx_truncnorm_element_##sfx(const rngx_params *p, const uint32_t *w, T x) {                          \
    (void)x;                                                                                                      \
    return rngx_truncnorm_of_z_##sfx(p, rngx_ndtri(rngx_truncnorm_p(rngx_m53(w[0], w[1]), &p->tn)));              \
  }
RNGX_TRUNCNORM_ELEMENT(f16, uint16_t)
RNGX_TRUNCNORM_ELEMENT(bf16, uint16_t)
RNGX_TRUNCNORM_ELEMENT(f32, float)
RNGX_TRUNCNORM_ELEMENT(f64, double)

/* ---- bernoulli: 1 iff u < p, dropout's u (24 bits, 53 for float64) ---- */

/* A float p: 1 iff the integer behind u is below dropout's keep threshold ceil(p 2^bits). */
RNGX_HOST_FN const char *rngx_bernoulli_params(rngx_dtype dtype, double p, rngx_params *out) {
  return rngx_dropout_params(dtype, p, out);
}

RNGX_FN uint16_t rngx_bernoulli_element_f16(const rngx_params *p, const uint32_t *w, uint16_t x) {
  (void)x;
  return rngx_kept_f32(w[0], p->keep) ? 0 : 0x3C00u;
}
RNGX_FN uint16_t rngx_bernoulli_element_bf16(const rngx_params *p, const uint32_t *w, uint16_t x) {
  (void)x;
  return rngx_kept_f32(w[0], p->keep) ? 0 : 0x3F80u;
}
RNGX_FN float rngx_bernoulli_element_f32(const rngx_params *p, const uint32_t *w, float x) {
  (void)x;
  return rngx_kept_f32(w[0], p->keep) ? 0.0f : 1.0f;
}
RNGX_FN double rngx_bernoulli_element_f64(const rngx_params *p, const uint32_t *w, double x) {
  (void)x;
  return rngx_kept_f64(w[0], w[1], p->keep64) ? 0.0 : 1.0;
}

/* A tensor p: its element x, in the output dtype, compared with u in float32 (double for float64), exactly. */
RNGX_FN uint16_t rngx_bernoulli_tensor_element_f16(const rngx_params *p, const uint32_t *w, uint16_t x) {
  (void)p;
  return rngx_u24(w[0]) < rngx_f16_to_f32_lanes(x) ? 0x3C00u : 0;
}
RNGX_FN uint16_t rngx_bernoulli_tensor_element_bf16(const rngx_params *p, const uint32_t *w, uint16_t x) {
  (void)p;
  return rngx_u24(w[0]) < rngx_bf16_to_f32(x) ? 0x3F80u : 0;
}
RNGX_FN float rngx_bernoulli_tensor_element_f32(const rngx_params *p, const uint32_t *w, float x) {
  (void)p;
  return rngx_u24(w[0]) < x ? 1.0f : 0.0f;
}
RNGX_FN double rngx_bernoulli_tensor_element_f64(const rngx_params *p, const uint32_t *w, double x) {
  (void)p;
  return rngx_u53(w[0], w[1]) < x ? 1.0 : 0.0;
}

/* ---- randint: low + floor(range * x / 2^bits), the sum modulo 2^64, in the dtype's low bits ---- */

/* The high 64 bits of a * b, in 32-bit pieces (exact on every compiler and device). */
RNGX_FN uint64_t rngx_mulhi64(uint64_t a, uint64_t b) {
  const uint64_t a0 = a & 0xFFFFFFFFu, a1 = a >> 32, b0 = b & 0xFFFFFFFFu, b1 = b >> 32;
  const uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
  const uint64_t mid = (p00 >> 32) + (p01 & 0xFFFFFFFFu) + (p10 & 0xFFFFFFFFu);
  return p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
}

/* Ranges up to 2^32, every output type: floor(range * x / 2^64), x = w0 2^32 + w1 (two words, first high), range = r,
 * or 2^32 when r = 0 (then the value is w0). 32 x 32-bit products only, so the loops vectorize. */
RNGX_FN uint32_t rngx_randint32(uint32_t r, uint32_t w0, uint32_t w1) {
  const uint64_t v = ((uint64_t)r * w0 + (((uint64_t)r * w1) >> 32)) >> 32;
  return r == 0 ? w0 : (uint32_t)v;
}

/* int64 outputs, 2^32 < range < 2^64: floor(range * x / 2^128), x = w0 2^96 + w1 2^64 + w2 2^32 + w3. */
RNGX_FN uint64_t rngx_randint64(uint64_t range, const uint32_t *w) {
  const uint64_t hi = (uint64_t)w[0] << 32 | w[1], lo = (uint64_t)w[2] << 32 | w[3];
  const uint64_t mid = range * hi, carry_in = rngx_mulhi64(range, lo);
  return rngx_mulhi64(range, hi) + (mid + carry_in < mid);
}

/* [low, high) with low < high, within the output dtype's values [min, max]; below 64 bits the range is at most
 * 2^32 (whatever min and max say). */
RNGX_HOST_FN const char *rngx_randint_params(rngx_dtype dtype, int64_t min, int64_t max, int64_t low, int64_t high,
                                             rngx_params *out) {
  if (!(low < high)) return "low must be < high";
  if (!(low >= min && high - 1 <= max)) return "[low, high) must lie within the output dtype's values";
  const uint64_t range = (uint64_t)high - (uint64_t)low;
  if (dtype != RNGX_BITS64 && range > 0x100000000ull) return "high - low must be at most 2^32 below 64 bits";
  rngx_params p = rngx_zero_params();
  p.low = (uint64_t)low, p.range = range;
  *out = p;
  return 0;
}

/* Ranges up to 2^32 (every 8-, 16- and 32-bit range): two words; the sum formed in 32 bits below int64. */
RNGX_FN uint8_t rngx_randint_element_b8(const rngx_params *p, const uint32_t *w, uint8_t x) {
  (void)x;
  return (uint8_t)((uint32_t)p->low + rngx_randint32((uint32_t)p->range, w[0], w[1]));
}
RNGX_FN uint16_t rngx_randint_element_b16(const rngx_params *p, const uint32_t *w, uint16_t x) {
  (void)x;
  return (uint16_t)((uint32_t)p->low + rngx_randint32((uint32_t)p->range, w[0], w[1]));
}
RNGX_FN uint32_t rngx_randint_element_b32(const rngx_params *p, const uint32_t *w, uint32_t x) {
  (void)x;
  return (uint32_t)p->low + rngx_randint32((uint32_t)p->range, w[0], w[1]);
}
RNGX_FN uint64_t rngx_randint_element_b64(const rngx_params *p, const uint32_t *w, uint64_t x) {
  (void)x;
  return p->low + rngx_randint32((uint32_t)p->range, w[0], w[1]);
}
/* int64 with a range above 2^32: four words. */
RNGX_FN uint64_t rngx_randint_element_b64_wide(const rngx_params *p, const uint32_t *w, uint64_t x) {
  (void)x;
  return p->low + rngx_randint64(p->range, w);
}

/* ---- exponential: E / rate in double, rounded to the dtype, kept inside its positive finite values ---- */

RNGX_HOST_FN const char *rngx_exponential_params(rngx_dtype dtype, double rate, rngx_params *out) {
  (void)dtype;
  if (!(isfinite(rate) && rate > 0)) return "rate must be finite and > 0";
  rngx_params p = rngx_zero_params();
  p.rate = rate;
  *out = p;
  return 0;
}

/* E = -ln u with u in (0, 1), never 0 or 1, so E is finite and > 0. float32, float16, bfloat16: one word,
 * u = (2 w + 1) 2^-33 (odd multiples of 2^-33; the short log). */
RNGX_FN double rngx_exponential32(uint32_t w) {
  const double u = (rngx_small_to_f64(w) * 2.0 + 1.0) * 0x1p-33;
  return -rngx_log(u, 0);
}

/* float64: two words, m = ((w0 & 0xFFFFF) << 32) | w1 (52 bits), u = (2 m + 1) 2^-53 (the full log). 2 m + 1 < 2^53
 * in two exact pieces. */
RNGX_FN double rngx_exponential64(uint32_t w0, uint32_t w1) {
  const double v = rngx_small_to_f64(w0 & 0xFFFFFu) * 0x1p33 + (rngx_small_to_f64(w1) * 2.0 + 1.0);
  return -rngx_log(v * 0x1p-53, 1);
}

/* A value that rounds to 0 becomes the dtype's smallest positive (subnormal) value, one that overflows its largest
 * finite value. float16 and bfloat16 as bit patterns, `inf` the type's infinity (0x7C00, 0x7F80). */
RNGX_FN float rngx_exp_clamp_f32(float v) { return v == 0.0f ? 0x1p-149f : v > 0x1.fffffep127f ? 0x1.fffffep127f : v; }
RNGX_FN uint16_t rngx_exp_clamp_16(uint16_t h, uint16_t inf) { return h == 0 ? 1 : h == inf ? (uint16_t)(inf - 1) : h; }
RNGX_FN double rngx_exp_clamp_f64(double v) {
  return v == 0.0 ? 0x1p-1074 : v > 0x1.fffffffffffffp+1023 ? 0x1.fffffffffffffp+1023 : v;
}

RNGX_FN uint16_t rngx_exponential_element_f16(const rngx_params *p, const uint32_t *w, uint16_t x) {
  (void)x;
  return rngx_exp_clamp_16(rngx_f32_to_f16_lanes((float)(rngx_exponential32(w[0]) / p->rate)), 0x7C00u);
}
RNGX_FN uint16_t rngx_exponential_element_bf16(const rngx_params *p, const uint32_t *w, uint16_t x) {
  (void)x;
  return rngx_exp_clamp_16(rngx_f32_to_bf16_lanes((float)(rngx_exponential32(w[0]) / p->rate)), 0x7F80u);
}
RNGX_FN float rngx_exponential_element_f32(const rngx_params *p, const uint32_t *w, float x) {
  (void)x;
  return rngx_exp_clamp_f32((float)(rngx_exponential32(w[0]) / p->rate));
}
RNGX_FN double rngx_exponential_element_f64(const rngx_params *p, const uint32_t *w, double x) {
  (void)x;
  return rngx_exp_clamp_f64(rngx_exponential64(w[0], w[1]) / p->rate);
}

/* ---- stochastic_round: x rounded to a lower-precision float type, away from zero with probability equal to its
 * distance from the value below it (in magnitude) over the gap, decided by comparing integers (docs/stream.md) ---- */

/* A target type: its mantissa bits and exponent bias; its largest finite value as float32 and float64 bits; where
 * x.to(dtype) stops giving that value (the smallest float32 magnitude, over32, and the smallest double whose
 * float32 rounding reaches it, over64); and the target's magnitude bits of its largest finite value, of x.to(dtype)
 * from over on, and of its NaN. float8_e4m3fn has no infinity, and torch (>= 2.13) saturates there: over_bits is
 * its largest value. */
typedef struct {
  uint32_t m, bias, sign_shift;
  uint32_t max32, over32;
  uint64_t max64, over64;
  uint32_t max_bits, over_bits, nan_bits;
} rngx_sround_target;

/* X(name, m, bias, sign_shift, max32, over32, max64, over64, max_bits, over_bits, nan_bits): docs/stream.md's table. */
#define RNGX_SROUND_TARGETS(X)                                                                                    \
  X(bf16, 7, 127, 15, 0x7F7F0000, 0x7F7F8000, 0x47EFE00000000000, 0x47EFEFFFF0000000, 0x7F7F, 0x7F80, 0x7FC0)         \
  X(f16, 10, 15, 15, 0x477FE000, 0x477FF000, 0x40EFFC0000000000, 0x40EFFDFFF0000000, 0x7BFF, 0x7C00, 0x7E00)          \
  X(e4m3, 3, 7, 7, 0x43E00000, 0x7F800000, 0x407C000000000000, 0x7FF0000000000000, 0x7E, 0x7E, 0x7F)                  \
  X(e5m2, 2, 15, 7, 0x47600000, 0x47700000, 0x40EC000000000000, 0x40EDFFFFF0000000, 0x7B, 0x7C, 0x7F)
/* rngx_sround_<name>(): a target's constants. */
#define RNGX_SROUND_TARGET(name, ...)                                                                             \
  RNGX_FN rngx_sround_target rngx_sround_##name(void) {                                                           \
    const rngx_sround_target t = {__VA_ARGS__};                                                                   \
    return t;                                                                                                     \
  }
RNGX_SROUND_TARGETS(RNGX_SROUND_TARGET)

/* |x| as float32 bits a (at most the target's largest finite value) rounded to the target with the word w, as the
 * target's magnitude bits. Where the target is normal its gap is 2^(23 - m) float32 ulps: the low dn = 23 - m bits
 * of a are the distance below, F = those bits << (32 - dn), and the value goes up iff w < F (so with probability
 * distance / gap, exactly); as F's low 32 - dn bits are 0 that is w >> (32 - dn) < the distance, a compare of two
 * numbers below 2^dn (signed, which vectorizes in one instruction). A carry runs into the exponent as it should.
 * Below the target's smallest normal (float32 exponent field top) the gap is fixed: |x| = M 2^(e1 - 150) is
 * d = 23 - m + top - e1 bits finer, and M 2^(32 - d) in 64 bits holds the value below (high word) and the distance's
 * top 32 bits (low word). */
RNGX_FN uint32_t rngx_sround_mag32(uint32_t a, uint32_t w, uint32_t m, uint32_t bias) {
  const uint32_t dn = 23 - m, e = a >> 23, e1 = e > 1 ? e : 1, top = 128 - bias;
  const int32_t up = (int32_t)(w >> (32 - dn)) < (int32_t)(a & ((1u << dn) - 1));
  const uint32_t normal = (a >> dn) + (uint32_t)up - ((127 - bias) << m);
  if (bias == 127) return normal; /* bfloat16 has float32's exponents (and subnormals): always the bit pattern's */
  const uint32_t d = dn + top - e1; /* used only where e1 < top */
  const uint64_t v = ((uint64_t)((a & 0x7FFFFFu) | (e != 0 ? 0x800000u : 0)) << 32) >> (d < 63 ? d : 63);
  const uint32_t small = (uint32_t)(v >> 32) + (uint32_t)(w < (uint32_t)v);
  return e1 < top ? small : normal;
}

/* The same for |x| as float64 bits a with the 64-bit u = w0 2^32 + w1: the distance's top 64 bits. */
RNGX_FN uint32_t rngx_sround_mag64(uint64_t a, uint64_t u, uint32_t m, uint32_t bias) {
  const uint64_t dn = 52 - m, e = a >> 52, e1 = e > 1 ? e : 1, top = 1024 - bias;
  const uint64_t normal = (a >> dn) + (uint64_t)(u < a << (64 - dn)) - ((uint64_t)(1023 - bias) << m);
  const uint64_t big = (a & 0xFFFFFFFFFFFFFull) | (e != 0 ? 1ull << 52 : 0), d = dn + top - e1; /* d > dn */
  const uint64_t below = big >> (d < 63 ? d : 63);
  /* the shifts stay below 64 for every d, those of the branch not taken too (d is 0 .. 45 there) */
  const uint64_t dist = d <= 64 ? big << ((64 - d) & 63) : big >> (d - 64 < 63 ? d - 64 : 63);
  return (uint32_t)(e1 < top ? below + (uint64_t)(u < dist) : normal);
}

/* The whole element from x's float32 bits b (float16 and bfloat16 inputs widened exactly): NaN stays NaN; past the
 * largest finite value, x.to(dtype)'s value, or with saturate that largest value; else the rounding. The sign is
 * x's throughout (-0 stays -0). */
RNGX_FN uint32_t rngx_sround32(uint32_t b, uint32_t w, int saturate, rngx_sround_target t) {
  const uint32_t a = b & 0x7FFFFFFFu, sign = (b >> 31) << t.sign_shift;
  const int32_t sa = (int32_t)a; /* below 2^31: signed compares, one instruction each in a vector */
  const uint32_t past = saturate || sa < (int32_t)t.over32 ? t.max_bits : t.over_bits;
  return sign | (sa > 0x7F800000 ? t.nan_bits : sa <= (int32_t)t.max32 ? rngx_sround_mag32(a, w, t.m, t.bias) : past);
}

/* The rounding alone, sign included, right where |x| is at most the target's largest value; *past |= 1 where it
 * is not (NaN or past it), where only rngx_sround32 gives the element. The CPU loops (loops.c) run this over a span
 * and redo the span with the element in the rare case that anything was past. */
RNGX_FN uint32_t rngx_sround32_in_range(uint32_t b, uint32_t w, rngx_sround_target t, uint32_t *past) {
  const uint32_t a = b & 0x7FFFFFFFu;
  *past |= (uint32_t)((int32_t)a > (int32_t)t.max32);
  if (t.bias == 127) /* bfloat16: x's top half, sign included, plus the carry (which stays below the sign here) */
    return (b >> 16) + (uint32_t)((int32_t)(w >> 16) < (int32_t)(b & 0xFFFFu));
  return (b >> 31) << t.sign_shift | rngx_sround_mag32(a, w, t.m, t.bias);
}

RNGX_FN uint32_t rngx_sround64(uint64_t b, uint32_t w0, uint32_t w1, int saturate, rngx_sround_target t) {
  const uint64_t a = b & 0x7FFFFFFFFFFFFFFFull, u = (uint64_t)w0 << 32 | w1;
  const uint32_t sign = (uint32_t)(b >> 63) << t.sign_shift;
  const uint32_t past = saturate || a < t.over64 ? t.max_bits : t.over_bits;
  return sign | (a > 0x7FF0000000000000ull ? t.nan_bits : a <= t.max64 ? rngx_sround_mag64(a, u, t.m, t.bias) : past);
}

/* The (input, target) pairs: a target of lower precision (fewer mantissa bits) than the input. */
RNGX_FN int rngx_sround_pair(rngx_dtype from, rngx_dtype to) {
  const int fp8 = to == RNGX_FLOAT8_E4M3FN || to == RNGX_FLOAT8_E5M2;
  return from == RNGX_FLOAT32 || from == RNGX_FLOAT64 ? fp8 || to == RNGX_BFLOAT16 || to == RNGX_FLOAT16
         : from == RNGX_FLOAT16                      ? fp8 || to == RNGX_BFLOAT16
         : from == RNGX_BFLOAT16                     ? fp8
                                                     : 0;
}

/* dtype: the target; from: x's dtype. */
RNGX_HOST_FN const char *rngx_sround_params(rngx_dtype dtype, rngx_dtype from, int saturate, rngx_params *out) {
  if (!rngx_sround_pair(from, dtype))
    return "dtype must be bfloat16, float16, float8_e4m3fn or float8_e5m2, of lower precision than x's dtype";
  rngx_params p = rngx_zero_params();
  p.from = from, p.saturate = saturate != 0;
  *out = p;
  return 0;
}

RNGX_FN uint32_t rngx_sround64_in_range(uint64_t b, uint32_t w0, uint32_t w1, rngx_sround_target t, uint32_t *past) {
  const uint64_t a = b & 0x7FFFFFFFFFFFFFFFull;
  *past |= (uint32_t)(a > t.max64);
  return (uint32_t)(b >> 63) << t.sign_shift | rngx_sround_mag64(a, (uint64_t)w0 << 32 | w1, t.m, t.bias);
}

/* rngx_sround_element_<input>_<target>: x's float16 and bfloat16 as bits, the targets' bits out; its input type
 * rngx_sround_input_<input>_<target>; and rngx_sround_in_range_<input>_<target>, the loops' fast form
 * (rngx_sround32_in_range). */
#define RNGX_SROUND_ELEMENT(in, TI, out, TO, bits_of)                                                            \
  typedef TI rngx_sround_input_##in##_##out;                                                                      \
  RNGX_FN TO rngx_sround_element_##in##_##out(const rngx_params *p, const uint32_t *w, TI x) {                    \
    return (TO)rngx_sround32(bits_of(x), w[0], p->saturate, rngx_sround_##out());                                 \
  }                                                                                                               \
  RNGX_FN TO rngx_sround_in_range_##in##_##out(const uint32_t *w, TI x, uint32_t *past) {                         \
    return (TO)rngx_sround32_in_range(bits_of(x), w[0], rngx_sround_##out(), past);                              \
  }
#define RNGX_SROUND_F16_BITS(x) rngx_f32_bits(rngx_f16_to_f32_lanes(x))
#define RNGX_SROUND_BF16_BITS(x) ((uint32_t)(x) << 16)
RNGX_SROUND_ELEMENT(f32, float, bf16, uint16_t, rngx_f32_bits)
RNGX_SROUND_ELEMENT(f32, float, f16, uint16_t, rngx_f32_bits)
RNGX_SROUND_ELEMENT(f32, float, e4m3, uint8_t, rngx_f32_bits)
RNGX_SROUND_ELEMENT(f32, float, e5m2, uint8_t, rngx_f32_bits)
RNGX_SROUND_ELEMENT(f16, uint16_t, bf16, uint16_t, RNGX_SROUND_F16_BITS)
RNGX_SROUND_ELEMENT(f16, uint16_t, e4m3, uint8_t, RNGX_SROUND_F16_BITS)
RNGX_SROUND_ELEMENT(f16, uint16_t, e5m2, uint8_t, RNGX_SROUND_F16_BITS)
RNGX_SROUND_ELEMENT(bf16, uint16_t, e4m3, uint8_t, RNGX_SROUND_BF16_BITS)
RNGX_SROUND_ELEMENT(bf16, uint16_t, e5m2, uint8_t, RNGX_SROUND_BF16_BITS)
#define RNGX_SROUND_ELEMENT64(out, TO)                                                                            \
  typedef double rngx_sround_input_f64_##out;                                                                     \
  RNGX_FN TO rngx_sround_element_f64_##out(const rngx_params *p, const uint32_t *w, double x) {                   \
    return (TO)rngx_sround64(rngx_f64_bits(x), w[0], w[1], p->saturate, rngx_sround_##out());                     \
  }                                                                                                               \
  RNGX_FN TO rngx_sround_in_range_f64_##out(const uint32_t *w, double x, uint32_t *past) {                        \
    return (TO)rngx_sround64_in_range(rngx_f64_bits(x), w[0], w[1], rngx_sround_##out(), past);                  \
  }
RNGX_SROUND_ELEMENT64(bf16, uint16_t)
RNGX_SROUND_ELEMENT64(f16, uint16_t)
RNGX_SROUND_ELEMENT64(e4m3, uint8_t)
RNGX_SROUND_ELEMENT64(e5m2, uint8_t)

/* ---- multinomial's race: E / w per (draw, category), float64 throughout, the weight w as x ---- */

/* e / w for a weight w > 0 (at most DBL_MAX, so any positive weight beats a zero one), and +inf for w <= 0 or NaN
 * (never drawn). */
RNGX_FN double rngx_race_score(double e, double w) {
  const double q = e / (w > 0 ? w : 1.0);
  return w > 0 ? (q < 0x1.fffffffffffffp+1023 ? q : 0x1.fffffffffffffp+1023) : rngx_bits_f64(0x7FF0000000000000ull);
}

RNGX_FN double rngx_race_element_f64(const rngx_params *p, const uint32_t *w, double x) {
  (void)p;
  return rngx_race_score(rngx_exponential64(w[0], w[1]), x);
}

/* ---- issue 43's ops: normal with tensor mean and std, alpha dropout, rrelu, cauchy, log_normal, geometric ---- */

/* v rounded to a 16-bit dtype and back to float32: float16 (h16 1) or bfloat16; a float32 value unchanged (0). */
RNGX_FN float rngx_round16(float v, int f16) {
  return f16 ? rngx_f16_to_f32_lanes(rngx_f32_to_f16_lanes(v)) : rngx_bf16_to_f32(rngx_f32_to_bf16_lanes(v));
}

/* normal_tensor: torch's normal(Tensor mean, Tensor std): normal(0, 1)'s value v (z * 1 + 0, rounded to the dtype),
 * then v * std and + mean, each rounded to the dtype (float32 arithmetic for the 16-bit types, as torch's). mean and
 * std are each element's, read in the output dtype. A pair's two elements: c (even) and s (odd), with their inputs. */
RNGX_FN float rngx_normal_tensor_f32(double z, float mean, float std) {
  return RNGX_FADD(RNGX_FMUL(rngx_normal_scale_f32(z, 0.0f, 1.0f), std), mean);
}
RNGX_FN uint16_t rngx_normal_tensor_16(double z, uint16_t mean, uint16_t std, int f16) {
  const float m = f16 ? rngx_f16_to_f32_lanes(mean) : rngx_bf16_to_f32(mean);
  const float sd = f16 ? rngx_f16_to_f32_lanes(std) : rngx_bf16_to_f32(std);
  const float v = rngx_round16(rngx_normal_scale_f32(z, 0.0f, 1.0f), f16);
  const float t = RNGX_FADD(rngx_round16(RNGX_FMUL(v, sd), f16), m);
  return f16 ? rngx_f32_to_f16_lanes(t) : rngx_f32_to_bf16_lanes(t);
}
RNGX_FN void rngx_normal_tensor_pair_f16(const rngx_params *p, const uint32_t *w, uint16_t mc, uint16_t ms,
                                         uint16_t sc, uint16_t ss, uint16_t *c, uint16_t *s) {
  (void)p;
  const rngx_pair z = rngx_normal32(w[0], w[1]);
  *c = rngx_normal_tensor_16(z.c, mc, sc, 1);
  *s = rngx_normal_tensor_16(z.s, ms, ss, 1);
}
RNGX_FN void rngx_normal_tensor_pair_bf16(const rngx_params *p, const uint32_t *w, uint16_t mc, uint16_t ms,
                                          uint16_t sc, uint16_t ss, uint16_t *c, uint16_t *s) {
  (void)p;
  const rngx_pair z = rngx_normal32(w[0], w[1]);
  *c = rngx_normal_tensor_16(z.c, mc, sc, 0);
  *s = rngx_normal_tensor_16(z.s, ms, ss, 0);
}
RNGX_FN void rngx_normal_tensor_pair_f32(const rngx_params *p, const uint32_t *w, float mc, float ms, float sc,
                                         float ss, float *c, float *s) {
  (void)p;
  const rngx_pair z = rngx_normal32(w[0], w[1]);
  *c = rngx_normal_tensor_f32(z.c, mc, sc);
  *s = rngx_normal_tensor_f32(z.s, ms, ss);
}
RNGX_FN void rngx_normal_tensor_pair_f64(const rngx_params *p, const uint32_t *w, double mc, double ms, double sc,
                                         double ss, double *c, double *s) {
  (void)p;
  const rngx_pair z = rngx_normal64(w);
  *c = RNGX_DADD(RNGX_DMUL(rngx_normal_scale_f64(z.c, 0.0, 1.0), sc), mc);
  *s = RNGX_DADD(RNGX_DMUL(rngx_normal_scale_f64(z.s, 0.0, 1.0), ss), ms);
}

/* ---- alpha dropout: dropout's mask, then torch's affine, each operation rounded to the dtype ---- */

/* keep iff u >= p (dropout's words and threshold); a = ((alpha^2 p + 1)(1 - p))^-1/2 with torch's alpha (SELU's scale
 * times its alpha), b1 = alpha a, b2 = b1 p, in double, as torch computes them in Python. The <= 32-bit types compute
 * in float32 with a and b1 rounded to float32 and b2 rounded to the dtype (torch's CPU kernels take a Python scalar
 * so in a product and in a sum). p = 1 keeps nothing and gives x * 0: a = b1 = 0, b2 = -0. */
#define RNGX_SELU_ALPHA 1.7580993408473766 /* torch's alpha dropout: SELU's scale * alpha */
RNGX_HOST_FN const char *rngx_alpha_dropout_params(rngx_dtype dtype, double p, rngx_params *out) {
  rngx_params d;
  const char *refused = rngx_dropout_params(dtype, p, &d);
  if (refused != 0) return refused;
  const double a = p == 1 ? 0.0 : 1.0 / sqrt((RNGX_SELU_ALPHA * RNGX_SELU_ALPHA * p + 1) * (1 - p));
  const double b1 = RNGX_SELU_ALPHA * a, b2 = p == 1 ? -0.0 : b1 * p;
  d.alpha_a64 = a, d.alpha_b164 = b1, d.alpha_b264 = b2;
  d.alpha_a = (float)a, d.alpha_b1 = (float)b1, d.alpha_b2 = rngx_round_to(dtype, b2);
  *out = d;
  return 0;
}

/* out = x * (keep * a) + ((keep - 1) * b1 + b2), keep 0 or 1, every product and sum rounded to the dtype (`f16`: 1
 * float16, 0 bfloat16, -1 float32): torch's alpha_dropout, operation by operation. A dropped NaN stays NaN (x * 0). */
RNGX_FN float rngx_alpha_affine_f32(float x, int keep, const rngx_params *p, int f16) {
  const float k = (float)keep;
#define RNGX_R(v) (f16 < 0 ? (v) : rngx_round16((v), f16))
  const float b = RNGX_R(RNGX_FADD(RNGX_R(RNGX_FMUL(k - 1.0f, p->alpha_b1)), p->alpha_b2));
  const float y = RNGX_FADD(RNGX_R(RNGX_FMUL(x, RNGX_R(RNGX_FMUL(k, p->alpha_a)))), b);
#undef RNGX_R
  return y;
}
RNGX_FN uint16_t rngx_alpha_dropout_element_f16(const rngx_params *p, const uint32_t *w, uint16_t x) {
  return rngx_f32_to_f16_lanes(rngx_alpha_affine_f32(rngx_f16_to_f32_lanes(x), rngx_kept_f32(w[0], p->keep), p, 1));
}
RNGX_FN uint16_t rngx_alpha_dropout_element_bf16(const rngx_params *p, const uint32_t *w, uint16_t x) {
  return rngx_f32_to_bf16_lanes(rngx_alpha_affine_f32(rngx_bf16_to_f32(x), rngx_kept_f32(w[0], p->keep), p, 0));
}
RNGX_FN float rngx_alpha_dropout_element_f32(const rngx_params *p, const uint32_t *w, float x) {
  return rngx_alpha_affine_f32(x, rngx_kept_f32(w[0], p->keep), p, -1);
}
RNGX_FN double rngx_alpha_dropout_element_f64(const rngx_params *p, const uint32_t *w, double x) {
  const double k = (double)rngx_kept_f64(w[0], w[1], p->keep64);
  const double b = RNGX_DADD(RNGX_DMUL(k - 1.0, p->alpha_b164), p->alpha_b264);
  return RNGX_DADD(RNGX_DMUL(x, RNGX_DMUL(k, p->alpha_a64)), b);
}

/* ---- rrelu in training: x where x > 0, else x * r, r = uniform(lower, upper)'s value in the dtype ---- */

/* The bounds as uniform's (rounded to the dtype), with lower <= upper. */
RNGX_HOST_FN const char *rngx_rrelu_params(rngx_dtype dtype, double lower, double upper, rngx_params *out) {
  return rngx_uniform_params(dtype, lower, upper, out);
}

/* r is the element uniform(lower, upper) gives with the same words: x * r is one product, rounded to the dtype. */
RNGX_FN uint16_t rngx_rrelu_element_f16(const rngx_params *p, const uint32_t *w, uint16_t x) {
  const float xf = rngx_f16_to_f32_lanes(x), r = rngx_f16_to_f32_lanes(rngx_uniform_f16(w[0], p->lo, p->width));
  const uint16_t low = rngx_f32_to_f16_lanes(RNGX_FMUL(xf, r));
  return xf > 0.0f ? x : low;
}
RNGX_FN uint16_t rngx_rrelu_element_bf16(const rngx_params *p, const uint32_t *w, uint16_t x) {
  const float xf = rngx_bf16_to_f32(x), r = rngx_bf16_to_f32(rngx_uniform_bf16(w[0], p->lo, p->width));
  const uint16_t low = rngx_f32_to_bf16_lanes(RNGX_FMUL(xf, r));
  return xf > 0.0f ? x : low;
}
RNGX_FN float rngx_rrelu_element_f32(const rngx_params *p, const uint32_t *w, float x) {
  const float low = RNGX_FMUL(x, rngx_uniform_f32(w[0], p->lo, p->width));
  return x > 0.0f ? x : low;
}
RNGX_FN double rngx_rrelu_element_f64(const rngx_params *p, const uint32_t *w, double x) {
  const double low = RNGX_DMUL(x, rngx_uniform_f64(w[0], w[1], p->lo64, p->width64));
  return x > 0.0 ? x : low;
}

/* ---- cauchy: median + sigma * cot(2 pi t / 2^b), the angle an odd multiple of 2 pi / 2^b (never on an axis) ---- */

/* median finite, sigma finite and > 0 (finite in float32 for the <= 32-bit types, which compute in it). */
RNGX_HOST_FN const char *rngx_cauchy_params(rngx_dtype dtype, double median, double sigma, rngx_params *out) {
  if (!isfinite(median)) return "median must be finite";
  if (!(isfinite(sigma) && sigma > 0)) return "sigma must be finite and > 0";
  if (dtype != RNGX_FLOAT64 && !(rngx_finite_as_float(median) && rngx_finite_as_float(sigma)))
    return "median and sigma must be finite in float32, the compute type";
  rngx_params p = rngx_zero_params();
  p.mean = (float)median, p.std = (float)sigma, p.mean64 = median, p.std64 = sigma;
  *out = p;
  return 0;
}

/* cos / sin of the angle, in double: float32 family t = 2 w + 1 over b = 33 bits with the short series, float64
 * t = 2 m + 1 over 53 bits (m = ((w0 & 0xFFFFF) << 32) | w1, exponential64's 52 bits) with the full one. */
RNGX_FN double rngx_cauchy32(uint32_t w) {
  const rngx_pair cs = rngx_polar(1.0, (int64_t)w * 2 + 1, 33, 0);
  return cs.c / cs.s;
}
RNGX_FN double rngx_cauchy64(uint32_t w0, uint32_t w1) {
  const int64_t m = (int64_t)(((uint64_t)(w0 & 0xFFFFFu) << 32) | w1);
  const rngx_pair cs = rngx_polar(1.0, 2 * m + 1, 53, 1);
  return cs.c / cs.s;
}
/* The standard value scaled as normal's: fl32(c) * fl32(sigma) + fl32(median) in float32, then the dtype. */
RNGX_FN uint16_t rngx_cauchy_element_f16(const rngx_params *p, const uint32_t *w, uint16_t x) {
  (void)x;
  return rngx_f32_to_f16_lanes(rngx_normal_scale_f32(rngx_cauchy32(w[0]), p->mean, p->std));
}
RNGX_FN uint16_t rngx_cauchy_element_bf16(const rngx_params *p, const uint32_t *w, uint16_t x) {
  (void)x;
  return rngx_f32_to_bf16_lanes(rngx_normal_scale_f32(rngx_cauchy32(w[0]), p->mean, p->std));
}
RNGX_FN float rngx_cauchy_element_f32(const rngx_params *p, const uint32_t *w, float x) {
  (void)x;
  return rngx_normal_scale_f32(rngx_cauchy32(w[0]), p->mean, p->std);
}
RNGX_FN double rngx_cauchy_element_f64(const rngx_params *p, const uint32_t *w, double x) {
  (void)x;
  return rngx_normal_scale_f64(rngx_cauchy64(w[0], w[1]), p->mean64, p->std64);
}

/* ---- log_normal: exp(z * std + mean) in double, z normal's pair value, rounded once to the dtype ---- */

RNGX_HOST_FN const char *rngx_log_normal_params(rngx_dtype dtype, double mean, double std, rngx_params *out) {
  (void)dtype;
  if (!isfinite(mean)) return "mean must be finite";
  if (!(isfinite(std) && std > 0)) return "std must be finite and > 0";
  rngx_params p = rngx_zero_params();
  p.mean64 = mean, p.std64 = std;
  *out = p;
  return 0;
}

RNGX_FN double rngx_log_normal_value(double z, const rngx_params *p) {
  return rngx_exp(RNGX_DADD(RNGX_DMUL(z, p->std64), p->mean64));
}
RNGX_FN void rngx_log_normal_pair_f16(const rngx_params *p, const uint32_t *w, uint16_t *c, uint16_t *s) {
  const rngx_pair z = rngx_normal32(w[0], w[1]);
  *c = rngx_f32_to_f16_lanes((float)rngx_log_normal_value(z.c, p));
  *s = rngx_f32_to_f16_lanes((float)rngx_log_normal_value(z.s, p));
}
RNGX_FN void rngx_log_normal_pair_bf16(const rngx_params *p, const uint32_t *w, uint16_t *c, uint16_t *s) {
  const rngx_pair z = rngx_normal32(w[0], w[1]);
  *c = rngx_f32_to_bf16_lanes((float)rngx_log_normal_value(z.c, p));
  *s = rngx_f32_to_bf16_lanes((float)rngx_log_normal_value(z.s, p));
}
RNGX_FN void rngx_log_normal_pair_f32(const rngx_params *p, const uint32_t *w, float *c, float *s) {
  const rngx_pair z = rngx_normal32(w[0], w[1]);
  *c = (float)rngx_log_normal_value(z.c, p);
  *s = (float)rngx_log_normal_value(z.s, p);
}
RNGX_FN void rngx_log_normal_pair_f64(const rngx_params *p, const uint32_t *w, double *c, double *s) {
  const rngx_pair z = rngx_normal64(w);
  *c = rngx_log_normal_value(z.c, p);
  *s = rngx_log_normal_value(z.s, p);
}

/* ---- geometric: ceil(E / lambda), E exponential's Exp(1), lambda = -ln(1 - p): trials to the first success ---- */

/* 0 < p < 1. lambda = -log1p(-p) = p * LOG(u) / (u - 1) with u = 1 - p rounded, u - 1 exact (Goldberg's form, a few
 * ulp at every p), or p itself where u rounds to 1. */
RNGX_HOST_FN const char *rngx_geometric_params(rngx_dtype dtype, double p, rngx_params *out) {
  (void)dtype;
  if (!(p > 0 && p < 1)) return "p must be in (0, 1)";
  const double u = 1.0 - p;
  rngx_params d = rngx_zero_params();
  d.rate = u == 1.0 ? p : p * rngx_log(u, 1) / (u - 1.0);
  *out = d;
  return 0;
}

/* The count as a double (>= 1, exact up to 2^53), then rounded to the dtype: a count past its largest finite value
 * rounds to +inf. */
RNGX_FN uint16_t rngx_geometric_element_f16(const rngx_params *p, const uint32_t *w, uint16_t x) {
  (void)x;
  return rngx_f32_to_f16_lanes((float)rngx_ceil_nonneg(rngx_exponential32(w[0]) / p->rate));
}
RNGX_FN uint16_t rngx_geometric_element_bf16(const rngx_params *p, const uint32_t *w, uint16_t x) {
  (void)x;
  return rngx_f32_to_bf16_lanes((float)rngx_ceil_nonneg(rngx_exponential32(w[0]) / p->rate));
}
RNGX_FN float rngx_geometric_element_f32(const rngx_params *p, const uint32_t *w, float x) {
  (void)x;
  return (float)rngx_ceil_nonneg(rngx_exponential32(w[0]) / p->rate);
}
RNGX_FN double rngx_geometric_element_f64(const rngx_params *p, const uint32_t *w, double x) {
  (void)x;
  return rngx_ceil_nonneg(rngx_exponential64(w[0], w[1]) / p->rate);
}

#endif
