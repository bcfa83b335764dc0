/* Philox4x32-10 with AVX-512F: 16 blocks per vector, two vectors in flight to hide the multiply latency.
 * The round, key bump and counter layout are philox.h's, lane by lane; tests/c/test_simd.c checks every word
 * against it. Only the functions in this file use AVX-512 (target attribute), so the build stays baseline. */
#include "simd.h"

#if RNGX_X86_SIMD
#include <immintrin.h>
#include <string.h>

#include "philox.h"

#define AVX512 __attribute__((target("avx512f")))
#define AVX512_INLINE __attribute__((target("avx512f"), always_inline)) static inline

enum { GROUP = 16, GROUPS = 2 }; /* blocks per vector, vectors in flight */

typedef struct { __m512i v[4]; } ctr16;

/* hi and lo 32 bits of m * c, lane by lane. mul_epu32 multiplies the even lanes into 64-bit products, so the
 * odd lanes go through a 32-bit shift first; a masked shuffle then puts each half back into its own lane. */
AVX512_INLINE void mul_wide(__m512i c, __m512i m, __m512i *hi, __m512i *lo) {
  const __m512i even = _mm512_mul_epu32(c, m), odd = _mm512_mul_epu32(_mm512_srli_epi64(c, 32), m);
  *hi = _mm512_mask_shuffle_epi32(odd, 0x5555, even, _MM_PERM_DDBB);
  *lo = _mm512_mask_shuffle_epi32(even, 0xAAAA, odd, _MM_PERM_CCAA);
}

/* rngx_philox_round, 16 lanes: {hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0}; 0x96 is a three-way xor. */
AVX512_INLINE void round16(ctr16 *c, __m512i k0, __m512i k1) {
  __m512i hi0, lo0, hi1, lo1;
  mul_wide(c->v[0], _mm512_set1_epi32((int)RNGX_PHILOX_M0), &hi0, &lo0);
  mul_wide(c->v[2], _mm512_set1_epi32((int)RNGX_PHILOX_M1), &hi1, &lo1);
  c->v[0] = _mm512_ternarylogic_epi32(hi1, c->v[1], k0, 0x96);
  c->v[1] = lo1;
  c->v[2] = _mm512_ternarylogic_epi32(hi0, c->v[3], k1, 0x96);
  c->v[3] = lo0;
}

/* Counters of 16 blocks from `block` on. Lane 4 * chunk + pos (chunk = 128-bit quarter) runs block
 * 4 * pos + chunk, so that the in-chunk transpose in store16 leaves vector pos holding blocks 4 * pos ..
 * 4 * pos + 3 in memory order. The high word takes the carry and wraps at 2^64 like the scalar stream. */
AVX512_INLINE ctr16 counters16(uint64_t block) {
  const __m512i lane = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  const __m512i lo = _mm512_add_epi32(_mm512_set1_epi32((int)(uint32_t)block), lane);
  const __m512i hi = _mm512_set1_epi32((int)(uint32_t)(block >> 32));
  const __mmask16 carry = _mm512_cmplt_epu32_mask(lo, lane);
  const __m512i hi_carried = _mm512_mask_add_epi32(hi, carry, hi, _mm512_set1_epi32(1));
  ctr16 c = {{lo, hi_carried, _mm512_setzero_si512(), _mm512_setzero_si512()}};
  return c;
}

/* 4x4 transpose inside each 128-bit chunk: block words become consecutive. */
AVX512_INLINE void store16(const ctr16 *c, uint32_t *out) {
  const __m512i t0 = _mm512_unpacklo_epi32(c->v[0], c->v[1]), t1 = _mm512_unpacklo_epi32(c->v[2], c->v[3]);
  const __m512i t2 = _mm512_unpackhi_epi32(c->v[0], c->v[1]), t3 = _mm512_unpackhi_epi32(c->v[2], c->v[3]);
  _mm512_storeu_si512(out, _mm512_unpacklo_epi64(t0, t1));
  _mm512_storeu_si512(out + 16, _mm512_unpackhi_epi64(t0, t1));
  _mm512_storeu_si512(out + 32, _mm512_unpacklo_epi64(t2, t3));
  _mm512_storeu_si512(out + 48, _mm512_unpackhi_epi64(t2, t3));
}

/* groups * 16 blocks from `block` on; groups is a constant at each call, so the loops over it unroll. */
AVX512_INLINE void philox_groups(uint64_t seed, uint64_t block, int groups, uint32_t *out) {
  ctr16 c[GROUPS];
  for (int g = 0; g < groups; ++g) c[g] = counters16(block + (uint64_t)g * GROUP);
  __m512i k0 = _mm512_set1_epi32((int)(uint32_t)seed), k1 = _mm512_set1_epi32((int)(uint32_t)(seed >> 32));
  for (int r = 0; r < RNGX_PHILOX_ROUNDS; ++r) {
    if (r > 0) {
      k0 = _mm512_add_epi32(k0, _mm512_set1_epi32((int)RNGX_PHILOX_W0));
      k1 = _mm512_add_epi32(k1, _mm512_set1_epi32((int)RNGX_PHILOX_W1));
    }
    for (int g = 0; g < groups; ++g) round16(&c[g], k0, k1);
  }
  for (int g = 0; g < groups; ++g) store16(&c[g], out + 4 * GROUP * g);
}

#define RNGX_TARGET AVX512
#define RNGX_SIMD_BLOCKS_NAME rngx_blocks_avx512
#include "simd_blocks.h"

#endif
