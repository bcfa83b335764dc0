/* The math of normal and truncated normal (docs/stream.md, "normal", "truncated_normal"), and the exp and ceil that
 * log_normal and geometric take.
 *
 * Only IEEE double + - * / and sqrt, and integer and bit operations: no libm, no fused multiply-add (the C
 * files build with -ffp-contract=off, CUDA with --fmad=false). One definition for the C, SIMD and CUDA kernels,
 * so all of them compute the same bits. Branches are selects between values computed on both sides, so the
 * C loops vectorize. */
#ifndef RNGX_DISTS_H
#define RNGX_DISTS_H

#include <stdint.h>
#include <string.h>
#ifndef __CUDACC__
#include <math.h> /* sqrt: IEEE's correctly rounded square root */
#endif

#include "philox.h"

RNGX_FN uint64_t rngx_f64_bits(double d) { uint64_t b; memcpy(&b, &d, 8); return b; }
RNGX_FN double rngx_bits_f64(uint64_t b) { double d; memcpy(&d, &b, 8); return d; }

/* An integer below 2^52 as a double, exactly, with integer ops and one subtraction (vectorizes without AVX-512DQ). */
RNGX_FN double rngx_small_to_f64(uint64_t v) { return rngx_bits_f64(0x4330000000000000ull | v) - 0x1p52; }

#define RNGX_LN2_HI 6.93147180369123816490e-01 /* ln 2 split: k * HI is exact for |k| < 2^11 */
#define RNGX_LN2_LO 1.90821492927058770002e-10
#define RNGX_SQRT2 1.41421356237309514547
#define RNGX_PI 3.14159265358979311600

/* ln x for a positive normal double x. x = 2^k m with m in [sqrt(1/2), sqrt(2)); with f = m - 1 (exact) and
 * s = f / (2 + f), ln m = f - (f^2/2 - s (f^2/2 + R)), R = sum_j 2 s^(2j) / (2j + 1). `full`: j <= 10, for
 * double results; else j <= 5, ample for float32 results (the series' remainder is below 1e-10 relative). */
RNGX_FN double rngx_log(double x, int full) {
  const uint64_t b = rngx_f64_bits(x);
  double m = rngx_bits_f64((b & 0x000FFFFFFFFFFFFFull) | 0x3FF0000000000000ull);
  const int big = m > RNGX_SQRT2;
  m = rngx_bits_f64(rngx_f64_bits(m) - ((uint64_t)big << 52)); /* m * 0.5 when big: exact */
  /* k + 1023 = the biased exponent (+ 1 when big), as a double through the exact small-integer conversion */
  const double dk = rngx_small_to_f64((b >> 52) + (uint64_t)big) - 1023.0;
  const double f = m - 1.0, s = f / (2.0 + f), z = s * s, hfsq = 0.5 * f * f;
  double r = full ? 2.0 / 21 : 2.0 / 11;
  if (full) {
    r = r * z + 2.0 / 19;
    r = r * z + 2.0 / 17;
    r = r * z + 2.0 / 15;
    r = r * z + 2.0 / 13;
    r = r * z + 2.0 / 11;
  }
  r = r * z + 2.0 / 9;
  r = r * z + 2.0 / 7;
  r = r * z + 2.0 / 5;
  r = r * z + 2.0 / 3;
  r = r * z;
  return dk * RNGX_LN2_HI - ((hfsq - (s * (hfsq + r) + dk * RNGX_LN2_LO)) - f);
}

/* sin x and cos x for x in [0, pi/4]: Taylor series to x^17 and x^16 (`full`, for double results) or to x^11 and
 * x^10 (remainder below 3e-9 relative: for float32 results). */
RNGX_FN double rngx_sin_small(double x, int full) {
  const double y = x * x;
  double p = -1.0 / 39916800.0; /* 1/11! */
  if (full) {
    p = 1.0 / 355687428096000.0; /* 1/17! */
    p = p * y - 1.0 / 1307674368000.0;
    p = p * y + 1.0 / 6227020800.0;
    p = p * y - 1.0 / 39916800.0;
  }
  p = p * y + 1.0 / 362880.0;
  p = p * y - 1.0 / 5040.0;
  p = p * y + 1.0 / 120.0;
  p = p * y - 1.0 / 6.0;
  return x + x * (y * p);
}

RNGX_FN double rngx_cos_small(double x, int full) {
  const double y = x * x;
  double p = -1.0 / 3628800.0; /* 1/10! */
  if (full) {
    p = 1.0 / 20922789888000.0; /* 1/16! */
    p = p * y - 1.0 / 87178291200.0;
    p = p * y + 1.0 / 479001600.0;
    p = p * y - 1.0 / 3628800.0;
  }
  p = p * y + 1.0 / 40320.0;
  p = p * y - 1.0 / 720.0;
  p = p * y + 1.0 / 24.0;
  return (1.0 - 0.5 * y) + (y * y) * p;
}

/* Selects as bit masks, so the compiler keeps them as blends in every SIMD build (AVX2 too) instead of branches.
 * Negation is the sign bit's flip, as IEEE defines it. */
RNGX_FN double rngx_select(int cond, double a, double b) {
  const uint64_t m = 0 - (uint64_t)cond;
  return rngx_bits_f64((rngx_f64_bits(a) & m) | (rngx_f64_bits(b) & ~m));
}
RNGX_FN int64_t rngx_select64(int cond, int64_t a, int64_t b) {
  const int64_t m = -(int64_t)cond;
  return (a & m) | (b & ~m);
}
RNGX_FN double rngx_negate_if(int cond, double a) { return rngx_bits_f64(rngx_f64_bits(a) ^ ((uint64_t)cond << 63)); }

/* The pair of normals one Box-Muller step makes: r cos(a) (the element with the even index) and r sin(a). */
typedef struct {
  double c, s;
} rngx_pair;

/* r * cos and r * sin of the angle 2 pi t / 2^b, t an integer in [0, 2^b), 3 <= b <= 53, folded exactly with
 * integers to x in [0, pi/4]: a > pi flips sin's sign (a -> 2 pi - a), a > pi/2 flips cos's (a -> pi - a),
 * a > pi/4 swaps the two series (a -> pi/2 - a). x = t' * (pi * 2^(1 - b)) rounded once, t' <= 2^(b - 3). */
RNGX_FN rngx_pair rngx_polar(double r, int64_t t, int b, int full) {
  const int64_t half = (int64_t)1 << (b - 1), quarter = half >> 1, eighth = quarter >> 1;
  const int sin_neg = t > half;
  t = rngx_select64(sin_neg, 2 * half - t, t);
  const int cos_neg = t > quarter;
  t = rngx_select64(cos_neg, half - t, t);
  const int swap = t > eighth;
  t = rngx_select64(swap, quarter - t, t);
  const double x = rngx_small_to_f64((uint64_t)t) * (RNGX_PI * rngx_bits_f64((uint64_t)(1024 - b) << 52));
  const double sn = rngx_sin_small(x, full), cs = rngx_cos_small(x, full);
  const rngx_pair p = {r * rngx_negate_if(cos_neg, rngx_select(swap, sn, cs)),
                       r * rngx_negate_if(sin_neg, rngx_select(swap, cs, sn))};
  return p;
}

/* Box-Muller, both branches: r = sqrt(-2 ln u1), u1 = v * 2^-b in (0, 1]. */
RNGX_FN rngx_pair rngx_box_muller(double v, int b, int64_t t, int full) {
  const double u1 = v * rngx_bits_f64((uint64_t)(1023 - b) << 52);
  return rngx_polar(sqrt(-2.0 * rngx_log(u1, full)), t, b, full);
}

/* One pair of elements from its words. float32, float16, bfloat16: two words, u1 = (w0 + 1) 2^-32, t = w1;
 * float64: four words, u1 = (m53(w0, w1) + 1) 2^-53, t = m53(w2, w3). */
RNGX_FN rngx_pair rngx_normal32(uint32_t w0, uint32_t w1) {
  return rngx_box_muller(rngx_small_to_f64(w0) + 1.0, 32, (int64_t)w1, 0);
}

RNGX_FN rngx_pair rngx_normal64(const uint32_t *w) {
  const uint64_t m = ((uint64_t)(w[0] & 0x1FFFFFu) << 32) | w[1], t = ((uint64_t)(w[2] & 0x1FFFFFu) << 32) | w[3];
  /* m + 1 <= 2^53 in two exact pieces */
  const double v = rngx_small_to_f64(m >> 32) * 0x1p32 + (rngx_small_to_f64(m & 0xFFFFFFFFu) + 1.0);
  return rngx_box_muller(v, 53, (int64_t)t, 1);
}

/* ---- truncated normal: the inverse CDF ---- */

/* Phi^-1(p) for 0 < p < 1: Wichura's AS 241 (PPND16, about 1e-16 relative), with rngx_log. Its central region and
 * its tails are functions of their own, so that the CPU loops can run each as a vectorized pass over the elements
 * that need it (loops.c); each region's value is the same expression wherever it is computed. */

/* c7 x^7 + ... + c1 x + c0, nested from c7 (Horner's rule), as AS 241 evaluates its polynomials. */
RNGX_FN double rngx_horner7(double x, double c7, double c6, double c5, double c4, double c3, double c2, double c1,
                            double c0) {
  return ((((((c7 * x + c6) * x + c5) * x + c4) * x + c3) * x + c2) * x + c1) * x + c0;
}

/* |q| <= 0.425, q = p - 1/2: a rational function of 0.180625 - q^2. |q| is the sign bit cleared: gcc makes a branch
 * of `q < 0 ? -q : q` here, which keeps the loops scalar. */
RNGX_FN int rngx_ndtri_is_central(double q) { return rngx_bits_f64(rngx_f64_bits(q) & 0x7FFFFFFFFFFFFFFFull) <= 0.425; }

RNGX_FN double rngx_ndtri_central(double q) {
  const double r = 0.180625 - q * q;
  const double num = rngx_horner7(r, 2.5090809287301226727e3, 3.3430575583588128105e4, 6.7265770927008700853e4,
                                  4.5921953931549871457e4, 1.3731693765509461125e4, 1.9715909503065514427e3,
                                  1.3314166789178437745e2, 3.3871328727963666080);
  const double den = rngx_horner7(r, 5.2264952788528545610e3, 2.8729085735721942674e4, 3.9307895800092710610e4,
                                  2.1213794301586595867e4, 5.3941960214247511077e3, 6.8718700749205790830e2,
                                  4.2313330701600911252e1, 1.0);
  return q * num / den;
}

/* |q| > 0.425: r = sqrt(-ln min(p, 1 - p)), a rational function of r - 1.6 for r <= 5 and of r - 5 beyond (p below
 * e^-25), negative for p < 1/2 (q < 0). Both regions' polynomials are computed, then one numerator and one
 * denominator selected for the one division (a branch here would keep a loop scalar). In two steps, r and then
 * the rest, which the CPU loops run as two passes: shorter dependency chains overlap better. */
RNGX_FN double rngx_ndtri_tail_r(double p, double q) { return sqrt(-rngx_log(rngx_select(q < 0, p, 1.0 - p), 1)); }

RNGX_FN double rngx_ndtri_tail_of_r(double r, double q) {
  const double s = r - 1.6, t = r - 5.0;
  const int near = r <= 5.0;
  const double num = rngx_select(
      near,
      rngx_horner7(s, 7.74545014278341407640e-4, 2.27238449892691845833e-2, 2.41780725177450611770e-1,
                   1.27045825245236838258, 3.64784832476320460504, 5.76949722146069140550, 4.63033784615654529590,
                   1.42343711074968357734),
      rngx_horner7(t, 2.01033439929228813265e-7, 2.71155556874348757815e-5, 1.24266094738807843860e-3,
                   2.65321895265761230930e-2, 2.96560571828504891230e-1, 1.78482653991729133580, 5.46378491116411436990,
                   6.65790464350110377720));
  const double den = rngx_select(
      near,
      rngx_horner7(s, 1.05075007164441684324e-9, 5.47593808499534494600e-4, 1.51986665636164571966e-2,
                   1.48103976427480074590e-1, 6.89767334985100004550e-1, 1.67638483018380384940, 2.05319162663775882187,
                   1.0),
      rngx_horner7(t, 2.04426310338993978564e-15, 1.42151175831644588870e-7, 1.84631831751005468180e-5,
                   7.86869131145613259100e-4, 1.48753612908506148525e-2, 1.36929880922735805310e-1,
                   5.99832206555887937690e-1, 1.0));
  return rngx_negate_if(q < 0, num / den);
}

RNGX_FN double rngx_ndtri_tail(double p, double q) { return rngx_ndtri_tail_of_r(rngx_ndtri_tail_r(p, q), q); }

RNGX_FN double rngx_ndtri(double p) {
  const double q = p - 0.5;
  return rngx_ndtri_is_central(q) ? rngx_ndtri_central(q) : rngx_ndtri_tail(p, q);
}

/* The truncated normal's numbers, from rngx_truncnorm_params (elements.h): sample Phi^-1(pa + u * pw) in the standard
 * space, negated when `flip`, then mean + std * z clamped to [a, b]. */
typedef struct {
  double pa, pw, mean, std, a, b;
  int flip;
} rngx_tn;

/* p from u = m53(w0, w1) 2^-53 in [0, 1) (m53 < 2^53 converted exactly, in two pieces, as SIMD code without 64-bit
 * integer conversions can); kept in [2^-1022, 1 - 2^-53] so the log sees no 0 and no subnormal. */
RNGX_FN double rngx_truncnorm_p(uint64_t m53, const rngx_tn *t) {
  const double m = rngx_small_to_f64(m53 >> 32) * 0x1p32 + rngx_small_to_f64(m53 & 0xFFFFFFFFu);
  const double p = t->pa + (m * 0x1p-53) * t->pw;
  return rngx_select(p < 0x1p-1022, 0x1p-1022, rngx_select(p > 1.0 - 0x1p-53, 1.0 - 0x1p-53, p));
}

/* mean + std * z (z negated when flip), clamped to [a, b]. */
RNGX_FN double rngx_truncnorm_scale(double z, const rngx_tn *t) {
  const double v = t->mean + t->std * rngx_negate_if(t->flip != 0, z);
  return v < t->a ? t->a : v > t->b ? t->b : v;
}

RNGX_FN double rngx_truncnorm_value(uint64_t m53, const rngx_tn *t) {
  return rngx_truncnorm_scale(rngx_ndtri(rngx_truncnorm_p(m53, t)), t);
}
/* ---- exp and ceil (log_normal, geometric) ---- */

#define RNGX_INV_LN2 1.44269504088896338700 /* 1/ln 2, 0x1.71547652b82fep+0 */

/* e^y for any finite y, in double: y clamped to [-746, 710] (beyond, e^y is 0 or +inf in double either way), k =
 * y / ln 2 rounded to nearest even (by the 1.5 * 2^52 shift), r = (y - k LN2_HI) - k LN2_LO with |r| <= ln 2 / 2 + ulp,
 * e^r = 1 + (r + r^2 q), q its Taylor series from 1/2! to 1/13! (nested from 1/13!; the remainder is below 2^-56
 * relative), times 2^k in two exact steps of normal powers of two, k = k1 + k2 with k1 = floor(k / 2): the second
 * step rounds once, into the subnormals or to +inf where e^y lies there. Integers only through bit patterns, so the
 * CPU loops vectorize. */
RNGX_FN double rngx_exp(double y) {
  y = rngx_select(y < -746.0, -746.0, rngx_select(y > 710.0, 710.0, y));
  const double shifted = y * RNGX_INV_LN2 + 0x1.8p52;
  const double kd = shifted - 0x1.8p52;
  const int64_t k = (int64_t)(rngx_f64_bits(shifted) - rngx_f64_bits(0x1.8p52)); /* kd as an integer */
  const double r = (y - kd * RNGX_LN2_HI) - kd * RNGX_LN2_LO;
  double e = 1.0 / 6227020800.0; /* 1/13! */
  e = e * r + 1.0 / 479001600.0;
  e = e * r + 1.0 / 39916800.0;
  e = e * r + 1.0 / 3628800.0;
  e = e * r + 1.0 / 362880.0;
  e = e * r + 1.0 / 40320.0;
  e = e * r + 1.0 / 5040.0;
  e = e * r + 1.0 / 720.0;
  e = e * r + 1.0 / 120.0;
  e = e * r + 1.0 / 24.0;
  e = e * r + 1.0 / 6.0;
  e = e * r + 0.5;
  e = 1.0 + (r + (r * r) * e);
  const int64_t k1 = k >> 1, k2 = k - k1; /* arithmetic shift: floor; both in [-538, 512] */
  return e * rngx_bits_f64((uint64_t)(1023 + k1) << 52) * rngx_bits_f64((uint64_t)(1023 + k2) << 52);
}

/* The least integer >= v for v >= 0, exactly: below 2^52, v + 2^52 - 2^52 is v rounded to an integer (to nearest
 * even), then raised by 1 where that fell below v; from 2^52 on, v is an integer already. */
RNGX_FN double rngx_ceil_nonneg(double v) {
  const double t = (v + 0x1p52) - 0x1p52;
  return rngx_select(v >= 0x1p52, v, rngx_select(t < v, t + 1.0, t));
}
#endif
