/* Key derivation and key lookup (kernels.h): rngx_split and rngx_fold_in against a per-key reference written from
 * the spec (reference.h: child d of key (s, o) = (r0 | r1 << 32, r2 | r3 << 32), r = block(s, o + d), block
 * numbers mod 2^64), with offsets near 2^64 so o + d wraps, fold_in(d) == split(d + 1)[d], data of one value
 * (stride 0) or one per key, exact-size and sentinel-checked outputs; and rngx_key_of_segment against the reference's
 * multi-index lookup for several key_dims / key_strides (broadcast dims included). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kernels/kernels.h"
#include "kernels/philox.h"
#include "reference.h"

#ifdef RNGX_HAVE_RANDOM123
#include <Random123/philox.h>
#endif

static uint64_t rng_state = 0x0DDB1A5E5BAD5EEDull;
static uint64_t next_u64(void) { /* splitmix64 */
  uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* Offsets and data that make o + d cross the 2^32 carry and wrap past 2^64. */
static uint64_t interesting(void) {
  const uint64_t r = next_u64();
  switch (r % 4) {
    case 0: return r % 8;
    case 1: return (1ull << 32) - 1 - r % 4;
    case 2: return 0 - 1 - r % 4;
    default: return next_u64();
  }
}

#define CHECK_EQ_I64(got, want)                                                                              \
  do {                                                                                                       \
    const int64_t check_g_ = (got), check_w_ = (want);                                                       \
    CHECK_MSG(check_g_ == check_w_, "    %s == %s: got 0x%016llx, want 0x%016llx\n", #got, #want,           \
              (unsigned long long)check_g_, (unsigned long long)check_w_);                                  \
  } while (0)

static void check_known_answers(void) {
  const int64_t key[2] = {0, 0};
  int64_t out[2 * 2];
  rngx_split(key, 1, 2, out);
  /* block(0, 0) = 6627e8d5 e169c58d bc57ac4c 9b00dbd8 (Random123's known answer) */
  CHECK_EQ_I64(out[0], (int64_t)0xe169c58d6627e8d5ull);
  CHECK_EQ_I64(out[1], (int64_t)0x9b00dbd8bc57ac4cull);
  const int64_t max_key[2] = {-1, -1}, data = 1; /* block(2^64 - 1, 2^64 - 1 + 1) = block(.., 0) */
  int64_t folded[2], want[2];
  rngx_fold_in(max_key, 1, &data, 0, folded);
  const rngx_ctr r = rngx_philox4x32_10((rngx_ctr){{0, 0, 0, 0}}, (rngx_key){{0xffffffffu, 0xffffffffu}});
  want[0] = (int64_t)(r.v[0] | (uint64_t)r.v[1] << 32);
  want[1] = (int64_t)(r.v[2] | (uint64_t)r.v[3] << 32);
  CHECK_EQ_I64(folded[0], want[0]);
  CHECK_EQ_I64(folded[1], want[1]);
}

#ifdef RNGX_HAVE_RANDOM123
/* The reference's child, from Random123 directly. */
static void check_reference_against_random123(void) {
  for (int i = 0; i < 2000; ++i) {
    const uint64_t s = next_u64(), o = interesting(), d = interesting(), b = o + d;
    const philox4x32_ctr_t c = {{(uint32_t)b, (uint32_t)(b >> 32), 0, 0}};
    const philox4x32_key_t k = {{(uint32_t)s, (uint32_t)(s >> 32)}};
    const philox4x32_ctr_t r = philox4x32(c, k);
    int64_t child[2];
    ref_child(s, o, d, child);
    CHECK_EQ_I64(child[0], (int64_t)(r.v[0] | (uint64_t)r.v[1] << 32));
    CHECK_EQ_I64(child[1], (int64_t)(r.v[2] | (uint64_t)r.v[3] << 32));
  }
}
#endif

enum { GUARD = 4 }; /* sentinel words after each output */
static const int64_t SENT = (int64_t)0x5EE5EE5EE5EE5EE5ull;

static void check_split(void) {
  const int64_t ns[] = {0, 1, 2, 3, 7, 40}, nums[] = {0, 1, 2, 3, 5, 9};
  for (size_t a = 0; a < sizeof ns / sizeof *ns; ++a)
    for (size_t b = 0; b < sizeof nums / sizeof *nums; ++b) {
      const int64_t n = ns[a], num = nums[b], words = 2 * n * num;
      int64_t *keys = malloc((size_t)(2 * n + 1) * sizeof *keys); /* exact: ASan sees an over-read */
      for (int64_t k = 0; k < n; ++k) {
        keys[2 * k] = (int64_t)next_u64();
        keys[2 * k + 1] = (int64_t)interesting();
      }
      int64_t *out = malloc((size_t)(words + GUARD) * sizeof *out), *exact = malloc((size_t)(words + 1) * sizeof *exact);
      for (int64_t w = 0; w < words + GUARD; ++w) out[w] = SENT;
      rngx_split(keys, n, num, out);
      rngx_split(keys, n, num, exact);
      long bad = 0;
      for (int64_t i = 0; i < num; ++i)
        for (int64_t k = 0; k < n; ++k) {
          int64_t want[2];
          ref_child((uint64_t)keys[2 * k], (uint64_t)keys[2 * k + 1], (uint64_t)i, want);
          const int64_t *got = out + 2 * (i * n + k);
          if ((got[0] != want[0] || got[1] != want[1]) && bad++ == 0)
            printf("split(n=%lld, num=%lld): child %lld of key %lld is (%llx, %llx), want (%llx, %llx)\n", (long long)n,
                   (long long)num, (long long)i, (long long)k, (unsigned long long)got[0], (unsigned long long)got[1],
                   (unsigned long long)want[0], (unsigned long long)want[1]);
          /* a child is not its parent, and children differ */
          bad += got[0] == keys[2 * k] && got[1] == keys[2 * k + 1];
          if (i > 0) bad += got[0] == got[-2 * n] && got[1] == got[-2 * n + 1];
        }
      CHECK(bad == 0);
      CHECK(memcmp(out, exact, (size_t)words * sizeof *out) == 0);
      for (int64_t w = words; w < words + GUARD; ++w) CHECK_EQ_I64(out[w], SENT);
      free(keys), free(out), free(exact);
    }
}

static void check_fold_in(void) {
  enum { N = 23 };
  int64_t keys[2 * N], data[3 * N], out[2 * N + GUARD], split_out[2 * 8 * N];
  for (int round = 0; round < 50; ++round) {
    for (int k = 0; k < N; ++k) {
      keys[2 * k] = (int64_t)next_u64();
      keys[2 * k + 1] = (int64_t)interesting();
    }
    for (int k = 0; k < 3 * N; ++k) {
      const uint64_t r = next_u64() % 6;
      data[k] = r == 0 ? 0 : r == 1 ? -1 : r == 2 ? INT64_MIN : r == 3 ? INT64_MAX : (int64_t)interesting();
    }
    for (int64_t stride = 0; stride <= 3; ++stride) { /* 0: one value for every key; 1: one per key */
      for (int w = 0; w < 2 * N + GUARD; ++w) out[w] = SENT;
      rngx_fold_in(keys, N, data, stride, out);
      long bad = 0;
      for (int k = 0; k < N; ++k) {
        int64_t want[2];
        ref_child((uint64_t)keys[2 * k], (uint64_t)keys[2 * k + 1], (uint64_t)data[k * stride], want);
        bad += out[2 * k] != want[0] || out[2 * k + 1] != want[1];
      }
      CHECK_MSG(bad == 0, "    fold_in round %d stride %lld: %ld keys wrong\n", round, (long long)stride, bad);
      for (int w = 2 * N; w < 2 * N + GUARD; ++w) CHECK_EQ_I64(out[w], SENT);
    }
  }
  /* fold_in(state, d) == split(state, d + 1)[d], d < 8 */
  for (int k = 0; k < N; ++k) {
    keys[2 * k] = (int64_t)next_u64();
    keys[2 * k + 1] = (int64_t)(k % 2 ? 0 - (uint64_t)k : (uint64_t)k);
  }
  for (int64_t d = 0; d < 8; ++d) {
    rngx_split(keys, N, d + 1, split_out);
    rngx_fold_in(keys, N, &d, 0, out);
    CHECK(memcmp(out, split_out + 2 * N * d, 2 * N * sizeof *out) == 0);
  }
  for (int w = 0; w < 2 + GUARD; ++w) out[w] = SENT; /* n = 0 writes nothing */
  rngx_fold_in(keys, 0, data, 1, out);
  rngx_split(keys, 0, 3, out);
  rngx_split(keys, 3, 0, out);
  for (int w = 0; w < 2 + GUARD; ++w) CHECK_EQ_I64(out[w], SENT);
}

/* rngx_key_of_segment(job, q) is the key of element q * event, as the reference finds it from the multi-index. */
static void check_key_of_segment(void) {
  static int64_t pairs[2 * 3 * 4 * 5 * 6];
  for (size_t w = 0; w < sizeof pairs / sizeof *pairs; ++w) pairs[w] = (int64_t)next_u64();
  const int64_t sizes[4] = {3, 4, 5, 6};
  static const struct { int key_dims; int64_t strides[4]; } cfgs[] = {
      {0, {0}},
      {1, {2}},
      {1, {0}},                   /* (1, ...): one key, run after run */
      {2, {8, 2}},
      {2, {0, 2}},                /* broadcast dim 0 */
      {3, {40, 10, 2}},
      {3, {0, 0, 2}},
      {3, {10 * 3, 0, 2 * 3}},    /* broadcast dim 1, keys 3 pairs apart */
      {4, {240, 60, 12, 2}},      /* per element */
      {4, {0, 30, 0, 2}},
  };
  for (size_t c = 0; c < sizeof cfgs / sizeof *cfgs; ++c)
    for (int by_value = 0; by_value < 2; ++by_value) {
      int64_t event = 1, runs = 1;
      for (int d = 0; d < 4; ++d) *(d < cfgs[c].key_dims ? &runs : &event) *= sizes[d];
      const rngx_job job = {.keys = {.pairs = by_value ? NULL : pairs, .seed = 77, .offset = 0 - 3ull,
                                     .key_dims = cfgs[c].key_dims, .key_strides = cfgs[c].strides, .event = event},
                            .ndim = 4, .sizes = sizes};
      long bad = 0;
      for (int64_t q = 0; q < runs; ++q) {
        uint64_t seed = 1, offset = 1;
        uint64_t pos = 1;
        rngx_key_of_segment(&job, q, &seed, &offset, &pos);
        const ref_key want = ref_key_of(&job, q * event);
        bad += seed != want.seed || offset != want.offset || want.j != 0 || pos != 0;
      }
      CHECK_MSG(bad == 0, "    key_of_segment: config %zu, by value %d: %ld runs wrong\n", c, by_value, bad);
    }
}

int main(void) {
  check_known_answers();
#ifdef RNGX_HAVE_RANDOM123
  check_reference_against_random123();
  printf("cross-checked the reference's children against Random123's philox4x32\n");
#endif
  check_split();
  check_fold_in();
  check_key_of_segment();
  return check_summary();
}
