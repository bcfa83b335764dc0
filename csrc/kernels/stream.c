#include "stream.h"

#include "philox.h"

void rngx_fill_words(uint64_t seed, uint64_t first, int64_t count, uint32_t *out) {
  uint64_t block = first >> 2;
  unsigned lane = (unsigned)(first & 3u);
  int64_t j = 0;
  while (j < count) {
    const rngx_ctr c = rngx_block(seed, block++);
    for (; lane < 4u && j < count; ++lane) out[j++] = c.v[lane];
    lane = 0;
  }
}
