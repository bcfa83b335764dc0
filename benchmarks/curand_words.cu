// cuRAND's Philox4_32_10 words, for benchmarks/gpu_check.py to hold the rngx stream against (docs/stream.md
// says word n of seed s is curand_init(s, 0, n) followed by curand()). Standalone: no torch, no rngx code.
//
// usage: curand_words SEED OFFSET COUNT  ->  COUNT words in hex, one per line
#include <cuda_runtime.h>
#include <curand_kernel.h>

#include <cstdio>
#include <cstdlib>

__global__ void words(unsigned long long seed, unsigned long long offset, int count, unsigned *out) {
  curandStatePhilox4_32_10_t state;
  curand_init(seed, 0, offset, &state);
  for (int i = 0; i < count; ++i) out[i] = curand(&state);
}

int main(int argc, char **argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s SEED OFFSET COUNT\n", argv[0]);
    return 2;
  }
  const unsigned long long seed = std::strtoull(argv[1], nullptr, 0), offset = std::strtoull(argv[2], nullptr, 0);
  const int count = std::atoi(argv[3]);
  unsigned *dev = nullptr, *host = (unsigned *)std::malloc(sizeof(unsigned) * count);
  if (cudaMalloc(&dev, sizeof(unsigned) * count) != cudaSuccess) return 1;
  words<<<1, 1>>>(seed, offset, count, dev);
  const cudaError_t err = cudaMemcpy(host, dev, sizeof(unsigned) * count, cudaMemcpyDeviceToHost);
  if (err != cudaSuccess) {
    std::fprintf(stderr, "CUDA error: %s\n", cudaGetErrorString(err));
    return 1;
  }
  for (int i = 0; i < count; ++i) std::printf("%08x\n", host[i]);
  return 0;
}
