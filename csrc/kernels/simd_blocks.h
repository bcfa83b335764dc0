/* The block driver both SIMD files share, included once by each after it defines GROUP (blocks per vector),
 * GROUPS (vectors in flight), philox_groups(seed, block, groups, out) and the target attribute RNGX_TARGET:
 * whole groups of vectors, then a tail. A short tail goes to the scalar path; a longer one is made in a
 * scratch group and copied, so no call writes past `out`. */
#ifndef RNGX_SIMD_BLOCKS_NAME
#error "define RNGX_SIMD_BLOCKS_NAME before including simd_blocks.h"
#endif

RNGX_TARGET void RNGX_SIMD_BLOCKS_NAME(uint64_t seed, uint64_t block, int64_t nblocks, uint32_t *out) {
  for (; nblocks >= GROUPS * GROUP; nblocks -= GROUPS * GROUP, out += 4 * GROUPS * GROUP) {
    philox_groups(seed, block, GROUPS, out);
    block += GROUPS * GROUP;
  }
  if (nblocks <= RNGX_SCALAR_TAIL_BLOCKS) {
    rngx_blocks_scalar(seed, block, nblocks, out);
    return;
  }
  uint32_t tmp[4 * GROUPS * GROUP];
  if (nblocks > GROUP)
    philox_groups(seed, block, GROUPS, tmp);
  else
    philox_groups(seed, block, 1, tmp);
  memcpy(out, tmp, (size_t)nblocks * 4 * sizeof(uint32_t));
}
