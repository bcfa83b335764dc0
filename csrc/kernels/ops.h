/* The ops' C interface over raw pointers: jobs and keys, the layout and key lookups (walk.c, job.c), the
 * parameter derivation (params.c) and the per-op CPU loops (loops.c). Each op call fills the logical elements
 * [begin, end) of one output, so callers may split a tensor into any chunks, on any threads, and get the same bits. */
#ifndef RNGX_OPS_H
#define RNGX_OPS_H

#include <stdint.h>

#include "dists.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The float types the ops compute in, and the integer widths `bits` writes (signedness does not change bits). */
typedef enum {
  RNGX_FLOAT16, RNGX_BFLOAT16, RNGX_FLOAT32, RNGX_FLOAT64,
  RNGX_BITS8, RNGX_BITS16, RNGX_BITS32, RNGX_BITS64
} rngx_dtype;

#define RNGX_MAX_DIMS 64

typedef struct {
  void *data;             /* the element at logical index 0 */
  const int64_t *strides; /* in elements, one per dim */
} rngx_operand;

/* Which key each element uses, and its position in that key's stream (docs/stream.md, "Batched states" and
 * "Global view"). The output's first key_dims dims pick the key. The first max(key_dims, seg_dims) dims index
 * segments: runs of `event` elements, in logical order, at consecutive positions of one key's stream. Without a
 * global view seg_dims is 0 and each key's segment starts at position 0. A global view (the output is one block
 * of a larger tensor) starts segment (i_0, ..) at first + sum over its non-key dims of i_d * pos_strides[d]. */
typedef struct {
  const int64_t *pairs;       /* [seed, offset] pairs, offsets in Philox blocks; NULL: the single key below */
  uint64_t seed, offset;      /* the key when pairs is NULL */
  int key_dims;               /* 0: one key for the whole tensor */
  const int64_t *key_strides; /* per key dim, in int64 elements of pairs; 0 where the state broadcasts */
  int seg_dims;               /* global view: dims that index segments; 0 otherwise */
  const int64_t *pos_strides; /* per dim < seg_dims: stream positions between neighbours (unused for key dims) */
  uint64_t first;             /* the stream position of element 0 */
  int64_t event;              /* elements per segment: the product of sizes[max(key_dims, seg_dims):] (>= 1) */
} rngx_keys;

typedef struct {
  rngx_keys keys;
  rngx_dtype dtype;      /* of out, and of in where the op reads one */
  int ndim;              /* <= RNGX_MAX_DIMS */
  const int64_t *sizes;  /* the logical shape, shared by out and in */
  rngx_operand out, in;
} rngx_job;

/* The job's dims with size-1 dims dropped and each dim merged into its inner neighbour where, for both
 * operands, stepping the outer dim is the same as running on along the inner one. Merging keeps row-major order,
 * so logical indices are unchanged. At least one dim (a 0-dim job: one dim of size 1); the last is the row. The
 * C and CUDA walks both start from this. */
typedef struct {
  int nd;
  int64_t size[RNGX_MAX_DIMS];
  int64_t so[RNGX_MAX_DIMS], si[RNGX_MAX_DIMS]; /* out and in strides, in elements; si is 0 without an input */
} rngx_layout;

void rngx_collapse(const rngx_job *job, int reads_input, rngx_layout *l);

/* Makes `keys` (set up for the global tensor's batch dims: key_dims, key_strides, pairs) describe the block of
 * `sizes` at global_start inside a tensor of global_shape, so each element gets the words its global index has
 * there. pos_strides (ndim entries) must outlive the keys. */
void rngx_global_view(rngx_keys *keys, int ndim, const int64_t *sizes, const int64_t *global_shape,
                      const int64_t *global_start, int64_t *pos_strides);

/* Words each element takes from its key's stream: 2 for float64 and 64-bit bits, else 1. */
int rngx_words_per_element(rngx_dtype dtype);

/* The key of segment q (logical elements [q * event, (q + 1) * event)) and the stream position of its first
 * element. */
void rngx_key_of_segment(const rngx_job *job, int64_t q, uint64_t *seed, uint64_t *offset, uint64_t *pos);

/* The numbers an op's loop reads, derived once from its arguments (docs/stream.md) by the functions below, for
 * the C and the CUDA kernels alike: both then compute the same bits. */
typedef struct {
  float lo, width, scale; /* <= 32-bit types: lo + u * width (uniform, noise); x * scale (dropout) */
  double lo64, width64, scale64;
  uint32_t keep; /* dropout keeps iff the integer behind u is >= keep, i.e. iff u >= p, exactly */
  uint64_t keep64;
  float mean, std;        /* normal, <= 32-bit types: fl32(z) * std + mean in float32 */
  double mean64, std64;   /* normal, float64 */
  rngx_tn tn;             /* truncated normal, in double */
  float tn_lo, tn_hi;     /* truncated normal, <= 32-bit types: the dtype's values nearest inside [a, b] */
  uint64_t low, range;    /* randint: low + floor(range * x / 2^bits), modulo 2^64 */
  double rate;            /* exponential: E / rate in double */
} rngx_params;

/* v rounded to a float dtype (through float32 for the 16-bit ones, as torch converts a double), as float32. */
float rngx_round_to(rngx_dtype dtype, double v);
rngx_params rngx_uniform_params(rngx_dtype dtype, double low, double high);
rngx_params rngx_noise_params(double half);
rngx_params rngx_dropout_params(double p);
rngx_params rngx_normal_params(double mean, double std);
/* a < b finite, std > 0 (the glue checks). Returns 0, or -1 when no value of dtype lies in [a, b]. */
int rngx_truncnorm_params(rngx_dtype dtype, double mean, double std, double a, double b, rngx_params *out);
/* low + [0, range): the low bits of low + floor(range * x / 2^bits), x of 2 words (64 bits) for range <= 2^32, else 4
 * (128 bits, int64 only); range >= 1 (<= 2^32 for <= 32-bit types). */
rngx_params rngx_randint_params(int64_t low, uint64_t range);

/* rate finite and > 0 (the glue checks). */
rngx_params rngx_exponential_params(double rate);

/* Words per element of the ops that take more than rngx_words_per_element (docs/stream.md). */
int rngx_normal_words(rngx_dtype dtype);   /* 1, float64 2: a pair of elements per 2 (4) words */
int rngx_truncnorm_words(rngx_dtype dtype); /* 2 */
/* randint: 2 for a range up to RNGX_RANDINT_NARROW = 2^32 (every 8-, 16- and 32-bit range), 4 for int64 above it. */
#define RNGX_RANDINT_NARROW 0x100000000ull
int rngx_randint_words(rngx_dtype dtype, uint64_t range);
/* Phi(x), the standard normal CDF, with the project's own exp (for the truncated normal's bounds). */
double rngx_normal_cdf(double x);

void rngx_bits(const rngx_job *job, int64_t begin, int64_t end); /* out: 8/16/32/64-bit integers */
void rngx_uniform(const rngx_job *job, const rngx_params *p, int64_t begin, int64_t end);
void rngx_quantize_noise(const rngx_job *job, const rngx_params *p, int64_t begin, int64_t end);
/* Also the backward: dropout's gradient is dropout of the incoming gradient with the same state. */
void rngx_dropout(const rngx_job *job, const rngx_params *p, int64_t begin, int64_t end);
/* out: float dtypes. */
void rngx_normal(const rngx_job *job, const rngx_params *p, int64_t begin, int64_t end);
void rngx_truncnorm(const rngx_job *job, const rngx_params *p, int64_t begin, int64_t end);
/* out: float dtypes, 1 iff u < p. in == NULL: p is params->keep (keep64), as dropout's; else in holds p per
 * element, in out's dtype. */
void rngx_bernoulli(const rngx_job *job, const rngx_params *p, int64_t begin, int64_t end);
/* out: 8/16/32/64-bit integers (job->dtype RNGX_BITS*). */
void rngx_randint(const rngx_job *job, const rngx_params *p, int64_t begin, int64_t end);

/* out: float dtypes, E / rate with E = -ln u (docs/stream.md, "exponential"), always positive and finite. */
void rngx_exponential(const rngx_job *job, const rngx_params *p, int64_t begin, int64_t end);
/* multinomial's race (docs/stream.md, "multinomial"): out and in float64, out = E / in with E the float64
 * exponential of the element's two words; +inf where in <= 0 or NaN. */
void rngx_race(const rngx_job *job, int64_t begin, int64_t end);

/* Key derivation (docs/stream.md, "split and fold_in"): the child of key (s, o) for index d is
 * (r0 | r1 << 32, r2 | r3 << 32) with r = block(s, o + d). `keys` are n contiguous [seed, offset] pairs.
 * split: out[(i * n + b) * 2 ...] = child(keys[b], i) for i < num. fold_in: out[b] = child(keys[b], data[b * data_stride]). */
void rngx_split(const int64_t *keys, int64_t n, int64_t num, int64_t *out);
void rngx_fold_in(const int64_t *keys, int64_t n, const int64_t *data, int64_t data_stride, int64_t *out);

#ifdef __cplusplus
}
#endif

#endif
