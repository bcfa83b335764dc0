/* Philox4x32-10 with AVX2: 8 blocks per vector, four vectors in flight, so that the multiplies (vpmuludq), not the
 * round's latency, bound it: 2.24 ns a block against 2.49 with two on a 2-core EPYC (Zen, AVX2; /tmp bench, best of 30).
 * The round, key bump and counter layout are philox.h's, lane by lane; tests/c/test_simd.c checks every word
 * against it. Only the functions in this file use AVX2 (target attribute), so the build stays baseline. */
#include "simd.h"

#if RNGX_X86_SIMD
#include <immintrin.h>
#include <string.h>

#include "philox.h"

#define AVX2 __attribute__((target("avx2")))
#define AVX2_INLINE __attribute__((target("avx2"), always_inline)) static inline

enum { GROUP = 8, GROUPS = 4 }; /* blocks per vector, vectors in flight */

typedef struct { __m256i v[4]; } ctr8;

/* hi and lo 32 bits of m * c, lane by lane. mul_epu32 multiplies the even lanes into 64-bit products, so the
 * odd lanes go through a 32-bit shift first; shuffles and blends put each half back into its own lane. */
AVX2_INLINE void mul_wide(__m256i c, __m256i m, __m256i *hi, __m256i *lo) {
  const __m256i even = _mm256_mul_epu32(c, m), odd = _mm256_mul_epu32(_mm256_srli_epi64(c, 32), m);
  *hi = _mm256_blend_epi32(_mm256_shuffle_epi32(even, 0xF5), odd, 0xAA);
  *lo = _mm256_blend_epi32(even, _mm256_shuffle_epi32(odd, 0xA0), 0xAA);
}

/* rngx_philox_round, 8 lanes: {hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0}. */
AVX2_INLINE void round8(ctr8 *c, __m256i k0, __m256i k1) {
  __m256i hi0, lo0, hi1, lo1;
  mul_wide(c->v[0], _mm256_set1_epi32((int)RNGX_PHILOX_M0), &hi0, &lo0);
  mul_wide(c->v[2], _mm256_set1_epi32((int)RNGX_PHILOX_M1), &hi1, &lo1);
  c->v[0] = _mm256_xor_si256(_mm256_xor_si256(hi1, c->v[1]), k0);
  c->v[1] = lo1;
  c->v[2] = _mm256_xor_si256(_mm256_xor_si256(hi0, c->v[3]), k1);
  c->v[3] = lo0;
}

/* Counters of 8 blocks from `block` on. Lane 4 * half + pos (half = 128-bit half) runs block 2 * pos + half,
 * so that the in-half transpose in store8 leaves vector pos holding blocks 2 * pos and 2 * pos + 1 in memory
 * order. The high word takes the carry (AVX2 has no unsigned compare: lo >= lane iff max(lo, lane) == lo)
 * and wraps at 2^64 like the scalar stream. */
AVX2_INLINE ctr8 counters8(uint64_t block) {
  const __m256i lane = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
  const __m256i lo = _mm256_add_epi32(_mm256_set1_epi32((int)(uint32_t)block), lane);
  const __m256i no_carry = _mm256_cmpeq_epi32(_mm256_max_epu32(lo, lane), lo); /* -1 or 0 */
  const __m256i hi = _mm256_set1_epi32((int)(uint32_t)((block >> 32) + 1u));   /* + 1 + (-1 or 0) */
  ctr8 c = {{lo, _mm256_add_epi32(hi, no_carry),
             _mm256_setzero_si256(), _mm256_setzero_si256()}};
  return c;
}

/* 4x4 transpose inside each 128-bit half: block words become consecutive. */
AVX2_INLINE void store8(const ctr8 *c, uint32_t *out) {
  const __m256i t0 = _mm256_unpacklo_epi32(c->v[0], c->v[1]), t1 = _mm256_unpacklo_epi32(c->v[2], c->v[3]);
  const __m256i t2 = _mm256_unpackhi_epi32(c->v[0], c->v[1]), t3 = _mm256_unpackhi_epi32(c->v[2], c->v[3]);
  _mm256_storeu_si256((__m256i *)out, _mm256_unpacklo_epi64(t0, t1));
  _mm256_storeu_si256((__m256i *)(out + 8), _mm256_unpackhi_epi64(t0, t1));
  _mm256_storeu_si256((__m256i *)(out + 16), _mm256_unpacklo_epi64(t2, t3));
  _mm256_storeu_si256((__m256i *)(out + 24), _mm256_unpackhi_epi64(t2, t3));
}

/* groups * 8 blocks from `block` on; groups is a constant at each call, so the loops over it unroll. */
AVX2_INLINE void philox_groups(uint64_t seed, uint64_t block, int groups, uint32_t *out) {
  ctr8 c[GROUPS];
  for (int g = 0; g < groups; ++g) c[g] = counters8(block + (uint64_t)g * GROUP);
  __m256i k0 = _mm256_set1_epi32((int)(uint32_t)seed), k1 = _mm256_set1_epi32((int)(uint32_t)(seed >> 32));
  for (int r = 0; r < RNGX_PHILOX_ROUNDS; ++r) {
    if (r > 0) {
      k0 = _mm256_add_epi32(k0, _mm256_set1_epi32((int)RNGX_PHILOX_W0));
      k1 = _mm256_add_epi32(k1, _mm256_set1_epi32((int)RNGX_PHILOX_W1));
    }
    for (int g = 0; g < groups; ++g) round8(&c[g], k0, k1);
  }
  for (int g = 0; g < groups; ++g) store8(&c[g], out + 4 * GROUP * g);
}

#define RNGX_TARGET AVX2
#define RNGX_SIMD_BLOCKS_NAME rngx_blocks_avx2
#include "simd_blocks.h"

#endif
