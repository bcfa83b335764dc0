// ns per element of the C kernels on one core, every op and dtype, in a preallocated buffer (no page faults, no
// torch), on each Philox path this CPU runs: the transform's cost next to the Philox and store line (bits,
// uniform). CPU time of the thread (CLOCK_THREAD_CPUTIME_ID), the best of `reps` runs, so other processes on a
// shared machine count less. docs/performance.md, "Stream 1.0" section. Build and run from the repository root,
// with setup.py's flags, pinned to one core:
//   cc -std=c11 -O3 -ffp-contract=off -fno-math-errno -Icsrc -o /tmp/kernel_ns benchmarks/kernel_ns.c csrc/kernels/*.c -lm
//   taskset -c 1 /tmp/kernel_ns [reps]
// The loops' target_clones pick AVX-512 on a CPU that has it; add -DRNGX_CLONES='__attribute__((target("avx2")))'
// (or -DRNGX_CLONES=) to time the AVX2 (or baseline) build of the loops instead. Output: path, op and dtype, ns.
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/kernels.h"
#include "kernels/simd.h"

#define N ((int64_t)1 << 20)

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static const rngx_dtype FL[] = {RNGX_FLOAT16, RNGX_BFLOAT16, RNGX_FLOAT32, RNGX_FLOAT64};
static const char *FLN[] = {"float16", "bfloat16", "float32", "float64"};
static const rngx_dtype IN[] = {RNGX_BITS8, RNGX_BITS16, RNGX_BITS32, RNGX_BITS64};
static const char *INN[] = {"int8", "int16", "int32", "int64"};

static void *in_buf;
static rngx_dtype in_dt; /* the input's dtype: the output's, but stochastic_round's x's */

/* 0.25 in every element of the input, in dtype dt (a valid p and weight, an ordinary x). */
static void fill_in(rngx_dtype dt) {
  for (int64_t i = 0; i < N; ++i) {
    if (dt == RNGX_FLOAT16) ((uint16_t *)in_buf)[i] = 0x3400;
    if (dt == RNGX_BFLOAT16) ((uint16_t *)in_buf)[i] = 0x3E80;
    if (dt == RNGX_FLOAT32) ((float *)in_buf)[i] = 0.25f;
    if (dt == RNGX_FLOAT64) ((double *)in_buf)[i] = 0.25;
  }
}

/* Case c: names it; with go, runs it once on job. 0: past the end; -1: no such case (skip). */
static int run(int c, rngx_job *job, char *name, int go) {
  rngx_params p;
  const int t = c % 4, g = c / 4;
  const rngx_dtype f = FL[t];
  job->dtype = in_dt = f;
  job->in.data = NULL;
  switch (g) {
    case 0: job->dtype = IN[t]; sprintf(name, "bits %s", INN[t]); if (go) rngx_bits(job, 0, N);
      return 1;
    case 1: sprintf(name, "uniform %s", FLN[t]); if (rngx_uniform_params(f, -1, 2, &p)) return 0;
      if (go) rngx_uniform(job, &p, 0, N);
      return 1;
    case 2: sprintf(name, "quantize_noise %s", FLN[t]); if (rngx_quantize_noise_params(f, 0.5, &p)) return 0;
      job->in.data = in_buf; if (go) rngx_quantize_noise(job, &p, 0, N);
      return 1;
    case 3: sprintf(name, "dropout %s", FLN[t]); if (rngx_dropout_params(f, 0.3, &p)) return 0; job->in.data = in_buf;
      if (go) rngx_dropout(job, &p, 0, N);
      return 1;
    case 4: sprintf(name, "normal %s", FLN[t]); if (rngx_normal_params(f, 0.5, 2, &p)) return 0;
      if (go) rngx_normal(job, &p, 0, N);
      return 1;
    case 5: sprintf(name, "truncated_normal %s", FLN[t]); if (rngx_truncnorm_params(f, 0, 1, -2, 2, &p)) return 0;
      if (go) rngx_truncnorm(job, &p, 0, N);
      return 1;
    case 6: sprintf(name, "bernoulli %s", FLN[t]); if (rngx_bernoulli_params(f, 0.3, &p)) return 0;
      if (go) rngx_bernoulli(job, &p, 0, N);
      return 1;
    case 7: sprintf(name, "bernoulli_tensor %s", FLN[t]); job->in.data = in_buf; if (go) rngx_bernoulli_tensor(job, 0, N);
      return 1;
    case 8: job->dtype = IN[t]; sprintf(name, "randint %s", INN[t]);
      if (rngx_randint_params(IN[t], INT64_MIN, INT64_MAX, -3, 997, &p)) return 0; /* the kernel's bits, any width */
      if (go) rngx_randint(job, &p, 0, N);
      return 1;
    case 9: if (t) return -1; job->dtype = RNGX_BITS64; sprintf(name, "randint int64 wide");
      if (rngx_randint_params(RNGX_BITS64, INT64_MIN, INT64_MAX, 0, (int64_t)1 << 40, &p)) return 0;
      if (go) rngx_randint(job, &p, 0, N);
      return 1;
    case 10: sprintf(name, "exponential %s", FLN[t]); if (rngx_exponential_params(f, 1.5, &p)) return 0;
      if (go) rngx_exponential(job, &p, 0, N);
      return 1;
    case 11: if (t != 3) return -1; sprintf(name, "race float64"); job->in.data = in_buf; if (go) rngx_race(job, 0, N);
      return 1;
    case 12: case 13: /* stochastic_round from each float type to bfloat16 (float8_e4m3fn from bfloat16), and to e5m2 */
      job->dtype = g == 13 ? RNGX_FLOAT8_E5M2 : f == RNGX_BFLOAT16 ? RNGX_FLOAT8_E4M3FN : RNGX_BFLOAT16;
      sprintf(name, "stochastic_round %s to %s", FLN[t], g == 13 ? "float8_e5m2" : f == RNGX_BFLOAT16 ? "float8_e4m3fn" : "bfloat16");
      if (rngx_sround_params(job->dtype, f, 0, &p)) return 0;
      job->in.data = in_buf; if (go) rngx_sround(job, &p, 0, N);
      return 1;
    default: return 0;
  }
}

/* The machine next to the figures: the CPU's model and the float loops' clone. */
static void print_machine(void) {
  char line[256];
  FILE *f = fopen("/proc/cpuinfo", "r");
  while (f != NULL && fgets(line, sizeof line, f) != NULL)
    if (strncmp(line, "model name", 10) == 0) {
      printf("# CPU: %s", strchr(line, ':') + 2);
      break;
    }
  if (f != NULL) fclose(f);
#if defined(RNGX_CLONES)
  printf("# float loops: built with -DRNGX_CLONES\n");
#else
  __builtin_cpu_init();
  printf("# float loops: the %s clone\n",
         __builtin_cpu_supports("avx512f") ? "avx512f" : __builtin_cpu_supports("avx2") ? "avx2" : "default");
#endif
}

int main(int argc, char **argv) {
  const int reps = argc > 1 ? atoi(argv[1]) : 7;
  const int64_t size = N, stride = 1;
  void *out = malloc(N * 8);
  in_buf = malloc(N * 8);
  if (out == NULL || in_buf == NULL) return 1;
  memset(out, 0, N * 8);
  rngx_job job = {.keys = {.seed = 7, .event = N}, .ndim = 1, .sizes = &size, .out = {out, &stride}, .in = {NULL, &stride}};
  char name[64];
  print_machine();
  for (int path = RNGX_SIMD_COUNT - 1; path >= 0; --path) {
    if (rngx_simd_select((rngx_simd)path) != 0) continue;
    for (int c = 0, r; (r = run(c, &job, name, 0)) != 0; ++c) {
      if (r < 0) continue;
      fill_in(in_dt);
      double best = 1e30;
      for (int rep = 0; rep < reps; ++rep) {
        const double t0 = now();
        run(c, &job, name, 1);
        const double t = now() - t0;
        best = t < best ? t : best;
      }
      printf("%s\t%s\t%.3f\n", rngx_simd_name((rngx_simd)path), name, best / (double)N * 1e9);
    }
  }
  free(out);
  free(in_buf);
  return 0;
}
