/* A job: what one op call fills over raw pointers, its operands and which key each element uses, and its set-up on
 * the host (job.c; walk.c: a segment's key), shared by the C and CUDA kernels (kernels.h, kernels_cuda.h). Each
 * kernel call fills the logical elements [begin, end) of one output, so callers may split a tensor into any
 * chunks, on any threads, and get the same bits. */
#ifndef RNGX_JOB_H
#define RNGX_JOB_H

#include <stdint.h>

#include "elements.h"

#ifdef __cplusplus
extern "C" {
#endif

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
  rngx_dtype dtype;      /* of out, and of the inputs the op reads (stochastic_round reads x in rngx_params.from) */
  int ndim;              /* <= RNGX_MAX_DIMS */
  const int64_t *sizes;  /* the logical shape, shared by out and the inputs */
  rngx_operand out, in;
  rngx_operand in2;      /* an op's second input (normal_tensor's std) */
} rngx_job;

/* The job's dims with size-1 dims dropped and each dim merged into its inner neighbour where, for both
 * operands, stepping the outer dim is the same as running on along the inner one. Merging keeps row-major order,
 * so logical indices are unchanged. At least one dim (a 0-dim job: one dim of size 1); the last is the row. The
 * C and CUDA walks both start from this. */
typedef struct {
  int nd;
  int64_t size[RNGX_MAX_DIMS];
  int64_t so[RNGX_MAX_DIMS], si[RNGX_MAX_DIMS]; /* out and in strides, in elements; si is 0 without an input */
  int64_t si2[RNGX_MAX_DIMS];                   /* in2's, 0 without a second input */
} rngx_layout;

/* reads: the inputs the op reads, 0, 1 (in) or 2 (in and in2). */
void rngx_collapse(const rngx_job *job, int reads, rngx_layout *l);

/* Makes `keys` (set up for the global tensor's batch dims: key_dims, key_strides, pairs) describe the block of
 * `sizes` at global_start inside a tensor of global_shape, so each element gets the words its global index has
 * there. pos_strides (ndim entries) must outlive the keys. */
void rngx_global_view(rngx_keys *keys, int ndim, const int64_t *sizes, const int64_t *global_shape,
                      const int64_t *global_start, int64_t *pos_strides);

/* The key of segment q (logical elements [q * event, (q + 1) * event)) and the stream position of its first
 * element. */
void rngx_key_of_segment(const rngx_job *job, int64_t q, uint64_t *seed, uint64_t *offset, uint64_t *pos);

/* Bytes per element of a dtype. */
static inline int64_t rngx_dtype_size(rngx_dtype dtype) {
  switch (dtype) {
    case RNGX_BITS8: case RNGX_FLOAT8_E4M3FN: case RNGX_FLOAT8_E5M2: return 1;
    case RNGX_FLOAT16: case RNGX_BFLOAT16: case RNGX_BITS16: return 2;
    case RNGX_FLOAT32: case RNGX_BITS32: return 4;
    default: return 8;
  }
}

#ifdef __cplusplus
}
#endif

#endif
