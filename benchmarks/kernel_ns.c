// ns per element of the C kernels on one core, in a preallocated buffer (no page faults, no torch): the transform's
// cost next to the Philox and store line (uniform, bits). docs/performance.md, "Stream 1.0" section. Build and run
// from the repository root, with setup.py's flags:
//   cc -std=c11 -O3 -ffp-contract=off -fno-math-errno -Icsrc -o /tmp/kernel_ns benchmarks/kernel_ns.c csrc/kernels/*.c -lm
//   /tmp/kernel_ns
// Against another version: `git archive <commit> csrc/kernels | tar -x -C /tmp/old`, then the same build with
// -I/tmp/old/csrc and /tmp/old/csrc/kernels/*.c.
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kernels/ops.h"

#define N ((int64_t)1 << 22)

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Runs case c of the list below on the whole job; 0 past its end. */
static int run(int c, rngx_job *job) {
  rngx_params p;
  switch (c) {
    case 0: job->dtype = RNGX_FLOAT32; p = rngx_uniform_params(RNGX_FLOAT32, 0, 1); rngx_uniform(job, &p, 0, N); return 1;
    case 1: job->dtype = RNGX_BITS64; rngx_bits(job, 0, N); return 1;
    case 2: job->dtype = RNGX_FLOAT32; p = rngx_normal_params(0, 1); rngx_normal(job, &p, 0, N); return 1;
    case 3: job->dtype = RNGX_FLOAT64; p = rngx_normal_params(0, 1); rngx_normal(job, &p, 0, N); return 1;
    case 4: job->dtype = RNGX_BITS64; p = rngx_randint_params(0, 1000); rngx_randint(job, &p, 0, N); return 1;
    case 5: job->dtype = RNGX_BITS64; p = rngx_randint_params(0, (uint64_t)1 << 40); rngx_randint(job, &p, 0, N); return 1;
    case 6:
      job->dtype = RNGX_FLOAT32;
      if (rngx_truncnorm_params(RNGX_FLOAT32, 0, 1, -2, 2, &p) != 0) return 0;
      rngx_truncnorm(job, &p, 0, N);
      return 1;
    default: return 0;
  }
}

int main(void) {
  static const char *names[] = {"uniform float32", "bits int64", "normal float32", "normal float64",
                                "randint int64, range 1000", "randint int64, range 2^40", "truncnorm float32"};
  const int64_t size = N, stride = 1;
  void *out = malloc(N * 8);
  if (out == NULL) return 1;
  rngx_job job = {.keys = {.seed = 7, .event = N}, .ndim = 1, .sizes = &size, .out = {out, &stride}};
  for (int c = 0; run(c, &job); ++c) {
    double best = 1e30;
    for (int rep = 0; rep < 7; ++rep) {
      const double t0 = now();
      run(c, &job);
      const double t = now() - t0;
      best = t < best ? t : best;
    }
    printf("%-28s %7.2f ns/element\n", names[c], best / (double)N * 1e9);
  }
  free(out);
  return 0;
}
