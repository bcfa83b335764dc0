#include "stream.h"

#include <string.h>

#include "philox.h"
#include "simd.h"

void rngx_blocks_scalar(uint64_t seed, uint64_t block, int64_t nblocks, uint32_t *out) {
  for (int64_t b = 0; b < nblocks; ++b) {
    const rngx_ctr c = rngx_block(seed, (block + (uint64_t)b) & RNGX_BLOCK_MASK);
    memcpy(out + 4 * b, c.v, sizeof c.v);
  }
}

/* A partial block at either end goes through a one-block buffer; whole blocks are written in place. */
void rngx_fill_words(uint64_t seed, uint64_t first, int64_t count, uint32_t *out) {
  uint32_t block[4];
  const unsigned lane = (unsigned)(first & 3u);
  if (count <= 0) return;
  if (lane != 0) {
    const int64_t n = count < 4 - lane ? count : 4 - lane;
    rngx_blocks_scalar(seed, first >> 2, 1, block);
    memcpy(out, block + lane, (size_t)n * sizeof *out);
    out += n;
    count -= n;
    first += (uint64_t)n;
  }
  rngx_fill_blocks(seed, first >> 2, count >> 2, out);
  if (count & 3) {
    rngx_blocks_scalar(seed, (first >> 2) + (uint64_t)(count >> 2), 1, block);
    memcpy(out + (count & ~(int64_t)3), block, (size_t)(count & 3) * sizeof *out);
  }
}
