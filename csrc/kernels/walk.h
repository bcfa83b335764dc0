/* The CPU walk (walk.c) and the per-op loops it runs (loops.c). A loop fills one span: n elements along a row,
 * out[j * so] (and in[j * si], in2[j * si2]) from words w[k * j ...]; the walk picks the spans, their words and their order. */
#ifndef RNGX_WALK_H
#define RNGX_WALK_H

#include "job.h"

typedef struct {
  const uint32_t *w;
  int64_t n, so, si; /* strides in elements */
  void *out;
  const void *in;
  int odd; /* paired ops: the first element is its pair's second (its stream index is odd) */
  const void *in2; /* an op's second input, stride si2 */
  int64_t si2;
} rngx_span;

typedef struct rngx_op rngx_op;
typedef void (*rngx_loop_fn)(const rngx_op *op, const rngx_span *r);

struct rngx_op {
  rngx_loop_fn loop;
  int reads_input;     /* the inputs its loop reads: 0, 1 or 2 */
  rngx_dtype in_dtype; /* the inputs', where the op reads any: the output's but for stochastic_round */
  int k; /* words per element (its row's, csrc/kernels/op_table.h) */
  int paired; /* elements 2p and 2p + 1 of a key's stream come from the words of both (normal) */
  rngx_params p;
};

/* Runs op's loop over the logical elements [begin, end) of job's output. */
void rngx_execute(const rngx_job *job, const rngx_op *op, int64_t begin, int64_t end);

#endif
