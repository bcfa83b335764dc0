// A CPU stand-in for the few parts of the CUDA runtime that csrc/kernels/ops_cuda.cu uses, so CI (no GPU) can
// run those kernels unchanged (see test_cuda_emu.cpp). Not a general emulator. One block runs at a time, so
// __shared__ arrays are statics. A block of one row of threads (ops_cuda.cu's only kind without
// __syncthreads) runs its threads one after another; any other block runs them as fibers (ucontext) that
// switch at each __syncthreads, which then acts as the block's barrier. A __syncthreads in a one-row block
// aborts, so that shortcut cannot hide a bug.
#pragma once

#include <ucontext.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static

struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
// Plain globals, set before each thread (fiber) runs or resumes.
inline dim3 threadIdx, blockIdx, blockDim, gridDim;

typedef void *cudaStream_t;
enum cudaError_t { cudaSuccess = 0, cudaErrorInvalidValue = 1 };
inline cudaError_t cudaGetLastError() { return cudaSuccess; }

// Round-to-nearest float ops; the test is built with -ffp-contract=off, so none of these fuse.
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dmul_rn(double a, double b) { return a * b; }

namespace rngx_emu {
constexpr size_t kStack = 64 * 1024;
inline ucontext_t scheduler;
inline std::vector<ucontext_t> fibers;
inline std::vector<std::vector<char>> stacks;
inline bool in_fiber = false;
inline unsigned current;
inline void (*body_fn)(void *);
inline void *body_arg;

inline void fiber_main() { body_fn(body_arg); }  // returning resumes `scheduler` (uc_link)

inline dim3 thread_index(unsigned t, dim3 block) {
  return dim3(t % block.x, t / block.x % block.y, t / (block.x * block.y));
}

template <class Body>
void run(dim3 grid, dim3 block, Body body) {
  gridDim = grid;
  blockDim = block;
  const unsigned threads = block.x * block.y * block.z;
  body_fn = [](void *b) { (*static_cast<Body *>(b))(); };
  body_arg = &body;
  fibers.resize(threads);
  stacks.resize(threads);
  for (unsigned bz = 0; bz < grid.z; ++bz)
    for (unsigned by = 0; by < grid.y; ++by)
      for (unsigned bx = 0; bx < grid.x; ++bx) {
        blockIdx = dim3(bx, by, bz);
        if (block.y == 1 && block.z == 1) {
          for (unsigned t = 0; t < threads; ++t) {
            threadIdx = dim3(t);
            body();
          }
          continue;
        }
        std::vector<char> done(threads, 0);
        for (unsigned t = 0; t < threads; ++t) {
          stacks[t].resize(kStack);
          getcontext(&fibers[t]);
          fibers[t].uc_stack.ss_sp = stacks[t].data();
          fibers[t].uc_stack.ss_size = kStack;
          fibers[t].uc_link = &scheduler;
          makecontext(&fibers[t], fiber_main, 0);
        }
        // Rounds: every live thread runs to its next __syncthreads (or its end).
        for (unsigned live = threads; live > 0;) {
          for (unsigned t = 0; t < threads; ++t) {
            if (done[t]) continue;
            current = t;
            threadIdx = thread_index(t, block);
            in_fiber = true;
            swapcontext(&scheduler, &fibers[t]);
            if (in_fiber) {  // returned without a __syncthreads: the thread ended
              done[t] = 1;
              --live;
            }
          }
        }
        in_fiber = false;
      }
}
}  // namespace rngx_emu

inline void __syncthreads() {
  if (!rngx_emu::in_fiber) {
    std::fprintf(stderr, "cuda_emu: __syncthreads in a kernel run as one row of threads\n");
    std::abort();
  }
  rngx_emu::in_fiber = false;  // tells the scheduler this thread is waiting, not done
  swapcontext(&rngx_emu::fibers[rngx_emu::current], &rngx_emu::scheduler);
}

#define RNGX_LAUNCH(kernel, grid, block, stream, ...) \
  ((void)(stream), rngx_emu::run(dim3(grid), dim3(block), [=] { kernel(__VA_ARGS__); }))
