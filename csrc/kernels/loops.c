/* The CPU kernels, generated from the op table (csrc/kernels/op_table.h): per kernel and output dtype, a loop over one
 * span (walk.h) that calls the kernel's element (elements.h), and the public kernels (kernels.h), which run the loop
 * over the walk (walk.c). No op is written out here. */
#include "elements.h"
#include "kernels.h"
#include "keys.h"
#include "simd.h"
#include "walk.h"

/* The loops are also built for AVX2 and AVX-512, the widest the CPU runs picked at load time (ifunc): the
 * elements are plain IEEE multiplies, adds and exact conversions with no contraction, and the 16-bit types'
 * roundings are integer ops (convert_lanes.h), so every build gives the same bits, and the float work costs
 * little next to the SIMD Philox. benchmarks/kernel_ns.c defines RNGX_CLONES to time one of them. */
#if defined(RNGX_CLONES)
#elif RNGX_X86_SIMD
#define RNGX_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#elif !defined(RNGX_CLONES)
#define RNGX_CLONES
#endif

/* A span's loop is inlined into each clone, so each is built for its clone's target. The elements' math (dists.h)
 * is large: left to its limits, gcc's inliner keeps some copies of it as calls, and a loop with a call runs
 * scalar. flatten inlines all of it into each clone, so the loops vectorize. */
#define CLONE_BODY static inline __attribute__((always_inline))
#define FLAT __attribute__((flatten))

/* ELEMENTS: out[j * so] = the element of words w[K j ..] (and of in[j * si]). Written once with its strides as
 * parameters and called with literal unit strides (and a broadcast input, stride 0) where the span has them:
 * after inlining, those copies are plain loops the compiler vectorizes. The parameters come by value, as a store
 * through `o` could otherwise alias them and block vectorization. */
#define RNGX_SPAN_ELEMENTS(kernel, sfx, T, K, reads)                                                              \
  CLONE_BODY void kernel##_##sfx##_run(rngx_params p, const uint32_t *w, int64_t n, T *o, int64_t so, const T *x,  \
                                       int64_t si) {                                                              \
    for (int64_t j = 0; j < n; ++j) o[j * so] = rngx_##kernel##_element_##sfx(&p, w + (K) * j, (reads) ? x[j * si] : (T)0); \
  }                                                                                                               \
  RNGX_CLONES FLAT static void kernel##_##sfx(const rngx_op *op, const rngx_span *r) {                            \
    if (r->so == 1 && (!(reads) || r->si == 1)) kernel##_##sfx##_run(op->p, r->w, r->n, r->out, 1, r->in, 1);      \
    else if ((reads) && r->so == 1 && r->si == 0) kernel##_##sfx##_run(op->p, r->w, r->n, r->out, 1, r->in, 0);    \
    else kernel##_##sfx##_run(op->p, r->w, r->n, r->out, r->so, r->in, r->si);                                     \
  }

/* TRUNCNORM: the truncated normal's elements in passes. AS 241 (dists.h) takes one division in its central region
 * (|p - 1/2| <= 0.425: 85-89% of the draws for bounds at 2 standard deviations) and a log, a square root and a
 * division in its tails. A loop with that branch runs scalar, and computing both for every element pays the
 * tails' work (most of the cost) for all. So each chunk of a span runs in short passes, each a vectorized loop
 * but the last: p; the central value of every element; its output, stored; a bit per tail element, 64 to a word;
 * the tail elements' indices, one step per set bit (about 1 in 7 elements: a step per element took a fifth of the
 * time), padded to whole vectors with index 0 (computed, never stored); their r, then their tail value
 * (rngx_ndtri_tail's two steps), stored over the central one. Short passes, not one loop:
 * each is a short dependency chain that the core overlaps across iterations (1.2x faster than one loop). Every
 * output is the element's expression (elements.h: rngx_truncnorm_of_z_*). */
#define TN_CHUNK 256 /* a whole batch of the walk: 512 words */
#define TN_PAD 8     /* doubles in the widest vector */
#define RNGX_SPAN_TRUNCNORM(kernel, sfx, T, K, reads)                                                             \
  CLONE_BODY void kernel##_##sfx##_chunk(const rngx_params *p, const uint32_t *w, int64_t n, T *o, int64_t so) {   \
    double u[TN_CHUNK], z[TN_CHUNK + TN_PAD];                                                                     \
    uint64_t in_tail[TN_CHUNK], tails[TN_CHUNK / 64];                                                             \
    int64_t at[TN_CHUNK + TN_PAD], m = 0;                                                                         \
    for (int64_t j = 0; j < n; ++j) {                                                                             \
      u[j] = rngx_truncnorm_p(rngx_m53(w[(K) * j], w[(K) * j + 1]), &p->tn);                                      \
      in_tail[j] = !rngx_ndtri_is_central(u[j] - 0.5);                                                            \
    }                                                                                                             \
    for (int64_t j = 0; j < n; ++j) z[j] = rngx_ndtri_central(u[j] - 0.5);                                        \
    for (int64_t j = 0; j < n; ++j) o[j * so] = rngx_##kernel##_of_z_##sfx(p, z[j]);                              \
    for (int64_t j = n; j < TN_CHUNK; ++j) in_tail[j] = 0;                                                        \
    for (int64_t c = 0; c < TN_CHUNK / 64; ++c) {                                                                 \
      uint64_t bits = 0;                                                                                          \
      for (int64_t j = 0; j < 64; ++j) bits |= in_tail[64 * c + j] << j;                                          \
      tails[c] = bits;                                                                                            \
    }                                                                                                             \
    for (int64_t c = 0; c < TN_CHUNK / 64; ++c)                                                                   \
      for (uint64_t bits = tails[c]; bits != 0; bits &= bits - 1) at[m++] = 64 * c + __builtin_ctzll(bits);       \
    const int64_t padded = (m + TN_PAD - 1) / TN_PAD * TN_PAD;                                                    \
    for (int64_t i = m; i < padded; ++i) at[i] = 0;                                                               \
    for (int64_t i = 0; i < padded; ++i) z[i] = rngx_ndtri_tail_r(u[at[i]], u[at[i]] - 0.5);                      \
    for (int64_t i = 0; i < padded; ++i) z[i] = rngx_ndtri_tail_of_r(z[i], u[at[i]] - 0.5);                       \
    for (int64_t i = 0; i < m; ++i) o[at[i] * so] = rngx_##kernel##_of_z_##sfx(p, z[i]);                          \
  }                                                                                                               \
  CLONE_BODY void kernel##_##sfx##_run(rngx_params p, const uint32_t *w, int64_t n, T *o, int64_t so) {            \
    for (int64_t c = 0; c < n; c += TN_CHUNK)                                                                     \
      kernel##_##sfx##_chunk(&p, w + (K) * c, n - c < TN_CHUNK ? n - c : TN_CHUNK, o + c * so, so);               \
  }                                                                                                               \
  RNGX_CLONES FLAT static void kernel##_##sfx(const rngx_op *op, const rngx_span *r) {                            \
    if (r->so == 1) kernel##_##sfx##_run(op->p, r->w, r->n, r->out, 1);                                            \
    else kernel##_##sfx##_run(op->p, r->w, r->n, r->out, r->so);                                                   \
  }

/* stochastic_round reads x from memory once, and the walk makes each batch's words (pure arithmetic) before the
 * span that uses them, so the memory would sit idle while they are made: a contiguous span asks for the x that
 * the spans SROUND_AHEAD bytes on will read (two float32 batches, walk.c), which then arrive while their words are
 * made: about 0.6 -> 0.66-0.81 of the speed of a plain float32 -> bfloat16 loop at 2^24 on 2 threads into a buffer
 * already faulted in (benchmarks/sround_memory.c, docs/performance.md). A prefetch past x's end never faults. */
#define SROUND_AHEAD 4096
static inline void sround_prefetch(const void *x, int64_t bytes) {
  for (int64_t b = 0; b < bytes; b += 64) __builtin_prefetch((const void *)((uintptr_t)x + (uintptr_t)(b + SROUND_AHEAD)), 0, 3);
}

/* SROUND: stochastic_round's span in the common case that every x is within the target's range, without the
 * element's NaN and out-of-range selects (rngx_sround_in_range_*: half the float32 -> bfloat16 loop's time); a span
 * with any x past the range (or NaN) is then done again by the element itself. */
#define RNGX_SPAN_SROUND(kernel, sfx, T, K, reads)                                                                \
  CLONE_BODY void kernel##_##sfx##_run(rngx_params p, const uint32_t *w, int64_t n, T *o, int64_t so,             \
                                       const rngx_##kernel##_input_##sfx *x, int64_t si) {                        \
    uint32_t past = 0;                                                                                            \
    if (si == 1) sround_prefetch(x, n * (int64_t)sizeof *x);                                                      \
    for (int64_t j = 0; j < n; ++j) o[j * so] = rngx_##kernel##_in_range_##sfx(w + (K) * j, x[j * si], &past);   \
    if (past)                                                                                                     \
      for (int64_t j = 0; j < n; ++j) o[j * so] = rngx_##kernel##_element_##sfx(&p, w + (K) * j, x[j * si]);     \
  }                                                                                                               \
  RNGX_CLONES FLAT static void kernel##_##sfx(const rngx_op *op, const rngx_span *r) {                            \
    if (r->so == 1 && r->si == 1) kernel##_##sfx##_run(op->p, r->w, r->n, r->out, 1, r->in, 1);                    \
    else if (r->so == 1 && r->si == 0) kernel##_##sfx##_run(op->p, r->w, r->n, r->out, 1, r->in, 0);               \
    else kernel##_##sfx##_run(op->p, r->w, r->n, r->out, r->so, r->in, r->si);                                     \
  }

/* A kernel whose CPU loop is not its form's plain one says so here (RNGX_OWN_SPAN_<kernel>: "~, its span"); the
 * others take RNGX_SPAN_<form>. */
#define RNGX_OWN_SPAN_truncnorm ~, RNGX_SPAN_TRUNCNORM
#define RNGX_OWN_SPAN_sround ~, RNGX_SPAN_SROUND
#define RNGX_SECOND(a, b, ...) b
#define RNGX_SECOND_OF(...) RNGX_SECOND(__VA_ARGS__)
#define RNGX_CPU_SPAN(kernel, form) RNGX_SECOND_OF(RNGX_CAT(RNGX_OWN_SPAN_, kernel), RNGX_SPAN_##form, ~)

/* PAIRS: elements 2p and 2p + 1 of a key's stream from pair p's 2K words. A span that starts on a pair's second
 * element (`odd`) or ends on a pair's first reads the pair's other words just outside its own: the walk fills
 * whole blocks around a span, and a pair never straddles a block. The pairs in between run as one loop with no
 * branch, so it vectorizes. A paired kernel that reads inputs (normal_tensor: two) gets each element's, as
 * rngx_<kernel>_pair_<dtype>(&p, w, xc, xs, yc, ys, &c, &s): the even element's and the odd one's; an element outside
 * the span gets the other's, and its value is not stored. */
#define RNGX_PAIR_CALL_0(kernel, sfx, pp, w, xc, xs, yc, ys, c, s) rngx_##kernel##_pair_##sfx(pp, w, c, s)
#define RNGX_PAIR_CALL_2(kernel, sfx, pp, w, xc, xs, yc, ys, c, s) \
  rngx_##kernel##_pair_##sfx(pp, w, xc, xs, yc, ys, c, s)
#define RNGX_SPAN_PAIRS(kernel, sfx, T, K, reads)                                                                 \
  CLONE_BODY void kernel##_##sfx##_run(rngx_params p, const uint32_t *w, int odd, int64_t n, T *o, int64_t so,     \
                                       const T *x, int64_t si, const T *y, int64_t si2) {                         \
    (void)x, (void)si, (void)y, (void)si2; /* read by a kernel that reads inputs */                               \
    const int64_t first = odd && n > 0, pairs = (n - first) / 2;                                                  \
    T c, s;                                                                                                       \
    if (first) {                                                                                                  \
      RNGX_CAT(RNGX_PAIR_CALL_, reads)(kernel, sfx, &p, w - (K), x[0], x[0], y[0], y[0], &c, &s);                \
      o[0] = s;                                                                                                   \
    }                                                                                                             \
    for (int64_t q = 0; q < pairs; ++q) {                                                                         \
      const int64_t j = first + 2 * q;                                                                            \
      T cj, sj;                                                                                                   \
      RNGX_CAT(RNGX_PAIR_CALL_, reads)(kernel, sfx, &p, w + (K) * j, x[j * si], x[(j + 1) * si], y[j * si2],      \
                                       y[(j + 1) * si2], &cj, &sj);                                               \
      o[j * so] = cj;                                                                                             \
      o[(j + 1) * so] = sj;                                                                                       \
    }                                                                                                             \
    const int64_t j = first + 2 * pairs;                                                                          \
    if (j < n) {                                                                                                  \
      RNGX_CAT(RNGX_PAIR_CALL_, reads)(kernel, sfx, &p, w + (K) * j, x[j * si], x[j * si], y[j * si2],            \
                                       y[j * si2], &c, &s);                                                       \
      o[j * so] = c;                                                                                              \
    }                                                                                                             \
  }                                                                                                               \
  RNGX_CLONES FLAT static void kernel##_##sfx(const rngx_op *op, const rngx_span *r) {                            \
    const T *x = (const T *)r->in, *y = (const T *)r->in2;                                                        \
    if (r->so == 1 && ((reads) < 1 || r->si == 1) && ((reads) < 2 || r->si2 == 1))                                \
      kernel##_##sfx##_run(op->p, r->w, r->odd, r->n, r->out, 1, x, 1, y, 1);                                      \
    else                                                                                                          \
      kernel##_##sfx##_run(op->p, r->w, r->odd, r->n, r->out, r->so, x, r->si, y, r->si2);                         \
  }

/* The loop for a job's dtype (and, for DTYPE_INT, its range). */
#define RNGX_LOOP_FLOATS(kernel, dtype, p, words)                                                                 \
  ((dtype) == RNGX_FLOAT16 ? kernel##_f16 : (dtype) == RNGX_BFLOAT16 ? kernel##_bf16                               \
   : (dtype) == RNGX_FLOAT32 ? kernel##_f32 : kernel##_f64)
#define RNGX_LOOP_INTS(kernel, dtype, p, words)                                                                   \
  ((dtype) == RNGX_BITS8 ? kernel##_b8 : (dtype) == RNGX_BITS16 ? kernel##_b16                                     \
   : (dtype) == RNGX_BITS32 ? kernel##_b32 : kernel##_b64)
#define RNGX_LOOP_INTS_WIDE(kernel, dtype, p, words)                                                              \
  (RNGX_WIDE(dtype, p, words) ? kernel##_b64_wide : RNGX_LOOP_INTS(kernel, dtype, p, words))
#define RNGX_LOOP_F64(kernel, dtype, p, words) kernel##_f64
#define RNGX_LOOP_ROUND(in, IN, out, OUT, TO, k, kernel, dtype, p)                                                \
  (p)->from == RNGX_##IN && (dtype) == RNGX_##OUT ? kernel##_##in##_##out:
#define RNGX_LOOP_ROUNDS(kernel, dtype, p, words) (RNGX_ROUND_PAIRS(RNGX_LOOP_ROUND, kernel, dtype, p)(rngx_loop_fn)0)

#define RNGX_PAIRED_ELEMENTS 0
#define RNGX_PAIRED_PAIRS 1

/* ---- the samplers ---- */

#define RNGX_CPU_SAMPLER(name, first, out, kernel, params, args, schema, words, form, fused)                       \
  RNGX_CAT(RNGX_FOR_, RNGX_TYPES_##out)(RNGX_CPU_SPAN(kernel, form), kernel, RNGX_READS_##first, words)                   \
  void rngx_##kernel(const rngx_job *job, const rngx_params *p, int64_t begin, int64_t end) {                     \
    const rngx_op op = {.loop = RNGX_CAT(RNGX_LOOP_, RNGX_TYPES_##out)(kernel, job->dtype, p, words),             \
                        .reads_input = RNGX_READS_##first,                                                        \
                        .in_dtype = RNGX_CAT(RNGX_INPUT_DTYPE_, RNGX_TYPES_##out)(job->dtype, p),                 \
                        .k = rngx_##kernel##_words(job->dtype, p),                                                \
                        .paired = RNGX_PAIRED_##form,                                                             \
                        .p = *p};                                                                                 \
    rngx_execute(job, &op, begin, end);                                                                           \
  }
RNGX_SAMPLERS(RNGX_CPU_SAMPLER)

/* ---- the other ops' elementwise kernels ---- */

#define RNGX_CPU_KERNEL(kernel, types, reads, words, form)                                                        \
  RNGX_FOR_##types(RNGX_SPAN_##form, kernel, reads, words)                                                      \
  void rngx_##kernel(const rngx_job *job, int64_t begin, int64_t end) {                                           \
    const rngx_params none = {0};                                                                                 \
    const rngx_op op = {.loop = RNGX_LOOP_##types(kernel, job->dtype, &none, words), .reads_input = reads,        \
                        .in_dtype = job->dtype,                                                                   \
                        .k = rngx_##kernel##_words(job->dtype), .paired = RNGX_PAIRED_##form, .p = none};         \
    rngx_execute(job, &op, begin, end);                                                                           \
  }
RNGX_DEVICE_KERNELS(RNGX_CPU_KERNEL)

/* ---- key derivation (keys.h) ---- */

void rngx_split(const int64_t *keys, int64_t n, int64_t num, int64_t *out) {
  for (int64_t i = 0; i < num; ++i)
    for (int64_t b = 0; b < n; ++b) rngx_child_key(keys + 2 * b, (uint64_t)i, out + 2 * (i * n + b));
}

void rngx_fold_in(const int64_t *keys, int64_t n, const int64_t *data, int64_t data_stride, int64_t *out) {
  for (int64_t b = 0; b < n; ++b) rngx_child_key(keys + 2 * b, (uint64_t)data[b * data_stride], out + 2 * b);
}
