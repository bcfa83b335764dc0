/* Every Philox path this build and CPU can run (simd.h) against the scalar reference in philox.h, word for
 * word: whole blocks and words from unaligned starts, odd counts, counter carries at block 2^32 and the wrap
 * at word 2^64. Then every op under every path against the scalar path, in several layouts and split into
 * chunks at odd points (as threads split them). Built with -DRNGX_SCALAR_ONLY, only scalar must be offered. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kernels/ops.h"
#include "kernels/philox.h"
#include "kernels/simd.h"
#include "kernels/stream.h"

static const uint64_t SEEDS[] = {0, 1, 0x9E3779B97F4A7C15ull, UINT64_MAX};
/* Word indices where blocks cross a 2^32 counter carry or the 2^64 wrap, and some plain ones. */
static const uint64_t FIRSTS[] = {0, 1, 2, 3, 5, 4096 + 7, (4ull << 32) - 61, (4ull << 32) - 130, (8ull << 32) - 3,
                                  0 - 4ull, 0 - 77ull, 0 - 513ull, 0x123456789ABCDEFull};
static const int64_t COUNTS[] = {0, 1, 2, 3, 4, 5, 7, 31, 33, 63, 64, 65, 127, 129, 130, 257, 1021};

static int paths_checked;

static void check_words(void) {
  uint32_t out[1024 + 8];
  for (size_t s = 0; s < sizeof SEEDS / sizeof *SEEDS; ++s)
    for (size_t f = 0; f < sizeof FIRSTS / sizeof *FIRSTS; ++f)
      for (size_t c = 0; c < sizeof COUNTS / sizeof *COUNTS; ++c) {
        const int64_t count = COUNTS[c];
        out[count] = 0xDEADBEEFu;
        rngx_fill_words(SEEDS[s], FIRSTS[f], count, out);
        for (int64_t j = 0; j < count; ++j) CHECK_EQ_U32(out[j], rngx_word(SEEDS[s], FIRSTS[f] + (uint64_t)j));
        CHECK_EQ_U32(out[count], 0xDEADBEEFu); /* nothing written past the end */
      }
}

static void check_blocks(void) {
  uint32_t out[4 * 100 + 4];
  for (size_t s = 0; s < sizeof SEEDS / sizeof *SEEDS; ++s)
    for (size_t f = 0; f < sizeof FIRSTS / sizeof *FIRSTS; ++f)
      for (int64_t nblocks = 0; nblocks <= 100; ++nblocks) {
        const uint64_t block = FIRSTS[f] >> 2;
        out[4 * nblocks] = 0xDEADBEEFu;
        rngx_fill_blocks(SEEDS[s], block, nblocks, out);
        for (int64_t j = 0; j < 4 * nblocks; ++j)
          CHECK_EQ_U32(out[j], rngx_word(SEEDS[s], 4 * block + (uint64_t)j));
        CHECK_EQ_U32(out[4 * nblocks], 0xDEADBEEFu);
      }
}

/* ---- ops: each path must write the same bytes as the scalar path ---- */

enum { N0 = 3, N1 = 5, N2 = 37, N3 = 29, NUMEL = N0 * N1 * N2 * N3, NDIM = 4 };
static const int64_t SIZES[NDIM] = {N0, N1, N2, N3};

typedef struct { const char *name; int64_t strides[NDIM], span; } layout;
/* Contiguous, channels_last (dims 1 innermost), fully transposed, and every other element of a wider buffer. */
static const layout LAYOUTS[] = {
    {"contiguous", {N1 * N2 * N3, N2 * N3, N3, 1}, NUMEL},
    {"channels_last", {N1 * N2 * N3, 1, N3 * N1, N1}, NUMEL},
    {"transposed", {1, N0, N0 * N1, N0 * N1 * N2}, NUMEL},
    {"strided", {2 * N1 * N2 * N3, 2 * N2 * N3, 2 * N3, 2}, 2 * NUMEL},
};
/* A row of N3 = 29 (channels_last: 37 * 29) is shorter than a tile, so the tiled walk needs longer rows: */
enum { R0 = 2, R1 = 17, R2 = 600, LNUMEL = R0 * R1 * R2 };
static const int64_t LSIZES[3] = {R0, R1, R2};
static const int64_t LSTRIDES[3] = {R1 * R2, 1, R1}; /* channels_last-like: the long row has stride 17 */

typedef enum { OP_BITS, OP_UNIFORM, OP_NOISE, OP_DROPOUT } op_kind;

static size_t elsize(rngx_dtype dt) { return dt == RNGX_FLOAT16 || dt == RNGX_BFLOAT16 ? 2 : dt == RNGX_FLOAT32 ? 4 : 8; }

/* Runs op on [0, numel) in the chunks cut at `cuts` (a 0-terminated list of split points). */
static void run_op(op_kind op, const rngx_job *job, int64_t numel, const int64_t *cuts) {
  int64_t begin = 0;
  for (int c = 0;; ++c) {
    const int64_t end = cuts[c] > 0 && cuts[c] < numel ? cuts[c] : numel;
    switch (op) {
      case OP_BITS: rngx_bits(job, begin, end); break;
      case OP_UNIFORM: rngx_uniform(job, -1.5, 2.25, begin, end); break;
      case OP_NOISE: rngx_quantize_noise(job, 0.5, begin, end); break;
      case OP_DROPOUT: rngx_dropout(job, 0.3, begin, end); break;
    }
    if (end == numel) return;
    begin = end;
  }
}

/* Output bytes of op on a fresh output of the given shape and strides, input x filled from `fill`. */
static unsigned char *op_output(op_kind op, rngx_dtype dt, uint64_t offset, int ndim, const int64_t *sizes,
                                const int64_t *strides, int64_t span, int64_t numel, const int64_t *cuts) {
  const size_t bytes = (size_t)span * elsize(dt);
  unsigned char *out = malloc(bytes), *in = malloc(bytes);
  memset(out, 0xA5, bytes);
  for (size_t b = 0; b < bytes; ++b) in[b] = (unsigned char)(b * 131u + 7u);
  if (dt == RNGX_FLOAT16 || dt == RNGX_BFLOAT16) /* keep inputs finite: clear the top exponent bit */
    for (size_t b = 1; b < bytes; b += 2) in[b] &= 0xBF;
  else
    for (size_t b = elsize(dt) - 1; b < bytes; b += elsize(dt)) in[b] &= 0xBF;
  const rngx_job job = {0x0123456789ABCDEFull, offset, dt, ndim, sizes, {out, strides}, {in, strides}};
  run_op(op, &job, numel, cuts);
  free(in);
  return out;
}

static void check_ops_against_scalar(rngx_simd path) {
  static const int64_t whole[] = {0}, odd_cuts[] = {1, 1000, 4097, 5000, 0}, thirds[] = {NUMEL / 3, 2 * NUMEL / 3, 0};
  static const int64_t lcuts[] = {599, 7777, 0};
  static const rngx_dtype dtypes[] = {RNGX_FLOAT16, RNGX_BFLOAT16, RNGX_FLOAT32, RNGX_FLOAT64};
  static const uint64_t offsets[] = {0, 3, 0 - 6ull};
  for (int op = OP_BITS; op <= OP_DROPOUT; ++op)
    for (size_t d = 0; d < sizeof dtypes / sizeof *dtypes; ++d) {
      const rngx_dtype dt = op == OP_BITS ? RNGX_INT64 : dtypes[d];
      for (size_t o = 0; o < sizeof offsets / sizeof *offsets; ++o) {
        for (size_t l = 0; l < sizeof LAYOUTS / sizeof *LAYOUTS; ++l) {
          const layout *ly = &LAYOUTS[l];
          const int64_t *cuts[] = {whole, odd_cuts, thirds};
          rngx_simd_select(RNGX_SIMD_SCALAR);
          unsigned char *want = op_output(op, dt, offsets[o], NDIM, SIZES, ly->strides, ly->span, NUMEL, whole);
          rngx_simd_select(path);
          for (int c = 0; c < 3; ++c) {
            unsigned char *got = op_output(op, dt, offsets[o], NDIM, SIZES, ly->strides, ly->span, NUMEL, cuts[c]);
            if (!CHECK(memcmp(got, want, (size_t)ly->span * elsize(dt)) == 0))
              fprintf(stderr, "    %s: op %d, %s, dtype %d, offset %llu, cuts %d\n", rngx_simd_name(path), op,
                      ly->name, (int)dt, (unsigned long long)offsets[o], c);
            free(got);
          }
          free(want);
        }
        /* The tiled walk (long strided rows) against the scalar path. */
        rngx_simd_select(RNGX_SIMD_SCALAR);
        unsigned char *want = op_output(op, dt, offsets[o], 3, LSIZES, LSTRIDES, LNUMEL, LNUMEL, whole);
        rngx_simd_select(path);
        unsigned char *got = op_output(op, dt, offsets[o], 3, LSIZES, LSTRIDES, LNUMEL, LNUMEL, lcuts);
        CHECK(memcmp(got, want, (size_t)LNUMEL * elsize(dt)) == 0);
        free(got);
        free(want);
      }
      if (op == OP_BITS) break;
    }
}

/* The tiled walk must put each logical element's value where the batch walk of a contiguous layout does. */
static void check_tiled_layout(void) {
  static const int64_t whole[] = {0}, contiguous[3] = {R1 * R2, R2, 1};
  for (int op = OP_UNIFORM; op <= OP_DROPOUT; ++op) {
    /* Same input values at the same logical index: fill the strided input from the contiguous pattern. */
    const rngx_dtype dt = RNGX_FLOAT32;
    float *x = malloc(LNUMEL * sizeof *x), *xs = malloc(LNUMEL * sizeof *xs);
    float *a = malloc(LNUMEL * sizeof *a), *b = malloc(LNUMEL * sizeof *b);
    for (int64_t i = 0; i < LNUMEL; ++i) x[i] = (float)i * 0.25f - 100.0f;
    for (int64_t i0 = 0; i0 < R0; ++i0)
      for (int64_t i1 = 0; i1 < R1; ++i1)
        for (int64_t i2 = 0; i2 < R2; ++i2)
          xs[i0 * LSTRIDES[0] + i1 * LSTRIDES[1] + i2 * LSTRIDES[2]] = x[(i0 * R1 + i1) * R2 + i2];
    const rngx_job ja = {42, 5, dt, 3, LSIZES, {a, contiguous}, {x, contiguous}};
    const rngx_job jb = {42, 5, dt, 3, LSIZES, {b, LSTRIDES}, {xs, LSTRIDES}};
    run_op(op, &ja, LNUMEL, whole);
    run_op(op, &jb, LNUMEL, whole);
    int same = 1;
    for (int64_t i0 = 0; i0 < R0; ++i0)
      for (int64_t i1 = 0; i1 < R1; ++i1)
        for (int64_t i2 = 0; i2 < R2; ++i2)
          same &= memcmp(&b[i0 * LSTRIDES[0] + i1 * LSTRIDES[1] + i2 * LSTRIDES[2]], &a[(i0 * R1 + i1) * R2 + i2], 4) == 0;
    CHECK(same);
    free(x), free(xs), free(a), free(b);
  }
}

int main(void) {
  for (int p = 0; p < RNGX_SIMD_COUNT; ++p) {
    const rngx_simd path = (rngx_simd)p;
    if (!rngx_simd_supported(path)) {
      printf("path %s: not supported here, skipped\n", rngx_simd_name(path));
      CHECK(rngx_simd_select(path) == -1);
      continue;
    }
    CHECK(rngx_simd_select(path) == 0);
    CHECK(rngx_simd_active() == path);
    check_words();
    check_blocks();
    check_ops_against_scalar(path); /* for scalar: only the chunk splits */
    printf("path %s: checked\n", rngx_simd_name(path));
    ++paths_checked;
  }
#ifdef RNGX_SCALAR_ONLY
  CHECK(paths_checked == 1);
#endif
  rngx_simd_select(RNGX_SIMD_SCALAR);
  check_tiled_layout();
  return check_summary();
}
