/* Every Philox path this build and CPU can run (simd.h) against the scalar reference in philox.h, block for
 * block: rngx_fill_blocks from many starts and counts, across counter carries at block 2^32 and the wrap at
 * block 2^64, writing nothing past its end. Then every op (normal, truncated normal, bernoulli, randint and
 * stochastic_round's every (input, target) pair included) and dtype (bits and randint at 8/16/32/64 bits too) under every
 * path against the scalar path, in several layouts, with one key and with batched keys, split into chunks at
 * odd points (as threads split them). Built with -DRNGX_SCALAR_ONLY, only scalar must be offered. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kernels/kernels.h"
#include "kernels/philox.h"
#include "kernels/simd.h"
#include "kernels/stream.h"

static const uint64_t SEEDS[] = {0, 1, 0x9E3779B97F4A7C15ull, UINT64_MAX};
/* Block numbers where runs cross a 2^32 counter carry or the 2^64 wrap, and some plain ones. */
static const uint64_t FIRSTS[] = {0, 1, 2, 3, 5, 1031, (1ull << 32) - 15, (1ull << 32) - 33, (2ull << 32) - 1,
                                  0 - 1ull, 0 - 19ull, 0 - 128ull, 0 - 129ull, 0x123456789ABCDEFull};

static int paths_checked;

static void check_blocks(void) {
  uint32_t out[4 * 300 + 4];
  for (size_t s = 0; s < sizeof SEEDS / sizeof *SEEDS; ++s)
    for (size_t f = 0; f < sizeof FIRSTS / sizeof *FIRSTS; ++f)
      for (int64_t nblocks = 0; nblocks <= 300; nblocks += nblocks < 100 ? 1 : 37) {
        const uint64_t block = FIRSTS[f];
        out[4 * nblocks] = 0xDEADBEEFu;
        rngx_fill_blocks(SEEDS[s], block, nblocks, out);
        for (int64_t b = 0; b < nblocks; ++b) {
          const rngx_ctr want = rngx_block(SEEDS[s], block + (uint64_t)b);
          for (int lane = 0; lane < 4; ++lane)
            CHECK_MSG(out[4 * b + lane] == want.v[lane], "    %s: seed %llx, block %llx + %lld, lane %d\n",
                      rngx_simd_name(rngx_simd_active()), (unsigned long long)SEEDS[s], (unsigned long long)block,
                      (long long)b, lane);
        }
        CHECK_EQ_U32(out[4 * nblocks], 0xDEADBEEFu); /* nothing written past the end */
      }
  /* Exactly sized buffers, so ASan (make sanitize) sees an overrun of a tail group too. */
  for (int64_t nblocks = 1; nblocks <= 40; ++nblocks) {
    uint32_t *buf = malloc((size_t)nblocks * 4 * sizeof *buf);
    rngx_fill_blocks(7, 0 - 3ull, nblocks, buf);
    for (int64_t b = 0; b < nblocks; ++b) CHECK_EQ_U32(buf[4 * b + 3], rngx_block(7, 0 - 3ull + (uint64_t)b).v[3]);
    free(buf);
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

/* Keys: one by value at a few offsets (incl. the 2^64 wrap), and batched ones in memory. */
typedef struct { const char *name; int key_dims; int64_t key_strides[NDIM]; } key_cfg;
static const key_cfg KEY_CFGS[] = {
    {"by value", 0, {0}},
    {"(N,1,1,1)", 1, {2}},                                /* per sample */
    {"(N,C,1,1)", 2, {2 * N1, 2}},                        /* runs of 37 * 29 */
    {"(1,C,H,1)", 3, {0, 2 * N2, 2}},                     /* runs of 29, broadcast over N */
    {"(N,C,H,W)", 4, {2 * N1 * N2 * N3, 2 * N2 * N3, 2 * N3, 2}}, /* per element */
};
static const key_cfg LKEY_CFGS[] = {{"by value", 0, {0}}, {"(N,C,1)", 2, {2 * R1, 2}}, {"(1,C,W)", 3, {0, 2 * R2, 2}}};
static int64_t PAIRS[2 * NUMEL];

static rngx_keys keys_of(const key_cfg *kc, int ndim, const int64_t *sizes, uint64_t offset) {
  rngx_keys k = {.seed = 0x0123456789ABCDEFull, .offset = offset, .key_dims = kc->key_dims,
                 .key_strides = kc->key_strides, .event = 1};
  for (int d = kc->key_dims; d < ndim; ++d) k.event *= sizes[d];
  if (kc->key_dims > 0) k.pairs = PAIRS;
  return k;
}

typedef enum {
  OP_BITS, OP_UNIFORM, OP_NOISE, OP_DROPOUT, OP_NORMAL, OP_TRUNCNORM, OP_BERNOULLI, OP_BERNOULLI_P, OP_RANDINT,
  OP_NORMAL_TENSOR, OP_ALPHA_DROPOUT, OP_RRELU, OP_CAUCHY, OP_LOG_NORMAL, OP_GEOMETRIC, /* issue 43's */
  OP_SROUND /* stochastic_round: x of another dtype (saturating from float64); the last */
} op_kind;

static int integer_op(int op) { return op == OP_BITS || op == OP_RANDINT; }

static size_t elsize(rngx_dtype dt) { return (size_t)rngx_dtype_size(dt); }

/* Runs op on [0, numel) in the chunks cut at `cuts` (a 0-terminated list of split points); x's dtype is in_dt. */
static void run_op(op_kind op, const rngx_job *job, rngx_dtype in_dt, int64_t numel, const int64_t *cuts) {
  int64_t begin = 0;
  for (int c = 0;; ++c) {
    const int64_t end = cuts[c] > 0 && cuts[c] < numel ? cuts[c] : numel;
    rngx_params p = {0};
    switch (op) {
      case OP_BITS: rngx_bits(job, begin, end); break;
      case OP_UNIFORM:
        CHECK(rngx_uniform_params(job->dtype, -1.5, 2.3, &p) == NULL);
        rngx_uniform(job, &p, begin, end);
        break;
      case OP_NOISE:
        CHECK(rngx_quantize_noise_params(job->dtype, 0.5, &p) == NULL);
        rngx_quantize_noise(job, &p, begin, end);
        break;
      case OP_DROPOUT:
        CHECK(rngx_dropout_params(job->dtype, 0.3, &p) == NULL);
        rngx_dropout(job, &p, begin, end);
        break;
      case OP_NORMAL:
        CHECK(rngx_normal_params(job->dtype, 0.25, 1.5, &p) == NULL);
        rngx_normal(job, &p, begin, end);
        break;
      case OP_TRUNCNORM:
        CHECK(rngx_truncnorm_params(job->dtype, 0.5, 2.0, -1.0, 3.3, &p) == NULL);
        rngx_truncnorm(job, &p, begin, end);
        break;
      case OP_BERNOULLI_P: rngx_bernoulli_tensor(job, begin, end); break;
      case OP_BERNOULLI: {
        rngx_job scalar = *job; /* no input: p from the parameters */
        scalar.in.data = NULL;
        CHECK(rngx_bernoulli_params(job->dtype, 0.3, &p) == NULL);
        rngx_bernoulli(&scalar, &p, begin, end);
        break;
      }
      case OP_RANDINT:
        if (job->dtype == RNGX_BITS64) CHECK(rngx_randint_params(job->dtype, INT64_MIN, INT64_MAX, -5, -5 + (int64_t)(0xFFFFFFFFFFFull * 3), &p) == NULL);
        else CHECK(rngx_randint_params(job->dtype, INT64_MIN, INT64_MAX, -7, 194, &p) == NULL); /* the bits of any width */
        rngx_randint(job, &p, begin, end);
        break;
      case OP_NORMAL_TENSOR: rngx_normal_tensor(job, begin, end); break; /* mean and std: the input, both */
      case OP_ALPHA_DROPOUT:
        CHECK(rngx_alpha_dropout_params(job->dtype, 0.3, &p) == NULL);
        rngx_alpha_dropout(job, &p, begin, end);
        break;
      case OP_RRELU:
        CHECK(rngx_rrelu_params(job->dtype, 0.125, 1.0 / 3, &p) == NULL);
        rngx_rrelu(job, &p, begin, end);
        break;
      case OP_CAUCHY:
        CHECK(rngx_cauchy_params(job->dtype, 0.5, 2.0, &p) == NULL);
        rngx_cauchy(job, &p, begin, end);
        break;
      case OP_LOG_NORMAL:
        CHECK(rngx_log_normal_params(job->dtype, 0.25, 1.5, &p) == NULL);
        rngx_log_normal(job, &p, begin, end);
        break;
      case OP_GEOMETRIC:
        CHECK(rngx_geometric_params(job->dtype, 0.3, &p) == NULL);
        rngx_geometric(job, &p, begin, end);
        break;
      case OP_SROUND:
        CHECK(rngx_sround_params(job->dtype, in_dt, in_dt == RNGX_FLOAT64, &p) == NULL);
        rngx_sround(job, &p, begin, end);
        break;
    }
    if (end == numel) return;
    begin = end;
  }
}

/* Output bytes of op on a fresh output of the given shape and strides, input x (of dtype in_dt) filled from a
 * fixed pattern. */
static unsigned char *op_output(op_kind op, rngx_dtype dt, rngx_dtype in_dt, const rngx_keys *keys, int ndim,
                                const int64_t *sizes, const int64_t *strides, int64_t span, int64_t numel,
                                const int64_t *cuts) {
  const size_t bytes = (size_t)span * elsize(dt), in_bytes = (size_t)span * elsize(in_dt);
  unsigned char *out = malloc(bytes), *in = malloc(in_bytes);
  memset(out, 0xA5, bytes);
  for (size_t b = 0; b < in_bytes; ++b) in[b] = (unsigned char)(b * 131u + 7u);
  if (in_dt == RNGX_FLOAT16 || in_dt == RNGX_BFLOAT16) /* keep inputs finite: clear the top exponent bit */
    for (size_t b = 1; b < in_bytes; b += 2) in[b] &= 0xBF;
  else
    for (size_t b = elsize(in_dt) - 1; b < in_bytes; b += elsize(in_dt)) in[b] &= 0xBF;
  const rngx_job job = {.keys = *keys, .dtype = dt, .ndim = ndim, .sizes = sizes, .out = {out, strides},
                        .in = {in, strides}, .in2 = {in, strides}};
  run_op(op, &job, in_dt, numel, cuts);
  free(in);
  return out;
}

static void compare_paths(rngx_simd path, op_kind op, rngx_dtype dt, rngx_dtype in_dt, const rngx_keys *keys,
                          int ndim, const int64_t *sizes, const int64_t *strides, int64_t span, int64_t numel,
                          const int64_t *const *cuts, int ncuts, const char *what) {
  static const int64_t whole[] = {0};
  rngx_simd_select(RNGX_SIMD_SCALAR);
  unsigned char *want = op_output(op, dt, in_dt, keys, ndim, sizes, strides, span, numel, whole);
  rngx_simd_select(path);
  for (int c = 0; c < ncuts; ++c) {
    unsigned char *got = op_output(op, dt, in_dt, keys, ndim, sizes, strides, span, numel, cuts[c]);
    CHECK_MSG(memcmp(got, want, (size_t)span * elsize(dt)) == 0, "    %s: op %d, dtype %d, offset %llu, %s, cuts %d\n",
              rngx_simd_name(path), op, (int)dt, (unsigned long long)keys->offset, what, c);
    free(got);
  }
  free(want);
}

static void check_ops_against_scalar(rngx_simd path) {
  static const int64_t whole[] = {0}, odd_cuts[] = {1, 1000, 4097, 5000, 0}, thirds[] = {NUMEL / 3, 2 * NUMEL / 3, 0};
  static const int64_t lcuts[] = {599, 7777, 0};
  const int64_t *const cuts[] = {whole, odd_cuts, thirds}, *const tcuts[] = {lcuts};
  static const rngx_dtype dtypes[] = {RNGX_FLOAT16, RNGX_BFLOAT16, RNGX_FLOAT32, RNGX_FLOAT64,
                                      RNGX_BITS8,   RNGX_BITS16,   RNGX_BITS32,   RNGX_BITS64};
  static const uint64_t offsets[] = {0, 3, 0 - 6ull};
  static const rngx_dtype targets[] = {RNGX_BFLOAT16, RNGX_FLOAT16, RNGX_FLOAT8_E4M3FN, RNGX_FLOAT8_E5M2};
  for (size_t d = 0; d < sizeof dtypes / sizeof *dtypes; ++d)
    for (int o = OP_BITS; o <= OP_SROUND + 3; ++o) { /* stochastic_round: x of dtypes[d], each target */
      const op_kind op = o < OP_SROUND ? (op_kind)o : OP_SROUND;
      const rngx_dtype in_dt = dtypes[d], dt = op == OP_SROUND ? targets[o - OP_SROUND] : in_dt;
      if (op == OP_SROUND ? !rngx_sround_pair(in_dt, dt) : (dt >= RNGX_BITS8) != integer_op(op)) continue;
      for (size_t k = 0; k < sizeof KEY_CFGS / sizeof *KEY_CFGS; ++k)
        for (size_t o = 0; o < (k == 0 ? 3 : 1); ++o) {
          const rngx_keys keys = keys_of(&KEY_CFGS[k], NDIM, SIZES, offsets[o]);
          for (size_t l = 0; l < sizeof LAYOUTS / sizeof *LAYOUTS; ++l) {
            /* batched keys: the contiguous and channels_last layouts only, to stay quick */
            if (k > 0 && l != 0 && l != 1) continue;
            compare_paths(path, op, dt, in_dt, &keys, NDIM, SIZES, LAYOUTS[l].strides, LAYOUTS[l].span, NUMEL, cuts,
                          3, KEY_CFGS[k].name);
          }
        }
      /* The tiled walk (long strided rows) against the scalar path. */
      for (size_t k = 0; k < sizeof LKEY_CFGS / sizeof *LKEY_CFGS; ++k)
        for (size_t o = 0; o < (k == 0 ? 3 : 1); ++o) {
          const rngx_keys keys = keys_of(&LKEY_CFGS[k], 3, LSIZES, offsets[o]);
          compare_paths(path, op, dt, in_dt, &keys, 3, LSIZES, LSTRIDES, LNUMEL, LNUMEL, tcuts, 1, LKEY_CFGS[k].name);
        }
    }
}

/* The tiled walk must put each logical element's value where the batch walk of a contiguous layout does, with
 * one key and with a key per row. */
static void check_tiled_layout(void) {
  static const int64_t whole[] = {0}, contiguous[3] = {R1 * R2, R2, 1};
  for (size_t k = 0; k < sizeof LKEY_CFGS / sizeof *LKEY_CFGS; ++k)
    for (int op = OP_UNIFORM; op <= OP_BERNOULLI_P; ++op) {
      /* Same input values at the same logical index: fill the strided input from the contiguous pattern. */
      const rngx_dtype dt = RNGX_FLOAT32;
      const rngx_keys keys = keys_of(&LKEY_CFGS[k], 3, LSIZES, 5);
      float *x = malloc(LNUMEL * sizeof *x), *xs = malloc(LNUMEL * sizeof *xs);
      float *a = malloc(LNUMEL * sizeof *a), *b = malloc(LNUMEL * sizeof *b);
      for (int64_t i = 0; i < LNUMEL; ++i) x[i] = (float)i * 0.25f - 100.0f;
      for (int64_t i0 = 0; i0 < R0; ++i0)
        for (int64_t i1 = 0; i1 < R1; ++i1)
          for (int64_t i2 = 0; i2 < R2; ++i2)
            xs[i0 * LSTRIDES[0] + i1 * LSTRIDES[1] + i2 * LSTRIDES[2]] = x[(i0 * R1 + i1) * R2 + i2];
      const rngx_job ja = {.keys = keys, .dtype = dt, .ndim = 3, .sizes = LSIZES, .out = {a, contiguous},
                           .in = {x, contiguous}};
      const rngx_job jb = {.keys = keys, .dtype = dt, .ndim = 3, .sizes = LSIZES, .out = {b, LSTRIDES},
                           .in = {xs, LSTRIDES}};
      run_op(op, &ja, dt, LNUMEL, whole);
      run_op(op, &jb, dt, LNUMEL, whole);
      int same = 1;
      for (int64_t i0 = 0; i0 < R0; ++i0)
        for (int64_t i1 = 0; i1 < R1; ++i1)
          for (int64_t i2 = 0; i2 < R2; ++i2)
            same &= memcmp(&b[i0 * LSTRIDES[0] + i1 * LSTRIDES[1] + i2 * LSTRIDES[2]], &a[(i0 * R1 + i1) * R2 + i2], 4) == 0;
      CHECK_MSG(same, "    tiled vs contiguous: op %d, keys %s\n", op, LKEY_CFGS[k].name);
      free(x), free(xs), free(a), free(b);
    }
}

int main(void) {
  for (int64_t i = 0; i < 2 * NUMEL; i += 2) { /* keys for the batched cases: offsets near 2^64 among them */
    PAIRS[i] = (int64_t)(0x9E3779B97F4A7C15ull * (uint64_t)(i + 1));
    PAIRS[i + 1] = (int64_t)(i % 6 == 0 ? 0 - (uint64_t)(i % 5) : (uint64_t)i * 977u);
  }
  for (int p = 0; p < RNGX_SIMD_COUNT; ++p) {
    const rngx_simd path = (rngx_simd)p;
    if (!rngx_simd_supported(path)) {
      printf("path %s: not supported here, skipped\n", rngx_simd_name(path));
      CHECK(rngx_simd_select(path) == -1);
      continue;
    }
    CHECK(rngx_simd_select(path) == 0);
    CHECK(rngx_simd_active() == path);
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
