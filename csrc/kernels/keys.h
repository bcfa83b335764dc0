/* Keys, for the C and the CUDA kernels alike (docs/stream.md, "Batched states", "Global view", "split and
 * fold_in"): which key a segment of an output uses and where in that key's stream it starts, and a key's children. */
#ifndef RNGX_KEYS_H
#define RNGX_KEYS_H

#include <stdint.h>

#include "philox.h"

/* Segment q of an output whose first seg_dims dims index segments: its key's index into the [seed, offset] pairs
 * (`at`, in int64 elements) and its first element's stream position (`pos`). Dim d < key_dims picks the key
 * (key_strides[d] pairs' elements apart); each other dim d < seg_dims moves the position by pos_strides[d]. */
RNGX_FN void rngx_segment(int64_t q, int seg_dims, int key_dims, const int64_t *sizes, const int64_t *key_strides,
                          const int64_t *pos_strides, uint64_t first, int64_t *at, uint64_t *pos) {
  *at = 0;
  *pos = first;
  for (int d = seg_dims - 1; d >= 0; --d) {
    const int64_t r = q / sizes[d], digit = q - r * sizes[d];
    if (d < key_dims) *at += digit * key_strides[d];
    else *pos += (uint64_t)digit * (uint64_t)pos_strides[d];
    q = r;
  }
}

/* The child of key (s, o) for index d: (r0 | r1 << 32, r2 | r3 << 32) with r = block(s, o + d). */
RNGX_FN void rngx_child_key(const int64_t *key, uint64_t d, int64_t *out) {
  const rngx_ctr r = rngx_block((uint64_t)key[0], (uint64_t)key[1] + d);
  out[0] = (int64_t)((uint64_t)r.v[1] << 32 | r.v[0]);
  out[1] = (int64_t)((uint64_t)r.v[3] << 32 | r.v[2]);
}

#endif
