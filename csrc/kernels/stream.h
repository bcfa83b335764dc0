/* The raw stream: consecutive Philox blocks, from any block number. */
#ifndef RNGX_STREAM_H
#define RNGX_STREAM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* out[4*b .. 4*b+3] = the four words of block (block + b), b < nblocks: words 4*(block+b) ... on the active
 * SIMD path (simd.h). Block numbers wrap modulo 2^64. */
void rngx_fill_blocks(uint64_t seed, uint64_t block, int64_t nblocks, uint32_t *out);

#ifdef __cplusplus
}
#endif

#endif
