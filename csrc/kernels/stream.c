#include "stream.h"

#include <string.h>

#include "philox.h"
#include "simd.h"

void rngx_blocks_scalar(uint64_t seed, uint64_t block, int64_t nblocks, uint32_t *out) {
  for (int64_t b = 0; b < nblocks; ++b) {
    const rngx_ctr c = rngx_block(seed, block + (uint64_t)b);
    memcpy(out + 4 * b, c.v, sizeof c.v);
  }
}
