/* One element of each op, for users' own C, C++ and CUDA code (docs/device_api.md): the words of element j of
 * a key's stream and the conversions our ops apply to them, so a custom kernel draws the bits the ops give.
 * Installed with the package next to philox.h, convert.h and dists.h (torch_rngx.include_dir()).
 *
 * The numbers each function takes are the ops' parameters (docs/stream.md): uniform's lo and width rounded to
 * the dtype, dropout's keep = ceil(p 2^24) (2^53 for float64) and scale, normal's mean and std in float32 for the
 * <= 32-bit types. On a GPU every multiply and add here is an explicitly rounded intrinsic, so nvcc's default
 * multiply-add contraction cannot change bits; normal's math (dists.h) needs --fmad=false. Host code needs
 * -ffp-contract=off (GCC contracts across statements by default outside ISO C mode). */
#ifndef RNGX_ELEMENTS_H
#define RNGX_ELEMENTS_H

#include <stdint.h>

#include "convert.h"
#include "dists.h"

#if defined(__CUDA_ARCH__)
#define RNGX_FMUL(a, b) __fmul_rn(a, b)
#define RNGX_FADD(a, b) __fadd_rn(a, b)
#define RNGX_DMUL(a, b) __dmul_rn(a, b)
#define RNGX_DADD(a, b) __dadd_rn(a, b)
#else
#define RNGX_FMUL(a, b) ((a) * (b))
#define RNGX_FADD(a, b) ((a) + (b))
#define RNGX_DMUL(a, b) ((a) * (b))
#define RNGX_DADD(a, b) ((a) + (b))
#endif

/* Element j of an op that takes k = 1, 2 or 4 words per element (docs/stream.md's table): words k j .. k j + k - 1
 * of the key (seed, offset), all in one Philox block. */
RNGX_FN void rngx_element_words(uint64_t seed, uint64_t offset, uint64_t j, int k, uint32_t *w) {
  const uint64_t t = j * (uint64_t)k;
  const rngx_ctr r = rngx_block(seed, offset + (t >> 2));
  for (int i = 0; i < k; ++i) w[i] = r.v[(t & 3u) + (uint64_t)i];
}

/* uniform: lo + u * width in float32, u the dtype's (rngx_u24, u11 or u8), then rounded to the dtype (float16
 * and bfloat16 as bit patterns). */
RNGX_FN float rngx_uniform_value(float u, float lo, float width) { return RNGX_FADD(lo, RNGX_FMUL(u, width)); }
RNGX_FN float rngx_uniform_f32(uint32_t w, float lo, float width) { return rngx_uniform_value(rngx_u24(w), lo, width); }
RNGX_FN uint16_t rngx_uniform_f16(uint32_t w, float lo, float width) {
  return rngx_f32_to_f16(rngx_uniform_value(rngx_u11(w), lo, width));
}
RNGX_FN uint16_t rngx_uniform_bf16(uint32_t w, float lo, float width) {
  return rngx_f32_to_bf16(rngx_uniform_value(rngx_u8(w), lo, width));
}
RNGX_FN double rngx_uniform_f64(uint32_t w0, uint32_t w1, double low, double width) {
  return RNGX_DADD(low, RNGX_DMUL(rngx_u53(w0, w1), width));
}

/* quantize_noise: x + (lo + u24 * width), lo = fl32(-half), width = fl32(2 half); x widened to float32. */
RNGX_FN float rngx_noise_f32(float x, uint32_t w, float lo, float width) {
  return RNGX_FADD(x, RNGX_FADD(lo, RNGX_FMUL(rngx_u24(w), width)));
}
RNGX_FN double rngx_noise_f64(double x, uint32_t w0, uint32_t w1, double lo, double width) {
  return RNGX_DADD(x, RNGX_DADD(lo, RNGX_DMUL(rngx_u53(w0, w1), width)));
}

/* dropout keeps iff u >= p: the integer behind u against keep. bernoulli is 1 exactly where dropout drops. */
RNGX_FN int rngx_kept_f32(uint32_t w, uint32_t keep) { return (w & RNGX_U24_MASK) >= keep; }
RNGX_FN int rngx_kept_f64(uint32_t w0, uint32_t w1, uint64_t keep) { return rngx_m53(w0, w1) >= keep; }
/* A select, not a multiply by 0: a dropped NaN gives 0. */
RNGX_FN float rngx_dropout_f32(float x, uint32_t w, uint32_t keep, float scale) {
  return rngx_kept_f32(w, keep) ? RNGX_FMUL(x, scale) : 0.0f;
}
RNGX_FN double rngx_dropout_f64(double x, uint32_t w0, uint32_t w1, uint64_t keep, double scale) {
  return rngx_kept_f64(w0, w1, keep) ? RNGX_DMUL(x, scale) : 0.0;
}

/* normal: element j is pair j / 2's cosine output (j even) or its sine output (j odd), z * std + mean. w holds the
 * pair's words: rngx_element_words(seed, offset, j / 2, 2, w), four for float64; fl32(z) for the float32 family. */
RNGX_FN float rngx_normal_scale_f32(double z, float mean, float std) {
  return RNGX_FADD(RNGX_FMUL((float)z, std), mean);
}
RNGX_FN double rngx_normal_scale_f64(double z, double mean, double std) { return RNGX_DADD(RNGX_DMUL(z, std), mean); }
RNGX_FN float rngx_normal_f32(uint32_t w0, uint32_t w1, int odd, float mean, float std) {
  const rngx_pair z = rngx_normal32(w0, w1);
  return rngx_normal_scale_f32(odd ? z.s : z.c, mean, std);
}
RNGX_FN double rngx_normal_f64(const uint32_t *w, int odd, double mean, double std) {
  const rngx_pair z = rngx_normal64(w);
  return rngx_normal_scale_f64(odd ? z.s : z.c, mean, std);
}

/* truncated normal, <= 32-bit types: the value (rngx_truncnorm_value) rounded to the dtype, then clamped to
 * [lo, hi], the dtype's values nearest inside [a, b]. */
RNGX_FN float rngx_clamp_f32(float v, float lo, float hi) { return v < lo ? lo : v > hi ? hi : v; }

/* exponential: E / rate in double, rounded to the dtype; a value that rounds to 0 becomes the dtype's smallest
 * positive value and one that overflows its largest finite value, so every value is positive and finite.
 * float16 and bfloat16 as bit patterns, `inf` the type's infinity (0x7C00, 0x7F80). */
RNGX_FN float rngx_exp_clamp_f32(float v) { return v == 0.0f ? 0x1p-149f : v > 0x1.fffffep127f ? 0x1.fffffep127f : v; }
RNGX_FN uint16_t rngx_exp_clamp_16(uint16_t h, uint16_t inf) { return h == 0 ? 1 : h == inf ? (uint16_t)(inf - 1) : h; }
RNGX_FN double rngx_exp_clamp_f64(double v) {
  return v == 0.0 ? 0x1p-1074 : v > 0x1.fffffffffffffp+1023 ? 0x1.fffffffffffffp+1023 : v;
}

#endif
