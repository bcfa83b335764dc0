/* Adam's update in float32 on the CPU (adam.h). Built for AVX2 and AVX-512 too, as the samplers' loops (loops.c):
 * the element is IEEE adds, multiplies, divisions and square roots, none contracted (-ffp-contract=off), so every
 * build gives the same bits. */
#include "adam.h"

#include <math.h>

#include "simd.h"

#if RNGX_X86_SIMD
#define ADAM_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define ADAM_CLONES
#endif

/* The flags come as literals from the dispatch below, so each inlined copy is one branch-free loop that vectorizes;
 * the element's lerp form depends on a scalar only, which the compiler hoists. */
static inline __attribute__((always_inline)) void adam_run(const rngx_adam *a, int64_t begin, int64_t end,
                                                           float *out, const int bf16, const int maximize,
                                                           const int l2, const int decay) {
  const rngx_adam local = *a; /* by value: the stores to the moments cannot alias its fields */
  for (int64_t j = begin; j < end; ++j) out[j - begin] = rngx_adam_element(&local, j, bf16, maximize, l2, decay);
}

ADAM_CLONES void rngx_adam_update(const rngx_adam *a, int64_t begin, int64_t end, float *out) {
  const int bf16 = a->dtype == RNGX_BFLOAT16;
  /* AdamW without maximize, the common case, gets loops of its own; the rest share one that reads the flags. */
  if (bf16 && !a->maximize && !a->l2 && a->decay) adam_run(a, begin, end, out, 1, 0, 0, 1);
  else if (bf16 && !a->maximize && !a->l2 && !a->decay) adam_run(a, begin, end, out, 1, 0, 0, 0);
  else if (!bf16 && !a->maximize && !a->l2 && a->decay) adam_run(a, begin, end, out, 0, 0, 0, 1);
  else adam_run(a, begin, end, out, bf16, a->maximize, a->l2, a->decay);
}
