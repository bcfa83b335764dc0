/* Logical indices past 2^31, 2^32 and up to 2^63 in every kernel, without the memory such tensors need.
 *
 * The output (and input) is a {rows, 64} tensor whose row stride is 0: all rows share one 64-element buffer.
 * Calling a kernel on [begin, end) inside the last row computes exactly those elements, each at its huge
 * logical index i, and stores it at column i % 64. Each must equal the stream word offset + k*i (mod 2^64),
 * computed here one word at a time from rngx_word (the Philox core, checked against Random123 elsewhere). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "kernels/ops.h"
#include "kernels/philox.h"

#define COLS 64

static const uint64_t SEED = 0xC0FFEE0123456789ull;

/* Word index of element i's j-th word: offset + k*i + j, modulo 2^64. */
static uint32_t word_of(uint64_t offset, int k, int64_t i, int j) {
  return rngx_word(SEED, offset + (uint64_t)k * (uint64_t)i + (uint64_t)j);
}

static void check_rows(int64_t rows, uint64_t offset) {
  const int64_t sizes[2] = {rows, COLS}, strides[2] = {0, 1};
  const int64_t numel = rows * COLS, begin = numel - COLS + 3, end = numel; /* the last row, unaligned */
  int64_t bits[COLS];
  float f32[COLS], x32[COLS];
  double f64[COLS], x64[COLS];
  for (int c = 0; c < COLS; ++c) x32[c] = 1.0f, x64[c] = 1.0;

  rngx_job job = {SEED, offset, RNGX_INT64, 2, sizes, {bits, strides}, {0, 0}};
  memset(bits, 0xff, sizeof bits);
  rngx_bits(&job, begin, end);
  for (int64_t i = begin; i < end; ++i)
    CHECK_MSG((uint64_t)bits[i % COLS] == word_of(offset, 1, i, 0), "    bits: rows %lld, i %lld\n", (long long)rows,
              (long long)i);

  job.dtype = RNGX_FLOAT32;
  job.out.data = f32;
  rngx_uniform(&job, -2.0, 3.0, begin, end);
  for (int64_t i = begin; i < end; ++i) {
    const float u = (float)(word_of(offset, 1, i, 0) & 0xFFFFFFu) * 0x1p-24f, want = -2.0f + u * 5.0f;
    CHECK_MSG(f32[i % COLS] == want, "    uniform f32: i %lld\n", (long long)i);
  }

  job.dtype = RNGX_FLOAT64; /* two words per element: word indices reach 2 * i */
  job.out.data = f64;
  rngx_uniform(&job, 0.0, 1.0, begin, end);
  for (int64_t i = begin; i < end; ++i) {
    const uint64_t m = (((uint64_t)word_of(offset, 2, i, 1) << 32) | word_of(offset, 2, i, 0)) & ((1ull << 53) - 1);
    CHECK_MSG(f64[i % COLS] == (double)m * 0x1p-53, "    uniform f64: i %lld\n", (long long)i);
  }

  /* Inputs with a zero row stride too: dropout of ones is 1/(1-p) where kept, 0 where dropped. */
  job.dtype = RNGX_FLOAT32;
  job.out.data = f32;
  job.in = (rngx_operand){x32, strides};
  rngx_dropout(&job, 0.5, begin, end);
  for (int64_t i = begin; i < end; ++i) {
    const int keep = (word_of(offset, 1, i, 0) & 0xFFFFFFu) >= (1u << 23);
    CHECK_MSG(f32[i % COLS] == (keep ? 2.0f : 0.0f), "    dropout f32: i %lld\n", (long long)i);
  }

  job.dtype = RNGX_FLOAT64;
  job.out.data = f64;
  job.in = (rngx_operand){x64, strides};
  rngx_quantize_noise(&job, 0.5, begin, end);
  for (int64_t i = begin; i < end; ++i) {
    const uint64_t m = (((uint64_t)word_of(offset, 2, i, 1) << 32) | word_of(offset, 2, i, 0)) & ((1ull << 53) - 1);
    CHECK_MSG(f64[i % COLS] == 1.0 + (-0.5 + (double)m * 0x1p-53 * 1.0), "    noise f64: i %lld\n", (long long)i);
  }
}

int main(void) {
  const int64_t rows[] = {
      (1ll << 31) / COLS + 1,  /* just past 2^31 elements */
      (1ll << 32) / COLS + 1,  /* just past 2^32 */
      (1ll << 33) / COLS + 7,  /* float64 word indices past 2^34: the counter's 32-bit carry */
      INT64_MAX / COLS,        /* the largest: k * i wraps past 2^64 for float64 */
  };
  const uint64_t offsets[] = {0, 5, (4ull << 32) - 1, 0 - 9ull};
  for (size_t r = 0; r < sizeof rows / sizeof rows[0]; ++r)
    for (size_t o = 0; o < sizeof offsets / sizeof offsets[0]; ++o) check_rows(rows[r], offsets[o]);
  return check_summary();
}
