// stochastic_round float32 -> bfloat16 against a plain float32 -> bfloat16 loop (round to nearest even, what the
// cast does), at 2^24 elements on 2 threads, in C with no torch: into a buffer already faulted in ("prealloc") and
// into a fresh one per call ("fresh", malloc's mmap: every page faulted in, as torch's CPU allocator gives x.to()'s
// output). The best wall time of `reps` calls each, the two taking turns; ratio = the cast's time / ours (speed).
// docs/performance.md, "Stochastic rounding". Build and run from the repository root with setup.py's flags:
//   cc -std=c11 -O3 -ffp-contract=off -fno-math-errno -Icsrc -o /tmp/sround_memory benchmarks/sround_memory.c csrc/kernels/*.c -lm -lpthread
//   /tmp/sround_memory [reps]
#define _POSIX_C_SOURCE 199309L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/kernels.h"

#define N ((int64_t)1 << 24)

static float *x;
static void *out;
static int ours;
static rngx_params params;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Elements [begin, end) of the call: ours, or the cast's rounding to nearest even (finite x). */
static void *half(void *arg) {
  const int64_t begin = *(const int64_t *)arg, end = begin + N / 2, size = N, stride = 1;
  if (ours) {
    const rngx_job job = {.keys = {.seed = 7, .event = N}, .dtype = RNGX_BFLOAT16, .ndim = 1, .sizes = &size,
                          .out = {out, &stride}, .in = {x, &stride}};
    rngx_sround(&job, &params, begin, end);
  } else {
    uint16_t *o = out;
    for (int64_t i = begin; i < end; ++i) {
      uint32_t b;
      memcpy(&b, x + i, 4);
      o[i] = (uint16_t)((b + 0x7FFFu + (b >> 16 & 1u)) >> 16);
    }
  }
  return NULL;
}

/* One call on 2 threads, into `into` or (NULL) a fresh buffer. */
static double call(void *into) {
  const double t0 = now();
  out = into != NULL ? into : malloc(N * 2);
  int64_t first = 0, second = N / 2;
  pthread_t other;
  pthread_create(&other, NULL, half, &second);
  half(&first);
  pthread_join(other, NULL);
  if (into == NULL) free(out);
  return now() - t0;
}

int main(int argc, char **argv) {
  const int reps = argc > 1 ? atoi(argv[1]) : 15;
  void *kept = malloc(N * 2);
  x = malloc(N * 4);
  if (x == NULL || kept == NULL || rngx_sround_params(RNGX_BFLOAT16, RNGX_FLOAT32, 0, &params) != NULL) return 1;
  memset(kept, 0, N * 2);
  for (int64_t i = 0; i < N; ++i) x[i] = (float)((uint64_t)i * 2654435761u % 1000003u) / 1000003.0f - 0.5f;
  for (int fresh = 0; fresh < 2; ++fresh) {
    double best[2] = {1e30, 1e30};
    for (int r = 0; r < reps; ++r)
      for (ours = 0; ours < 2; ++ours) {
        const double t = call(fresh ? NULL : kept);
        best[ours] = t < best[ours] ? t : best[ours];
      }
    printf("%-8s ours %6.2f ms  cast %6.2f ms  ratio %.3f\n", fresh ? "fresh" : "prealloc", best[1] * 1e3,
           best[0] * 1e3, best[0] / best[1]);
  }
  free(kept);
  free(x);
  return 0;
}
