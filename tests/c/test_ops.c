/* Every kernel of ops.h against a per-element reference written here from the stream contract (issue 2,
 * "The stream"; docs/stream.md), using only rngx_word: element i of a call with state [seed, offset] takes
 * words offset + k*i ... offset + k*i + k - 1, k = 2 for float64 and 1 otherwise, whatever its memory position.
 *
 * Each case runs on contiguous, channels_last, transposed and sliced-with-gaps buffers (inputs also expanded,
 * stride 0), at unaligned and wrapping offsets, and also split into chunks. Buffers are allocated to their
 * exact span and pre-filled with a sentinel, so a write to a gap shows here and one past the end under ASan. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kernels/convert.h"
#include "kernels/ops.h"

typedef enum { OP_BITS, OP_UNIFORM, OP_NOISE, OP_DROPOUT } op_kind;
typedef struct { op_kind op; double a, b; } op_call; /* uniform: low, high; noise: half; dropout: p */

enum { NDIM = 4 };
typedef struct { const char *name; int64_t strides[NDIM], start, span; } layout;

static const rngx_dtype FLOAT_DTYPES[] = {RNGX_FLOAT16, RNGX_BFLOAT16, RNGX_FLOAT32, RNGX_FLOAT64};
static const char *const DTYPE_NAMES[] = {"float16", "bfloat16", "float32", "float64", "int64"};
static const uint8_t SENTINEL = 0xA5;

static size_t elsize(rngx_dtype dt) { return dt == RNGX_FLOAT16 || dt == RNGX_BFLOAT16 ? 2 : dt == RNGX_FLOAT32 ? 4 : 8; }

static uint64_t rng_state = 0x5DEECE66Dull;
static uint64_t next_u64(void) { /* xorshift64 */
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  return rng_state ^= rng_state << 17;
}

/* ---- the reference: one element at a time, straight from the contract ---- */

static uint64_t load_bits(const void *buf, rngx_dtype dt, int64_t pos) {
  uint64_t b = 0; /* little-endian: the low bytes hold the element */
  memcpy(&b, (const char *)buf + (size_t)pos * elsize(dt), elsize(dt));
  return b;
}

static float half_to_float(uint16_t h) { _Float16 x; memcpy(&x, &h, 2); return (float)x; }
static uint16_t float_to_half(float f) { const _Float16 x = (_Float16)f; uint16_t h; memcpy(&h, &x, 2); return h; }

static float load_f32(rngx_dtype dt, uint64_t b) {
  if (dt == RNGX_FLOAT16) return half_to_float((uint16_t)b);
  if (dt == RNGX_BFLOAT16) return rngx_bits_f32((uint32_t)b << 16);
  return rngx_bits_f32((uint32_t)b);
}

static uint64_t store_f32(rngx_dtype dt, float v) { /* one rounding to the output type */
  if (dt == RNGX_FLOAT16) return float_to_half(v);
  if (dt == RNGX_BFLOAT16) return rngx_f32_to_bf16(v); /* checked against a double reference in test_convert */
  return rngx_f32_bits(v);
}

static uint64_t f64_bits(double d) { uint64_t b; memcpy(&b, &d, 8); return b; }
static double bits_f64(uint64_t b) { double d; memcpy(&d, &b, 8); return d; }

static uint64_t expected(const op_call *c, rngx_dtype dt, uint64_t seed, uint64_t offset, int64_t i, uint64_t xb) {
  const uint64_t n = offset + (dt == RNGX_FLOAT64 ? 2u : 1u) * (uint64_t)i; /* wraps modulo 2^64 */
  const uint32_t w0 = rngx_word(seed, n), w1 = rngx_word(seed, n + 1);
  const double u53 = (double)((((uint64_t)w1 << 32) | w0) & ((1ull << 53) - 1)) / 9007199254740992.0;
  const float u24 = (float)(w0 & 0xFFFFFFu) / 16777216.0f;
  if (c->op == OP_BITS) return w0;
  if (dt == RNGX_FLOAT64) {
    const double x = bits_f64(xb);
    if (c->op == OP_UNIFORM) return f64_bits(c->a + u53 * (c->b - c->a));
    if (c->op == OP_NOISE) return f64_bits(x + (-c->a + u53 * (2 * c->a)));
    return f64_bits(u53 >= c->a ? x * (1.0 / (1.0 - c->a)) : 0.0);
  }
  const float x = load_f32(dt, xb);
  if (c->op == OP_UNIFORM) { /* u has the output type's significand width */
    const int bits = dt == RNGX_FLOAT16 ? 11 : dt == RNGX_BFLOAT16 ? 8 : 24;
    const float u = (float)(w0 & ((1u << bits) - 1u)) / (float)(1u << bits);
    return store_f32(dt, (float)c->a + u * (float)(c->b - c->a));
  }
  if (c->op == OP_NOISE) return store_f32(dt, x + ((float)-c->a + u24 * (float)(2 * c->a)));
  return store_f32(dt, (double)u24 >= c->a ? x * (float)(1.0 / (1.0 - c->a)) : 0.0f);
}

/* ---- running the kernels ---- */

typedef struct {
  int64_t sizes[NDIM], numel;
  rngx_dtype dt, in_dt;
  const layout *out_l, *in_l;
  void *out, *in; /* whole allocations, span elements each */
} fixture;

static void run(const fixture *f, const op_call *c, uint64_t seed, uint64_t offset, void *out, int64_t begin,
                int64_t end) {
  const rngx_job job = {seed, offset, f->dt, NDIM, f->sizes,
                        {(char *)out + (size_t)f->out_l->start * elsize(f->dt), f->out_l->strides},
                        {(char *)f->in + (size_t)f->in_l->start * elsize(f->in_dt), f->in_l->strides}};
  if (c->op == OP_BITS) rngx_bits(&job, begin, end);
  else if (c->op == OP_UNIFORM) rngx_uniform(&job, c->a, c->b, begin, end);
  else if (c->op == OP_NOISE) rngx_quantize_noise(&job, c->a, begin, end);
  else rngx_dropout(&job, c->a, begin, end);
}

static int64_t pos_of(const layout *l, const int64_t *sizes, int64_t i) {
  int64_t pos = l->start;
  for (int d = NDIM - 1; d >= 0; --d) {
    pos += (i % sizes[d]) * l->strides[d];
    i /= sizes[d];
  }
  return pos;
}

/* One full call against the reference, gaps untouched, then the same call in random chunks, bit for bit. */
static void check_call(const fixture *f, const op_call *c, uint64_t seed, uint64_t offset) {
  const size_t bytes = (size_t)f->out_l->span * elsize(f->dt);
  char *chunked = malloc(bytes), *written = calloc(1, (size_t)f->out_l->span);
  memset(f->out, SENTINEL, bytes);
  memset(chunked, SENTINEL, bytes);
  run(f, c, seed, offset, f->out, 0, f->numel);
  long bad = 0;
  for (int64_t i = 0; i < f->numel; ++i) {
    const int64_t p = pos_of(f->out_l, f->sizes, i);
    const uint64_t got = load_bits(f->out, f->dt, p);
    const uint64_t want = expected(c, f->dt, seed, offset, i, load_bits(f->in, f->in_dt, pos_of(f->in_l, f->sizes, i)));
    written[p] = 1;
    if (got != want && bad++ == 0 && check_failed < CHECK_MAX_PRINTED)
      printf("op %d(%g, %g) %s out=%s in=%s seed=%llu offset=%llu: element %lld is 0x%llx, want 0x%llx\n", c->op,
             c->a, c->b, DTYPE_NAMES[f->dt], f->out_l->name, f->in_l->name, (unsigned long long)seed,
             (unsigned long long)offset, (long long)i, (unsigned long long)got, (unsigned long long)want);
  }
  CHECK(bad == 0);
  long touched_gaps = 0;
  for (int64_t p = 0; p < f->out_l->span; ++p)
    for (size_t byte = 0; !written[p] && byte < elsize(f->dt); ++byte)
      touched_gaps += ((const uint8_t *)f->out)[(size_t)p * elsize(f->dt) + byte] != SENTINEL;
  CHECK(touched_gaps == 0);
  for (int64_t begin = 0, end; begin < f->numel; begin = end) { /* chunks of 0..299: some cross a batch */
    end = begin + (int64_t)(next_u64() % 300);
    if (end > f->numel) end = f->numel;
    run(f, c, seed, offset, chunked, begin, end);
  }
  CHECK(memcmp(chunked, f->out, bytes) == 0);
  free(chunked);
  free(written);
}

static void fill_input(void *in, rngx_dtype dt, int64_t span) {
  for (int64_t p = 0; p < span; ++p) {
    const float r = (float)((int64_t)(next_u64() % 8001) - 4000) / 1000.0f; /* [-4, 4], zeros too */
    const float v = p % 97 == 0 ? -0.0f : r;
    const uint64_t b = dt == RNGX_FLOAT64 ? f64_bits(v) : store_f32(dt, v);
    memcpy((char *)in + (size_t)p * elsize(dt), &b, elsize(dt));
  }
}

static int make_layouts(const int64_t *s, layout *l) { /* s = (N, C, H, W) */
  const int64_t N = s[0], C = s[1], H = s[2], W = s[3], numel = N * C * H * W;
  const int64_t p3 = 2, p2 = 2 * W, p1 = (H + 2) * p2, p0 = (C + 1) * p1; /* padded (N, C+1, H+2, 2W) */
  l[0] = (layout){"contiguous", {C * H * W, H * W, W, 1}, 0, numel};
  l[1] = (layout){"channels_last", {H * W * C, 1, W * C, C}, 0, numel};
  l[2] = (layout){"transposed", {C * W * H, W * H, 1, H}, 0, numel};
  l[3] = (layout){"sliced", {p0, p1, p2, p3}, p1 + p2 + 1, N * p0};
  l[4] = (layout){"expanded", {H * W, 0, W, 1}, 0, N * H * W}; /* inputs only: aliases elements */
  return 4;                                                     /* output layouts; l[4] too for inputs */
}

static void check_all_layouts(void) {
  /* Rows shorter and longer than the kernels' batches and tiles, and more rows than one tile of rows; the
   * large shape runs fewer seeds and offsets to stay quick. */
  static const int64_t shapes[][NDIM] = {{2, 5, 6, 7}, {1, 3, 1, 300}, {1, 18, 1, 261}};
  const op_call calls[] = {{OP_UNIFORM, 0, 1},      {OP_UNIFORM, -0.5, 0.5}, {OP_UNIFORM, -3, 7.25},
                           {OP_UNIFORM, 2, 2},      {OP_NOISE, 0.5, 0},      {OP_NOISE, 3, 0},
                           {OP_DROPOUT, 0.3, 0},    {OP_DROPOUT, 0.5, 0},    {OP_DROPOUT, 1, 0}};
  enum { N_OFFSETS = 7, N_PAIRS = 2 * N_OFFSETS };
  const uint64_t seeds[2] = {0, 0xFEDCBA9876543210ull};
  const uint64_t offsets[N_OFFSETS] = {0, 1, 2, 3, 5, (4ull << 32) - 3, 0 - 7ull}; /* unaligned, carry, wrap */
  const size_t first_pair[] = {0, 0, N_PAIRS - 2}; /* per shape: which (seed, offset) pairs run */
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s) {
    layout l[5];
    const int n_out = make_layouts(shapes[s], l);
    fixture f = {{shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3]}, 0, 0, 0, 0, 0, 0, 0};
    f.numel = f.sizes[0] * f.sizes[1] * f.sizes[2] * f.sizes[3];
    for (size_t d = 0; d < 5; ++d) {
      const int bits = d == 4;
      f.dt = f.in_dt = bits ? RNGX_INT64 : FLOAT_DTYPES[d];
      for (int lo = 0; lo < n_out; ++lo)
        for (int li = 0; li <= n_out; ++li) {
          if (bits && li > 0) continue; /* bits reads no input */
          f.out_l = &l[lo];
          f.in_l = &l[li];
          f.out = malloc((size_t)f.out_l->span * elsize(f.dt));
          f.in = malloc((size_t)f.in_l->span * elsize(f.in_dt));
          fill_input(f.in, f.in_dt, f.in_l->span);
          for (size_t c = 0; c < (bits ? 1 : sizeof calls / sizeof calls[0]); ++c)
            for (size_t pair = first_pair[s]; pair < N_PAIRS; ++pair) {
              const op_call bits_call = {OP_BITS, 0, 0};
              check_call(&f, bits ? &bits_call : &calls[c], seeds[pair / N_OFFSETS], offsets[pair % N_OFFSETS]);
            }
          free(f.out);
          free(f.in);
        }
    }
  }
}

/* The rules that need no reference: dropout p=0 copies, p=1 zeroes, u == p keeps; noise with half=0 is x. */
static void check_special_params(void) {
  enum { N = 600 };
  const int64_t sizes[1] = {N}, stride[1] = {1};
  for (size_t d = 0; d < 4; ++d) {
    const rngx_dtype dt = FLOAT_DTYPES[d];
    const size_t es = elsize(dt);
    char *x = malloc(N * es), *out = malloc(N * es);
    fill_input(x, dt, N);
    rngx_job job = {42, 3, dt, 1, sizes, {out, stride}, {x, stride}};
    rngx_dropout(&job, 0.0, 0, N);
    CHECK(memcmp(out, x, N * es) == 0);
    rngx_dropout(&job, 1.0, 0, N);
    long nonzero = 0;
    for (int64_t i = 0; i < N; ++i) nonzero += load_bits(out, dt, i) != 0;
    CHECK(nonzero == 0);
    rngx_quantize_noise(&job, 0.0, 0, N);
    long differ = 0; /* numerically equal: -0 + (+0) is +0 in IEEE arithmetic */
    for (int64_t i = 0; i < N; ++i)
      differ += dt == RNGX_FLOAT64 ? bits_f64(load_bits(out, dt, i)) != bits_f64(load_bits(x, dt, i))
                                   : load_f32(dt, load_bits(out, dt, i)) != load_f32(dt, load_bits(x, dt, i));
    CHECK(differ == 0);
    /* p equal to element 5's own u: kept (u >= p), and an infinitesimally larger p drops it. */
    const uint64_t n = 3 + (dt == RNGX_FLOAT64 ? 2u : 1u) * 5;
    const uint32_t w0 = rngx_word(42, n), w1 = rngx_word(42, n + 1);
    const double u = dt == RNGX_FLOAT64 ? rngx_u53(w0, w1) : rngx_u24(w0);
    const uint64_t one = dt == RNGX_FLOAT64 ? f64_bits(1.0) : store_f32(dt, 1.0f);
    memcpy(x + 5 * es, &one, es);
    rngx_dropout(&job, u, 5, 6);
    CHECK(load_bits(out, dt, 5) != 0);
    rngx_dropout(&job, nextafter(u, 2.0), 5, 6);
    CHECK(load_bits(out, dt, 5) == 0);
    free(x);
    free(out);
  }
}

/* 0-dim tensors (one element, no sizes) and empty calls. */
static void check_degenerate(void) {
  for (size_t d = 0; d < 4; ++d) {
    const rngx_dtype dt = FLOAT_DTYPES[d];
    uint64_t out = 0, x = dt == RNGX_FLOAT64 ? f64_bits(1.5) : store_f32(dt, 1.5f);
    const rngx_job job = {9, 11, dt, 0, NULL, {&out, NULL}, {&x, NULL}};
    const op_call c = {OP_NOISE, 0.5, 0};
    rngx_quantize_noise(&job, 0.5, 0, 1);
    CHECK(out == expected(&c, dt, 9, 11, 0, x));
    out = 0x1234;
    rngx_uniform(&job, 0, 1, 0, 0);
    rngx_dropout(&job, 0.5, 0, 0);
    CHECK(out == 0x1234);
  }
}

int main(void) {
  check_all_layouts();
  check_special_params();
  check_degenerate();
  return check_summary();
}
