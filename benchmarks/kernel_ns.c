// ns per element of the C kernels on one core, in a preallocated buffer (no page faults, no torch): the transform's
// cost next to the Philox and store line (uniform, bits). docs/performance.md, "Kernel speed, one core". Build and
// run from the repository root, with setup.py's flags:
//   cc -std=c11 -O3 -ffp-contract=off -fno-math-errno -Icsrc -o /tmp/kernel_ns benchmarks/kernel_ns.c csrc/kernels/*.c -lm
//   taskset -c 1 /tmp/kernel_ns [-n LOG2_ELEMENTS] [-r ROUNDS] [NAME_PART...]
// RNGX_SIMD=scalar|avx2|avx512 picks the Philox path. The float loops' clone is the CPU's widest; to time one
// clone, build with -D'RNGX_CLONES=__attribute__((target("avx2")))' (or an empty -DRNGX_CLONES= for the
// baseline x86-64 build). Rounds run every case in turn; a case's figure is its best round, in wall time and in
// the thread's CPU time (which leaves out time another process held the core).
// Against another version: `git archive <commit> csrc/kernels | tar -x -C /tmp/old`, then the same build with
// -I/tmp/old/csrc and /tmp/old/csrc/kernels/*.c.
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/ops.h"
#include "kernels/simd.h"

#define STR_(x) #x
#define STR(x) STR_(x)

static double clock_s(clockid_t id) {
  struct timespec t;
  clock_gettime(id, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

typedef struct {
  const char *name;
  rngx_dtype dtype;
  int op; /* 0 uniform, 1 bits, 2 normal, 3 randint, 4 truncnorm */
  double a, b, c, d;
} bench_case;

/* truncnorm: (mean, std, a, b); std 1 on [-2, 2] samples the central region 89% of the time, std 0.02 on
 * [-2, 2] (timm's initializers) 85%, [2, 3] never; randint: (low, range). */
static const bench_case CASES[] = {
    {"uniform float32", RNGX_FLOAT32, 0, 0, 1, 0, 0},
    {"bits int64", RNGX_BITS64, 1, 0, 0, 0, 0},
    {"normal float32", RNGX_FLOAT32, 2, 0, 1, 0, 0},
    {"normal float64", RNGX_FLOAT64, 2, 0, 1, 0, 0},
    {"randint int64, range 1000", RNGX_BITS64, 3, 0, 1000, 0, 0},
    {"randint int64, range 2^40", RNGX_BITS64, 3, 0, 0x1p40, 0, 0},
    {"truncnorm float32", RNGX_FLOAT32, 4, 0, 1, -2, 2},
    {"truncnorm float32, std .02", RNGX_FLOAT32, 4, 0, 0.02, -2, 2},
    {"truncnorm float32, [2, 3]", RNGX_FLOAT32, 4, 0, 1, 2, 3},
    {"truncnorm bfloat16", RNGX_BFLOAT16, 4, 0, 1, -2, 2},
    {"truncnorm float64", RNGX_FLOAT64, 4, 0, 1, -2, 2},
};
#define NCASES ((int)(sizeof CASES / sizeof CASES[0]))

static void run(const bench_case *c, rngx_job *job, int64_t n) {
  rngx_params p;
  job->dtype = c->dtype;
  switch (c->op) {
    case 0: p = rngx_uniform_params(c->dtype, c->a, c->b); rngx_uniform(job, &p, 0, n); break;
    case 1: rngx_bits(job, 0, n); break;
    case 2: p = rngx_normal_params(c->a, c->b); rngx_normal(job, &p, 0, n); break;
    case 3: p = rngx_randint_params((int64_t)c->a, (uint64_t)c->b); rngx_randint(job, &p, 0, n); break;
    default:
      if (rngx_truncnorm_params(c->dtype, c->a, c->b, c->c, c->d, &p) != 0) abort();
      rngx_truncnorm(job, &p, 0, n);
  }
}

static void print_cpu(void) {
  char line[256];
  FILE *f = fopen("/proc/cpuinfo", "r");
  while (f != NULL && fgets(line, sizeof line, f) != NULL)
    if (strncmp(line, "model name", 10) == 0) {
      printf("CPU: %s", strchr(line, ':') + 2);
      break;
    }
  if (f != NULL) fclose(f);
  printf("Philox path: %s; float loops: ", rngx_simd_name(rngx_simd_active()));
#ifdef RNGX_CLONES
  printf("built as `%s`\n", STR(RNGX_CLONES));
#else
  __builtin_cpu_init();
  printf("the %s clone\n", __builtin_cpu_supports("avx512f") ? "avx512f" : __builtin_cpu_supports("avx2") ? "avx2" : "default");
#endif
}

int main(int argc, char **argv) {
  int log2n = 22, rounds = 7, want[NCASES], any = 0;
  for (int c = 0; c < NCASES; ++c) want[c] = 0;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "-n") == 0 && i + 1 < argc) log2n = atoi(argv[++i]);
    else if (strcmp(argv[i], "-r") == 0 && i + 1 < argc) rounds = atoi(argv[++i]);
    else
      for (int c = 0; c < NCASES; ++c) any |= want[c] |= strstr(CASES[c].name, argv[i]) != NULL;
  }
  const int64_t n = (int64_t)1 << log2n, stride = 1;
  void *out = malloc((size_t)n * 8);
  if (out == NULL) return 1;
  rngx_job job = {.keys = {.seed = 7, .event = n}, .ndim = 1, .sizes = &n, .out = {out, &stride}};
  double wall[NCASES], cpu[NCASES];
  for (int c = 0; c < NCASES; ++c) {
    wall[c] = cpu[c] = 1e30;
    if (!any || want[c]) run(&CASES[c], &job, n); /* warm-up: pages touched, code loaded */
  }
  for (int r = 0; r < rounds; ++r)
    for (int c = 0; c < NCASES; ++c) {
      if (any && !want[c]) continue;
      const double w0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
      run(&CASES[c], &job, n);
      const double c1 = clock_s(CLOCK_THREAD_CPUTIME_ID), w1 = clock_s(CLOCK_MONOTONIC);
      wall[c] = w1 - w0 < wall[c] ? w1 - w0 : wall[c];
      cpu[c] = c1 - c0 < cpu[c] ? c1 - c0 : cpu[c];
    }
  print_cpu();
  printf("2^%d elements, best of %d rounds, ns per element: wall, thread CPU\n", log2n, rounds);
  for (int c = 0; c < NCASES; ++c)
    if (!any || want[c]) printf("%-28s %7.2f %7.2f\n", CASES[c].name, wall[c] / (double)n * 1e9, cpu[c] / (double)n * 1e9);
  free(out);
  return 0;
}
