/* The per-op CPU loops: each op's math on one span (walk.h), and the public ops (ops.h), which run a loop
 * over the walk (walk.c). */
#include <string.h>

#include "convert.h"
#include "convert_lanes.h"
#include "elements.h"
#include "keys.h"
#include "simd.h"
#include "walk.h"

/* The float loops are also built for AVX2 and AVX-512, the widest the CPU runs picked at load time (ifunc):
 * they are plain IEEE multiplies, adds and exact conversions with no contraction, and the 16-bit types'
 * roundings are integer ops (convert_lanes.h), so every build gives the same bits, and the float work costs
 * little next to the SIMD Philox. benchmarks/kernel_ns.c defines RNGX_CLONES to build one target alone. */
#if !defined(RNGX_CLONES) && RNGX_X86_SIMD
#define RNGX_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#elif !defined(RNGX_CLONES)
#define RNGX_CLONES
#endif

/* ---- the ops' math on one span: n elements along a row, out[j * so] (and in[j * si]) from words w[k * j ...] ----
 * Each float32 loop is written once with its strides as parameters and called twice, once with literal unit
 * strides: after inlining, that copy is a plain contiguous loop the compiler vectorizes. The loops take the
 * op's parameters by value, as a store through `o` could otherwise alias them and block vectorization. */

/* dt is a constant wherever these are inlined, so each loop holds one type's conversions. */
static inline float load16(rngx_dtype dt, uint16_t h) {
  return dt == RNGX_FLOAT16 ? rngx_f16_to_f32_lanes(h) : rngx_bf16_to_f32(h);
}

static inline uint16_t store16(rngx_dtype dt, float f) {
  return dt == RNGX_FLOAT16 ? rngx_f32_to_f16_lanes(f) : rngx_f32_to_bf16_lanes(f);
}

/* bits: the low bits of one word, or two words first-word-high (torch.func._random.bits). */
static void bits8(const rngx_op *op, const rngx_span *r) {
  uint8_t *o = r->out;
  (void)op;
  for (int64_t j = 0, n = r->n, so = r->so; j < n; ++j) o[j * so] = (uint8_t)r->w[j];
}

static void bits16(const rngx_op *op, const rngx_span *r) {
  uint16_t *o = r->out;
  (void)op;
  for (int64_t j = 0, n = r->n, so = r->so; j < n; ++j) o[j * so] = (uint16_t)r->w[j];
}

static void bits32(const rngx_op *op, const rngx_span *r) {
  uint32_t *o = r->out;
  (void)op;
  for (int64_t j = 0, n = r->n, so = r->so; j < n; ++j) o[j * so] = r->w[j];
}

static void bits64(const rngx_op *op, const rngx_span *r) {
  uint64_t *o = r->out;
  (void)op;
  for (int64_t j = 0, n = r->n, so = r->so; j < n; ++j) o[j * so] = (uint64_t)r->w[2 * j] << 32 | r->w[2 * j + 1];
}

/* uniform: low + u * (high - low), multiply and add each rounded (elements.h). */
static inline void uniform_f32_loop(float lo, float width, const uint32_t *w, int64_t n, float *o, int64_t so) {
  for (int64_t j = 0; j < n; ++j) o[j * so] = rngx_uniform_f32(w[j], lo, width);
}

RNGX_CLONES static void uniform_f32(const rngx_op *op, const rngx_span *r) {
  if (r->so == 1) uniform_f32_loop(op->p.lo, op->p.width, r->w, r->n, r->out, 1);
  else uniform_f32_loop(op->p.lo, op->p.width, r->w, r->n, r->out, r->so);
}

static void uniform_f64(const rngx_op *op, const rngx_span *r) {
  const uint32_t *w = r->w;
  double *o = r->out;
  for (int64_t j = 0, n = r->n, so = r->so; j < n; ++j)
    o[j * so] = rngx_uniform_f64(w[2 * j], w[2 * j + 1], op->p.lo64, op->p.width64);
}

/* 11 significand bits for float16, 8 for bfloat16, so that u < 1 in the type itself. */
static inline void uniform_16_loop(rngx_dtype dt, float lo, float width, const uint32_t *w, int64_t n, uint16_t *o,
                                   int64_t so) {
  for (int64_t j = 0; j < n; ++j)
    o[j * so] = store16(dt, rngx_uniform_value(dt == RNGX_FLOAT16 ? rngx_u11(w[j]) : rngx_u8(w[j]), lo, width));
}

static inline void uniform_16(rngx_dtype dt, const rngx_op *op, const rngx_span *r) {
  if (r->so == 1) uniform_16_loop(dt, op->p.lo, op->p.width, r->w, r->n, r->out, 1);
  else uniform_16_loop(dt, op->p.lo, op->p.width, r->w, r->n, r->out, r->so);
}

RNGX_CLONES static void uniform_f16(const rngx_op *op, const rngx_span *r) { uniform_16(RNGX_FLOAT16, op, r); }
RNGX_CLONES static void uniform_bf16(const rngx_op *op, const rngx_span *r) { uniform_16(RNGX_BFLOAT16, op, r); }

/* quantize_noise: x + (lo + u * width) with lo = -half, width = 2 half; float32 math for <= 32-bit types. */
static inline void noise_f32_loop(float lo, float width, const uint32_t *w, int64_t n, float *o, int64_t so,
                                  const float *x, int64_t si) {
  for (int64_t j = 0; j < n; ++j) o[j * so] = rngx_noise_f32(x[j * si], w[j], lo, width);
}

RNGX_CLONES static void noise_f32(const rngx_op *op, const rngx_span *r) {
  if (r->so == 1 && r->si == 1) noise_f32_loop(op->p.lo, op->p.width, r->w, r->n, r->out, 1, r->in, 1);
  else noise_f32_loop(op->p.lo, op->p.width, r->w, r->n, r->out, r->so, r->in, r->si);
}

static void noise_f64(const rngx_op *op, const rngx_span *r) {
  const uint32_t *w = r->w;
  const double *x = r->in;
  double *o = r->out;
  for (int64_t j = 0, n = r->n, so = r->so, si = r->si; j < n; ++j)
    o[j * so] = rngx_noise_f64(x[j * si], w[2 * j], w[2 * j + 1], op->p.lo64, op->p.width64);
}

/* float16 and bfloat16: the same float32 math, then one rounding to the type. */
static inline void noise_16_loop(rngx_dtype dt, float lo, float width, const uint32_t *w, int64_t n, uint16_t *o,
                                 int64_t so, const uint16_t *x, int64_t si) {
  for (int64_t j = 0; j < n; ++j) o[j * so] = store16(dt, rngx_noise_f32(load16(dt, x[j * si]), w[j], lo, width));
}

static inline void noise_16(rngx_dtype dt, const rngx_op *op, const rngx_span *r) {
  if (r->so == 1 && r->si == 1) noise_16_loop(dt, op->p.lo, op->p.width, r->w, r->n, r->out, 1, r->in, 1);
  else noise_16_loop(dt, op->p.lo, op->p.width, r->w, r->n, r->out, r->so, r->in, r->si);
}

RNGX_CLONES static void noise_f16(const rngx_op *op, const rngx_span *r) { noise_16(RNGX_FLOAT16, op, r); }
RNGX_CLONES static void noise_bf16(const rngx_op *op, const rngx_span *r) { noise_16(RNGX_BFLOAT16, op, r); }

/* dropout: x * scale where u >= p, else +0. Branch free, as the keep/drop pattern is random: the product's bits
 * and-ed with all ones or all zeros. That also lets the float32 loop vectorize. */
static inline float kept_f32(int keep, float v) { return rngx_bits_f32(rngx_f32_bits(v) & (0u - (uint32_t)keep)); }

static inline double kept_f64(int keep, double v) {
  uint64_t b;
  memcpy(&b, &v, sizeof b);
  b &= 0u - (uint64_t)keep;
  memcpy(&v, &b, sizeof v);
  return v;
}

static inline void dropout_f32_loop(uint32_t keep, float scale, const uint32_t *w, int64_t n, float *o, int64_t so,
                                    const float *x, int64_t si) {
  for (int64_t j = 0; j < n; ++j) o[j * so] = kept_f32(rngx_kept_f32(w[j], keep), x[j * si] * scale);
}

RNGX_CLONES static void dropout_f32(const rngx_op *op, const rngx_span *r) {
  if (r->so == 1 && r->si == 1) dropout_f32_loop(op->p.keep, op->p.scale, r->w, r->n, r->out, 1, r->in, 1);
  else dropout_f32_loop(op->p.keep, op->p.scale, r->w, r->n, r->out, r->so, r->in, r->si);
}

static void dropout_f64(const rngx_op *op, const rngx_span *r) {
  const uint32_t *w = r->w;
  const double *x = r->in;
  double *o = r->out;
  for (int64_t j = 0, n = r->n, so = r->so, si = r->si; j < n; ++j)
    o[j * so] = kept_f64(rngx_kept_f64(w[2 * j], w[2 * j + 1], op->p.keep64), x[j * si] * op->p.scale64);
}

/* Masking after the rounding (+0 is all zero bits in both types) leaves the rounding's branches on data alone. */
static inline void dropout_16_loop(rngx_dtype dt, uint32_t keep, float scale, const uint32_t *w, int64_t n,
                                   uint16_t *o, int64_t so, const uint16_t *x, int64_t si) {
  for (int64_t j = 0; j < n; ++j)
    o[j * so] = store16(dt, load16(dt, x[j * si]) * scale) & (uint16_t)(0u - rngx_kept_f32(w[j], keep));
}

static inline void dropout_16(rngx_dtype dt, const rngx_op *op, const rngx_span *r) {
  if (r->so == 1 && r->si == 1) dropout_16_loop(dt, op->p.keep, op->p.scale, r->w, r->n, r->out, 1, r->in, 1);
  else dropout_16_loop(dt, op->p.keep, op->p.scale, r->w, r->n, r->out, r->so, r->in, r->si);
}

RNGX_CLONES static void dropout_f16(const rngx_op *op, const rngx_span *r) { dropout_16(RNGX_FLOAT16, op, r); }
RNGX_CLONES static void dropout_bf16(const rngx_op *op, const rngx_span *r) { dropout_16(RNGX_BFLOAT16, op, r); }

/* normal: one Box-Muller step in double (dists.h) per pair of elements, r cos to the even index and r sin to the
 * odd one, each rounded to float32 and then z * std + mean in float32 (two roundings). A span that starts on a
 * pair's second element (`odd`) or ends on a pair's first reads the pair's other words just outside its own:
 * the walk fills whole blocks around a span, and a pair never straddles a block. The pairs in between run as
 * one loop with no branch, so it vectorizes. */
/* Inlined into each clone (one body per dtype), so each is built for its clone's target. */
#define CLONE_BODY static inline __attribute__((always_inline))

CLONE_BODY void put32(rngx_dtype dt, void *o, int64_t i, float v) {
  if (dt == RNGX_FLOAT32) ((float *)o)[i] = v;
  else ((uint16_t *)o)[i] = store16(dt, v);
}

CLONE_BODY void normal_32_loop(rngx_dtype dt, float mean, float std, const uint32_t *w, int odd, int64_t n,
                                  void *o, int64_t so) {
  const int64_t first = odd && n > 0, pairs = (n - first) / 2;
  if (first) put32(dt, o, 0, rngx_normal_scale_f32(rngx_normal32(w[-1], w[0]).s, mean, std));
  for (int64_t p = 0; p < pairs; ++p) {
    const int64_t j = first + 2 * p;
    const rngx_pair z = rngx_normal32(w[j], w[j + 1]);
    put32(dt, o, j * so, rngx_normal_scale_f32(z.c, mean, std));
    put32(dt, o, (j + 1) * so, rngx_normal_scale_f32(z.s, mean, std));
  }
  const int64_t j = first + 2 * pairs;
  if (j < n) put32(dt, o, j * so, rngx_normal_scale_f32(rngx_normal32(w[j], w[j + 1]).c, mean, std));
}

CLONE_BODY void normal_32(rngx_dtype dt, const rngx_op *op, const rngx_span *r) {
  if (r->so == 1) normal_32_loop(dt, op->p.mean, op->p.std, r->w, r->odd, r->n, r->out, 1);
  else normal_32_loop(dt, op->p.mean, op->p.std, r->w, r->odd, r->n, r->out, r->so);
}

/* The pair's math (dists.h) is large: left to its limits, gcc's inliner keeps some copies of it as calls, and a
 * loop with a call runs scalar. flatten inlines all of it into each clone, so every pair loop vectorizes. */
#define FLAT __attribute__((flatten))

RNGX_CLONES FLAT static void normal_f32(const rngx_op *op, const rngx_span *r) { normal_32(RNGX_FLOAT32, op, r); }
RNGX_CLONES FLAT static void normal_f16(const rngx_op *op, const rngx_span *r) { normal_32(RNGX_FLOAT16, op, r); }
RNGX_CLONES FLAT static void normal_bf16(const rngx_op *op, const rngx_span *r) { normal_32(RNGX_BFLOAT16, op, r); }

/* float64: two words per element, a pair's four words one block. */
CLONE_BODY void normal_f64_loop(double mean, double std, const uint32_t *w, int odd, int64_t n, double *o,
                                   int64_t so) {
  const int64_t first = odd && n > 0, pairs = (n - first) / 2;
  if (first) o[0] = rngx_normal_scale_f64(rngx_normal64(w - 2).s, mean, std);
  for (int64_t p = 0; p < pairs; ++p) {
    const int64_t j = first + 2 * p;
    const rngx_pair z = rngx_normal64(w + 2 * j);
    o[j * so] = rngx_normal_scale_f64(z.c, mean, std);
    o[(j + 1) * so] = rngx_normal_scale_f64(z.s, mean, std);
  }
  const int64_t j = first + 2 * pairs;
  if (j < n) o[j * so] = rngx_normal_scale_f64(rngx_normal64(w + 2 * j).c, mean, std);
}

RNGX_CLONES FLAT static void normal_f64(const rngx_op *op, const rngx_span *r) {
  if (r->so == 1) normal_f64_loop(op->p.mean64, op->p.std64, r->w, r->odd, r->n, r->out, 1);
  else normal_f64_loop(op->p.mean64, op->p.std64, r->w, r->odd, r->n, r->out, r->so);
}

/* truncated normal: the inverse CDF in double, clamped to [a, b]; <= 32-bit types round it (through float32) and
 * clamp again to the type's values inside [a, b]. AS 241 (dists.h) takes one division in its central region
 * (|p - 1/2| <= 0.425: 85-89% of the draws for bounds at 2 standard deviations) and a log, a square root and a
 * division in its tails. A loop with that branch runs scalar, and computing both for every element pays the
 * tails' work (most of the cost) for all. So each chunk of a span runs in short passes, each a vectorized loop
 * but the compaction: p; the central value of every element; its output value, stored; the tail elements'
 * indices gathered into a list (branch free), padded to whole vectors with index 0 (computed, never stored);
 * their r, then their tail value (rngx_ndtri_tail's two steps), stored over the central one. Short passes, not one
 * loop: each is a short dependency chain that the core overlaps across iterations (1.2x faster than one loop).
 * Every element's value is rngx_truncnorm_value's expression. */
#define TN_CHUNK 256 /* a whole batch of the walk: 512 words */
#define TN_PAD 8     /* doubles in the widest vector */

/* An output value from its standard-space value z: float32, or a 16-bit type's bits; truncnorm_put stores it. */
CLONE_BODY float truncnorm_f32_of(double z, const rngx_tn *tn, float lo, float hi) {
  return rngx_clamp_f32((float)rngx_truncnorm_scale(z, tn), lo, hi);
}

CLONE_BODY uint16_t truncnorm_16_of(rngx_dtype dt, double z, const rngx_tn *tn, float lo, float hi) {
  return store16(dt, rngx_clamp_f32(load16(dt, store16(dt, (float)rngx_truncnorm_scale(z, tn))), lo, hi));
}

CLONE_BODY void truncnorm_put(rngx_dtype dt, void *o, int64_t i, double z, const rngx_tn *tn, float lo, float hi) {
  if (dt == RNGX_FLOAT64) ((double *)o)[i] = rngx_truncnorm_scale(z, tn);
  else if (dt == RNGX_FLOAT32) ((float *)o)[i] = truncnorm_f32_of(z, tn, lo, hi);
  else ((uint16_t *)o)[i] = truncnorm_16_of(dt, z, tn, lo, hi);
}

/* Elements [0, n) of a chunk, n <= TN_CHUNK. */
CLONE_BODY void truncnorm_chunk(rngx_dtype dt, const rngx_tn *tn, float lo, float hi, const uint32_t *w, int64_t n,
                                void *o, int64_t so) {
  double p[TN_CHUNK], z[TN_CHUNK + TN_PAD];
  int64_t in_tail[TN_CHUNK], at[TN_CHUNK + TN_PAD], m = 0;
  for (int64_t j = 0; j < n; ++j) {
    p[j] = rngx_truncnorm_p(rngx_m53(w[2 * j], w[2 * j + 1]), tn);
    in_tail[j] = !rngx_ndtri_is_central(p[j] - 0.5);
  }
  for (int64_t j = 0; j < n; ++j) z[j] = rngx_ndtri_central(p[j] - 0.5);
  for (int64_t j = 0; j < n; ++j) truncnorm_put(dt, o, j * so, z[j], tn, lo, hi);
  for (int64_t j = 0; j < n; ++j) {
    at[m] = j;
    m += in_tail[j];
  }
  const int64_t padded = (m + TN_PAD - 1) / TN_PAD * TN_PAD;
  for (int64_t i = m; i < padded; ++i) at[i] = 0;
  for (int64_t i = 0; i < padded; ++i) z[i] = rngx_ndtri_tail_r(p[at[i]], p[at[i]] - 0.5);
  for (int64_t i = 0; i < padded; ++i) z[i] = rngx_ndtri_tail_of_r(z[i], p[at[i]] - 0.5);
  for (int64_t i = 0; i < m; ++i) truncnorm_put(dt, o, at[i] * so, z[i], tn, lo, hi);
}

CLONE_BODY void truncnorm_loop(rngx_dtype dt, rngx_tn tn, float lo, float hi, const uint32_t *w, int64_t n, void *o,
                               int64_t so) {
  const int64_t size = dt == RNGX_FLOAT64 ? 8 : dt == RNGX_FLOAT32 ? 4 : 2;
  for (int64_t c = 0; c < n; c += TN_CHUNK)
    truncnorm_chunk(dt, &tn, lo, hi, w + 2 * c, n - c < TN_CHUNK ? n - c : TN_CHUNK, (char *)o + c * so * size, so);
}

CLONE_BODY void truncnorm(rngx_dtype dt, const rngx_op *op, const rngx_span *r) {
  if (r->so == 1) truncnorm_loop(dt, op->p.tn, op->p.tn_lo, op->p.tn_hi, r->w, r->n, r->out, 1);
  else truncnorm_loop(dt, op->p.tn, op->p.tn_lo, op->p.tn_hi, r->w, r->n, r->out, r->so);
}

RNGX_CLONES FLAT static void truncnorm_f32(const rngx_op *op, const rngx_span *r) { truncnorm(RNGX_FLOAT32, op, r); }
RNGX_CLONES FLAT static void truncnorm_f16(const rngx_op *op, const rngx_span *r) { truncnorm(RNGX_FLOAT16, op, r); }
RNGX_CLONES FLAT static void truncnorm_bf16(const rngx_op *op, const rngx_span *r) { truncnorm(RNGX_BFLOAT16, op, r); }
RNGX_CLONES FLAT static void truncnorm_f64(const rngx_op *op, const rngx_span *r) { truncnorm(RNGX_FLOAT64, op, r); }

/* bernoulli: 1 iff u < p, dropout's u (24 bits, 53 for float64): with a scalar p, iff the integer behind u is
 * below dropout's keep threshold ceil(p 2^bits); with a tensor p, compared with p in float32 (double), exactly. */
static inline void bernoulli_f32_loop(uint32_t keep, const uint32_t *w, int64_t n, float *o, int64_t so) {
  for (int64_t j = 0; j < n; ++j) o[j * so] = rngx_kept_f32(w[j], keep) ? 0.0f : 1.0f;
}

RNGX_CLONES static void bernoulli_f32(const rngx_op *op, const rngx_span *r) {
  if (r->so == 1) bernoulli_f32_loop(op->p.keep, r->w, r->n, r->out, 1);
  else bernoulli_f32_loop(op->p.keep, r->w, r->n, r->out, r->so);
}

static inline void bernoulli_16_loop(uint16_t one, uint32_t keep, const uint32_t *w, int64_t n, uint16_t *o, int64_t so) {
  for (int64_t j = 0; j < n; ++j) o[j * so] = rngx_kept_f32(w[j], keep) ? 0 : one;
}

RNGX_CLONES static void bernoulli_f16(const rngx_op *op, const rngx_span *r) {
  if (r->so == 1) bernoulli_16_loop(0x3C00u, op->p.keep, r->w, r->n, r->out, 1);
  else bernoulli_16_loop(0x3C00u, op->p.keep, r->w, r->n, r->out, r->so);
}

RNGX_CLONES static void bernoulli_bf16(const rngx_op *op, const rngx_span *r) {
  if (r->so == 1) bernoulli_16_loop(0x3F80u, op->p.keep, r->w, r->n, r->out, 1);
  else bernoulli_16_loop(0x3F80u, op->p.keep, r->w, r->n, r->out, r->so);
}

static void bernoulli_f64(const rngx_op *op, const rngx_span *r) {
  const uint32_t *w = r->w;
  double *o = r->out;
  for (int64_t j = 0, n = r->n, so = r->so; j < n; ++j) o[j * so] = rngx_kept_f64(w[2 * j], w[2 * j + 1], op->p.keep64) ? 0.0 : 1.0;
}

static inline void bernoulli_pf32_loop(const uint32_t *w, int64_t n, float *o, int64_t so, const float *p, int64_t si) {
  for (int64_t j = 0; j < n; ++j) o[j * so] = rngx_u24(w[j]) < p[j * si] ? 1.0f : 0.0f;
}

/* p broadcast along the row (stride 0, the common case of a p per channel or a 0-dim p) gets its own copy. */
RNGX_CLONES static void bernoulli_pf32(const rngx_op *op, const rngx_span *r) {
  (void)op;
  if (r->so == 1 && r->si == 1) bernoulli_pf32_loop(r->w, r->n, r->out, 1, r->in, 1);
  else if (r->so == 1 && r->si == 0) bernoulli_pf32_loop(r->w, r->n, r->out, 1, r->in, 0);
  else bernoulli_pf32_loop(r->w, r->n, r->out, r->so, r->in, r->si);
}

static inline void bernoulli_p16_loop(rngx_dtype dt, const uint32_t *w, int64_t n, uint16_t *o, int64_t so,
                                      const uint16_t *p, int64_t si) {
  const uint16_t one = dt == RNGX_FLOAT16 ? 0x3C00u : 0x3F80u;
  for (int64_t j = 0; j < n; ++j) o[j * so] = rngx_u24(w[j]) < load16(dt, p[j * si]) ? one : 0;
}

static inline void bernoulli_p16(rngx_dtype dt, const rngx_span *r) {
  if (r->so == 1 && r->si == 1) bernoulli_p16_loop(dt, r->w, r->n, r->out, 1, r->in, 1);
  else if (r->so == 1 && r->si == 0) bernoulli_p16_loop(dt, r->w, r->n, r->out, 1, r->in, 0);
  else bernoulli_p16_loop(dt, r->w, r->n, r->out, r->so, r->in, r->si);
}

RNGX_CLONES static void bernoulli_pf16(const rngx_op *op, const rngx_span *r) { (void)op; bernoulli_p16(RNGX_FLOAT16, r); }
RNGX_CLONES static void bernoulli_pbf16(const rngx_op *op, const rngx_span *r) { (void)op; bernoulli_p16(RNGX_BFLOAT16, r); }

static void bernoulli_pf64(const rngx_op *op, const rngx_span *r) {
  const uint32_t *w = r->w;
  const double *p = r->in;
  double *o = r->out;
  (void)op;
  for (int64_t j = 0, n = r->n, so = r->so, si = r->si; j < n; ++j) o[j * so] = rngx_u53(w[2 * j], w[2 * j + 1]) < p[j * si] ? 1.0 : 0.0;
}

/* randint: low + floor(range * x / 2^bits), the sum modulo 2^64, stored in the type's low bits. Ranges up to 2^32
 * take two words (L: the type the sum is formed in); int64 with a wider range four. */
#define RANDINT_LOOP(name, T, L)                                                                                    \
  static inline void name##_loop(L low, uint32_t range, const uint32_t *w, int64_t n, T *o, int64_t so) {         \
    for (int64_t j = 0; j < n; ++j) o[j * so] = (T)(low + rngx_randint32(range, w[2 * j], w[2 * j + 1]));          \
  }                                                                                                                 \
  RNGX_CLONES static void name(const rngx_op *op, const rngx_span *r) {                                            \
    const L low = (L)op->p.low;                                                                                     \
    const uint32_t range = (uint32_t)op->p.range;                                                                   \
    if (r->so == 1) name##_loop(low, range, r->w, r->n, r->out, 1);                                                 \
    else name##_loop(low, range, r->w, r->n, r->out, r->so);                                                        \
  }
RANDINT_LOOP(randint8, uint8_t, uint32_t)
RANDINT_LOOP(randint16, uint16_t, uint32_t)
RANDINT_LOOP(randint32, uint32_t, uint32_t)
RANDINT_LOOP(randint64_narrow, uint64_t, uint64_t)

static inline void randint64_loop(uint64_t low, uint64_t range, const uint32_t *w, int64_t n, uint64_t *o, int64_t so) {
  for (int64_t j = 0; j < n; ++j) o[j * so] = low + rngx_randint64(range, w + 4 * j);
}

RNGX_CLONES static void randint64(const rngx_op *op, const rngx_span *r) {
  if (r->so == 1) randint64_loop(op->p.low, op->p.range, r->w, r->n, r->out, 1);
  else randint64_loop(op->p.low, op->p.range, r->w, r->n, r->out, r->so);
}

/* exponential: E / rate in double, rounded to the type, kept inside its positive finite values (elements.h). */

static inline void exponential_f32_loop(double rate, const uint32_t *w, int64_t n, float *o, int64_t so) {
  for (int64_t j = 0; j < n; ++j) o[j * so] = rngx_exp_clamp_f32((float)(rngx_exponential32(w[j]) / rate));
}

RNGX_CLONES static void exponential_f32(const rngx_op *op, const rngx_span *r) {
  if (r->so == 1) exponential_f32_loop(op->p.rate, r->w, r->n, r->out, 1);
  else exponential_f32_loop(op->p.rate, r->w, r->n, r->out, r->so);
}

static inline void exponential_16_loop(rngx_dtype dt, double rate, const uint32_t *w, int64_t n, uint16_t *o,
                                       int64_t so) {
  const uint16_t inf = dt == RNGX_FLOAT16 ? 0x7C00u : 0x7F80u;
  for (int64_t j = 0; j < n; ++j)
    o[j * so] = rngx_exp_clamp_16(store16(dt, (float)(rngx_exponential32(w[j]) / rate)), inf);
}

static inline void exponential_16(rngx_dtype dt, const rngx_op *op, const rngx_span *r) {
  if (r->so == 1) exponential_16_loop(dt, op->p.rate, r->w, r->n, r->out, 1);
  else exponential_16_loop(dt, op->p.rate, r->w, r->n, r->out, r->so);
}

RNGX_CLONES static void exponential_f16(const rngx_op *op, const rngx_span *r) { exponential_16(RNGX_FLOAT16, op, r); }
RNGX_CLONES static void exponential_bf16(const rngx_op *op, const rngx_span *r) {
  exponential_16(RNGX_BFLOAT16, op, r);
}

static inline void exponential_f64_loop(double rate, const uint32_t *w, int64_t n, double *o, int64_t so) {
  for (int64_t j = 0; j < n; ++j) o[j * so] = rngx_exp_clamp_f64(rngx_exponential64(w[2 * j], w[2 * j + 1]) / rate);
}

RNGX_CLONES static void exponential_f64(const rngx_op *op, const rngx_span *r) {
  if (r->so == 1) exponential_f64_loop(op->p.rate, r->w, r->n, r->out, 1);
  else exponential_f64_loop(op->p.rate, r->w, r->n, r->out, r->so);
}

/* multinomial's race: E / w per (draw, category), float64 throughout, w read in place (stride 0 across draws). */
static void race_f64(const rngx_op *op, const rngx_span *r) {
  const uint32_t *w = r->w;
  const double *x = r->in;
  double *o = r->out;
  (void)op;
  for (int64_t j = 0, n = r->n, so = r->so, si = r->si; j < n; ++j)
    o[j * so] = rngx_race_score(rngx_exponential64(w[2 * j], w[2 * j + 1]), x[j * si]);
}

/* ---- the public ops ---- */

static rngx_loop_fn by_dtype(rngx_dtype dt, rngx_loop_fn f16, rngx_loop_fn bf16, rngx_loop_fn f32, rngx_loop_fn f64) {
  return dt == RNGX_FLOAT16 ? f16 : dt == RNGX_BFLOAT16 ? bf16 : dt == RNGX_FLOAT32 ? f32 : f64;
}

void rngx_bits(const rngx_job *job, int64_t begin, int64_t end) {
  const rngx_dtype dt = job->dtype;
  const rngx_op op = {.loop = dt == RNGX_BITS8 ? bits8 : dt == RNGX_BITS16 ? bits16 : dt == RNGX_BITS32 ? bits32 : bits64};
  rngx_execute(job, &op, begin, end);
}

void rngx_uniform(const rngx_job *job, const rngx_params *p, int64_t begin, int64_t end) {
  const rngx_op op = {.loop = by_dtype(job->dtype, uniform_f16, uniform_bf16, uniform_f32, uniform_f64), .p = *p};
  rngx_execute(job, &op, begin, end);
}

void rngx_quantize_noise(const rngx_job *job, const rngx_params *p, int64_t begin, int64_t end) {
  const rngx_op op = {.loop = by_dtype(job->dtype, noise_f16, noise_bf16, noise_f32, noise_f64), .reads_input = 1,
                      .p = *p};
  rngx_execute(job, &op, begin, end);
}

void rngx_dropout(const rngx_job *job, const rngx_params *p, int64_t begin, int64_t end) {
  const rngx_op op = {.loop = by_dtype(job->dtype, dropout_f16, dropout_bf16, dropout_f32, dropout_f64),
                      .reads_input = 1, .p = *p};
  rngx_execute(job, &op, begin, end);
}

void rngx_normal(const rngx_job *job, const rngx_params *p, int64_t begin, int64_t end) {
  const rngx_op op = {.loop = by_dtype(job->dtype, normal_f16, normal_bf16, normal_f32, normal_f64),
                      .k = rngx_normal_words(job->dtype), .paired = 1, .p = *p};
  rngx_execute(job, &op, begin, end);
}

void rngx_truncnorm(const rngx_job *job, const rngx_params *p, int64_t begin, int64_t end) {
  const rngx_op op = {.loop = by_dtype(job->dtype, truncnorm_f16, truncnorm_bf16, truncnorm_f32, truncnorm_f64),
                      .k = rngx_truncnorm_words(job->dtype), .p = *p};
  rngx_execute(job, &op, begin, end);
}

void rngx_bernoulli(const rngx_job *job, const rngx_params *p, int64_t begin, int64_t end) {
  const int tensor = job->in.data != NULL;
  const rngx_op op = {.loop = tensor ? by_dtype(job->dtype, bernoulli_pf16, bernoulli_pbf16, bernoulli_pf32, bernoulli_pf64)
                                     : by_dtype(job->dtype, bernoulli_f16, bernoulli_bf16, bernoulli_f32, bernoulli_f64),
                      .reads_input = tensor, .p = *p};
  rngx_execute(job, &op, begin, end);
}

void rngx_randint(const rngx_job *job, const rngx_params *p, int64_t begin, int64_t end) {
  const rngx_dtype dt = job->dtype;
  const int k = rngx_randint_words(dt, p->range);
  const rngx_op op = {.loop = dt == RNGX_BITS8    ? randint8
                              : dt == RNGX_BITS16 ? randint16
                              : dt == RNGX_BITS32 ? randint32
                              : k == 2            ? randint64_narrow
                                                  : randint64,
                      .k = k, .p = *p};
  rngx_execute(job, &op, begin, end);
}

void rngx_exponential(const rngx_job *job, const rngx_params *p, int64_t begin, int64_t end) {
  const rngx_op op = {.loop = by_dtype(job->dtype, exponential_f16, exponential_bf16, exponential_f32, exponential_f64),
                      .p = *p};
  rngx_execute(job, &op, begin, end);
}

void rngx_race(const rngx_job *job, int64_t begin, int64_t end) {
  const rngx_op op = {.loop = race_f64, .reads_input = 1};
  rngx_execute(job, &op, begin, end);
}

/* ---- key derivation (keys.h) ---- */

void rngx_split(const int64_t *keys, int64_t n, int64_t num, int64_t *out) {
  for (int64_t i = 0; i < num; ++i)
    for (int64_t b = 0; b < n; ++b) rngx_child_key(keys + 2 * b, (uint64_t)i, out + 2 * (i * n + b));
}

void rngx_fold_in(const int64_t *keys, int64_t n, const int64_t *data, int64_t data_stride, int64_t *out) {
  for (int64_t b = 0; b < n; ++b) rngx_child_key(keys + 2 * b, (uint64_t)data[b * data_stride], out + 2 * b);
}
