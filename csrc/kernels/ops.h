/* The per-op CPU loops over raw pointers. Each call fills the logical elements [begin, end) of one output,
 * so callers may split a tensor into any chunks, on any threads, and get the same bits. */
#ifndef RNGX_OPS_H
#define RNGX_OPS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { RNGX_FLOAT16, RNGX_BFLOAT16, RNGX_FLOAT32, RNGX_FLOAT64, RNGX_INT64 } rngx_dtype;

#define RNGX_MAX_DIMS 64

typedef struct {
  void *data;             /* the element at logical index 0 */
  const int64_t *strides; /* in elements, one per dim */
} rngx_operand;

typedef struct {
  uint64_t seed, offset; /* the state, read as unsigned */
  rngx_dtype dtype;      /* of out, and of in where the op reads one */
  int ndim;              /* <= RNGX_MAX_DIMS */
  const int64_t *sizes;  /* the logical shape, shared by out and in */
  rngx_operand out, in;
} rngx_job;

/* Words each element takes from the stream: 2 for float64, else 1 (bits: one word per int64). */
int rngx_words_per_element(rngx_dtype dtype);

void rngx_bits(const rngx_job *job, int64_t begin, int64_t end); /* out: int64 */
void rngx_uniform(const rngx_job *job, double low, double high, int64_t begin, int64_t end);
void rngx_quantize_noise(const rngx_job *job, double half, int64_t begin, int64_t end);
/* Also the backward: dropout's gradient is dropout of the incoming gradient with the same state. */
void rngx_dropout(const rngx_job *job, double p, int64_t begin, int64_t end);

#ifdef __cplusplus
}
#endif

#endif
