// cuRAND's Philox4_32_10 words, for benchmarks/gpu_check.py to hold the rngx stream against. Standalone: no
// torch, no rngx code. Stream v2: a state [seed, offset] counts 128-bit blocks, so its word t is cuRAND's word
// 4*offset + t, i.e. curand_init(seed, 0, 4*offset) followed by t+1 calls of curand().
//
// usage: curand_words SEED BLOCK COUNT  ->  COUNT words in hex, one per line, starting at lane 0 of block BLOCK
//
// Two spots where cuRAND's 128-bit counter and the rngx spec meet only with some help:
// - curand_init takes a 64-bit WORD offset, which reaches block 2^62 at most; the top two bits of BLOCK are
//   added with skipahead(2^63 words) = 2^61 blocks, twice per unit of 2^62 blocks.
// - rngx takes block indices mod 2^64 (the block after 2^64-1 is block 0) where cuRAND carries into the
//   counter's upper half, so after block 2^64-1 we restart cuRAND at block 0.
#include <cuda_runtime.h>
#include <curand_kernel.h>

#include <cstdio>
#include <cstdlib>

__device__ void start_at(unsigned long long seed, unsigned long long block, curandStatePhilox4_32_10_t *state) {
  curand_init(seed, 0, 4ULL * (block & ((1ULL << 62) - 1)), state);
  for (unsigned long long i = 0; i < 2 * (block >> 62); ++i) skipahead(1ULL << 63, state);
}

__global__ void words(unsigned long long seed, unsigned long long block, int count, unsigned *out) {
  curandStatePhilox4_32_10_t state;
  start_at(seed, block, &state);
  for (int i = 0; i < count; ++i) {
    if (i > 0 && i % 4 == 0 && block + i / 4 == 0) start_at(seed, 0, &state);  // wrapped past block 2^64-1
    out[i] = curand(&state);
  }
}

int main(int argc, char **argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s SEED BLOCK COUNT\n", argv[0]);
    return 2;
  }
  const unsigned long long seed = std::strtoull(argv[1], nullptr, 0), block = std::strtoull(argv[2], nullptr, 0);
  const int count = std::atoi(argv[3]);
  unsigned *dev = nullptr, *host = (unsigned *)std::malloc(sizeof(unsigned) * count);
  if (cudaMalloc(&dev, sizeof(unsigned) * count) != cudaSuccess) return 1;
  words<<<1, 1>>>(seed, block, count, dev);
  const cudaError_t err = cudaMemcpy(host, dev, sizeof(unsigned) * count, cudaMemcpyDeviceToHost);
  if (err != cudaSuccess) {
    std::fprintf(stderr, "CUDA error: %s\n", cudaGetErrorString(err));
    return 1;
  }
  for (int i = 0; i < count; ++i) std::printf("%08x\n", host[i]);
  return 0;
}
