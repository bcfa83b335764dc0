/* Branch-free forms of convert.h's float16/bfloat16 conversions for the ops' elements (elements.h): whole-range
 * integer ops and selects, so that gcc vectorizes a loop of them (AVX2, AVX-512 under target_clones). They
 * give the bits of the convert.h functions for every input (tests/c/test_convert.c checks); convert.h stays
 * the definition. float32 arithmetic is never inside a select (gcc would not vectorize that): both sides are
 * computed and one masked off. */
#ifndef RNGX_CONVERT_LANES_H
#define RNGX_CONVERT_LANES_H

#include "convert.h"

RNGX_FN float rngx_f16_to_f32_lanes(uint16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1Fu, man = h & 0x3FFu;
  /* exp 31 (inf, NaN) becomes 255 = 31 + 224, a normal exp + 112; zero and subnormals are man * 2^-24. */
  const uint32_t big = ((exp + (exp == 0x1Fu ? 224u : 112u)) << 23) | (man << 13);
  /* All ones where exp is 0, else 0, by arithmetic: made by a compare, gcc turns the masking back into a branch. */
  const uint32_t small = rngx_f32_bits((float)(int32_t)man * 0x1p-24f), zero_exp = ((exp + 31u) >> 5) - 1u;
  return rngx_bits_f32(sign | (small & zero_exp) | (big & ~zero_exp));
}

RNGX_FN uint16_t rngx_f32_to_f16_lanes(float f) {
  const uint32_t b = rngx_f32_bits(f), sign = (b >> 16) & 0x8000u, a = b & 0x7FFFFFFFu;
  /* Normal half; magnitudes from 2^16 up (inf too) are clamped to 2^16, which rounds to inf. */
  const uint32_t normal = rngx_round_shift((a < 0x47800000u ? a : 0x47800000u) - (112u << 23), 13);
  /* Subnormal half: shift 14..24 as in convert.h; below 2^-25 a shift of 25 leaves 0, as it should. */
  const int32_t s = 126 - (int32_t)(a >> 23);
  const uint32_t subnormal = rngx_round_shift((a & 0x7FFFFFu) | 0x800000u, (unsigned)(s < 14 ? 14 : s > 25 ? 25 : s));
  const uint32_t nan = 0x7E00u | ((a >> 13) & 0x3FFu);
  return (uint16_t)(sign | (a > 0x7F800000u ? nan : a >= 0x38800000u ? normal : subnormal));
}

RNGX_FN uint16_t rngx_f32_to_bf16_lanes(float f) {
  const uint32_t b = rngx_f32_bits(f);
  return (uint16_t)((b & 0x7FFFFFFFu) > 0x7F800000u ? (b >> 16) | 0x40u : rngx_round_shift(b, 16));
}

#endif
