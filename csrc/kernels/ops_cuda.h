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

/* `state`: a device pointer to [seed, offset], read by the kernel when it runs (so a CUDA graph replay sees
 * the current values), or NULL to use job->seed and job->offset, fixed at launch.
 * `stream`: the cudaStream_t to launch on. Each returns a cudaError_t as int: 0 on success. */
int rngx_cuda_bits(const rngx_job *job, const int64_t *state, void *stream);
int rngx_cuda_uniform(const rngx_job *job, const int64_t *state, void *stream, double low, double high);
int rngx_cuda_quantize_noise(const rngx_job *job, const int64_t *state, void *stream, double half);
int rngx_cuda_dropout(const rngx_job *job, const int64_t *state, void *stream, double p);

#ifdef __cplusplus
}
#endif

#endif
