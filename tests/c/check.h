/* A tiny harness for the torch-free C tests: count checks, report each failure with its file:line, and end
 * with one "N passed, N failed" line whose exit status make can act on. Header-only, one per program. */
#ifndef RNGX_TEST_CHECK_H
#define RNGX_TEST_CHECK_H

#include <stdint.h>
#include <stdio.h>

static long check_passed, check_failed;

/* Failures past this many are counted but not printed, so one broken loop cannot flood the log. */
#define CHECK_MAX_PRINTED 20

static int check_report(int ok, const char *file, int line, const char *what) {
  if (ok) {
    ++check_passed;
  } else if (++check_failed <= CHECK_MAX_PRINTED) {
    printf("%s:%d: FAILED: %s\n", file, line, what);
  }
  return ok;
}

#define CHECK(cond) check_report(!!(cond), __FILE__, __LINE__, #cond)

/* CHECK, and on failure also print the printf-style context (within the same print limit). */
#define CHECK_MSG(cond, ...)                                                                               \
  do {                                                                                                     \
    if (!CHECK(cond) && check_failed <= CHECK_MAX_PRINTED) printf(__VA_ARGS__);                            \
  } while (0)

#define CHECK_EQ_U32(got, want)                                                                            \
  do {                                                                                                     \
    const uint32_t check_g_ = (got), check_w_ = (want);                                                    \
    CHECK_MSG(check_g_ == check_w_, "    %s == %s: got 0x%08x, want 0x%08x\n", #got, #want,               \
              (unsigned)check_g_, (unsigned)check_w_);                                                     \
  } while (0)

/* Prints the summary and returns main's exit status. */
static int check_summary(void) {
  printf("%ld passed, %ld failed\n", check_passed, check_failed);
  return check_failed != 0;
}

#endif
