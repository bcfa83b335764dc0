/* Run-time choice of the Philox path (simd.h). */
#include "simd.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "philox.h"

static const char *const names[RNGX_SIMD_COUNT] = {"scalar", "avx2", "avx512"};

/* -1 until first use; then a rngx_simd. Atomic because any intra-op thread may be the first user. */
static atomic_int active = -1;

const char *rngx_simd_name(rngx_simd path) {
  return (unsigned)path < RNGX_SIMD_COUNT ? names[path] : NULL;
}

int rngx_simd_supported(rngx_simd path) {
  switch (path) {
    case RNGX_SIMD_SCALAR: return 1;
#if RNGX_X86_SIMD
    /* libgcc's check also asks the OS (XGETBV) whether it saves the vector registers. */
    case RNGX_SIMD_AVX2: __builtin_cpu_init(); return __builtin_cpu_supports("avx2");
    case RNGX_SIMD_AVX512: __builtin_cpu_init(); return __builtin_cpu_supports("avx512f");
#endif
    default: return 0;
  }
}

static rngx_simd best(void) {
  for (int p = RNGX_SIMD_COUNT - 1; p > 0; --p)
    if (rngx_simd_supported((rngx_simd)p)) return (rngx_simd)p;
  return RNGX_SIMD_SCALAR;
}

/* RNGX_SIMD if set to a path this machine runs, else the fastest one. */
static rngx_simd initial(void) {
  const char *want = getenv("RNGX_SIMD");
  if (want == NULL || *want == '\0') return best();
  for (int p = 0; p < RNGX_SIMD_COUNT; ++p)
    if (strcmp(want, names[p]) == 0 && rngx_simd_supported((rngx_simd)p)) return (rngx_simd)p;
  fprintf(stderr, "torch_rngx: RNGX_SIMD=%s is not a path this build and CPU run (scalar, avx2, avx512); using %s\n",
          want, names[best()]);
  return best();
}

rngx_simd rngx_simd_active(void) {
  int path = atomic_load_explicit(&active, memory_order_relaxed);
  if (path < 0) {
    int unset = -1;
    atomic_compare_exchange_strong(&active, &unset, (int)initial());
    path = atomic_load(&active);
  }
  return (rngx_simd)path;
}

int rngx_simd_select(rngx_simd path) {
  if (!rngx_simd_supported(path)) return -1;
  atomic_store(&active, (int)path);
  return 0;
}

void rngx_blocks_scalar(uint64_t seed, uint64_t block, int64_t nblocks, uint32_t *out) {
  for (int64_t b = 0; b < nblocks; ++b) {
    const rngx_ctr c = rngx_block(seed, block + (uint64_t)b);
    memcpy(out + 4 * b, c.v, sizeof c.v);
  }
}

rngx_blocks_fn rngx_simd_blocks(rngx_simd path) {
  static const rngx_blocks_fn paths[RNGX_SIMD_COUNT] = {
#if RNGX_X86_SIMD
      rngx_blocks_scalar, rngx_blocks_avx2, rngx_blocks_avx512,
#else
      rngx_blocks_scalar, rngx_blocks_scalar, rngx_blocks_scalar, /* never selected: not supported */
#endif
  };
  return paths[path];
}
