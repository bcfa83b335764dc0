/* The CUDA launchers of the op table's kernels (kernels_cuda.cu): the same jobs as kernels.h's CPU kernels, the
 * same bits, declared from the op table (op_table.h).
 *
 * A plain C interface, so the glue needs neither CUDA nor torch headers to call it. In `job`, sizes and
 * strides are host arrays and the data pointers are device pointers. */
#ifndef RNGX_OPS_CUDA_H
#define RNGX_OPS_CUDA_H

#include <stdint.h>

#include "adam.h"
#include "kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* job->keys.pairs is a device pointer to the state, read by the kernel when it runs (so a CUDA graph replay sees
 * the current values), or NULL to use job->keys.seed and offset, fixed at launch.
 * `stream`: the cudaStream_t to launch on. Each returns a cudaError_t as int: 0 on success. */
#define RNGX_DECLARE_CUDA_SAMPLER(name, first, out, kernel, params, args, schema, words, form, fused)               \
  int rngx_cuda_##kernel(const rngx_job *job, void *stream, const rngx_params *p);
RNGX_SAMPLERS(RNGX_DECLARE_CUDA_SAMPLER)
#undef RNGX_DECLARE_CUDA_SAMPLER
/* The other ops' elementwise kernels, as rngx_<kernel> in kernels.h. */
#define RNGX_DECLARE_CUDA_KERNEL(kernel, types, reads, words, form) \
  int rngx_cuda_##kernel(const rngx_job *job, void *stream);
RNGX_DEVICE_KERNELS(RNGX_DECLARE_CUDA_KERNEL)
#undef RNGX_DECLARE_CUDA_KERNEL
/* rngx_split and rngx_fold_in (kernels.h) on device pointers. */
int rngx_cuda_split(const int64_t *keys, int64_t n, int64_t num, int64_t *out, void *stream);
int rngx_cuda_fold_in(const int64_t *keys, int64_t n, const int64_t *data, int64_t data_stride, int64_t *out,
                      void *stream);
/* Adam's update of a's n elements (rngx_adam_update's, on device pointers) into out[0, n). */
int rngx_cuda_adam_update(const rngx_adam *a, float *out, int64_t n, void *stream);

#ifdef __cplusplus
}
#endif

#endif
