/* CUDA launchers for the rngx ops (csrc/kernels/ops_cuda.cu): the same jobs as ops.h, the same bits.
 *
 * A plain C interface, so the glue needs neither CUDA nor torch headers to call it. In `job`, sizes and
 * strides are host arrays and the data pointers are device pointers. */
#ifndef RNGX_OPS_CUDA_H
#define RNGX_OPS_CUDA_H

#include <stdint.h>

#include "ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* job->keys.pairs is a device pointer to the state, read by the kernel when it runs (so a CUDA graph replay sees
 * the current values), or NULL to use job->keys.seed and offset, fixed at launch.
 * `stream`: the cudaStream_t to launch on. Each returns a cudaError_t as int: 0 on success. */
int rngx_cuda_bits(const rngx_job *job, void *stream);
int rngx_cuda_uniform(const rngx_job *job, void *stream, const rngx_params *p);
int rngx_cuda_quantize_noise(const rngx_job *job, void *stream, const rngx_params *p);
int rngx_cuda_dropout(const rngx_job *job, void *stream, const rngx_params *p);
int rngx_cuda_normal(const rngx_job *job, void *stream, const rngx_params *p);
int rngx_cuda_truncnorm(const rngx_job *job, void *stream, const rngx_params *p);
/* job->in.data non-NULL: p per element (in out's dtype); else p->keep / keep64, as rngx_bernoulli. */
int rngx_cuda_bernoulli(const rngx_job *job, void *stream, const rngx_params *p);
int rngx_cuda_randint(const rngx_job *job, void *stream, const rngx_params *p);
int rngx_cuda_exponential(const rngx_job *job, void *stream, const rngx_params *p);
/* job->in.data: the float64 weights, read per element (stride 0 across draws). */
int rngx_cuda_race(const rngx_job *job, void *stream);
/* rngx_split and rngx_fold_in (ops.h) on device pointers. */
int rngx_cuda_split(const int64_t *keys, int64_t n, int64_t num, int64_t *out, void *stream);
int rngx_cuda_fold_in(const int64_t *keys, int64_t n, const int64_t *data, int64_t data_stride, int64_t *out,
                      void *stream);

#ifdef __cplusplus
}
#endif

#endif
