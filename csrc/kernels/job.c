/* A job's set-up on the host, shared by the C walk (walk.c) and the CUDA launchers (kernels_cuda.cu): its dims
 * collapsed, and its keys placed in a global view. The CUDA library (torch_rngx._C_cuda) compiles this file without
 * the C walk. */
#include "job.h"

void rngx_collapse(const rngx_job *job, int reads, rngx_layout *l) {
  l->nd = 0;
  for (int d = 0; d < job->ndim; ++d) {
    const int64_t size = job->sizes[d], so = job->out.strides[d], si = reads > 0 ? job->in.strides[d] : 0;
    const int64_t si2 = reads > 1 ? job->in2.strides[d] : 0;
    if (size == 1) continue;
    const int last = l->nd - 1;
    if (last >= 0 && l->so[last] == size * so && l->si[last] == size * si && l->si2[last] == size * si2) {
      l->size[last] *= size; /* the merged dim runs with the inner dim's strides */
    } else {
      l->size[l->nd++] = size;
    }
    l->so[l->nd - 1] = so;
    l->si[l->nd - 1] = si;
    l->si2[l->nd - 1] = si2;
  }
  if (l->nd == 0) {
    l->nd = 1;
    l->size[0] = 1;
    l->so[0] = l->si[0] = l->si2[0] = 1;
  }
}

void rngx_global_view(rngx_keys *keys, int ndim, const int64_t *sizes, const int64_t *global_shape,
                      const int64_t *global_start, int64_t *pos_strides) {
  int64_t above = 1; /* stream positions per step of dim d: the global event dims after d */
  keys->first = 0;
  keys->seg_dims = 0;
  for (int d = ndim - 1; d >= 0; --d) {
    if (d < keys->key_dims) {
      if (keys->pairs != NULL) keys->pairs += global_start[d] * keys->key_strides[d];
      continue;
    }
    pos_strides[d] = above;
    keys->first += (uint64_t)global_start[d] * (uint64_t)above;
    above *= global_shape[d];
    if (keys->seg_dims == 0 && sizes[d] != global_shape[d]) keys->seg_dims = d;
  }
  keys->pos_strides = pos_strides;
  keys->event = 1;
  for (int d = keys->seg_dims > keys->key_dims ? keys->seg_dims : keys->key_dims; d < ndim; ++d)
    keys->event *= sizes[d];
  if (keys->event == 0) keys->event = 1; /* an empty output: no element asks for a key */
}
