/* Words to floats, and float32 to the 16-bit types (docs/stream.md, "Floats").
 *
 * Each uniform takes the low bits of its word(s), as many as the type's significand holds, so u is an exact
 * multiple of 2^-bits and u < 1 holds in the type itself. Every rounding is to nearest, ties to even. */
#ifndef RNGX_CONVERT_H
#define RNGX_CONVERT_H

#include <stdint.h>
#include <string.h>

#include "philox.h"

#define RNGX_U24_MASK 0xFFFFFFu  /* float32: 24 significand bits */
#define RNGX_U11_MASK 0x7FFu     /* float16: 11 */
#define RNGX_U8_MASK 0xFFu       /* bfloat16: 8 */
#define RNGX_U53_MASK 0x1FFFFFFFFFFFFFull /* float64: 53, from two words */

RNGX_FN float rngx_u24(uint32_t w) { return (float)(w & RNGX_U24_MASK) * 0x1p-24f; }
RNGX_FN float rngx_u11(uint32_t w) { return (float)(w & RNGX_U11_MASK) * 0x1p-11f; }
RNGX_FN float rngx_u8(uint32_t w) { return (float)(w & RNGX_U8_MASK) * 0x1p-8f; }

/* w0 is the element's first word, w1 its second: 21 bits of w0 above all 32 of w1 (torch.func._random's packing). */
RNGX_FN uint64_t rngx_m53(uint32_t w0, uint32_t w1) { return (((uint64_t)w0 << 32) | w1) & RNGX_U53_MASK; }
RNGX_FN double rngx_u53(uint32_t w0, uint32_t w1) { return (double)rngx_m53(w0, w1) * 0x1p-53; }

RNGX_FN uint32_t rngx_f32_bits(float f) { uint32_t b; memcpy(&b, &f, 4); return b; }
RNGX_FN float rngx_bits_f32(uint32_t b) { float f; memcpy(&f, &b, 4); return f; }

RNGX_FN float rngx_f16_to_f32(uint16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1Fu, man = h & 0x3FFu;
  if (exp == 0x1Fu) return rngx_bits_f32(sign | 0x7F800000u | (man << 13)); /* inf, NaN (payload kept) */
  if (exp != 0) return rngx_bits_f32(sign | ((exp + 112u) << 23) | (man << 13));
  /* Zero or subnormal: man * 2^-24 is exact in float32. */
  const float mag = (float)man * 0x1p-24f;
  return sign ? -mag : mag;
}

/* Round-to-nearest-even of the bits below `shift` (1..31), for value v whose kept part is v >> shift: adding
 * half - 1, plus 1 when the kept part is odd, carries into it exactly when the rest is above half, or is half
 * and the kept part odd. No branch (the rounding direction is data) and plain integer ops, so loops of it
 * vectorize. v + half must stay below 2^32: true of every float32 bit pattern but NaNs, which callers take apart. */
RNGX_FN uint32_t rngx_round_shift(uint32_t v, unsigned shift) {
  return (v + ((1u << (shift - 1u)) - 1u) + ((v >> shift) & 1u)) >> shift;
}

RNGX_FN uint16_t rngx_f32_to_f16(float f) {
  const uint32_t b = rngx_f32_bits(f), sign = (b >> 16) & 0x8000u, a = b & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return (uint16_t)(sign | 0x7E00u | ((a >> 13) & 0x3FFu)); /* NaN stays quiet NaN */
  if (a >= 0x47800000u) return (uint16_t)(sign | 0x7C00u);                         /* >= 2^16 (and inf) */
  if (a >= 0x38800000u) /* normal half; a carry out of the significand correctly reaches inf */
    return (uint16_t)(sign | rngx_round_shift(a - (112u << 23), 13));
  if (a < 0x33000000u) return (uint16_t)sign; /* < 2^-25 */
  /* Subnormal half: |f| / 2^-24, rounded. */
  const uint32_t e = a >> 23, m = (a & 0x7FFFFFu) | 0x800000u;
  return (uint16_t)(sign | rngx_round_shift(m, 126u - e));
}

RNGX_FN float rngx_bf16_to_f32(uint16_t h) { return rngx_bits_f32((uint32_t)h << 16); }

RNGX_FN uint16_t rngx_f32_to_bf16(float f) {
  const uint32_t b = rngx_f32_bits(f);
  if ((b & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((b >> 16) | 0x40u); /* NaN stays quiet NaN */
  return (uint16_t)(rngx_round_shift(b, 16)); /* a carry into the exponent is the correct rounding */
}

#endif
