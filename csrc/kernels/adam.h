/* Adam's and AdamW's update of bfloat16 or float16 weights in float32 (torch_rngx/optim.py's fused step,
 * rngx::adam_sround_): element j of contiguous weights, gradients and float32 moments, the moments written back and
 * the updated weight returned in float32, for stochastic_round to round into the weight (the glue, csrc/impl_cpu.cpp
 * and csrc/impl_cuda.cpp). torch.optim.adam's _single_tensor_adam formula (docs/training.md), each operation one
 * IEEE float32 operation rounded once, in torch's order: the same bits on the CPU (adam.c, every SIMD build) and on
 * CUDA (kernels_cuda.cu), where the _rn intrinsics keep each operation apart. */
#ifndef RNGX_ADAM_H
#define RNGX_ADAM_H

#include <stdint.h>

#include "elements.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__CUDA_ARCH__)
#define RNGX_FDIV(a, b) __fdiv_rn(a, b)
#define RNGX_FSQRT(a) __fsqrt_rn(a)
#else
#define RNGX_FDIV(a, b) ((a) / (b))
#define RNGX_FSQRT(a) sqrtf(a)
#endif

/* The step's operands and torch's scalars, each rounded to float32 as torch's kernels take it (the glue derives
 * them from the optimizer's numbers: rngx_glue::adam_of). */
typedef struct {
  const uint16_t *param, *grad; /* the weights and their gradients, in `dtype` */
  float *exp_avg, *exp_avg_sq;  /* the moments, updated in place */
  rngx_dtype dtype;             /* RNGX_BFLOAT16 or RNGX_FLOAT16 */
  int maximize;                 /* the gradient negated first */
  int l2;                       /* Adam with weight decay: g + weight_decay * p */
  int decay;                    /* AdamW with weight decay: p * (1 - lr * weight_decay) */
  float weight_decay, decay_factor;
  float lerp_weight;            /* 1 - beta1: exp_avg.lerp_(g, 1 - beta1), in torch's two forms by the weight */
  float beta2, one_minus_beta2;
  float bias_correction2_sqrt, eps;
  float neg_step_size;          /* -lr / (1 - beta1^step) */
} rngx_adam;

/* Element j: the moments updated in place, the updated weight returned. The flags are the struct's, passed apart
 * so that the CPU loop gives them as literals (one branch-free loop per case). */
RNGX_FN float rngx_adam_element(const rngx_adam *a, int64_t j, int bf16, int maximize, int l2, int decay) {
  float g = bf16 ? rngx_bf16_to_f32(a->grad[j]) : rngx_f16_to_f32_lanes(a->grad[j]);
  float p = bf16 ? rngx_bf16_to_f32(a->param[j]) : rngx_f16_to_f32_lanes(a->param[j]);
  if (maximize) g = -g;
  if (l2) g = RNGX_FADD(g, RNGX_FMUL(a->weight_decay, p));
  if (decay) p = RNGX_FMUL(p, a->decay_factor);
  const float m0 = a->exp_avg[j], diff = RNGX_FADD(g, -m0);
  /* torch's lerp: start + weight * (end - start) below a weight of 1/2, else end - (end - start) * (1 - weight) */
  const float m = a->lerp_weight < 0.5f ? RNGX_FADD(m0, RNGX_FMUL(a->lerp_weight, diff))
                                        : RNGX_FADD(g, -RNGX_FMUL(diff, RNGX_FADD(1.0f, -a->lerp_weight)));
  const float v = RNGX_FADD(RNGX_FMUL(a->exp_avg_sq[j], a->beta2), RNGX_FMUL(RNGX_FMUL(a->one_minus_beta2, g), g));
  a->exp_avg[j] = m;
  a->exp_avg_sq[j] = v;
  const float denom = RNGX_FADD(RNGX_FDIV(RNGX_FSQRT(v), a->bias_correction2_sqrt), a->eps);
  return RNGX_FADD(p, RNGX_FDIV(RNGX_FMUL(a->neg_step_size, m), denom));
}

/* out[i - begin] = the updated weight i in float32, for i in [begin, end), on the CPU. */
void rngx_adam_update(const rngx_adam *a, int64_t begin, int64_t end, float *out);

#ifdef __cplusplus
}
#endif

#endif
