// A CPU stand-in for the few parts of the CUDA runtime that csrc/kernels/kernels_cuda.cu uses, so CI (no GPU) can
// run those kernels unchanged (see test_cuda_emu.cpp). Not a general emulator. One block runs at a time, so
// __shared__ arrays are statics. A block of one row of threads (kernels_cuda.cu's only kind without
// __syncthreads) runs its threads one after another; any other block runs them as fibers that switch at each
// __syncthreads, which then acts as the block's barrier. A __syncthreads in a one-row block aborts, so that
// shortcut cannot hide a bug.
//
// Fibers switch with a few instructions on x86-64 Linux (callee-saved registers, stack pointer, MXCSR and the x87
// control word: what the SysV ABI says a call preserves), elsewhere with ucontext. glibc's swapcontext makes a
// system call per switch (the signal mask), which made the transposed kernel's runs most of the test's time.
#pragma once

#include <ucontext.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cstring>
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
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fsqrt_rn(float a) { return std::sqrt(a); }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline float __double2float_rn(double a) { return (float)a; }
inline double __ddiv_rn(double a, double b) { return a / b; }

// -DRNGX_EMU_FAST_SWITCH=0 picks the ucontext path, as does AddressSanitizer (which cannot follow a stack switch
// it is not told about, but intercepts swapcontext).
#if !defined(RNGX_EMU_FAST_SWITCH) && defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RNGX_EMU_FAST_SWITCH 0
#endif
#endif
#ifndef RNGX_EMU_FAST_SWITCH
#if defined(__x86_64__) && defined(__linux__) && !defined(__SANITIZE_ADDRESS__)
#define RNGX_EMU_FAST_SWITCH 1
#else
#define RNGX_EMU_FAST_SWITCH 0
#endif
#endif

#if RNGX_EMU_FAST_SWITCH
// rngx_emu_switch(save, load): pushes the callee-saved state, stores the stack pointer in *save, continues on the
// stack `load` (one this function saved, or one set up by rngx_emu::start_stack) and returns there.
extern "C" void rngx_emu_switch(void **save, void *load);
asm(R"(
  .text
  .weak rngx_emu_switch
  .hidden rngx_emu_switch
  .type rngx_emu_switch, @function
rngx_emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size rngx_emu_switch, .-rngx_emu_switch
)");
#endif

namespace rngx_emu {
constexpr size_t kStack = 64 * 1024;
inline std::vector<std::vector<char>> stacks;
inline bool in_fiber = false;
inline unsigned current;
inline void (*body_fn)(void *);
inline void *body_arg;

#if RNGX_EMU_FAST_SWITCH
inline void *scheduler_sp;
inline std::vector<void *> fiber_sp;

// A fiber's first code: the kernel body, then back to the scheduler for good (in_fiber still true: done).
[[noreturn]] inline void fiber_entry() {
  body_fn(body_arg);
  void *unused;
  rngx_emu_switch(&unused, scheduler_sp);
  std::abort();  // never resumed
}

// A fresh stack that rngx_emu_switch "returns" into fiber_entry from: the saved MXCSR and x87 control word
// (the current ones), six zero registers, then fiber_entry as the return address, placed so that fiber_entry
// starts with the stack aligned as after a call (rsp % 16 == 8).
inline void *start_stack(std::vector<char> &stack) {
  uintptr_t top = reinterpret_cast<uintptr_t>(stack.data() + stack.size()) & ~uintptr_t(15);
  uint64_t *sp = reinterpret_cast<uint64_t *>(top) - 1;  // fiber_entry's own return slot: never used
  *sp = 0;
  *--sp = reinterpret_cast<uint64_t>(&fiber_entry);      // at top - 16: after the ret, rsp % 16 == 8
  for (int r = 0; r < 6; ++r) *--sp = 0;                 // rbp rbx r12 r13 r14 r15
  --sp;
  uint32_t csr;
  uint16_t cw;
  asm volatile("stmxcsr %0" : "=m"(csr));
  asm volatile("fnstcw %0" : "=m"(cw));
  std::memcpy(reinterpret_cast<char *>(sp), &csr, 4);
  std::memcpy(reinterpret_cast<char *>(sp) + 4, &cw, 2);
  return sp;
}

inline void resume(unsigned t) { rngx_emu_switch(&scheduler_sp, fiber_sp[t]); }
inline void yield() { rngx_emu_switch(&fiber_sp[current], scheduler_sp); }
#else
inline ucontext_t scheduler;
inline std::vector<ucontext_t> fibers;

inline void fiber_main() { body_fn(body_arg); }  // returning resumes `scheduler` (uc_link)

inline void start_fiber(unsigned t) {
  getcontext(&fibers[t]);
  fibers[t].uc_stack.ss_sp = stacks[t].data();
  fibers[t].uc_stack.ss_size = kStack;
  fibers[t].uc_link = &scheduler;
  makecontext(&fibers[t], fiber_main, 0);
}

inline void resume(unsigned t) { swapcontext(&scheduler, &fibers[t]); }
inline void yield() { swapcontext(&fibers[current], &scheduler); }
#endif

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
  stacks.resize(threads);
#if RNGX_EMU_FAST_SWITCH
  fiber_sp.resize(threads);
#else
  fibers.resize(threads);
#endif
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
#if RNGX_EMU_FAST_SWITCH
          fiber_sp[t] = start_stack(stacks[t]);
#else
          start_fiber(t);
#endif
        }
        // Rounds: every live thread runs to its next __syncthreads (or its end).
        for (unsigned live = threads; live > 0;) {
          for (unsigned t = 0; t < threads; ++t) {
            if (done[t]) continue;
            current = t;
            threadIdx = thread_index(t, block);
            in_fiber = true;
            resume(t);
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
  rngx_emu::yield();
}

#define RNGX_LAUNCH(kernel, grid, block, stream, ...) \
  ((void)(stream), rngx_emu::run(dim3(grid), dim3(block), [=] { kernel(__VA_ARGS__); }))
