/* Philox4x32-10 (Salmon, Moraes, Dror, Shaw: "Parallel random numbers: as easy as 1, 2, 3", SC'11).
 *
 * One round function, one key bump, ten rounds: a pure function of (counter, key). Usable from C11 and
 * CUDA C alike, so the CPU, SIMD and GPU kernels share this single definition of the generator. */
#ifndef RNGX_PHILOX_H
#define RNGX_PHILOX_H

#include <stdint.h>

#if defined(__CUDACC__)
#define RNGX_FN __host__ __device__ static inline
#else
#define RNGX_FN static inline
#endif

/* Multipliers and Weyl constants from the paper (and Random123's philox.h). */
#define RNGX_PHILOX_M0 0xD2511F53u
#define RNGX_PHILOX_M1 0xCD9E8D57u
#define RNGX_PHILOX_W0 0x9E3779B9u /* golden ratio */
#define RNGX_PHILOX_W1 0xBB67AE85u /* sqrt(3) - 1 */
#define RNGX_PHILOX_ROUNDS 10

typedef struct { uint32_t v[4]; } rngx_ctr;
typedef struct { uint32_t v[2]; } rngx_key;

RNGX_FN uint32_t rngx_mulhi(uint32_t a, uint32_t b) { return (uint32_t)(((uint64_t)a * b) >> 32); }

RNGX_FN rngx_ctr rngx_philox_round(rngx_ctr c, rngx_key k) {
  const uint32_t hi0 = rngx_mulhi(RNGX_PHILOX_M0, c.v[0]), lo0 = RNGX_PHILOX_M0 * c.v[0];
  const uint32_t hi1 = rngx_mulhi(RNGX_PHILOX_M1, c.v[2]), lo1 = RNGX_PHILOX_M1 * c.v[2];
  rngx_ctr r = {{hi1 ^ c.v[1] ^ k.v[0], lo1, hi0 ^ c.v[3] ^ k.v[1], lo0}};
  return r;
}

RNGX_FN rngx_key rngx_philox_bumpkey(rngx_key k) {
  k.v[0] += RNGX_PHILOX_W0;
  k.v[1] += RNGX_PHILOX_W1;
  return k;
}

RNGX_FN rngx_ctr rngx_philox4x32_10(rngx_ctr c, rngx_key k) {
  c = rngx_philox_round(c, k);
  for (int r = 1; r < RNGX_PHILOX_ROUNDS; ++r) {
    k = rngx_philox_bumpkey(k);
    c = rngx_philox_round(c, k);
  }
  return c;
}

/* The stream (docs/stream.md): block b of seed s is philox(ctr=(lo32 b, hi32 b, 0, 0), key=(lo32 s, hi32 s)),
 * b taken modulo 2^64. This is cuRAND's Philox4_32_10 with curand_init(s, 0, 4 b). */
RNGX_FN rngx_ctr rngx_block(uint64_t seed, uint64_t block) {
  rngx_ctr c = {{(uint32_t)block, (uint32_t)(block >> 32), 0u, 0u}};
  rngx_key k = {{(uint32_t)seed, (uint32_t)(seed >> 32)}};
  return rngx_philox4x32_10(c, k);
}

/* Word t of the key (seed, offset): lane t % 4 of block offset + t / 4. A call's element j takes words k*j ... */
RNGX_FN uint32_t rngx_key_word(uint64_t seed, uint64_t offset, uint64_t t) {
  return rngx_block(seed, offset + (t >> 2)).v[t & 3u];
}

/* Element j of an op with k = 1, 2 or 4 words per element starts at word k*j: in block floor(k j / 4) of its key
 * (added to the offset modulo 2^64), at lane rngx_element_lane. Formed without k*j itself, which passes 2^64 for
 * k = 4 from j = 2^62 on (block numbers wrap; word indices do not). An element's k words lie in one block. */
RNGX_FN uint64_t rngx_element_block(uint64_t j, unsigned k) { return (j >> 2) * k + (((j & 3u) * k) >> 2); }
RNGX_FN unsigned rngx_element_lane(uint64_t j, unsigned k) { return (unsigned)(j * k) & 3u; }

#endif
