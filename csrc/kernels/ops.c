/* The per-op CPU loops. Every element's value depends only on its logical index, so callers may split a
 * tensor into any chunks, on any threads, and get the same bits.
 *
 * One pass over memory: each op reads its input (if any) once and writes its output once, with the words made
 * in L1-sized batches right before use. The dims are first collapsed (size-1 dims dropped, neighbours merged
 * where both operands allow), so a contiguous tensor is one row and a channels_last one is rows of H*W with
 * stride C. Rows are visited with an odometer, never a per-element div/mod, and each op's loop runs along one
 * row with a constant stride; unit-stride loops vectorize. */
#include "ops.h"

#include <math.h>
#include <string.h>

#include "convert.h"
#include "convert_lanes.h"
#include "simd.h"
#include "stream.h"

/* Words per batch: whole SIMD groups (AVX-512 fills 32 blocks = 128 words at a time), few enough that the
 * words stay in L1 next to the data they meet. */
#define BATCH_WORDS 512
/* Rows strided in memory (channels_last: stride C) are walked in tiles of TILE_ROWS rows and TILE_WORDS
 * words per row, so neighbouring rows fill the same cache lines while those are still in cache. */
#define TILE_ROWS 16
#define TILE_WORDS 256

/* The float loops are also built for AVX2 and AVX-512, the widest the CPU runs picked at load time (ifunc):
 * they are plain IEEE multiplies, adds and exact conversions with no contraction, and the 16-bit types'
 * roundings are integer ops (convert_lanes.h), so every build gives the same bits, and the float work costs
 * little next to the SIMD Philox. */
#if RNGX_X86_SIMD
#define RNGX_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define RNGX_CLONES
#endif

int rngx_words_per_element(rngx_dtype dtype) { return dtype == RNGX_FLOAT64 || dtype == RNGX_BITS64 ? 2 : 1; }

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

static int64_t element_size(rngx_dtype dtype) {
  switch (dtype) {
    case RNGX_BITS8: return 1;
    case RNGX_FLOAT16: case RNGX_BFLOAT16: case RNGX_BITS16: return 2;
    case RNGX_FLOAT32: case RNGX_BITS32: return 4;
    default: return 8;
  }
}

/* ---- the ops' math on one span: n elements along a row, out[j * so] (and in[j * si]) from words w[k * j ...] ----
 * Each float32 loop is written once with its strides as parameters and called twice, once with literal unit
 * strides: after inlining, that copy is a plain contiguous loop the compiler vectorizes. The loops take the
 * op's parameters by value, as a store through `o` could otherwise alias them and block vectorization. */

typedef struct {
  const uint32_t *w;
  int64_t n, so, si; /* strides in elements */
  void *out;
  const void *in;
  int odd; /* paired ops: the first element is its pair's second (its stream index is odd) */
} rngx_span;

typedef struct rngx_op rngx_op;
typedef void (*rngx_loop_fn)(const rngx_op *op, const rngx_span *r);

struct rngx_op {
  rngx_loop_fn loop;
  int reads_input;
  int k; /* words per element when the op takes more than rngx_words_per_element (0: that) */
  int paired; /* elements 2p and 2p + 1 of a key's stream come from the words of both (normal) */
  rngx_params p;
};

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

/* uniform: low + u * (high - low), multiply and add each rounded. */
static inline void uniform_f32_loop(float lo, float width, const uint32_t *w, int64_t n, float *o, int64_t so) {
  for (int64_t j = 0; j < n; ++j) o[j * so] = lo + rngx_u24(w[j]) * width;
}

RNGX_CLONES static void uniform_f32(const rngx_op *op, const rngx_span *r) {
  if (r->so == 1) uniform_f32_loop(op->p.lo, op->p.width, r->w, r->n, r->out, 1);
  else uniform_f32_loop(op->p.lo, op->p.width, r->w, r->n, r->out, r->so);
}

static void uniform_f64(const rngx_op *op, const rngx_span *r) {
  const uint32_t *w = r->w;
  double *o = r->out;
  for (int64_t j = 0, n = r->n, so = r->so; j < n; ++j)
    o[j * so] = op->p.lo64 + rngx_u53(w[2 * j], w[2 * j + 1]) * op->p.width64;
}

/* 11 significand bits for float16, 8 for bfloat16, so that u < 1 in the type itself. */
static inline void uniform_16_loop(rngx_dtype dt, float lo, float width, const uint32_t *w, int64_t n, uint16_t *o,
                                   int64_t so) {
  for (int64_t j = 0; j < n; ++j)
    o[j * so] = store16(dt, lo + (dt == RNGX_FLOAT16 ? rngx_u11(w[j]) : rngx_u8(w[j])) * width);
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
  for (int64_t j = 0; j < n; ++j) o[j * so] = x[j * si] + (lo + rngx_u24(w[j]) * width);
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
    o[j * so] = x[j * si] + (op->p.lo64 + rngx_u53(w[2 * j], w[2 * j + 1]) * op->p.width64);
}

/* float16 and bfloat16: the same float32 math, then one rounding to the type. */
static inline void noise_16_loop(rngx_dtype dt, float lo, float width, const uint32_t *w, int64_t n, uint16_t *o,
                                 int64_t so, const uint16_t *x, int64_t si) {
  for (int64_t j = 0; j < n; ++j) o[j * so] = store16(dt, load16(dt, x[j * si]) + (lo + rngx_u24(w[j]) * width));
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
  for (int64_t j = 0; j < n; ++j) o[j * so] = kept_f32((w[j] & RNGX_U24_MASK) >= keep, x[j * si] * scale);
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
    o[j * so] = kept_f64(rngx_m53(w[2 * j], w[2 * j + 1]) >= op->p.keep64, x[j * si] * op->p.scale64);
}

/* Masking after the rounding (+0 is all zero bits in both types) leaves the rounding's branches on data alone. */
static inline void dropout_16_loop(rngx_dtype dt, uint32_t keep, float scale, const uint32_t *w, int64_t n,
                                   uint16_t *o, int64_t so, const uint16_t *x, int64_t si) {
  for (int64_t j = 0; j < n; ++j)
    o[j * so] = store16(dt, load16(dt, x[j * si]) * scale) & (uint16_t)(0u - ((w[j] & RNGX_U24_MASK) >= keep));
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
  if (first) put32(dt, o, 0, (float)rngx_normal32(w[-1], w[0]).s * std + mean);
  for (int64_t p = 0; p < pairs; ++p) {
    const int64_t j = first + 2 * p;
    const rngx_pair z = rngx_normal32(w[j], w[j + 1]);
    put32(dt, o, j * so, (float)z.c * std + mean);
    put32(dt, o, (j + 1) * so, (float)z.s * std + mean);
  }
  const int64_t j = first + 2 * pairs;
  if (j < n) put32(dt, o, j * so, (float)rngx_normal32(w[j], w[j + 1]).c * std + mean);
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
  if (first) o[0] = rngx_normal64(w - 2).s * std + mean;
  for (int64_t p = 0; p < pairs; ++p) {
    const int64_t j = first + 2 * p;
    const rngx_pair z = rngx_normal64(w + 2 * j);
    o[j * so] = z.c * std + mean;
    o[(j + 1) * so] = z.s * std + mean;
  }
  const int64_t j = first + 2 * pairs;
  if (j < n) o[j * so] = rngx_normal64(w + 2 * j).c * std + mean;
}

RNGX_CLONES FLAT static void normal_f64(const rngx_op *op, const rngx_span *r) {
  if (r->so == 1) normal_f64_loop(op->p.mean64, op->p.std64, r->w, r->odd, r->n, r->out, 1);
  else normal_f64_loop(op->p.mean64, op->p.std64, r->w, r->odd, r->n, r->out, r->so);
}

/* truncated normal: the inverse CDF in double, clamped to [a, b]; <= 32-bit types round it (through float32) and
 * clamp again to the type's values inside [a, b]. */
static inline float clampf(float v, float lo, float hi) { return v < lo ? lo : v > hi ? hi : v; }

static void truncnorm_f32(const rngx_op *op, const rngx_span *r) {
  const uint32_t *w = r->w;
  float *o = r->out;
  for (int64_t j = 0, n = r->n, so = r->so; j < n; ++j)
    o[j * so] = clampf((float)rngx_truncnorm_value(rngx_m53(w[2 * j], w[2 * j + 1]), &op->p.tn), op->p.tn_lo, op->p.tn_hi);
}

static inline void truncnorm_16(rngx_dtype dt, const rngx_op *op, const rngx_span *r) {
  const uint32_t *w = r->w;
  uint16_t *o = r->out;
  for (int64_t j = 0, n = r->n, so = r->so; j < n; ++j) {
    const float v = load16(dt, store16(dt, (float)rngx_truncnorm_value(rngx_m53(w[2 * j], w[2 * j + 1]), &op->p.tn)));
    o[j * so] = store16(dt, clampf(v, op->p.tn_lo, op->p.tn_hi));
  }
}

static void truncnorm_f16(const rngx_op *op, const rngx_span *r) { truncnorm_16(RNGX_FLOAT16, op, r); }
static void truncnorm_bf16(const rngx_op *op, const rngx_span *r) { truncnorm_16(RNGX_BFLOAT16, op, r); }

static void truncnorm_f64(const rngx_op *op, const rngx_span *r) {
  const uint32_t *w = r->w;
  double *o = r->out;
  for (int64_t j = 0, n = r->n, so = r->so; j < n; ++j) o[j * so] = rngx_truncnorm_value(rngx_m53(w[2 * j], w[2 * j + 1]), &op->p.tn);
}

/* bernoulli: 1 iff u < p, dropout's u (24 bits, 53 for float64): with a scalar p, iff the integer behind u is
 * below dropout's keep threshold ceil(p 2^bits); with a tensor p, compared with p in float32 (double), exactly. */
static inline void bernoulli_f32_loop(uint32_t keep, const uint32_t *w, int64_t n, float *o, int64_t so) {
  for (int64_t j = 0; j < n; ++j) o[j * so] = (w[j] & RNGX_U24_MASK) < keep ? 1.0f : 0.0f;
}

RNGX_CLONES static void bernoulli_f32(const rngx_op *op, const rngx_span *r) {
  if (r->so == 1) bernoulli_f32_loop(op->p.keep, r->w, r->n, r->out, 1);
  else bernoulli_f32_loop(op->p.keep, r->w, r->n, r->out, r->so);
}

static inline void bernoulli_16_loop(uint16_t one, uint32_t keep, const uint32_t *w, int64_t n, uint16_t *o, int64_t so) {
  for (int64_t j = 0; j < n; ++j) o[j * so] = (w[j] & RNGX_U24_MASK) < keep ? one : 0;
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
  for (int64_t j = 0, n = r->n, so = r->so; j < n; ++j) o[j * so] = rngx_m53(w[2 * j], w[2 * j + 1]) < op->p.keep64 ? 1.0 : 0.0;
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

/* exponential: E / rate in double, rounded to the type; a value that rounds to 0 becomes the type's smallest
 * positive value and one that overflows its largest finite value, so every value is positive and finite. */
static inline float exp_clamp_f32(float v) { return v == 0.0f ? 0x1p-149f : v > 0x1.fffffep127f ? 0x1.fffffep127f : v; }

static inline void exponential_f32_loop(double rate, const uint32_t *w, int64_t n, float *o, int64_t so) {
  for (int64_t j = 0; j < n; ++j) o[j * so] = exp_clamp_f32((float)(rngx_exponential32(w[j]) / rate));
}

RNGX_CLONES static void exponential_f32(const rngx_op *op, const rngx_span *r) {
  if (r->so == 1) exponential_f32_loop(op->p.rate, r->w, r->n, r->out, 1);
  else exponential_f32_loop(op->p.rate, r->w, r->n, r->out, r->so);
}

/* 0 and infinity in float16 (0x7C00) or bfloat16 (0x7F80) as their neighbours inside: 0x0001 and inf - 1. */
static inline uint16_t exp_clamp_16(rngx_dtype dt, uint16_t h) {
  return h == 0 ? 1 : h == (dt == RNGX_FLOAT16 ? 0x7C00u : 0x7F80u) ? (uint16_t)(h - 1) : h;
}

static inline void exponential_16_loop(rngx_dtype dt, double rate, const uint32_t *w, int64_t n, uint16_t *o,
                                       int64_t so) {
  for (int64_t j = 0; j < n; ++j) o[j * so] = exp_clamp_16(dt, store16(dt, (float)(rngx_exponential32(w[j]) / rate)));
}

static inline void exponential_16(rngx_dtype dt, const rngx_op *op, const rngx_span *r) {
  if (r->so == 1) exponential_16_loop(dt, op->p.rate, r->w, r->n, r->out, 1);
  else exponential_16_loop(dt, op->p.rate, r->w, r->n, r->out, r->so);
}

RNGX_CLONES static void exponential_f16(const rngx_op *op, const rngx_span *r) { exponential_16(RNGX_FLOAT16, op, r); }
RNGX_CLONES static void exponential_bf16(const rngx_op *op, const rngx_span *r) {
  exponential_16(RNGX_BFLOAT16, op, r);
}

static inline double exp_clamp_f64(double v) {
  return v == 0.0 ? 0x1p-1074 : v > 0x1.fffffffffffffp+1023 ? 0x1.fffffffffffffp+1023 : v;
}

static inline void exponential_f64_loop(double rate, const uint32_t *w, int64_t n, double *o, int64_t so) {
  for (int64_t j = 0; j < n; ++j) o[j * so] = exp_clamp_f64(rngx_exponential64(w[2 * j], w[2 * j + 1]) / rate);
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

/* ---- layout ---- */

void rngx_collapse(const rngx_job *job, int reads_input, rngx_layout *l) {
  l->nd = 0;
  for (int d = 0; d < job->ndim; ++d) {
    const int64_t size = job->sizes[d], so = job->out.strides[d], si = reads_input ? job->in.strides[d] : 0;
    if (size == 1) continue;
    const int last = l->nd - 1;
    if (last >= 0 && l->so[last] == size * so && l->si[last] == size * si) {
      l->size[last] *= size; /* the merged dim runs with the inner dim's strides */
    } else {
      l->size[l->nd++] = size;
    }
    l->so[l->nd - 1] = so;
    l->si[l->nd - 1] = si;
  }
  if (l->nd == 0) {
    l->nd = 1;
    l->size[0] = 1;
    l->so[0] = l->si[0] = 1;
  }
}

/* The memory offsets (elements) of a row's first element, and the row's index over the outer dims. */
typedef struct {
  int64_t idx[RNGX_MAX_DIMS];
  int64_t out, in;
} rngx_cursor;

static void cursor_seek(const rngx_layout *l, int64_t row, rngx_cursor *c) {
  c->out = c->in = 0;
  for (int d = l->nd - 2; d >= 0; --d) {
    c->idx[d] = row % l->size[d];
    row /= l->size[d];
    c->out += c->idx[d] * l->so[d];
    c->in += c->idx[d] * l->si[d];
  }
}

static void cursor_next(const rngx_layout *l, rngx_cursor *c) {
  for (int d = l->nd - 2; d >= 0; --d) {
    c->out += l->so[d];
    c->in += l->si[d];
    if (++c->idx[d] < l->size[d]) return;
    c->out -= l->size[d] * l->so[d];
    c->in -= l->size[d] * l->si[d];
    c->idx[d] = 0;
  }
}

/* ---- walks: which elements, in which order, with which words ---- */

typedef struct {
  const rngx_job *job;
  const rngx_op *op;
  const rngx_layout *l;
  int k;        /* words per element */
  int64_t size; /* element size in bytes */
} rngx_walk;

void rngx_key_of_segment(const rngx_job *job, int64_t q, uint64_t *seed, uint64_t *offset, uint64_t *pos) {
  const rngx_keys *keys = &job->keys;
  const int seg_dims = keys->seg_dims > keys->key_dims ? keys->seg_dims : keys->key_dims;
  int64_t at = 0;
  *pos = keys->first;
  for (int d = seg_dims - 1; d >= 0; --d) {
    const int64_t r = q / job->sizes[d], digit = q - r * job->sizes[d];
    if (d < keys->key_dims) at += digit * keys->key_strides[d];
    else *pos += (uint64_t)digit * (uint64_t)keys->pos_strides[d];
    q = r;
  }
  *seed = keys->pairs == NULL ? keys->seed : (uint64_t)keys->pairs[at];
  *offset = keys->pairs == NULL ? keys->offset : (uint64_t)keys->pairs[at + 1];
}

void rngx_global_view(rngx_keys *keys, int ndim, const int64_t *sizes, const int64_t *global_shape,
                      const int64_t *global_start, int64_t *pos_strides) {
  int64_t above = 1; /* stream positions per step of dim d: the global event dims after d */
  keys->first = 0;
  keys->seg_dims = 0;
  for (int d = ndim - 1; d >= 0; --d) {
    if (d < keys->key_dims) {
      if (keys->pairs != NULL) keys->pairs += global_start[d] * keys->key_strides[d];
      continue;
    }
    pos_strides[d] = above;
    keys->first += (uint64_t)global_start[d] * (uint64_t)above;
    above *= global_shape[d];
    if (keys->seg_dims == 0 && sizes[d] != global_shape[d]) keys->seg_dims = d;
  }
  keys->pos_strides = pos_strides;
  keys->event = 1;
  for (int d = keys->seg_dims > keys->key_dims ? keys->seg_dims : keys->key_dims; d < ndim; ++d)
    keys->event *= sizes[d];
  if (keys->event == 0) keys->event = 1; /* an empty output: no element asks for a key */
}

/* The lane (word within its block) of element i's first word. */
static uint64_t lane_of(const rngx_walk *wk, int64_t i) {
  const int64_t event = wk->job->keys.event, q = i / event;
  uint64_t seed, offset, pos;
  rngx_key_of_segment(wk->job, q, &seed, &offset, &pos);
  return (uint64_t)wk->k * (pos + (uint64_t)(i - q * event)) & 3u;
}

/* The words of logical elements [i, i + n), one segment after another, from buf + HEAD on: the first segment's
 * whole blocks go to buf + HEAD, so its words start at buf + HEAD + lane_of(i); each later segment's words go
 * right after the words before them, its first block written `lane` words early over the (saved and restored)
 * last words of the segment before. buf holds HEAD + lane_of(i) + k * n words, plus 3 that a last block may
 * write. */
#define HEAD 4
static const uint32_t *words_for(const rngx_walk *wk, int64_t i, int64_t n, uint32_t *buf) {
  const int64_t event = wk->job->keys.event, k = wk->k;
  uint32_t *next = buf + HEAD;
  const uint32_t *words = NULL;
  for (int64_t end = i + n; i < end;) {
    const int64_t q = i / event, j = i - q * event, m = min64(end - i, event - j);
    uint64_t seed, offset, pos;
    rngx_key_of_segment(wk->job, q, &seed, &offset, &pos);
    const uint64_t first = (uint64_t)k * (pos + (uint64_t)j), lane = first & 3u;
    const int64_t blocks = (int64_t)((lane + (uint64_t)(k * m) + 3u) >> 2);
    if (words == NULL) {
      rngx_fill_blocks(seed, offset + (first >> 2), blocks, next);
      words = next + lane;
      next += lane;
    } else {
      uint32_t saved[3];
      memcpy(saved, next - lane, lane * sizeof *saved);
      rngx_fill_blocks(seed, offset + (first >> 2), blocks, next - lane);
      memcpy(next - lane, saved, lane * sizeof *saved);
    }
    next += k * m;
    i += m;
  }
  return words;
}

/* Elements from i on that the batch holding i may take: all, or for a paired op the rest of i's segment (a later
 * segment's words would overwrite the partner words words_for leaves around this one's). */
static int64_t batch_room(const rngx_walk *wk, int64_t i) {
  const int64_t event = wk->job->keys.event;
  return wk->op->paired ? event - i % event : INT64_MAX;
}

/* Whether element i's stream index is odd (paired ops: the second of its pair). */
static int odd_at(const rngx_walk *wk, int64_t i) { return (int)(lane_of(wk, i) / (uint64_t)wk->k) & 1; }

/* The op's loop on n elements of one row from column col, whose row starts at memory offsets (out, in). */
static void span_at(const rngx_walk *wk, const uint32_t *w, int64_t n, int64_t out, int64_t in, int64_t col, int odd) {
  const rngx_layout *l = wk->l;
  const int64_t so = l->so[l->nd - 1], si = l->si[l->nd - 1];
  const rngx_span r = {w, n, so, si, (char *)wk->job->out.data + (out + col * so) * wk->size,
                      wk->op->reads_input ? (const char *)wk->job->in.data + (in + col * si) * wk->size : 0, odd};
  wk->op->loop(wk->op, &r);
}

/* Logical order, in batches of consecutive elements, each cut into spans along rows. Batches end on block
 * boundaries, so after the first every batch is whole SIMD groups. */
static void walk_batches(const rngx_walk *wk, int64_t begin, int64_t end) {
  uint32_t buf[HEAD + BATCH_WORDS + 4];
  const int64_t row_len = wk->l->size[wk->l->nd - 1];
  rngx_cursor c;
  cursor_seek(wk->l, begin / row_len, &c);
  int64_t col = begin % row_len;
  for (int64_t i = begin; i < end;) {
    const int64_t n = min64(min64(end - i, (BATCH_WORDS - (int64_t)lane_of(wk, i)) / wk->k), batch_room(wk, i));
    const uint32_t *w = words_for(wk, i, n, buf);
    const int odd = wk->op->paired && odd_at(wk, i);
    for (int64_t j = 0; j < n;) {
      const int64_t len = min64(row_len - col, n - j);
      span_at(wk, w + wk->k * j, len, c.out, c.in, col, odd ^ (int)(j & 1));
      j += len;
      col += len;
      if (col == row_len) {
        col = 0;
        cursor_next(wk->l, &c);
      }
    }
    i += n;
  }
}

/* Tiles of TILE_ROWS rows by TILE_WORDS words per row, each row's piece clipped to [begin, end). */
static void walk_tiles(const rngx_walk *wk, int64_t begin, int64_t end) {
  uint32_t buf[HEAD + TILE_WORDS + 8];
  int64_t out_row[TILE_ROWS], in_row[TILE_ROWS];
  const int64_t row_len = wk->l->size[wk->l->nd - 1], width = TILE_WORDS / wk->k, last_row = (end - 1) / row_len;
  rngx_cursor c;
  cursor_seek(wk->l, begin / row_len, &c);
  for (int64_t row = begin / row_len; row <= last_row; row += TILE_ROWS) {
    const int rows = (int)min64(TILE_ROWS, last_row - row + 1);
    for (int t = 0; t < rows; ++t) {
      out_row[t] = c.out;
      in_row[t] = c.in;
      cursor_next(wk->l, &c);
    }
    for (int64_t col = 0; col < row_len; col += width) {
      for (int t = 0; t < rows; ++t) {
        const int64_t start = (row + t) * row_len;
        const int64_t hi = min64(start + min64(col + width, row_len), end);
        for (int64_t lo = max64(start + col, begin), n; lo < hi; lo += n) {
          n = min64(hi - lo, batch_room(wk, lo));
          span_at(wk, words_for(wk, lo, n, buf), n, out_row[t], in_row[t], lo - start, wk->op->paired && odd_at(wk, lo));
        }
      }
    }
  }
}

static void execute(const rngx_job *job, const rngx_op *op, int64_t begin, int64_t end) {
  rngx_layout l;
  if (begin >= end) return;
  rngx_collapse(job, op->reads_input, &l);
  const rngx_walk wk = {job, op, &l, op->k ? op->k : rngx_words_per_element(job->dtype), element_size(job->dtype)};
  const int strided = l.so[l.nd - 1] != 1 || (op->reads_input && l.si[l.nd - 1] != 1);
  if (l.nd >= 2 && strided && l.size[l.nd - 1] >= TILE_WORDS / wk.k)
    walk_tiles(&wk, begin, end);
  else
    walk_batches(&wk, begin, end);
}

/* ---- the public ops ---- */

static rngx_loop_fn by_dtype(rngx_dtype dt, rngx_loop_fn f16, rngx_loop_fn bf16, rngx_loop_fn f32, rngx_loop_fn f64) {
  return dt == RNGX_FLOAT16 ? f16 : dt == RNGX_BFLOAT16 ? bf16 : dt == RNGX_FLOAT32 ? f32 : f64;
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

void rngx_bits(const rngx_job *job, int64_t begin, int64_t end) {
  const rngx_dtype dt = job->dtype;
  const rngx_op op = {.loop = dt == RNGX_BITS8 ? bits8 : dt == RNGX_BITS16 ? bits16 : dt == RNGX_BITS32 ? bits32 : bits64};
  execute(job, &op, begin, end);
}

void rngx_uniform(const rngx_job *job, const rngx_params *p, int64_t begin, int64_t end) {
  const rngx_op op = {.loop = by_dtype(job->dtype, uniform_f16, uniform_bf16, uniform_f32, uniform_f64), .p = *p};
  execute(job, &op, begin, end);
}

void rngx_quantize_noise(const rngx_job *job, const rngx_params *p, int64_t begin, int64_t end) {
  const rngx_op op = {.loop = by_dtype(job->dtype, noise_f16, noise_bf16, noise_f32, noise_f64), .reads_input = 1,
                      .p = *p};
  execute(job, &op, begin, end);
}

void rngx_dropout(const rngx_job *job, const rngx_params *p, int64_t begin, int64_t end) {
  const rngx_op op = {.loop = by_dtype(job->dtype, dropout_f16, dropout_bf16, dropout_f32, dropout_f64),
                      .reads_input = 1, .p = *p};
  execute(job, &op, begin, end);
}

int rngx_normal_words(rngx_dtype dtype) { return dtype == RNGX_FLOAT64 ? 2 : 1; }
int rngx_truncnorm_words(rngx_dtype dtype) { (void)dtype; return 2; }
int rngx_randint_words(rngx_dtype dtype, uint64_t range) { return dtype == RNGX_BITS64 && range > RNGX_RANDINT_NARROW ? 4 : 2; }

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

void rngx_normal(const rngx_job *job, const rngx_params *p, int64_t begin, int64_t end) {
  const rngx_op op = {.loop = by_dtype(job->dtype, normal_f16, normal_bf16, normal_f32, normal_f64),
                      .k = rngx_normal_words(job->dtype), .paired = 1, .p = *p};
  execute(job, &op, begin, end);
}

void rngx_truncnorm(const rngx_job *job, const rngx_params *p, int64_t begin, int64_t end) {
  const rngx_op op = {.loop = by_dtype(job->dtype, truncnorm_f16, truncnorm_bf16, truncnorm_f32, truncnorm_f64),
                      .k = rngx_truncnorm_words(job->dtype), .p = *p};
  execute(job, &op, begin, end);
}

void rngx_bernoulli(const rngx_job *job, const rngx_params *p, int64_t begin, int64_t end) {
  const int tensor = job->in.data != NULL;
  const rngx_op op = {.loop = tensor ? by_dtype(job->dtype, bernoulli_pf16, bernoulli_pbf16, bernoulli_pf32, bernoulli_pf64)
                                     : by_dtype(job->dtype, bernoulli_f16, bernoulli_bf16, bernoulli_f32, bernoulli_f64),
                      .reads_input = tensor, .p = *p};
  execute(job, &op, begin, end);
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
  execute(job, &op, begin, end);
}

rngx_params rngx_exponential_params(double rate) {
  const rngx_params p = {.rate = rate};
  return p;
}

void rngx_exponential(const rngx_job *job, const rngx_params *p, int64_t begin, int64_t end) {
  const rngx_op op = {.loop = by_dtype(job->dtype, exponential_f16, exponential_bf16, exponential_f32, exponential_f64),
                      .p = *p};
  execute(job, &op, begin, end);
}

void rngx_race(const rngx_job *job, int64_t begin, int64_t end) {
  const rngx_op op = {.loop = race_f64, .reads_input = 1};
  execute(job, &op, begin, end);
}

/* ---- key derivation ---- */

static void child_key(const int64_t *key, uint64_t d, int64_t *out) {
  const rngx_ctr r = rngx_block((uint64_t)key[0], (uint64_t)key[1] + d);
  out[0] = (int64_t)((uint64_t)r.v[1] << 32 | r.v[0]);
  out[1] = (int64_t)((uint64_t)r.v[3] << 32 | r.v[2]);
}

void rngx_split(const int64_t *keys, int64_t n, int64_t num, int64_t *out) {
  for (int64_t i = 0; i < num; ++i)
    for (int64_t b = 0; b < n; ++b) child_key(keys + 2 * b, (uint64_t)i, out + 2 * (i * n + b));
}

void rngx_fold_in(const int64_t *keys, int64_t n, const int64_t *data, int64_t data_stride, int64_t *out) {
  for (int64_t b = 0; b < n; ++b) child_key(keys + 2 * b, (uint64_t)data[b * data_stride], out + 2 * b);
}
