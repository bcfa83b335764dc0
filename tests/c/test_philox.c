/* The Philox core and the raw stream v2: Random123's known answers, a cross-check against Random123 itself (when
 * installed) of rngx_philox4x32_10, rngx_block, rngx_key_word and rngx_fill_blocks, the counter carry at block
 * 2^32 and the wrap at block 2^64 (the block after 2^64 - 1 is block 0; no 2^62 mask any more). */
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

/* Random block numbers that also hit the interesting regions: near 0, near the 2^32 carry, near 2^62 (the old
 * v1 mask) and near 2^64. */
static uint64_t interesting_block(void) {
  const uint64_t r = next_u64(), jitter = next_u64() % 64;
  switch (r % 5) {
    case 0: return jitter;
    case 1: return (1ull << 32) - 32 + jitter;
    case 2: return (1ull << 62) - 32 + jitter;
    case 3: return 0 - 32 - jitter; /* the last blocks before 2^64 */
    default: return r;
  }
}

/* The philox counter of block b, written out: (lo32 b, hi32 b, 0, 0), key (lo32 seed, hi32 seed). */
static rngx_ctr spec_block(uint64_t seed, uint64_t b) {
  const rngx_ctr c = {{(uint32_t)b, (uint32_t)(b >> 32), 0, 0}};
  const rngx_key k = {{(uint32_t)seed, (uint32_t)(seed >> 32)}};
  return rngx_philox4x32_10(c, k);
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
  /* The first vector is also block 0 of seed 0, i.e. words 0..3 of key (0, 0). */
  const rngx_ctr b0 = rngx_block(0, 0);
  CHECK_EQ_U32(b0.v[0], 0x6627e8d5);
  CHECK_EQ_U32(b0.v[3], 0x9b00dbd8);
  CHECK_EQ_U32(rngx_key_word(0, 0, 0), 0x6627e8d5);
  CHECK_EQ_U32(rngx_key_word(0, 0, 3), 0x9b00dbd8);
  /* The offset counts blocks: key (0, 1) starts at block 1, not at word 1 of block 0. */
  CHECK_EQ_U32(rngx_key_word(0, 1, 0), rngx_block(0, 1).v[0]);
  CHECK(rngx_key_word(0, 1, 0) != 0xe169c58du);
}

#ifdef RNGX_HAVE_RANDOM123
static philox4x32_ctr_t r123_block(uint64_t seed, uint64_t b) {
  const philox4x32_ctr_t c = {{(uint32_t)b, (uint32_t)(b >> 32), 0, 0}};
  const philox4x32_key_t k = {{(uint32_t)seed, (uint32_t)(seed >> 32)}};
  return philox4x32(c, k);
}

/* W(t) of key (seed, offset), from Random123: block (offset + t / 4) mod 2^64, lane t % 4. */
static uint32_t r123_key_word(uint64_t seed, uint64_t offset, uint64_t t) {
  return r123_block(seed, offset + (t >> 2)).v[t & 3];
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
    const uint64_t seed = next_u64(), b = interesting_block();
    const rngx_ctr got = rngx_block(seed, b);
    const philox4x32_ctr_t want = r123_block(seed, b);
    for (int lane = 0; lane < 4; ++lane) CHECK_EQ_U32(got.v[lane], want.v[lane]);
  }
  for (int i = 0; i < 20000; ++i) { /* offsets and word indices near the carry and the wrap */
    const uint64_t seed = next_u64(), offset = interesting_block();
    const uint64_t t = next_u64() % 2 ? next_u64() % 512 : next_u64();
    CHECK_EQ_U32(rngx_key_word(seed, offset, t), r123_key_word(seed, offset, t));
  }
  uint32_t buf[4 * 40];
  for (int i = 0; i < 2000; ++i) {
    const uint64_t seed = next_u64(), first = interesting_block();
    const int64_t count = (int64_t)(next_u64() % 41);
    rngx_fill_blocks(seed, first, count, buf);
    for (int64_t j = 0; j < 4 * count; ++j) CHECK_EQ_U32(buf[j], r123_key_word(seed, first, (uint64_t)j));
  }
  printf("cross-checked against Random123's philox4x32\n");
}
#endif

/* rngx_block is the spec's counter layout, and rngx_key_word(s, o, t) is lane t % 4 of block o + t / 4. */
static void check_block_and_key_word(void) {
  for (int i = 0; i < 5000; ++i) {
    const uint64_t seed = next_u64(), b = interesting_block();
    const rngx_ctr got = rngx_block(seed, b), want = spec_block(seed, b);
    for (int lane = 0; lane < 4; ++lane) CHECK_EQ_U32(got.v[lane], want.v[lane]);
    for (uint64_t t = 0; t < 12; ++t) CHECK_EQ_U32(rngx_key_word(seed, b, t), spec_block(seed, b + t / 4).v[t % 4]);
  }
}

/* fill_blocks (on the active path; test_simd runs every path) equals block by block rngx_block and writes
 * nothing past 4 * nblocks words: each buffer is exactly that long, so ASan (make sanitize) sees an overrun. */
static void check_fill_blocks(void) {
  const uint64_t seeds[] = {0, 1, 0xFFFFFFFFFFFFFFFFull, 0x0123456789ABCDEFull};
  const uint64_t firsts[] = {0, 1, 3, 1000, (1ull << 32) - 5, (1ull << 62) - 3, 0 - 5ull, 0 - 1ull};
  for (size_t s = 0; s < sizeof seeds / sizeof seeds[0]; ++s)
    for (size_t f = 0; f < sizeof firsts / sizeof firsts[0]; ++f)
      for (int64_t n = 0; n <= 40; ++n) {
        uint32_t *out = malloc((size_t)(4 * n + 1) * sizeof *out);
        out[4 * n] = 0xDEADBEEFu;
        rngx_fill_blocks(seeds[s], firsts[f], n, out);
        for (int64_t b = 0; b < n; ++b) {
          const rngx_ctr want = rngx_block(seeds[s], firsts[f] + (uint64_t)b);
          for (int lane = 0; lane < 4; ++lane) CHECK_EQ_U32(out[4 * b + lane], want.v[lane]);
        }
        CHECK_EQ_U32(out[4 * n], 0xDEADBEEFu);
        free(out);
      }
  uint32_t buf[4 * 64]; /* and from random starts, including across the 2^32 carry and the 2^64 wrap */
  for (int i = 0; i < 2000; ++i) {
    const uint64_t seed = next_u64(), first = interesting_block();
    rngx_fill_blocks(seed, first, 64, buf);
    for (int64_t j = 0; j < 4 * 64; ++j) CHECK_EQ_U32(buf[j], rngx_key_word(seed, first, (uint64_t)j));
  }
}

/* Block 2^32 - 1 is counter (ffffffff, 0, 0, 0); block 2^32 must be (0, 1, 0, 0), not (0, 0, 0, 0). */
static void check_counter_carry(void) {
  const uint64_t seed = 0x9E3779B97F4A7C15ull, carry = 1ull << 32;
  const rngx_key k = {{(uint32_t)seed, (uint32_t)(seed >> 32)}};
  const rngx_ctr before = rngx_philox4x32_10((rngx_ctr){{0xffffffffu, 0, 0, 0}}, k);
  const rngx_ctr after = rngx_philox4x32_10((rngx_ctr){{0, 1, 0, 0}}, k);
  const rngx_ctr zero = rngx_philox4x32_10((rngx_ctr){{0, 0, 0, 0}}, k);
  uint32_t buf[12];
  rngx_fill_blocks(seed, carry - 1, 3, buf); /* straddles the carry */
  for (int j = 0; j < 4; ++j) {
    CHECK_EQ_U32(rngx_block(seed, carry - 1).v[j], before.v[j]);
    CHECK_EQ_U32(buf[j], before.v[j]);
    CHECK_EQ_U32(rngx_block(seed, carry).v[j], after.v[j]);
    CHECK_EQ_U32(buf[4 + j], after.v[j]);
    CHECK(after.v[j] != zero.v[j]); /* a lost carry would restart the stream at block 0 */
    /* key (seed, 2^32 - 1): words 4..7 are block 2^32 */
    CHECK_EQ_U32(rngx_key_word(seed, carry - 1, 4 + (uint64_t)j), after.v[j]);
  }
}

/* Block numbers are taken modulo 2^64: block 2^64 - 1 is counter (ffffffff, ffffffff, 0, 0), and after it comes
 * block 0, counter (0, 0, 0, 0). Block 2^62 is its own counter (0, 40000000, 0, 0): v1's mask is gone. */
static void check_wrap(void) {
  const uint64_t seed = 7;
  const rngx_key k = {{7, 0}};
  const rngx_ctr last = rngx_philox4x32_10((rngx_ctr){{0xffffffffu, 0xffffffffu, 0, 0}}, k);
  const rngx_ctr first = rngx_philox4x32_10((rngx_ctr){{0, 0, 0, 0}}, k);
  const rngx_ctr b62 = rngx_philox4x32_10((rngx_ctr){{0, 0x40000000u, 0, 0}}, k);
  uint32_t buf[4 * 3];
  rngx_fill_blocks(seed, UINT64_MAX - 1, 3, buf); /* 2^64 - 2, 2^64 - 1, 0 */
  for (int j = 0; j < 4; ++j) {
    CHECK_EQ_U32(buf[4 + j], last.v[j]);
    CHECK_EQ_U32(buf[8 + j], first.v[j]);
    CHECK_EQ_U32(rngx_block(seed, UINT64_MAX).v[j], last.v[j]);
    CHECK_EQ_U32(rngx_block(seed, 0).v[j], first.v[j]);
    CHECK_EQ_U32(rngx_block(seed, 1ull << 62).v[j], b62.v[j]);
    /* key (7, 2^64 - 1): word 3 is the last lane of block 2^64 - 1, words 4.. are block 0 */
    CHECK_EQ_U32(rngx_key_word(seed, UINT64_MAX, (uint64_t)j), last.v[j]);
    CHECK_EQ_U32(rngx_key_word(seed, UINT64_MAX, 4 + (uint64_t)j), first.v[j]);
    /* and a word index so large that offset + t / 4 wraps on its own */
    CHECK_EQ_U32(rngx_key_word(seed, (3ull << 62) + 1, UINT64_MAX - 3 + (uint64_t)j), first.v[j]);
  }
  CHECK(b62.v[0] != first.v[0] || b62.v[1] != first.v[1]);
}

int main(void) {
  check_known_answers();
#ifdef RNGX_HAVE_RANDOM123
  check_against_random123();
#else
  printf("skipped the cross-check against Random123: it is not installed (Debian: librandom123-dev)\n");
#endif
  check_block_and_key_word();
  check_fill_blocks();
  check_counter_carry();
  check_wrap();
  return check_summary();
}
