#include "ops.h"

#include <math.h>

#include "convert.h"
#include "stream.h"

/* Elements per inner batch: the words, positions and floats of one batch stay in L1. */
#define RNGX_BATCH 256

int rngx_words_per_element(rngx_dtype dtype) { return dtype == RNGX_FLOAT64 ? 2 : 1; }

static int is_row_major(const rngx_job *job, const int64_t *strides) {
  int64_t expected = 1;
  for (int d = job->ndim - 1; d >= 0; --d) {
    if (job->sizes[d] != 1 && strides[d] != expected) return 0;
    expected *= job->sizes[d];
  }
  return 1;
}

/* pos[j] = memory offset of logical element i0 + j. One div/mod per dim per batch; then an odometer that
 * walks the innermost dim as a run. */
static void positions(const rngx_job *job, const int64_t *strides, int64_t i0, int64_t n, int64_t *pos) {
  const int nd = job->ndim;
  const int64_t *sizes = job->sizes;
  int64_t idx[RNGX_MAX_DIMS], off = 0, rest = i0;
  for (int d = nd - 1; d >= 0; --d) {
    idx[d] = rest % sizes[d];
    rest /= sizes[d];
    off += idx[d] * strides[d];
  }
  const int64_t inner = sizes[nd - 1], step = strides[nd - 1];
  for (int64_t j = 0; j < n;) {
    const int64_t run = inner - idx[nd - 1] < n - j ? inner - idx[nd - 1] : n - j;
    for (int64_t r = 0; r < run; ++r) pos[j++] = off + r * step;
    off += run * step;
    idx[nd - 1] += run;
    for (int d = nd - 1; d > 0 && idx[d] == sizes[d]; --d) {
      off += strides[d - 1] - sizes[d] * strides[d];
      idx[d] = 0;
      ++idx[d - 1];
    }
  }
}

/* A batch's view of one operand: where each element lives. Row-major operands skip the table. */
typedef struct {
  int row_major;
  int64_t pos[RNGX_BATCH];
} rngx_where;

static void locate(const rngx_job *job, const int64_t *strides, int row_major, int64_t i0, int64_t n, rngx_where *w) {
  w->row_major = row_major;
  if (!row_major) positions(job, strides, i0, n, w->pos);
}

#define AT(w, i0, j) ((w)->row_major ? (i0) + (j) : (w)->pos[j])

static void load_f32(rngx_dtype dt, const void *data, const rngx_where *w, int64_t i0, int64_t n, float *v) {
  if (dt == RNGX_FLOAT32) {
    for (int64_t j = 0; j < n; ++j) v[j] = ((const float *)data)[AT(w, i0, j)];
  } else if (dt == RNGX_FLOAT16) {
    for (int64_t j = 0; j < n; ++j) v[j] = rngx_f16_to_f32(((const uint16_t *)data)[AT(w, i0, j)]);
  } else {
    for (int64_t j = 0; j < n; ++j) v[j] = rngx_bf16_to_f32(((const uint16_t *)data)[AT(w, i0, j)]);
  }
}

static void store_f32(rngx_dtype dt, void *data, const rngx_where *w, int64_t i0, int64_t n, const float *v) {
  if (dt == RNGX_FLOAT32) {
    for (int64_t j = 0; j < n; ++j) ((float *)data)[AT(w, i0, j)] = v[j];
  } else if (dt == RNGX_FLOAT16) {
    for (int64_t j = 0; j < n; ++j) ((uint16_t *)data)[AT(w, i0, j)] = rngx_f32_to_f16(v[j]);
  } else {
    for (int64_t j = 0; j < n; ++j) ((uint16_t *)data)[AT(w, i0, j)] = rngx_f32_to_bf16(v[j]);
  }
}

/* Shared batch walk: fills words, locates out (and in), then lets the op's batch function do the math. */
typedef struct {
  const uint32_t *words;
  const rngx_where *out, *in;
  int64_t i0, n;
} rngx_batch;

typedef void (*rngx_batch_fn)(const rngx_job *job, const rngx_batch *b, const void *params);

static void run_batches(const rngx_job *job, int reads_input, int64_t begin, int64_t end, rngx_batch_fn fn,
                        const void *params) {
  uint32_t words[2 * RNGX_BATCH];
  rngx_where out, in;
  const int k = rngx_words_per_element(job->dtype);
  const int out_rm = is_row_major(job, job->out.strides);
  const int in_rm = reads_input && is_row_major(job, job->in.strides);
  for (int64_t i0 = begin; i0 < end; i0 += RNGX_BATCH) {
    const int64_t n = end - i0 < RNGX_BATCH ? end - i0 : RNGX_BATCH;
    rngx_fill_words(job->seed, job->offset + (uint64_t)k * (uint64_t)i0, k * n, words);
    locate(job, job->out.strides, out_rm, i0, n, &out);
    if (reads_input) locate(job, job->in.strides, in_rm, i0, n, &in);
    const rngx_batch b = {words, &out, &in, i0, n};
    fn(job, &b, params);
  }
}

/* ---- bits ---- */

static void bits_batch(const rngx_job *job, const rngx_batch *b, const void *params) {
  (void)params;
  int64_t *out = (int64_t *)job->out.data;
  for (int64_t j = 0; j < b->n; ++j) out[AT(b->out, b->i0, j)] = (int64_t)b->words[j];
}

void rngx_bits(const rngx_job *job, int64_t begin, int64_t end) { run_batches(job, 0, begin, end, bits_batch, 0); }

/* ---- uniform: low + u * (high - low), multiply and add each rounded ---- */

typedef struct { double low, high; } uniform_params;

static void uniform_batch(const rngx_job *job, const rngx_batch *b, const void *params) {
  const uniform_params *q = (const uniform_params *)params;
  const uint32_t *w = b->words;
  if (job->dtype == RNGX_FLOAT64) {
    const double lo = q->low, width = q->high - q->low;
    double *out = (double *)job->out.data;
    for (int64_t j = 0; j < b->n; ++j) out[AT(b->out, b->i0, j)] = lo + rngx_u53(w[2 * j], w[2 * j + 1]) * width;
    return;
  }
  const float lo = (float)q->low, width = (float)(q->high - q->low);
  float v[RNGX_BATCH];
  if (job->dtype == RNGX_FLOAT32) {
    for (int64_t j = 0; j < b->n; ++j) v[j] = lo + rngx_u24(w[j]) * width;
  } else if (job->dtype == RNGX_FLOAT16) {
    for (int64_t j = 0; j < b->n; ++j) v[j] = lo + rngx_u11(w[j]) * width;
  } else {
    for (int64_t j = 0; j < b->n; ++j) v[j] = lo + rngx_u8(w[j]) * width;
  }
  store_f32(job->dtype, job->out.data, b->out, b->i0, b->n, v);
}

void rngx_uniform(const rngx_job *job, double low, double high, int64_t begin, int64_t end) {
  const uniform_params q = {low, high};
  run_batches(job, 0, begin, end, uniform_batch, &q);
}

/* ---- quantize_noise: x + (-half + u * 2 half), in float32 for <= 32-bit types ---- */

static void noise_batch(const rngx_job *job, const rngx_batch *b, const void *params) {
  const double half = *(const double *)params;
  const uint32_t *w = b->words;
  if (job->dtype == RNGX_FLOAT64) {
    const double *x = (const double *)job->in.data;
    double *out = (double *)job->out.data;
    for (int64_t j = 0; j < b->n; ++j)
      out[AT(b->out, b->i0, j)] = x[AT(b->in, b->i0, j)] + (-half + rngx_u53(w[2 * j], w[2 * j + 1]) * (2 * half));
    return;
  }
  const float lo = (float)-half, width = (float)(2 * half);
  float v[RNGX_BATCH];
  load_f32(job->dtype, job->in.data, b->in, b->i0, b->n, v);
  for (int64_t j = 0; j < b->n; ++j) v[j] = v[j] + (lo + rngx_u24(w[j]) * width);
  store_f32(job->dtype, job->out.data, b->out, b->i0, b->n, v);
}

void rngx_quantize_noise(const rngx_job *job, double half, int64_t begin, int64_t end) {
  run_batches(job, 1, begin, end, noise_batch, &half);
}

/* ---- dropout: keep iff u >= p, i.e. iff the integer m behind u is >= ceil(p * 2^bits) (exact) ---- */

static void dropout_batch(const rngx_job *job, const rngx_batch *b, const void *params) {
  const double p = *(const double *)params, scale = 1.0 / (1.0 - p);
  const uint32_t *w = b->words;
  if (job->dtype == RNGX_FLOAT64) {
    const uint64_t keep_from = (uint64_t)ceil(p * 0x1p53);
    const double *x = (const double *)job->in.data;
    double *out = (double *)job->out.data;
    for (int64_t j = 0; j < b->n; ++j)
      out[AT(b->out, b->i0, j)] = rngx_m53(w[2 * j], w[2 * j + 1]) >= keep_from ? x[AT(b->in, b->i0, j)] * scale : 0.0;
    return;
  }
  const uint32_t keep_from = (uint32_t)ceil(p * 0x1p24);
  const float scale32 = (float)scale;
  float v[RNGX_BATCH];
  load_f32(job->dtype, job->in.data, b->in, b->i0, b->n, v);
  for (int64_t j = 0; j < b->n; ++j) v[j] = (w[j] & RNGX_U24_MASK) >= keep_from ? v[j] * scale32 : 0.0f;
  store_f32(job->dtype, job->out.data, b->out, b->i0, b->n, v);
}

void rngx_dropout(const rngx_job *job, double p, int64_t begin, int64_t end) {
  run_batches(job, 1, begin, end, dropout_batch, &p);
}
