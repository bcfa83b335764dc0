/* The stream v2 contract (docs/stream.md; issue 8), one element at a time, for the C tests. Written from the
 * spec, not from the kernels: the only code under test the ref_* functions call is rngx_key_word and
 * rngx_block, the Philox core that test_philox checks against Random123's philox4x32 (and rngx_f32_to_bf16, which
 * test_convert checks exhaustively). run_call, at the end, is the harness's way to call a kernel.
 *
 *   W(t) of key (seed, offset) = block(seed, offset + t / 4)[t % 4], block numbers mod 2^64;
 *   the element with local index j takes k words W(k*j) .. W(k*j + k - 1), k = 2 for float64 and 64-bit bits;
 *   with batched keys, the element at multi-index (i_0 .. i_{r-1}) uses the key at sum_{d < key_dims}
 *   i_d * key_strides[d] of `pairs`, and j is the row-major index of (i_key_dims .. i_{r-1});
 *   float64: m53 = ((w0 & 0x1FFFFF) << 32) | w1; bits: low bits of w0, or (w0 << 32) | w1 for 64 bits;
 *   uniform (<= 32-bit dtypes): lo, hi = low, high in the dtype, width = fl32(hi - lo) in the dtype.
 *
 * Header-only, C11 (uses _Float16 for an independent float16 rounding). */
#ifndef RNGX_TEST_REFERENCE_H
#define RNGX_TEST_REFERENCE_H

#include <stdint.h>
#include <string.h>

#include "kernels/convert.h"
#include "kernels/kernels.h"
#include "kernels/philox.h"

typedef enum { OP_BITS, OP_UNIFORM, OP_NOISE, OP_DROPOUT } op_kind;
typedef struct { op_kind op; double a, b; } op_call; /* uniform: low, high; noise: half; dropout: p */

static const char *const REF_DTYPE_NAMES[] = {"float16", "bfloat16", "float32", "float64",
                                              "bits8",   "bits16",   "bits32",  "bits64"};
static const char *const REF_OP_NAMES[] = {"bits", "uniform", "quantize_noise", "dropout"};

static inline int ref_is_bits(rngx_dtype dt) { return dt >= RNGX_BITS8; }

/* Words per element (spec: 2 for float64 values and 64-bit bits, else 1). */
static inline int ref_k(rngx_dtype dt) { return dt == RNGX_FLOAT64 || dt == RNGX_BITS64 ? 2 : 1; }

static inline size_t ref_elsize(rngx_dtype dt) {
  switch (dt) {
    case RNGX_BITS8: return 1;
    case RNGX_FLOAT16: case RNGX_BFLOAT16: case RNGX_BITS16: return 2;
    case RNGX_FLOAT32: case RNGX_BITS32: return 4;
    default: return 8;
  }
}

/* The key and local index of logical element i of a job (its sizes, ndim and keys; data pointers unused). */
typedef struct { uint64_t seed, offset; int64_t j; } ref_key;

static inline ref_key ref_key_of(const rngx_job *job, int64_t i) {
  int64_t idx[RNGX_MAX_DIMS];
  for (int d = job->ndim - 1; d >= 0; --d) {
    idx[d] = i % job->sizes[d];
    i /= job->sizes[d];
  }
  ref_key r = {job->keys.seed, job->keys.offset, 0};
  for (int d = job->keys.key_dims; d < job->ndim; ++d) r.j = r.j * job->sizes[d] + idx[d];
  if (job->keys.pairs != NULL) {
    int64_t at = 0;
    for (int d = 0; d < job->keys.key_dims; ++d) at += idx[d] * job->keys.key_strides[d];
    r.seed = (uint64_t)job->keys.pairs[at];
    r.offset = (uint64_t)job->keys.pairs[at + 1];
  }
  return r;
}

/* Word m (0 or 1) of the element with local index j. */
static inline uint32_t ref_word(uint64_t seed, uint64_t offset, rngx_dtype dt, int64_t j, int m) {
  return rngx_key_word(seed, offset, (uint64_t)ref_k(dt) * (uint64_t)j + (uint64_t)m);
}

static inline uint64_t ref_f64_bits(double d) { uint64_t b; memcpy(&b, &d, 8); return b; }
static inline double ref_bits_f64(uint64_t b) { double d; memcpy(&d, &b, 8); return d; }
static inline float ref_half_to_float(uint16_t h) { _Float16 x; memcpy(&x, &h, 2); return (float)x; }
static inline uint16_t ref_float_to_half(float f) { const _Float16 x = (_Float16)f; uint16_t h; memcpy(&h, &x, 2); return h; }

/* An element's bits as float32 arithmetic sees it (16-bit types widen exactly). */
static inline float ref_load_f32(rngx_dtype dt, uint64_t b) {
  if (dt == RNGX_FLOAT16) return ref_half_to_float((uint16_t)b);
  if (dt == RNGX_BFLOAT16) { uint32_t w = (uint32_t)b << 16; float f; memcpy(&f, &w, 4); return f; }
  { uint32_t w = (uint32_t)b; float f; memcpy(&f, &w, 4); return f; }
}

/* One rounding to the output type. bfloat16 uses rngx_f32_to_bf16, which test_convert checks exhaustively
 * against a double-arithmetic reference. */
static inline uint64_t ref_store_f32(rngx_dtype dt, float v) {
  if (dt == RNGX_FLOAT16) return ref_float_to_half(v);
  if (dt == RNGX_BFLOAT16) return rngx_f32_to_bf16(v);
  { uint32_t w; memcpy(&w, &v, 4); return w; }
}

/* v as a value of a float dtype, in float32: rounded to float32, then once more to the 16-bit types (as torch
 * converts a double scalar). */
static inline float ref_round_to(rngx_dtype dt, double v) { return ref_load_f32(dt, ref_store_f32(dt, (float)v)); }

/* float64's 53 bits: 21 low bits of the first word above all 32 of the second (torch's packing). */
static inline uint64_t ref_m53(uint32_t w0, uint32_t w1) { return ((uint64_t)(w0 & 0x1FFFFFu) << 32) | w1; }

/* The bits of the element with local index j of key (seed, offset); xb: its input's bits (ops that read one). */
static inline uint64_t ref_element(const op_call *c, rngx_dtype dt, uint64_t seed, uint64_t offset, int64_t j,
                                   uint64_t xb) {
  const uint32_t w0 = ref_word(seed, offset, dt, j, 0);
  const uint32_t w1 = ref_k(dt) == 2 ? ref_word(seed, offset, dt, j, 1) : 0;
  switch (dt) {
    case RNGX_BITS8: return w0 & 0xFFu;
    case RNGX_BITS16: return w0 & 0xFFFFu;
    case RNGX_BITS32: return w0;
    case RNGX_BITS64: return (uint64_t)w0 << 32 | w1;
    default: break;
  }
  if (dt == RNGX_FLOAT64) {
    const double u = (double)ref_m53(w0, w1) / 9007199254740992.0, x = ref_bits_f64(xb);
    if (c->op == OP_UNIFORM) return ref_f64_bits(c->a + u * (c->b - c->a));
    if (c->op == OP_NOISE) return ref_f64_bits(x + (-c->a + u * (2 * c->a)));
    return ref_f64_bits(u >= c->a ? x * (1.0 / (1.0 - c->a)) : 0.0);
  }
  const float x = ref_load_f32(dt, xb), u24 = (float)(w0 & 0xFFFFFFu) / 16777216.0f;
  if (c->op == OP_UNIFORM) {
    /* u has the output type's significand width; lo and hi are low and high in the dtype, the width their
     * float32 difference rounded to the dtype (torch.func._random's uniform). */
    const int bits = dt == RNGX_FLOAT16 ? 11 : dt == RNGX_BFLOAT16 ? 8 : 24;
    const float u = (float)(w0 & ((1u << bits) - 1u)) / (float)(1u << bits);
    const float lo = ref_round_to(dt, c->a), hi = ref_round_to(dt, c->b), width = ref_round_to(dt, hi - lo);
    return ref_store_f32(dt, lo + u * width);
  }
  if (c->op == OP_NOISE) return ref_store_f32(dt, x + ((float)-c->a + u24 * (float)(2 * c->a)));
  return ref_store_f32(dt, (double)u24 >= c->a ? x * (float)(1.0 / (1.0 - c->a)) : 0.0f);
}

/* Runs a call's kernel on [begin, end) of a job, its parameters from rngx_*_params (the code under test; test_ops
 * checks them against the spec). A call they refuse writes nothing (the sentinel shows it). */
static inline void run_call(const rngx_job *job, const op_call *c, int64_t begin, int64_t end) {
  rngx_params p = {0};
  switch (c->op) {
    case OP_BITS: rngx_bits(job, begin, end); break;
    case OP_UNIFORM:
      if (rngx_uniform_params(job->dtype, c->a, c->b, &p) == NULL) rngx_uniform(job, &p, begin, end);
      break;
    case OP_NOISE:
      if (rngx_quantize_noise_params(job->dtype, c->a, &p) == NULL) rngx_quantize_noise(job, &p, begin, end);
      break;
    case OP_DROPOUT:
      if (rngx_dropout_params(job->dtype, c->a, &p) == NULL) rngx_dropout(job, &p, begin, end);
      break;
  }
}

/* split / fold_in (spec): child d of key (s, o) is (r0 | r1 << 32, r2 | r3 << 32), r = block(s, o + d). */
static inline void ref_child(uint64_t seed, uint64_t offset, uint64_t d, int64_t out[2]) {
  const rngx_ctr r = rngx_block(seed, offset + d);
  out[0] = (int64_t)(r.v[0] | (uint64_t)r.v[1] << 32);
  out[1] = (int64_t)(r.v[2] | (uint64_t)r.v[3] << 32);
}

#endif
