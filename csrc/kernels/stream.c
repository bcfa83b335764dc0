#include "stream.h"

#include "simd.h"

void rngx_fill_blocks(uint64_t seed, uint64_t block, int64_t nblocks, uint32_t *out) {
  if (nblocks > 0) rngx_simd_blocks(rngx_simd_active())(seed, block, nblocks, out);
}
