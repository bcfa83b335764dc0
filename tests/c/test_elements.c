/* The installed header (torch_rngx/include, reached as <torch_rngx/elements.h>) gives each element the bits the
 * ops' kernels give it: uniform, quantize_noise, dropout, bernoulli and normal in every float dtype, with keys at
 * the 2^32 carry and the 2^64 wrap, element by element against a whole-tensor kernel call. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <torch_rngx/elements.h>

#include "check.h"
#include "kernels/kernels.h"

enum { N = 1001 };
typedef enum { UNIFORM, NOISE, DROPOUT, BERNOULLI, NORMAL } op_kind;
static const char *const OP_NAMES[] = {"uniform", "quantize_noise", "dropout", "bernoulli", "normal"};
static const rngx_dtype DTYPES[] = {RNGX_FLOAT16, RNGX_BFLOAT16, RNGX_FLOAT32, RNGX_FLOAT64};
static const uint64_t KEYS[][2] = {
    {0, 0}, {123, (1ull << 32) - 3}, {0 - 1ull, 0 - 2ull}, {0xDEADBEEF01234567ull, 0 - 1ull}};

static float in_f32(rngx_dtype dt, const void *x, int64_t j) {
  if (dt == RNGX_FLOAT32) return ((const float *)x)[j];
  const uint16_t h = ((const uint16_t *)x)[j];
  return dt == RNGX_FLOAT16 ? rngx_f16_to_f32(h) : rngx_bf16_to_f32(h);
}

/* A float32 result stored in the element's dtype, as its bit pattern. */
static uint64_t store_bits(rngx_dtype dt, float v) {
  return dt == RNGX_FLOAT16 ? rngx_f32_to_f16(v) : dt == RNGX_BFLOAT16 ? rngx_f32_to_bf16(v) : rngx_f32_bits(v);
}

/* Element j through the header alone, as the bit pattern of its dtype. */
static uint64_t element(op_kind op, rngx_dtype dt, const rngx_params *p, uint64_t seed, uint64_t offset, int64_t j,
                        const void *x) {
  uint32_t w[4];
  const int f64 = dt == RNGX_FLOAT64;
  if (op == NORMAL) rngx_element_words(seed, offset, (uint64_t)j / 2, f64 ? 4 : 2, w); /* the pair's words */
  else rngx_element_words(seed, offset, (uint64_t)j, f64 ? 2 : 1, w);
  const double x64 = f64 ? ((const double *)x)[j] : 0.0;
  switch (op) {
    case UNIFORM:
      if (f64) return rngx_f64_bits(rngx_uniform_f64(w[0], w[1], p->lo64, p->width64));
      if (dt == RNGX_FLOAT16) return rngx_uniform_f16(w[0], p->lo, p->width);
      if (dt == RNGX_BFLOAT16) return rngx_uniform_bf16(w[0], p->lo, p->width);
      return rngx_f32_bits(rngx_uniform_f32(w[0], p->lo, p->width));
    case NOISE:
      if (f64) return rngx_f64_bits(rngx_noise_f64(x64, w[0], w[1], p->lo64, p->width64));
      return store_bits(dt, rngx_noise_f32(in_f32(dt, x, j), w[0], p->lo, p->width));
    case DROPOUT:
      if (f64) return rngx_f64_bits(rngx_dropout_f64(x64, w[0], w[1], p->keep64, p->scale64));
      return store_bits(dt, rngx_dropout_f32(in_f32(dt, x, j), w[0], p->keep, p->scale));
    case BERNOULLI:
      if (f64) return rngx_f64_bits(rngx_kept_f64(w[0], w[1], p->keep64) ? 0.0 : 1.0);
      return store_bits(dt, rngx_kept_f32(w[0], p->keep) ? 0.0f : 1.0f);
    default:
      if (f64) return rngx_f64_bits(rngx_normal_f64(w, (int)(j & 1), p->mean64, p->std64));
      return store_bits(dt, rngx_normal_f32(w[0], w[1], (int)(j & 1), p->mean, p->std));
  }
}

static void check_op(op_kind op, rngx_dtype dt, const rngx_params *p, const uint64_t *key) {
  static double out[N], x[N];
  const int64_t sizes[1] = {N}, strides[1] = {1};
  const size_t elsize = dt == RNGX_FLOAT64 ? 8 : dt == RNGX_FLOAT32 ? 4 : 2;
  for (int64_t j = 0; j < N; ++j) { /* inputs of every sign and size, with the edge values first */
    const double v = j == 0 ? -0.0 : j == 1 ? INFINITY : j == 2 ? NAN : (double)((j * 7919) % 2003 - 1001) / 37.0;
    if (dt == RNGX_FLOAT64) x[j] = v;
    else if (dt == RNGX_FLOAT32) ((float *)x)[j] = (float)v;
    else ((uint16_t *)x)[j] = (uint16_t)store_bits(dt, (float)v);
  }
  const rngx_job job = {.keys = {.seed = key[0], .offset = key[1], .event = N}, .dtype = dt, .ndim = 1,
                        .sizes = sizes, .out = {out, strides}, .in = {x, strides}};
  if (op == UNIFORM) rngx_uniform(&job, p, 0, N);
  else if (op == NOISE) rngx_quantize_noise(&job, p, 0, N);
  else if (op == DROPOUT) rngx_dropout(&job, p, 0, N);
  else if (op == NORMAL) rngx_normal(&job, p, 0, N);
  else {
    rngx_job bern = job;
    bern.in.data = NULL; /* the scalar p: params->keep */
    rngx_bernoulli(&bern, p, 0, N);
  }
  int64_t bad = 0;
  for (int64_t j = 0; j < N; ++j) {
    uint64_t want = 0;
    memcpy(&want, (const char *)out + (size_t)j * elsize, elsize);
    bad += element(op, dt, p, key[0], key[1], j, x) != want;
  }
  CHECK_MSG(bad == 0, "    %s, dtype %d, key (%llu, %llu): %lld elements differ\n", OP_NAMES[op], (int)dt,
            (unsigned long long)key[0], (unsigned long long)key[1], (long long)bad);
}

int main(void) {
  for (size_t d = 0; d < sizeof DTYPES / sizeof *DTYPES; ++d) {
    const rngx_dtype dt = DTYPES[d];
    for (size_t k = 0; k < sizeof KEYS / sizeof *KEYS; ++k) {
      rngx_params uniform = {0}, noise = {0}, normal = {0};
      CHECK(rngx_uniform_params(dt, -3.0, 7.3, &uniform) == NULL && rngx_quantize_noise_params(dt, 0.37, &noise) == NULL &&
            rngx_normal_params(dt, 0.25, 3.0, &normal) == NULL);
      check_op(UNIFORM, dt, &uniform, KEYS[k]);
      check_op(NOISE, dt, &noise, KEYS[k]);
      check_op(NORMAL, dt, &normal, KEYS[k]);
      for (double p = 0.0; p <= 1.0; p += 0.25) {
        rngx_params drop = {0};
        CHECK(rngx_dropout_params(dt, p, &drop) == NULL);
        check_op(DROPOUT, dt, &drop, KEYS[k]);
        check_op(BERNOULLI, dt, &drop, KEYS[k]);
      }
    }
  }
  return check_summary();
}
