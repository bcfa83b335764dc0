/* Global view (docs/stream.md, "Global view"; issue 11): an op on a block of a larger tensor, told the global shape
 * and the block's start (rngx_global_view), writes exactly the block of the op on the whole tensor. The whole
 * tensor runs without a global view, which test_ops checks against the spec's reference.
 *
 * Random global shapes of 1 to 4 dims, random blocks (full dims, single rows, uneven ends, empty blocks), every
 * dtype and op, one key by value or batched keys in memory over the global batch dims (broadcast dims too), the
 * block contiguous or with its dims reversed in memory, its input a strided view into the global input, run whole
 * and in random chunks. Blocks are allocated to their exact size, so a write outside shows under ASan. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kernels/kernels.h"
#include "reference.h"

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t next_u64(void) { /* xorshift64 */
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  return rng_state ^= rng_state << 17;
}
static int64_t below(int64_t n) { return (int64_t)(next_u64() % (uint64_t)n); }

static const op_call CALLS[] = {{OP_BITS, 0, 0}, {OP_UNIFORM, -1.5, 2.25}, {OP_NOISE, 0.5, 0}, {OP_DROPOUT, 0.3, 0}};

typedef struct {
  int ndim;
  int64_t global[RNGX_MAX_DIMS], start[RNGX_MAX_DIMS], local[RNGX_MAX_DIMS];
  int batched[RNGX_MAX_DIMS]; /* the state's batch dim d is global[d] (else 1) */
} view;

static int64_t numel_of(int ndim, const int64_t *sizes) {
  int64_t n = 1;
  for (int d = 0; d < ndim; ++d) n *= sizes[d];
  return n;
}

static void random_view(view *v) {
  v->ndim = 1 + (int)below(4);
  for (int d = 0; d < v->ndim; ++d) {
    v->global[d] = 1 + below(9);
    const int kind = (int)below(4); /* full, a single index, or a random (possibly empty) range */
    v->local[d] = kind == 0 ? v->global[d] : kind == 1 ? 1 : below(v->global[d] + 1);
    if (kind == 1 && below(8) == 0) v->local[d] = 0;
    v->start[d] = below(v->global[d] - v->local[d] + 1);
    v->batched[d] = 0;
  }
  const int key_dims = (int)below(v->ndim + 1); /* batched keys on dims < key_dims, some broadcast */
  for (int d = 0; d < key_dims; ++d) v->batched[d] = d == key_dims - 1 || below(2);
}

/* keys for the global tensor: by value, or one pair per global batch index (contiguous (*B, 2) state). */
static void global_keys(const view *v, const int64_t *pairs, int64_t *key_strides, rngx_keys *keys) {
  memset(keys, 0, sizeof *keys);
  keys->seed = 0xC0FFEE1234ull;
  keys->offset = 0 - 7ull; /* the wrap at 2^64 inside the tensor */
  keys->key_strides = key_strides;
  int64_t stride = 2;
  for (int d = v->ndim - 1; d >= 0; --d) {
    key_strides[d] = v->batched[d] && v->global[d] != 1 ? stride : 0;
    if (key_strides[d] != 0 && keys->key_dims == 0) keys->key_dims = d + 1;
    stride *= v->batched[d] ? v->global[d] : 1;
  }
  if (keys->key_dims > 0) keys->pairs = pairs;
  keys->event = 1;
  for (int d = keys->key_dims; d < v->ndim; ++d) keys->event *= v->global[d];
  if (keys->event == 0) keys->event = 1;
}

static long check_view(const view *v, rngx_dtype dt, const op_call *c, int reversed) {
  const int nd = v->ndim;
  const size_t es = ref_elsize(dt);
  const int64_t gn = numel_of(nd, v->global), ln = numel_of(nd, v->local);
  int64_t gstrides[RNGX_MAX_DIMS], lstrides[RNGX_MAX_DIMS], key_strides[RNGX_MAX_DIMS], pos[RNGX_MAX_DIMS];
  for (int d = nd - 1, s = 1; d >= 0; s *= (int)v->global[d], --d) gstrides[d] = s;
  if (reversed) /* the block's dims reversed in memory: dim 0 innermost */
    for (int d = 0, s = 1; d < nd; s *= (int)v->local[d], ++d) lstrides[d] = s;
  else
    for (int d = nd - 1, s = 1; d >= 0; s *= (int)v->local[d], --d) lstrides[d] = s;
  int64_t *pairs = malloc(2 * (size_t)gn * sizeof *pairs);
  for (int64_t w = 0; w < 2 * gn; ++w) pairs[w] = (int64_t)next_u64();
  char *gin = malloc((size_t)gn * es + 1), *gout = malloc((size_t)gn * es + 1), *lout = malloc((size_t)ln * es + 1);
  for (int64_t b = 0; b < gn * (int64_t)es; ++b) gin[b] = (char)(c->op == OP_DROPOUT ? 0x3C : next_u64());

  rngx_keys keys;
  global_keys(v, pairs, key_strides, &keys);
  const rngx_job whole = {.keys = keys, .dtype = dt, .ndim = nd, .sizes = v->global,
                          .out = {gout, gstrides}, .in = {gin, gstrides}};
  run_call(&whole, c, 0, gn);

  int64_t at = 0; /* the block's first element in the global tensor */
  for (int d = 0; d < nd; ++d) at += v->start[d] * gstrides[d];
  rngx_job job = {.keys = keys, .dtype = dt, .ndim = nd, .sizes = v->local,
                  .out = {lout, lstrides}, .in = {gin + at * (int64_t)es, gstrides}};
  rngx_global_view(&job.keys, nd, v->local, v->global, v->start, pos);
  long bad = 0;
  for (int chunked = 0; chunked < 2; ++chunked) {
    memset(lout, 0xA5, (size_t)ln * es);
    for (int64_t b = 0; b < ln;) {
      const int64_t e = chunked ? b + 1 + below(7) : ln;
      run_call(&job, c, b, e < ln ? e : ln);
      b = e;
    }
    for (int64_t i = 0; i < ln; ++i) {
      int64_t rest = i, g = at, l = 0;
      for (int d = nd - 1; d >= 0; --d) {
        const int64_t idx = rest % v->local[d];
        rest /= v->local[d];
        g += idx * gstrides[d];
        l += idx * lstrides[d];
      }
      bad += memcmp(lout + l * (int64_t)es, gout + g * (int64_t)es, es) != 0;
    }
  }
  free(pairs);
  free(gin);
  free(gout);
  free(lout);
  return bad;
}

int main(void) {
  static const rngx_dtype dts[] = {RNGX_FLOAT16, RNGX_BFLOAT16, RNGX_FLOAT32, RNGX_FLOAT64,
                                   RNGX_BITS8,   RNGX_BITS16,   RNGX_BITS32,   RNGX_BITS64};
  for (int trial = 0; trial < 400; ++trial) {
    view v;
    random_view(&v);
    for (size_t t = 0; t < sizeof dts / sizeof *dts; ++t)
      for (size_t c = 0; c < sizeof CALLS / sizeof *CALLS; ++c) {
        if ((CALLS[c].op == OP_BITS) != ref_is_bits(dts[t])) continue;
        for (int reversed = 0; reversed < 2; ++reversed) {
          const long bad = check_view(&v, dts[t], &CALLS[c], reversed);
          CHECK_MSG(bad == 0, "    trial %d, %s %s, %d dims, reversed %d: %ld elements differ\n", trial,
                    REF_OP_NAMES[CALLS[c].op], REF_DTYPE_NAMES[dts[t]], v.ndim, reversed, bad);
        }
      }
  }
  return check_summary();
}
