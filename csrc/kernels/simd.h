/* Which Philox implementation fills the stream: portable scalar C, AVX2 (8 blocks per vector) or AVX-512
 * (16 blocks per vector). All paths give the same words; the fastest one the CPU runs is chosen at run time,
 * so the rest of the build stays baseline x86-64.
 *
 * The environment variable RNGX_SIMD=scalar|avx2|avx512 picks a path at first use (for tests and for
 * measuring); rngx_simd_select switches at any time. Building with -DRNGX_SCALAR_ONLY leaves only scalar. */
#ifndef RNGX_SIMD_H
#define RNGX_SIMD_H

#include <stdint.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(RNGX_SCALAR_ONLY)
#define RNGX_X86_SIMD 1
#else
#define RNGX_X86_SIMD 0
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { RNGX_SIMD_SCALAR, RNGX_SIMD_AVX2, RNGX_SIMD_AVX512, RNGX_SIMD_COUNT } rngx_simd;

/* "scalar", "avx2", "avx512"; NULL for anything else. */
const char *rngx_simd_name(rngx_simd path);
/* Built in and runnable on this CPU (and OS). */
int rngx_simd_supported(rngx_simd path);
/* The path rngx_fill_blocks uses now. */
rngx_simd rngx_simd_active(void);
/* Returns 0, or -1 (and changes nothing) when the path is not supported. */
int rngx_simd_select(rngx_simd path);

/* out[4*b .. 4*b+3] = block (block + b) of seed's stream, b < nblocks; block numbers wrap modulo 2^64.
 * One per path; rngx_fill_blocks (stream.h) calls the active one. */
typedef void (*rngx_blocks_fn)(uint64_t seed, uint64_t block, int64_t nblocks, uint32_t *out);
/* The block function of a supported path. */
rngx_blocks_fn rngx_simd_blocks(rngx_simd path);
void rngx_blocks_scalar(uint64_t seed, uint64_t block, int64_t nblocks, uint32_t *out);
#if RNGX_X86_SIMD
void rngx_blocks_avx2(uint64_t seed, uint64_t block, int64_t nblocks, uint32_t *out);
void rngx_blocks_avx512(uint64_t seed, uint64_t block, int64_t nblocks, uint32_t *out);
#endif

/* The SIMD paths hand leftovers this small to the scalar path: a few scalar blocks cost less than one
 * more full vector group. */
#define RNGX_SCALAR_TAIL_BLOCKS 2

#ifdef __cplusplus
}
#endif

#endif
