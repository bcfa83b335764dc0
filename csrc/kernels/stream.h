/* The raw stream: consecutive 32-bit words, from any word index. */
#ifndef RNGX_STREAM_H
#define RNGX_STREAM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* out[j] = word (first + j) of seed's stream, j < count. Word indices wrap modulo 2^64. */
void rngx_fill_words(uint64_t seed, uint64_t first, int64_t count, uint32_t *out);

/* out[4*b .. 4*b+3] = the four words of block (block + b), b < nblocks: words 4*(block+b) ... on the active
 * SIMD path (simd.h). Block numbers wrap modulo 2^62, as word indices do modulo 2^64. */
void rngx_fill_blocks(uint64_t seed, uint64_t block, int64_t nblocks, uint32_t *out);

#ifdef __cplusplus
}
#endif

#endif
