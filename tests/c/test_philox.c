/* The Philox core and the raw stream: Random123's known answers, a cross-check against Random123 itself (when
 * installed), rngx_fill_words against rngx_word, the counter carry at block 2^32 and the wrap at word 2^64. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "kernels/philox.h"
#include "kernels/stream.h"

#ifdef RNGX_HAVE_RANDOM123
#include <Random123/philox.h>
#endif

/* splitmix64: cheap, well-mixed test inputs; any fixed sequence would do. */
static uint64_t rng_state = 0x243F6A8885A308D3ull;
static uint64_t next_u64(void) {
  uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* Random word indices that also hit the interesting regions: near 0, near the 2^32 block carry, near 2^64. */
static uint64_t interesting_index(void) {
  const uint64_t r = next_u64(), jitter = next_u64() % 64;
  switch (r % 4) {
    case 0: return jitter;
    case 1: return (4ull << 32) - 32 + jitter;
    case 2: return 0 - 32 - jitter; /* wraps: the last words before 2^64 */
    default: return r;
  }
}

static void check_known_answers(void) {
  static const struct { uint32_t ctr[4], key[2], out[4]; } kat[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  for (size_t i = 0; i < sizeof kat / sizeof kat[0]; ++i) {
    const rngx_ctr c = {{kat[i].ctr[0], kat[i].ctr[1], kat[i].ctr[2], kat[i].ctr[3]}};
    const rngx_key k = {{kat[i].key[0], kat[i].key[1]}};
    const rngx_ctr r = rngx_philox4x32_10(c, k);
    for (int lane = 0; lane < 4; ++lane) CHECK_EQ_U32(r.v[lane], kat[i].out[lane]);
  }
  /* The first vector is also words 0..3 of seed 0. */
  CHECK_EQ_U32(rngx_word(0, 0), 0x6627e8d5);
  CHECK_EQ_U32(rngx_word(0, 3), 0x9b00dbd8);
}

#ifdef RNGX_HAVE_RANDOM123
static uint32_t r123_word(uint64_t seed, uint64_t n) {
  const uint64_t block = n >> 2;
  const philox4x32_ctr_t c = {{(uint32_t)block, (uint32_t)(block >> 32), 0, 0}};
  const philox4x32_key_t k = {{(uint32_t)seed, (uint32_t)(seed >> 32)}};
  return philox4x32(c, k).v[n & 3];
}

static void check_against_random123(void) {
  for (int i = 0; i < 20000; ++i) { /* arbitrary counters and keys, all four counter words live */
    const uint64_t a = next_u64(), b = next_u64(), s = next_u64();
    const rngx_ctr c = {{(uint32_t)a, (uint32_t)(a >> 32), (uint32_t)b, (uint32_t)(b >> 32)}};
    const rngx_key k = {{(uint32_t)s, (uint32_t)(s >> 32)}};
    const philox4x32_ctr_t rc = {{c.v[0], c.v[1], c.v[2], c.v[3]}};
    const philox4x32_key_t rk = {{k.v[0], k.v[1]}};
    const rngx_ctr got = rngx_philox4x32_10(c, k);
    const philox4x32_ctr_t want = philox4x32(rc, rk);
    for (int lane = 0; lane < 4; ++lane) CHECK_EQ_U32(got.v[lane], want.v[lane]);
  }
  for (int i = 0; i < 20000; ++i) {
    const uint64_t seed = next_u64(), n = interesting_index();
    CHECK_EQ_U32(rngx_word(seed, n), r123_word(seed, n));
  }
  uint32_t buf[64];
  for (int i = 0; i < 2000; ++i) {
    const uint64_t seed = next_u64(), first = interesting_index();
    const int64_t count = (int64_t)(next_u64() % 65);
    rngx_fill_words(seed, first, count, buf);
    for (int64_t j = 0; j < count; ++j) CHECK_EQ_U32(buf[j], r123_word(seed, first + (uint64_t)j));
  }
  printf("cross-checked against Random123's philox4x32\n");
}
#endif

/* fill_words from every lane and for short counts equals word-by-word rngx_word, and writes nothing past
 * count: the buffer is exactly count words, so ASan (make sanitize) sees any overrun. */
static void check_fill_matches_word(void) {
  const uint64_t seeds[] = {0, 1, 0xFFFFFFFFFFFFFFFFull, 0x0123456789ABCDEFull};
  for (size_t s = 0; s < sizeof seeds / sizeof seeds[0]; ++s)
    for (uint64_t first = 40; first < 44; ++first) /* first % 4 = 0, 1, 2, 3 */
      for (int64_t count = 0; count <= 17; ++count) {
        uint32_t *out = malloc((size_t)count * sizeof *out);
        rngx_fill_words(seeds[s], first, count, out);
        for (int64_t j = 0; j < count; ++j) CHECK_EQ_U32(out[j], rngx_word(seeds[s], first + (uint64_t)j));
        free(out);
      }
  uint32_t buf[64]; /* and from random starts, including across the 2^32 block carry and the 2^64 wrap */
  for (int i = 0; i < 2000; ++i) {
    const uint64_t seed = next_u64(), first = interesting_index();
    rngx_fill_words(seed, first, 64, buf);
    for (int64_t j = 0; j < 64; ++j) CHECK_EQ_U32(buf[j], rngx_word(seed, first + (uint64_t)j));
  }
}

/* Block 2^32 - 1 is counter (ffffffff, 0, 0, 0); block 2^32 must be (0, 1, 0, 0), not (0, 0, 0, 0). */
static void check_counter_carry(void) {
  const uint64_t seed = 0x9E3779B97F4A7C15ull, carry = 4ull << 32;
  const rngx_key k = {{(uint32_t)seed, (uint32_t)(seed >> 32)}};
  const rngx_ctr before = rngx_philox4x32_10((rngx_ctr){{0xffffffffu, 0, 0, 0}}, k);
  const rngx_ctr after = rngx_philox4x32_10((rngx_ctr){{0, 1, 0, 0}}, k);
  const rngx_ctr zero = rngx_philox4x32_10((rngx_ctr){{0, 0, 0, 0}}, k);
  uint32_t buf[8];
  rngx_fill_words(seed, carry - 3, 8, buf); /* unaligned start, straddles the carry */
  for (int j = 0; j < 3; ++j) {
    CHECK_EQ_U32(rngx_word(seed, carry - 3 + (uint64_t)j), before.v[1 + j]);
    CHECK_EQ_U32(buf[j], before.v[1 + j]);
  }
  for (int j = 0; j < 4; ++j) {
    CHECK_EQ_U32(rngx_word(seed, carry + (uint64_t)j), after.v[j]);
    CHECK_EQ_U32(buf[3 + j], after.v[j]);
    CHECK(after.v[j] != zero.v[j]); /* a lost carry would restart the stream at block 0 */
  }
}

/* Word indices are taken modulo 2^64: word 2^64 - 1 is lane 3 of block 2^62 - 1, counter
 * (ffffffff, 3fffffff, 0, 0), and after it comes word 0, counter (0, 0, 0, 0), not block 2^62. */
static void check_wrap(void) {
  const uint64_t seed = 7;
  const rngx_key k = {{7, 0}};
  const rngx_ctr last = rngx_philox4x32_10((rngx_ctr){{0xffffffffu, 0x3fffffffu, 0, 0}}, k);
  const rngx_ctr first = rngx_philox4x32_10((rngx_ctr){{0, 0, 0, 0}}, k);
  uint32_t buf[7];
  rngx_fill_words(seed, 0 - 2ull, 7, buf);
  CHECK_EQ_U32(buf[0], last.v[2]);
  CHECK_EQ_U32(buf[1], last.v[3]);
  for (int j = 0; j < 5; ++j) CHECK_EQ_U32(buf[2 + j], rngx_word(seed, (uint64_t)j));
  for (int j = 0; j < 4; ++j) CHECK_EQ_U32(rngx_word(seed, (uint64_t)j), first.v[j]);
  CHECK_EQ_U32(rngx_word(seed, UINT64_MAX), last.v[3]);
}

int main(void) {
  check_known_answers();
#ifdef RNGX_HAVE_RANDOM123
  check_against_random123();
#else
  printf("skipped the cross-check against Random123: it is not installed (Debian: librandom123-dev)\n");
#endif
  check_fill_matches_word();
  check_counter_carry();
  check_wrap();
  return check_summary();
}
