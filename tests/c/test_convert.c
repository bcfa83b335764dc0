/* Float conversions and the word-to-uniform formulas of convert.h, against independent references:
 * the compiler's _Float16 for float16 (round to nearest even), double arithmetic for bfloat16.
 *
 * float32 -> float16 is checked on a strided sample of all 2^32 patterns plus every pattern near each float16
 * value and each rounding midpoint. gcc's software _Float16 conversion is too slow for all 2^32 patterns in a
 * quick test (over a minute for every 7th one); `test_convert --exhaustive` runs them all. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "kernels/convert.h"
#include "kernels/convert_lanes.h"
#include "kernels/simd.h"

#define SAMPLE_STRIDE 1021u /* odd and prime, so the sample walks through every low-bit pattern */

static uint16_t compiler_f16(float f) {
  const _Float16 h = (_Float16)f;
  uint16_t b;
  memcpy(&b, &h, 2);
  return b;
}

static int is_f16_nan(uint16_t h) { return (h & 0x7FFFu) > 0x7C00u; }
static int is_bf16_nan(uint16_t h) { return (h & 0x7FFFu) > 0x7F80u; }

/* NaN in, NaN out with the same sign; anything else must match the compiler bit for bit. */
static void check_f16_at(uint32_t bits) {
  const float f = rngx_bits_f32(bits);
  const uint16_t got = rngx_f32_to_f16(f);
  if (isnan(f)) {
    CHECK_MSG(is_f16_nan(got) && (got >> 15) == (bits >> 31), "    f32 0x%08x -> 0x%04x\n", bits, got);
  } else {
    const uint16_t want = compiler_f16(f);
    CHECK_MSG(got == want, "    f32 0x%08x -> 0x%04x, want 0x%04x\n", bits, got, want);
  }
}

static void check_f32_to_f16(int exhaustive) {
  if (exhaustive) {
    for (uint64_t b = 0; b <= UINT32_MAX; ++b) check_f16_at((uint32_t)b);
    return;
  }
  for (uint64_t b = 0; b <= UINT32_MAX; b += SAMPLE_STRIDE) check_f16_at((uint32_t)b);
  /* Around every float16 value and every midpoint between neighbours: where rounding decides. Midpoints
   * are exact in float32 (12 significant bits); above the largest finite half the "neighbour" is 65536. */
  for (uint32_t h = 0; h < 0x7C00u; ++h) {
    const float v = rngx_f16_to_f32((uint16_t)h);
    const float next = h == 0x7BFFu ? 65536.0f : rngx_f16_to_f32((uint16_t)(h + 1));
    const uint32_t centers[2] = {rngx_f32_bits(v), rngx_f32_bits((v + next) / 2)};
    for (int c = 0; c < 2; ++c)
      for (uint32_t d = 0; d < 7; ++d) {
        const uint32_t b = centers[c] + d - 3u;
        if (b > 0x7F800000u) continue; /* below +0 (wrapped) */
        check_f16_at(b);
        check_f16_at(b | 0x80000000u);
      }
  }
  const uint32_t edges[] = {0x00000000, 0x00000001, 0x007FFFFF, 0x00800000, 0x33000000, 0x33000001, 0x337FFFFF,
                            0x387FC000, 0x387FE000, 0x38800000, 0x477FE000, 0x477FEFFF, 0x477FF000, 0x47800000,
                            0x7F7FFFFF, 0x7F800000, 0x7F800001, 0x7FC00000, 0x7FFFFFFF, 0x7FBFFFFF};
  for (size_t i = 0; i < sizeof edges / sizeof edges[0]; ++i) {
    check_f16_at(edges[i]);
    check_f16_at(edges[i] | 0x80000000u);
  }
}

static void check_f16_to_f32(void) {
  for (uint32_t h = 0; h <= 0xFFFFu; ++h) {
    _Float16 x;
    const uint16_t h16 = (uint16_t)h;
    memcpy(&x, &h16, 2);
    const float got = rngx_f16_to_f32(h16), want = (float)x;
    if (is_f16_nan(h16)) {
      CHECK(isnan(got) && !!signbit(got) == (h >> 15));
    } else {
      CHECK_MSG(rngx_f32_bits(got) == rngx_f32_bits(want), "    f16 0x%04x -> 0x%08x, want 0x%08x\n", h,
                rngx_f32_bits(got), rngx_f32_bits(want));
    }
  }
}

/* Round to nearest even by picking the nearer of the two bfloat16 neighbours in double arithmetic. The
 * neighbour above the largest finite value is 2^128 (IEEE rounds as if the exponent were unbounded, and a
 * result past the largest finite value is inf). */
static uint16_t reference_bf16(float f) {
  const uint32_t bits = rngx_f32_bits(f);
  const uint16_t sign = (uint16_t)((bits >> 16) & 0x8000u), down = (uint16_t)((bits >> 16) & 0x7FFFu);
  if (down == 0x7F80u) return (uint16_t)(sign | down); /* inf */
  const double a = fabs((double)f), lo = rngx_bf16_to_f32(down);
  const double hi = down == 0x7F7Fu ? ldexp(1.0, 128) : rngx_bf16_to_f32((uint16_t)(down + 1));
  const double below = a - lo, above = hi - a; /* both exact in double */
  const int up = above < below || (above == below && (down & 1u));
  return (uint16_t)(sign | (down + up));
}

static void check_bf16_at(uint32_t bits) {
  const float f = rngx_bits_f32(bits);
  const uint16_t got = rngx_f32_to_bf16(f);
  if (isnan(f)) {
    CHECK_MSG(is_bf16_nan(got) && (got >> 15) == (bits >> 31), "    f32 0x%08x -> 0x%04x\n", bits, got);
  } else {
    const uint16_t want = reference_bf16(f);
    CHECK_MSG(got == want, "    f32 0x%08x -> 0x%04x, want 0x%04x\n", bits, got, want);
  }
}

static void check_f32_to_bf16(void) {
  for (uint64_t b = 0; b <= UINT32_MAX; b += SAMPLE_STRIDE) check_bf16_at((uint32_t)b);
  /* For every upper half: exact values, just below/at/above the midpoint, and just below the next value. */
  const uint32_t lows[] = {0x0000, 0x0001, 0x7FFF, 0x8000, 0x8001, 0xFFFF};
  for (uint32_t top = 0; top <= 0xFFFFu; ++top)
    for (size_t i = 0; i < sizeof lows / sizeof lows[0]; ++i) check_bf16_at(top << 16 | lows[i]);
  CHECK(rngx_f32_to_bf16(rngx_bits_f32(0x7F7FFFFFu)) == 0x7F80u); /* max finite float32 overflows to inf */
  CHECK(rngx_f32_to_bf16(rngx_bits_f32(0x7F7F7FFFu)) == 0x7F7Fu); /* ... but not below the midpoint */
  CHECK(rngx_f32_to_bf16(-0.0f) == 0x8000u);
  CHECK(rngx_f32_to_bf16(rngx_bits_f32(0x00008000u)) == 0x0000u); /* subnormal tie to even: down */
  CHECK(rngx_f32_to_bf16(rngx_bits_f32(0x00018000u)) == 0x0002u); /* subnormal tie to even: up */
  CHECK(is_bf16_nan(rngx_f32_to_bf16(rngx_bits_f32(0x7F800001u)))); /* a NaN must not truncate to inf */
}

/* u = (w & mask) * 2^-bits exactly, so the largest word gives 1 - 2^-bits < 1, also once in the target type. */
static void check_uniform_formulas(void) {
  const uint32_t words[] = {0, 1, 0x7FF, 0x800, 0xFF, 0x100, 0xFFFFFF, 0x1000000, 0x80000000u, 0xDEADBEEFu,
                            0xFFFFFFFFu};
  for (size_t i = 0; i < sizeof words / sizeof words[0]; ++i) {
    const uint32_t w = words[i];
    CHECK(rngx_u24(w) == (double)(w % 16777216u) / 16777216.0);
    CHECK(rngx_u11(w) == (double)(w % 2048u) / 2048.0);
    CHECK(rngx_u8(w) == (double)(w % 256u) / 256.0);
    CHECK(rngx_u24(w) < 1.0f && rngx_u11(w) < 1.0f && rngx_u8(w) < 1.0f);
    CHECK(rngx_f16_to_f32(rngx_f32_to_f16(rngx_u11(w))) == rngx_u11(w)); /* exact in float16 */
    CHECK(rngx_bf16_to_f32(rngx_f32_to_bf16(rngx_u8(w))) == rngx_u8(w)); /* exact in bfloat16 */
  }
  CHECK(rngx_u24(0xFFFFFFFFu) == 1.0f - 0x1p-24f);
  CHECK(rngx_f32_to_f16(rngx_u11(0xFFFFFFFFu)) == 0x3BFFu);  /* 1 - 2^-11 */
  CHECK(rngx_f32_to_bf16(rngx_u8(0xFFFFFFFFu)) == 0x3F7Fu); /* 1 - 2^-8 */
  /* float64 (v2, torch's packing): m53 = ((w0 << 32) | w1) & (2^53 - 1), w0 the element's first word. */
  CHECK(rngx_m53(0, 0) == 0);
  CHECK(rngx_m53(0, 1) == 1);
  CHECK(rngx_m53(1, 0) == 1ull << 32);
  CHECK(rngx_m53(0x200000u, 0) == 0);                    /* bit 53 and above are dropped */
  CHECK(rngx_m53(0x1FFFFFu, 0) == 0x1FFFFFull << 32);     /* ... bit 52 is kept */
  CHECK(rngx_m53(0xFFFFFFFFu, 0xFFFFFFFFu) == (1ull << 53) - 1);
  CHECK(rngx_m53(0x01234567u, 0x89ABCDEFu) == 0x0003456789ABCDEFull); /* w0 & 0x1FFFFF on top */
  CHECK(rngx_m53(0x89ABCDEFu, 0x01234567u) == 0x000BCDEF01234567ull); /* not the v1 order */
  CHECK(rngx_u53(0, 0) == 0.0);
  CHECK(rngx_u53(0, 1) == 0x1p-53);
  CHECK(rngx_u53(1, 0) == 0x1p-21);
  CHECK(rngx_u53(0x200000u, 0) == 0.0);
  CHECK(rngx_u53(0x100000u, 0) == 0.5); /* the top kept bit of w0 is u's 2^-1 */
  CHECK(rngx_u53(0xFFFFFFFFu, 0xFFFFFFFFu) == 1.0 - 0x1p-53);
  CHECK(rngx_u53(0xFFFFFFFFu, 0xFFFFFFFFu) < 1.0);
  CHECK(rngx_u53(0x01234567u, 0x89ABCDEFu) == (double)0x0003456789ABCDEFull * 0x1p-53);
  for (size_t i = 0; i < sizeof words / sizeof words[0]; ++i)
    for (size_t j = 0; j < sizeof words / sizeof words[0]; ++j) {
      const uint64_t m = (((uint64_t)words[i] << 32) | words[j]) % (1ull << 53);
      CHECK(rngx_m53(words[i], words[j]) == m);
      CHECK(rngx_u53(words[i], words[j]) == (double)m / 9007199254740992.0);
    }
}

/* convert_lanes.h against convert.h, as the ops run them: in loops the compiler vectorizes (O3 here; the tests'
 * -O2 would leave them scalar), built for each x86 ISA this CPU runs. */
#define LANE_LOOPS(isa, attr)                                                                                  \
  attr static void lanes_##isa(const uint32_t *in, int n, uint16_t *f16, uint16_t *bf16, uint32_t *from_f16) { \
    for (int i = 0; i < n; ++i) f16[i] = rngx_f32_to_f16_lanes(rngx_bits_f32(in[i]));                          \
    for (int i = 0; i < n; ++i) bf16[i] = rngx_f32_to_bf16_lanes(rngx_bits_f32(in[i]));                       \
    for (int i = 0; i < n; ++i) from_f16[i] = rngx_f32_bits(rngx_f16_to_f32_lanes((uint16_t)in[i]));           \
  }
typedef void (*lanes_fn)(const uint32_t *in, int n, uint16_t *f16, uint16_t *bf16, uint32_t *from_f16);
#if defined(__GNUC__) && !defined(__clang__)
#define LANES_O3 __attribute__((optimize("O3")))
#else
#define LANES_O3
#endif
LANE_LOOPS(default, LANES_O3)
#if RNGX_X86_SIMD
LANE_LOOPS(avx2, LANES_O3 __attribute__((target("avx2"))))
LANE_LOOPS(avx512, LANES_O3 __attribute__((target("avx512f"))))
#endif

#define LANES_CHUNK 65536

/* Every float16 pattern; for float32, each of the 2^19 top-bit patterns (sign, exponent, the float16's 10
 * significand bits) with low 13 bits at and around every rounding point (0, ties, just off them) and one
 * pseudo-random: NaNs, infs, subnormals, ties, overflow all fall in. The bits above 13 are all there, so the
 * ties of subnormal float16s (rounded at bit 14..24) and bfloat16s (bit 16) are too. */
static void check_lanes_with(const char *isa, lanes_fn f) {
  static uint32_t in[LANES_CHUNK], from_f16[LANES_CHUNK];
  static uint16_t f16[LANES_CHUNK], bf16[LANES_CHUNK];
  const uint32_t lows[8] = {0, 1, 0xFFF, 0x1000, 0x1001, 0x1FFF, 0x800};
  for (int i = 0; i < LANES_CHUNK; ++i) in[i] = (uint32_t)i;
  f(in, LANES_CHUNK, f16, bf16, from_f16);
  for (uint32_t h = 0; h < 65536; ++h)
    CHECK_MSG(from_f16[h] == rngx_f32_bits(rngx_f16_to_f32((uint16_t)h)), "    %s: f16 0x%04x -> 0x%08x\n", isa, h,
              from_f16[h]);
  for (uint32_t top = 0; top < (1u << 19); top += LANES_CHUNK / 8) {
    for (int i = 0; i < LANES_CHUNK; ++i) {
      const uint32_t t = top + (uint32_t)i / 8u;
      in[i] = t << 13 | (i % 8 == 7 ? (t * 2654435761u) >> 19 : lows[i % 8]);
    }
    f(in, LANES_CHUNK - 1 - (int)(top >> 16), f16, bf16, from_f16); /* odd counts leave scalar tails */
    for (int i = 0; i < LANES_CHUNK - 1 - (int)(top >> 16); ++i) {
      const float v = rngx_bits_f32(in[i]);
      CHECK_MSG(f16[i] == rngx_f32_to_f16(v), "    %s: f32 0x%08x -> f16 0x%04x\n", isa, in[i], f16[i]);
      CHECK_MSG(bf16[i] == rngx_f32_to_bf16(v), "    %s: f32 0x%08x -> bf16 0x%04x\n", isa, in[i], bf16[i]);
    }
  }
}

static void check_lanes(void) {
  check_lanes_with("default", lanes_default);
#if RNGX_X86_SIMD
  if (__builtin_cpu_supports("avx2")) check_lanes_with("avx2", lanes_avx2);
  if (__builtin_cpu_supports("avx512f")) check_lanes_with("avx512", lanes_avx512);
#endif
}

int main(int argc, char **argv) {
  const int exhaustive = argc > 1 && strcmp(argv[1], "--exhaustive") == 0;
  check_f32_to_f16(exhaustive);
  check_f16_to_f32();
  check_f32_to_bf16();
  check_uniform_formulas();
  check_lanes();
  return check_summary();
}
