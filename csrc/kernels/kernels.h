/* Every kernel of the op table (op_table.h) as C declares it: its words per element and element types, from its
 * row, and its CPU kernel over a job (job.h), generated in loops.c; then the CPU key derivation (split, fold_in).
 * kernels_cuda.h declares the same kernels on CUDA; each op's numbers and elements are in elements.h. */
#ifndef RNGX_KERNELS_H
#define RNGX_KERNELS_H

#include <stdint.h>

#include "elements.h"
#include "job.h"
#include "op_table.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A row's words by output dtype: (float16, bfloat16, float32, float64) or (8, 16, 32, 64 bits). */
static inline int rngx_words_by_dtype(rngx_dtype dtype, int f16, int bf16, int f32, int f64) {
  return dtype == RNGX_FLOAT16 ? f16 : dtype == RNGX_BFLOAT16 ? bf16 : dtype == RNGX_FLOAT32 ? f32 : f64;
}
static inline int rngx_words_by_width(rngx_dtype dtype, int b8, int b16, int b32, int b64) {
  return dtype == RNGX_BITS8 ? b8 : dtype == RNGX_BITS16 ? b16 : dtype == RNGX_BITS32 ? b32 : b64;
}
/* A DTYPE_INT row's words (k, narrow, wide): an int64 output whose range exceeds narrow takes the wide form. */
#define RNGX_WIDE(dtype, p, words) ((dtype) == RNGX_BITS64 && (p)->range > RNGX_PICK(1, words))
#define RNGX_WORDS_FLOATS(dtype, p, words) rngx_words_by_dtype(dtype, RNGX_UNPACK(words))
#define RNGX_WORDS_INTS(dtype, p, words) rngx_words_by_width(dtype, RNGX_UNPACK(words))
#define RNGX_WORDS_INTS_WIDE(dtype, p, words) (RNGX_WIDE(dtype, p, words) ? RNGX_PICK(2, words) : RNGX_PICK(0, words))
#define RNGX_WORDS_F64(dtype, p, words) ((void)(dtype), RNGX_PICK(0, words))
#define RNGX_WORDS_ROUNDS(dtype, p, words) ((void)(dtype), rngx_words_by_dtype((p)->from, RNGX_UNPACK(words)))
/* The element types of each output kind, and each(kernel, <dtype>, T, K, reads) for each of them, K from the
 * row's words in the same order: the loops (loops.c) and functors (kernels_cuda.cu) of a kernel. */
#define RNGX_TYPES_DTYPE_OPTIONAL FLOATS
#define RNGX_TYPES_DTYPE_FIRST FLOATS
#define RNGX_TYPES_DTYPE_INT INTS_WIDE
#define RNGX_TYPES_DTYPE_ROUND ROUNDS
#define RNGX_FOR_FLOATS(each, kernel, reads, words)                                                               \
  each(kernel, f16, uint16_t, RNGX_PICK(0, words), reads)                                                         \
  each(kernel, bf16, uint16_t, RNGX_PICK(1, words), reads)                                                        \
  each(kernel, f32, float, RNGX_PICK(2, words), reads)                                                            \
  each(kernel, f64, double, RNGX_PICK(3, words), reads)
#define RNGX_FOR_INTS(each, kernel, reads, words)                                                                 \
  each(kernel, b8, uint8_t, RNGX_PICK(0, words), reads)                                                           \
  each(kernel, b16, uint16_t, RNGX_PICK(1, words), reads)                                                         \
  each(kernel, b32, uint32_t, RNGX_PICK(2, words), reads)                                                         \
  each(kernel, b64, uint64_t, RNGX_PICK(3, words), reads)
#define RNGX_FOR_INTS_WIDE(each, kernel, reads, words)                                                            \
  each(kernel, b8, uint8_t, RNGX_PICK(0, words), reads)                                                           \
  each(kernel, b16, uint16_t, RNGX_PICK(0, words), reads)                                                         \
  each(kernel, b32, uint32_t, RNGX_PICK(0, words), reads)                                                         \
  each(kernel, b64, uint64_t, RNGX_PICK(0, words), reads)                                                         \
  each(kernel, b64_wide, uint64_t, RNGX_PICK(2, words), reads)
#define RNGX_FOR_F64(each, kernel, reads, words) each(kernel, f64, double, RNGX_PICK(0, words), reads)
/* DTYPE_ROUND (stochastic_round): one loop per (input, target) pair that rngx_sround_pair accepts, suffix
 * <input>_<target>, its words the row's for the input's dtype. X(in, IN, out, OUT, TO, k, ...): the suffixes, their
 * rngx_dtype names, the target's C type and k, the input's place in a row's (float16, bfloat16, float32, float64).
 * float32 and float64 round to all four targets, float16 to bfloat16 and the float8 types, bfloat16 to the float8
 * types. */
#define RNGX_ROUND_TO_BF16(X, in, IN, k, ...) X(in, IN, bf16, BFLOAT16, uint16_t, k, __VA_ARGS__)
#define RNGX_ROUND_TO_16(X, in, IN, k, ...)                                                                       \
  RNGX_ROUND_TO_BF16(X, in, IN, k, __VA_ARGS__) X(in, IN, f16, FLOAT16, uint16_t, k, __VA_ARGS__)
#define RNGX_ROUND_TO_8(X, in, IN, k, ...)                                                                        \
  X(in, IN, e4m3, FLOAT8_E4M3FN, uint8_t, k, __VA_ARGS__) X(in, IN, e5m2, FLOAT8_E5M2, uint8_t, k, __VA_ARGS__)
#define RNGX_ROUND_PAIRS(X, ...)                                                                                  \
  RNGX_ROUND_TO_BF16(X, f16, FLOAT16, 0, __VA_ARGS__) RNGX_ROUND_TO_8(X, f16, FLOAT16, 0, __VA_ARGS__)            \
  RNGX_ROUND_TO_8(X, bf16, BFLOAT16, 1, __VA_ARGS__)                                                              \
  RNGX_ROUND_TO_16(X, f32, FLOAT32, 2, __VA_ARGS__) RNGX_ROUND_TO_8(X, f32, FLOAT32, 2, __VA_ARGS__)              \
  RNGX_ROUND_TO_16(X, f64, FLOAT64, 3, __VA_ARGS__) RNGX_ROUND_TO_8(X, f64, FLOAT64, 3, __VA_ARGS__)
#define RNGX_EACH_ROUND(in, IN, out, OUT, TO, k, each, kernel, reads, words)                                      \
  each(kernel, in##_##out, TO, RNGX_PICK(k, words), reads)
#define RNGX_FOR_ROUNDS(each, kernel, reads, words) RNGX_ROUND_PAIRS(RNGX_EACH_ROUND, each, kernel, reads, words)
/* The dtype a kind's kernels read their input in: the output's, but stochastic_round's x's. */
#define RNGX_INPUT_DTYPE_FLOATS(dtype, p) (dtype)
#define RNGX_INPUT_DTYPE_INTS_WIDE(dtype, p) (dtype)
#define RNGX_INPUT_DTYPE_ROUNDS(dtype, p) ((p)->from)
/* A sampler's first argument: whether its kernel reads it. */
#define RNGX_READS_like 0
#define RNGX_READS_x 1

/* A sampler's (op_table.h): rngx_<kernel>_words(dtype, p), p from rngx_<kernel>_params (elements.h), and the
 * kernel on [begin, end) of job. */
#define RNGX_DECLARE_SAMPLER(name, first, out, kernel, params, args, schema, words, form, fused)                    \
  static inline int rngx_##kernel##_words(rngx_dtype dtype, const rngx_params *p) {                                 \
    (void)p;                                                                                                        \
    return RNGX_CAT(RNGX_WORDS_, RNGX_TYPES_##out)(dtype, p, words);                                              \
  }                                                                                                                 \
  void rngx_##kernel(const rngx_job *job, const rngx_params *p, int64_t begin, int64_t end);
RNGX_SAMPLERS(RNGX_DECLARE_SAMPLER)
#undef RNGX_DECLARE_SAMPLER

/* The other ops' elementwise kernels (op_table.h: RNGX_DEVICE_KERNELS, which says what each reads from in). */
#define RNGX_DECLARE_KERNEL(kernel, types, reads, words, form)                                                      \
  static inline int rngx_##kernel##_words(rngx_dtype dtype) { return RNGX_WORDS_##types(dtype, 0, words); }      \
  void rngx_##kernel(const rngx_job *job, int64_t begin, int64_t end);
RNGX_DEVICE_KERNELS(RNGX_DECLARE_KERNEL)
#undef RNGX_DECLARE_KERNEL

/* Key derivation (docs/stream.md, "split and fold_in"): the child of key (s, o) for index d is
 * (r0 | r1 << 32, r2 | r3 << 32) with r = block(s, o + d). `keys` are n contiguous [seed, offset] pairs.
 * split: out[(i * n + b) * 2 ...] = child(keys[b], i) for i < num. fold_in: out[b] = child(keys[b], data[b * data_stride]). */
void rngx_split(const int64_t *keys, int64_t n, int64_t num, int64_t *out);
void rngx_fold_in(const int64_t *keys, int64_t n, const int64_t *data, int64_t data_stride, int64_t *out);

#ifdef __cplusplus
}
#endif

#endif
