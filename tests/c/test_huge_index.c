/* Logical indices past 2^31, 2^32 and up to 2^63 in every kernel, without the memory such tensors need.
 *
 * The output (and input) is a {rows, 64} tensor whose row stride is 0: all rows share one 64-element buffer.
 * Calling a kernel on [begin, end) inside the last row computes exactly those elements, each at its huge
 * logical index i, and stores it at column i % 64. With one key, element i takes words k*i .. of the key, i.e.
 * block offset + k*i / 4 (mod 2^64); with batched keys (the rows broadcast over a state, so there can be
 * 2^57 of them) the run index i / event is huge instead. Each element is checked against reference.h.
 * randint's int64 outputs take 2 words per element (a range up to 2^32) or 4 (above): element j's words start at
 * word 4 j, past 2^64 from j = 2^62 on, in block offset + j (docs/stream.md: W(t) = block(offset + t / 4)[t % 4]);
 * they are checked against the block the spec names, formed here from j itself. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "kernels/kernels.h"
#include "kernels/philox.h"
#include "reference.h"

#define COLS 64

static const uint64_t SEED = 0xC0FFEE0123456789ull;

/* Every op and dtype on the last row of `job` (its out/in data and strides are set here). */
static void check_last_row(rngx_job job, int64_t numel, const char *what) {
  static const rngx_dtype dts[] = {RNGX_FLOAT16, RNGX_BFLOAT16, RNGX_FLOAT32, RNGX_FLOAT64,
                                   RNGX_BITS8,   RNGX_BITS16,   RNGX_BITS32,   RNGX_BITS64};
  const op_call calls[] = {{OP_UNIFORM, -2, 3.1}, {OP_NOISE, 0.5, 0}, {OP_DROPOUT, 0.5, 0}};
  const int64_t begin = numel - COLS + 3, end = numel; /* the last row, unaligned */
  uint64_t out[COLS], x[COLS];
  for (size_t d = 0; d < sizeof dts / sizeof *dts; ++d) {
    const rngx_dtype dt = dts[d];
    const int bits = ref_is_bits(dt);
    for (size_t c = 0; c < (bits ? 1 : 3); ++c) {
      const op_call call = bits ? (op_call){OP_BITS, 0, 0} : calls[c];
      for (int col = 0; col < COLS; ++col) { /* inputs 1 and -2.5 */
        const uint64_t v = dt == RNGX_FLOAT64 ? ref_f64_bits(col % 2 ? 1.0 : -2.5) : ref_store_f32(dt, col % 2 ? 1.0f : -2.5f);
        memcpy((char *)x + (size_t)col * ref_elsize(dt), &v, ref_elsize(dt));
      }
      memset(out, 0xA5, sizeof out);
      job.dtype = dt;
      job.out.data = out;
      job.in.data = x;
      run_call(&job, &call, begin, end);
      for (int64_t i = begin; i < end; ++i) {
        uint64_t got = 0, xb = 0;
        memcpy(&got, (char *)out + (size_t)(i % COLS) * ref_elsize(dt), ref_elsize(dt));
        memcpy(&xb, (char *)x + (size_t)(i % COLS) * ref_elsize(dt), ref_elsize(dt));
        const ref_key k = ref_key_of(&job, i);
        const uint64_t want = ref_element(&call, dt, k.seed, k.offset, k.j, xb);
        CHECK_MSG(got == want, "    %s %s %s: i %lld: 0x%llx, want 0x%llx\n", what, REF_OP_NAMES[call.op],
                  REF_DTYPE_NAMES[dt], (long long)i, (unsigned long long)got, (unsigned long long)want);
      }
      for (int col = 0; col < 3; ++col) /* columns before begin: untouched */
        for (size_t b = 0; b < ref_elsize(dt); ++b) CHECK(((unsigned char *)out)[(size_t)col * ref_elsize(dt) + b] == 0xA5);
    }
  }
}

/* randint, int64, on the last row of `job`: a range of 1000 (2 words per element) and of 2^40 + 7 (4 words). */
static void check_randint_last_row(rngx_job job, int64_t numel, const char *what) {
  static const int64_t lows[] = {-500, -(1ll << 39)}, ranges[] = {1000, (1ll << 40) + 7};
  const int64_t begin = numel - COLS + 3, end = numel;
  uint64_t out[COLS];
  job.dtype = RNGX_BITS64;
  job.out.data = out;
  job.in.data = NULL;
  for (int r = 0; r < 2; ++r) {
    const int k = r == 0 ? 2 : 4;
    rngx_params p;
    CHECK(rngx_randint_params(RNGX_BITS64, INT64_MIN, INT64_MAX, lows[r], lows[r] + ranges[r], &p) == NULL);
    memset(out, 0xA5, sizeof out);
    rngx_randint(&job, &p, begin, end);
    for (int64_t i = begin; i < end; ++i) {
      const ref_key key = ref_key_of(&job, i);
      const uint64_t j = (uint64_t)key.j;
      /* word k j is lane (k j) % 4 of block offset + k j / 4: for k = 2, block j / 2, lane 2 (j % 2); for k = 4,
       * block j, lane 0 */
      const rngx_ctr b = rngx_block(key.seed, key.offset + (k == 4 ? j : j / 2));
      const uint32_t *w = k == 4 ? b.v : b.v + 2 * (j % 2);
      const uint64_t want = k == 4 ? rngx_randint_element_b64_wide(&p, w, 0) : rngx_randint_element_b64(&p, w, 0);
      CHECK_MSG(out[i % COLS] == want, "    %s randint k=%d: i %lld: 0x%llx, want 0x%llx\n", what, k, (long long)i,
                (unsigned long long)out[i % COLS], (unsigned long long)want);
    }
  }
}

/* One key for the whole {rows, 64} tensor: j = i, up to 2^63 - 1, so k*j / 4 reaches 2^62. */
static void check_single_key(int64_t rows, uint64_t offset) {
  const int64_t sizes[2] = {rows, COLS}, strides[2] = {0, 1};
  const rngx_job job = {.keys = {.seed = SEED, .offset = offset, .event = rows * COLS}, .ndim = 2, .sizes = sizes,
                        .out = {NULL, strides}, .in = {NULL, strides}};
  check_last_row(job, rows * COLS, "one key");
  check_randint_last_row(job, rows * COLS, "one key");
}

/* Batched keys with huge run indices: a (1, 64) state over {rows, 64} (per element, event 1: run = i), a
 * (1, 2, 1) one over {rows, 2, 32} (runs of 32), and a key per row whose key stride is 0 (runs of 64, all one
 * key; run indices up to 2^57). */
static void check_batched(int64_t rows) {
  int64_t pairs[2 * COLS];
  for (int c = 0; c < COLS; ++c) {
    pairs[2 * c] = (int64_t)(SEED ^ (uint64_t)c * 0x9E3779B97F4A7C15ull);
    pairs[2 * c + 1] = (int64_t)(c % 3 == 0 ? 0 - (uint64_t)c : (uint64_t)c << 31);
  }
  const int64_t s2[2] = {rows, COLS}, st2[2] = {0, 1}, ks2[2] = {0, 2};
  rngx_job job = {.keys = {.pairs = pairs, .key_dims = 2, .key_strides = ks2, .event = 1}, .ndim = 2, .sizes = s2,
                  .out = {NULL, st2}, .in = {NULL, st2}};
  check_last_row(job, rows * COLS, "per element");
  check_randint_last_row(job, rows * COLS, "per element");
  const int64_t s3[3] = {rows, 2, COLS / 2}, st3[3] = {0, COLS / 2, 1}, ks3[3] = {0, 2 * 7, 0};
  job = (rngx_job){.keys = {.pairs = pairs, .key_dims = 2, .key_strides = ks3, .event = COLS / 2}, .ndim = 3,
                   .sizes = s3, .out = {NULL, st3}, .in = {NULL, st3}};
  check_last_row(job, rows * COLS, "(1,2,1) keys");
  check_randint_last_row(job, rows * COLS, "(1,2,1) keys");
  const int64_t ks1[2] = {0, 0};
  job = (rngx_job){.keys = {.pairs = pairs + 2 * 5, .key_dims = 1, .key_strides = ks1, .event = COLS}, .ndim = 2,
                   .sizes = s2, .out = {NULL, st2}, .in = {NULL, st2}};
  check_last_row(job, rows * COLS, "rows broadcast");
  check_randint_last_row(job, rows * COLS, "rows broadcast");
}

int main(void) {
  const int64_t rows[] = {
      (1ll << 31) / COLS + 1,  /* just past 2^31 elements */
      (1ll << 32) / COLS + 1,  /* just past 2^32 */
      (1ll << 34) / COLS + 7,  /* float64 word indices past 2^35: block numbers past the 2^32 carry */
      (1ll << 62) / COLS,      /* the last row ends just below 2^62: randint's word 4 j still below 2^64 */
      (1ll << 62) / COLS + 1,  /* and past it */
      INT64_MAX / COLS,        /* the largest */
  };
  const uint64_t offsets[] = {0, 5, (1ull << 32) - 1, 0 - 9ull, 3ull << 62};
  for (size_t r = 0; r < sizeof rows / sizeof rows[0]; ++r) {
    for (size_t o = 0; o < sizeof offsets / sizeof offsets[0]; ++o) check_single_key(rows[r], offsets[o]);
    check_batched(rows[r]);
  }
  return check_summary();
}
