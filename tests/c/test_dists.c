/* Guarantee: normal, truncated normal, bernoulli and randint compute the numbers docs/stream.md defines, with
 * the accuracy it states. normal's float32 values (both of a pair: r cos and r sin) are within 2 ulp of the
 * transform of the same uniforms in long double (the angle reduced exactly, so cos(pi/2) is 0): checked on 2^24 word pairs plus the edges (u1 = 2^-32 and
 * 1, every octant boundary), the largest error printed. float64 against long double, likewise. Phi against
 * erfcl; randint against 128-bit arithmetic; each op's vectorized loop (its target_clones build) against the
 * element formulas of dists.h compiled plainly here, bit for bit. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kernels/convert.h"
#include "kernels/dists.h"
#include "kernels/kernels.h"

static uint64_t rng = 0x243F6A8885A308D3ull;
static uint32_t next32(void) { /* splitmix64: test inputs only */
  uint64_t z = (rng += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return (uint32_t)((z ^ (z >> 31)) >> 32);
}

/* cos and sin of 2 pi t / 2^b in long double, the angle reduced exactly (as in rngx_polar). */
static void sincos_turns_ld(uint64_t t, int b, long double *c, long double *s) {
  const uint64_t half = 1ull << (b - 1), quarter = half >> 1;
  const int sin_neg = t > half;
  t = sin_neg ? 2 * half - t : t;
  const int cos_neg = t > quarter;
  t = cos_neg ? half - t : t;
  const long double pi = 3.141592653589793238462643383279502884L;
  const int swap = t > quarter / 2;
  const long double x = (long double)(swap ? quarter - t : t) * pi / (long double)half;
  const long double sn = sinl(x), cs = cosl(x);
  *c = cos_neg ? -(swap ? sn : cs) : (swap ? sn : cs);
  *s = sin_neg ? -(swap ? cs : sn) : (swap ? cs : sn);
}

/* Both normals of a pair in long double. */
static void normal_ld(long double u1, uint64_t t, int b, long double *c, long double *s) {
  const long double r = sqrtl(-2.0L * logl(u1));
  sincos_turns_ld(t, b, c, s);
  *c *= r;
  *s *= r;
}

/* |got - want| in units of the float32 (float64) spacing at want. */
static double ulps32(float got, long double want) {
  const float w = (float)want;
  int e;
  frexpf(w == 0 ? 0x1p-126f : w, &e);
  const long double ulp = ldexpl(1.0L, (e - 24 < -149 ? -149 : e - 24));
  return (double)(fabsl((long double)got - want) / ulp);
}

static double ulps64(double got, long double want) {
  int e;
  frexp((double)want == 0 ? 0x1p-1022 : (double)want, &e);
  const long double ulp = ldexpl(1.0L, (e - 53 < -1074 ? -1074 : e - 53));
  return (double)(fabsl((long double)got - want) / ulp);
}

static double max_ulp32, max_ulp64, max_abs_z32;

static void check_normal32(uint32_t w0, uint32_t w1) {
  const rngx_pair z = rngx_normal32(w0, w1);
  long double c, s;
  normal_ld(((long double)w0 + 1) * 0x1p-32L, w1, 32, &c, &s);
  const float zc = (float)z.c, zs = (float)z.s;
  const double ec = ulps32(zc, c), es = ulps32(zs, s), e = ec > es ? ec : es;
  if (e > max_ulp32) max_ulp32 = e;
  if (fabsf(zc) > max_abs_z32) max_abs_z32 = fabsf(zc);
  if (fabsf(zs) > max_abs_z32) max_abs_z32 = fabsf(zs);
  CHECK_MSG(e <= 2.0, "    normal32(%08x, %08x) = (%a, %a): %.3f ulp\n", w0, w1, (double)zc, (double)zs, e);
}

static void check_normal64(const uint32_t *w) {
  const uint64_t m = ((uint64_t)(w[0] & 0x1FFFFFu) << 32) | w[1], t = ((uint64_t)(w[2] & 0x1FFFFFu) << 32) | w[3];
  const rngx_pair z = rngx_normal64(w);
  long double c, s;
  normal_ld(((long double)m + 1) * 0x1p-53L, t, 53, &c, &s);
  const double ec = ulps64(z.c, c), es = ulps64(z.s, s), e = ec > es ? ec : es;
  if (e > max_ulp64) max_ulp64 = e;
  CHECK_MSG(e <= 16.0, "    normal64 = (%a, %a): %.3f ulp\n", z.c, z.s, e);
}

static void check_normal_accuracy(void) {
  static const uint32_t edges[] = {0, 1, 2, 0x7FFFFFFF, 0x80000000u, 0xFFFFFFFEu, 0xFFFFFFFFu};
  for (int q = 0; q <= 8; ++q) /* every octant boundary of the angle, and its neighbours */
    for (int d = -2; d <= 2; ++d)
      for (size_t e = 0; e < sizeof edges / sizeof *edges; ++e) check_normal32(edges[e], (uint32_t)(q * 0x20000000u + d));
  for (int i = 0; i < (1 << 24); ++i) check_normal32(next32(), next32());
  for (int i = 0; i < (1 << 20); ++i) { /* small u1: the tails */
    const uint32_t w0 = next32() >> (next32() & 31);
    check_normal32(w0, next32());
  }
  uint32_t w[4];
  for (int i = 0; i < (1 << 21); ++i) {
    for (int j = 0; j < 4; ++j) w[j] = next32();
    if (i < 1024) w[0] = w[1] = 0; /* u1 = 2^-53: the largest |z| */
    check_normal64(w);
  }
  const uint32_t zero[4] = {0, 0, 0, 0};
  const double zmax32 = rngx_normal32(0, 0).c, zmax64 = rngx_normal64(zero).c;
  printf("normal: float32 max error %.3f ulp (largest |z| seen %.4f, possible %.6f); float64 max error %.3f ulp "
         "(largest |z| possible %.6f)\n", max_ulp32, max_abs_z32, zmax32, max_ulp64, zmax64);
  CHECK(fabs(zmax32 - sqrt(64 * log(2.0))) < 1e-6);
  CHECK(fabs(zmax64 - sqrt(106 * log(2.0))) < 1e-12);
  CHECK(rngx_normal32(0xFFFFFFFFu, 123).c == 0 && rngx_normal32(0xFFFFFFFFu, 123).s == 0); /* u1 = 1: never log(0) */
  CHECK(rngx_normal32(0, 0x40000000u).s == zmax32 && rngx_normal32(0, 0x40000000u).c == 0); /* a = pi/2, exactly */
  CHECK(rngx_normal32(0, 0xC0000000u).s == -zmax32 && rngx_normal32(0, 0x80000000u).c == -zmax32);
}

static void check_cdf_and_ndtri(void) {
  double worst = 0;
  for (double x = -37; x <= 37; x += 0.01) {
    const long double want = 0.5L * erfcl(-(long double)x / sqrtl(2.0L));
    const double rel = (double)fabsl((rngx_normal_cdf(x) - want) / want);
    if (rel > worst) worst = rel;
  }
  printf("normal_cdf: max relative error %.3g on [-37, 37]\n", worst);
  CHECK(worst < 1e-12);
  worst = 0;
  for (double x = -37; x <= 0.5; x += 0.003) { /* ndtri(Phi(x)) = x, where p keeps x's precision */
    const double p = (double)(0.5L * erfcl(-(long double)x / sqrtl(2.0L)));
    const double err = fabs(rngx_ndtri(p) - x) / (fabs(x) > 1 ? fabs(x) : 1);
    if (err > worst) worst = err;
  }
  printf("ndtri: max relative error %.3g\n", worst);
  CHECK(worst < 1e-13);
}

static void check_randint(void) {
  for (int i = 0; i < 1000000; ++i) {
    const uint32_t w0 = next32(), w1 = next32(), r = i % 3 == 0 ? next32() : next32() >> (next32() & 31);
    const unsigned __int128 x = (unsigned __int128)w0 << 32 | w1;
    const uint64_t want = r == 0 ? w0 : (uint64_t)(((unsigned __int128)r * x) >> 64);
    CHECK_MSG(rngx_randint32(r, w0, w1) == want, "    randint32(%u)\n", r);
    uint32_t w[4] = {w0, w1, next32(), next32()};
    const uint64_t range = ((uint64_t)next32() << 32 | next32()) >> (next32() & 63);
    const unsigned __int128 hi = (unsigned __int128)range * ((uint64_t)w[0] << 32 | w[1]);
    const unsigned __int128 lo = (unsigned __int128)range * ((uint64_t)w[2] << 32 | w[3]);
    CHECK_MSG(rngx_randint64(range, w) == (uint64_t)((hi + (lo >> 64)) >> 64), "    randint64(%llu)\n",
              (unsigned long long)range);
  }
}

/* The ops' loops (clones for AVX2 / AVX-512 where built) against the element formulas, contiguous and strided. */
enum { N = 4099 };

static void run(void (*op)(const rngx_job *, const rngx_params *, int64_t, int64_t), const rngx_params *p,
                rngx_dtype dt, void *out, int64_t stride, const void *in) {
  const int64_t size = N, strides = stride;
  const rngx_job job = {.keys = {.seed = 77, .offset = 5, .event = N}, .dtype = dt, .ndim = 1, .sizes = &size,
                        .out = {out, &strides}, .in = {(void *)in, &strides}};
  op(&job, p, 0, 1001); /* two calls, the second from an odd index: mid-pair for normal, as a thread may start */
  op(&job, p, 1001, N);
}

/* bernoulli with p per element, in `in`. */
static void run_p(rngx_dtype dt, void *out, int64_t stride, const void *in) {
  const int64_t size = N, strides = stride;
  const rngx_job job = {.keys = {.seed = 77, .offset = 5, .event = N}, .dtype = dt, .ndim = 1, .sizes = &size,
                        .out = {out, &strides}, .in = {(void *)in, &strides}};
  rngx_bernoulli_tensor(&job, 0, 1001);
  rngx_bernoulli_tensor(&job, 1001, N);
}

static uint32_t WORDS[4 * N];

static void check_loops(void) {
  for (int i = 0; i < 4 * N; ++i) WORDS[i] = rngx_key_word(77, 5, (uint64_t)i);
  static float f[2 * N], pf[2 * N];
  static double d[2 * N], pd[2 * N];
  static uint16_t h[2 * N], ph[2 * N];
  static uint64_t q[2 * N];
  for (int64_t s = 1; s <= 2; ++s) {
    rngx_params p = {0};
    CHECK(rngx_normal_params(RNGX_FLOAT32, 0.25, 1.5, &p) == NULL);
    run(rngx_normal, &p, RNGX_FLOAT32, f, s, NULL);
    run(rngx_normal, &p, RNGX_FLOAT64, d, s, NULL);
    run(rngx_normal, &p, RNGX_FLOAT16, h, s, NULL);
    int ok = 1;
    for (int i = 0; i < N; ++i) { /* element i: pair i / 2 (words 2 (i / 2), +1; float64 4 (i / 2) .. +3), cos or sin */
      const rngx_pair p32 = rngx_normal32(WORDS[i & ~1], WORDS[i | 1]), p64 = rngx_normal64(WORDS + 2 * (i & ~1));
      const float z = (float)((i & 1) ? p32.s : p32.c);
      ok &= f[i * s] == z * 1.5f + 0.25f;
      ok &= h[i * s] == rngx_f32_to_f16(z * 1.5f + 0.25f);
      ok &= d[i * s] == ((i & 1) ? p64.s : p64.c) * 1.5 + 0.25;
    }
    CHECK_MSG(ok, "    normal loops, stride %lld\n", (long long)s);

    CHECK(rngx_truncnorm_params(RNGX_FLOAT32, 0.5, 2.0, -1.0, 3.3, &p) == 0);
    run(rngx_truncnorm, &p, RNGX_FLOAT32, f, s, NULL);
    ok = 1;
    for (int i = 0; i < N; ++i) {
      const double v = rngx_truncnorm_value(rngx_m53(WORDS[2 * i], WORDS[2 * i + 1]), &p.tn);
      ok &= f[i * s] >= -1.0f && f[i * s] <= 3.3f && fabsf(f[i * s] - (float)v) <= 0x1p-22f;
    }
    CHECK_MSG(ok, "    truncnorm loop, stride %lld\n", (long long)s);

    CHECK(rngx_bernoulli_params(RNGX_FLOAT32, 0.3, &p) == NULL);
    for (int i = 0; i < 2 * N; ++i) {
      pf[i] = (float)(i % 101) / 100.0f;
      pd[i] = pf[i];
      ph[i] = rngx_f32_to_bf16(pf[i]);
    }
    run(rngx_bernoulli, &p, RNGX_FLOAT32, f, s, NULL);
    ok = 1;
    for (int i = 0; i < N; ++i) ok &= f[i * s] == ((WORDS[i] & 0xFFFFFF) < p.keep ? 1.0f : 0.0f);
    run_p(RNGX_FLOAT32, f, s, pf);
    for (int i = 0; i < N; ++i) ok &= f[i * s] == (rngx_u24(WORDS[i]) < pf[i * s] ? 1.0f : 0.0f);
    run_p(RNGX_BFLOAT16, h, s, ph);
    for (int i = 0; i < N; ++i) ok &= h[i * s] == (rngx_u24(WORDS[i]) < rngx_bf16_to_f32(ph[i * s]) ? 0x3F80 : 0);
    run_p(RNGX_FLOAT64, d, s, pd);
    for (int i = 0; i < N; ++i) ok &= d[i * s] == (rngx_u53(WORDS[2 * i], WORDS[2 * i + 1]) < pd[i * s] ? 1.0 : 0.0);
    CHECK_MSG(ok, "    bernoulli loops, stride %lld\n", (long long)s);

    CHECK(rngx_randint_params(RNGX_BITS32, INT64_MIN, INT64_MAX, -1000, -1000 + (int64_t)(1u << 31 | 12345), &p) == NULL);
    run(rngx_randint, &p, RNGX_BITS32, f, s, NULL);
    ok = 1;
    for (int i = 0; i < N; ++i) {
      uint32_t v;
      memcpy(&v, &f[i * s], 4);
      ok &= v == (uint32_t)(-1000 + (int64_t)rngx_randint32(1u << 31 | 12345, WORDS[2 * i], WORDS[2 * i + 1]));
    }
    CHECK(rngx_randint_params(RNGX_BITS64, INT64_MIN, INT64_MAX, INT64_MIN, INT64_MAX, &p) == NULL);
    run(rngx_randint, &p, RNGX_BITS64, q, s, NULL);
    for (int i = 0; i < N; ++i) ok &= q[i * s] == (uint64_t)INT64_MIN + rngx_randint64(UINT64_MAX, WORDS + 4 * i);
    /* int64 with a range up to 2^32 takes two words, as the narrower types (2^32 itself: the first word). */
    static const uint64_t narrow[] = {1000, 1ull << 32};
    for (int c = 0; c < 2; ++c) {
      CHECK(rngx_randint_params(RNGX_BITS64, INT64_MIN, INT64_MAX, -((int64_t)1 << 40), -((int64_t)1 << 40) + (int64_t)narrow[c], &p) == NULL);
      run(rngx_randint, &p, RNGX_BITS64, q, s, NULL);
      for (int i = 0; i < N; ++i)
        ok &= q[i * s] == (uint64_t)(-((int64_t)1 << 40)) + rngx_randint32((uint32_t)narrow[c], WORDS[2 * i], WORDS[2 * i + 1]);
    }
    CHECK_MSG(ok, "    randint loops, stride %lld\n", (long long)s);
  }
}

/* Every value of a truncated normal lies in [a, b], at the bounds' edges and far in a tail too. */
static void check_truncnorm_bounds(void) {
  static const double cases[][4] = {{0, 1, -2, 2}, {0, 1, 4, 4.5}, {0, 1, -40, -39}, {3, 0.01, 2.9, 3.0000001},
                                    {0, 1, -1e-9, 1e-9}, {1, 2, 0.1, 0.1000001}};
  static const rngx_dtype dts[] = {RNGX_FLOAT16, RNGX_BFLOAT16, RNGX_FLOAT32, RNGX_FLOAT64};
  for (size_t c = 0; c < sizeof cases / sizeof *cases; ++c)
    for (size_t t = 0; t < 4; ++t) {
      rngx_params p = {0};
      if (rngx_truncnorm_params(dts[t], cases[c][0], cases[c][1], cases[c][2], cases[c][3], &p) != 0) {
        CHECK(dts[t] != RNGX_FLOAT64); /* only a narrow type can lack a value in [a, b] */
        continue;
      }
      static double out[N];
      const int64_t size = N, stride = 1;
      const rngx_job job = {.keys = {.seed = 3, .offset = 0, .event = N}, .dtype = dts[t], .ndim = 1, .sizes = &size,
                            .out = {out, &stride}};
      rngx_truncnorm(&job, &p, 0, N);
      int ok = 1;
      for (int i = 0; i < N; ++i) {
        double v;
        if (dts[t] == RNGX_FLOAT64) v = out[i];
        else if (dts[t] == RNGX_FLOAT32) v = ((float *)out)[i];
        else if (dts[t] == RNGX_FLOAT16) v = rngx_f16_to_f32(((uint16_t *)out)[i]);
        else v = rngx_bf16_to_f32(((uint16_t *)out)[i]);
        ok &= v >= cases[c][2] && v <= cases[c][3];
      }
      CHECK_MSG(ok, "    truncnorm case %zu dtype %d out of [a, b]\n", c, (int)dts[t]);
    }
}

int main(void) {
  check_normal_accuracy();
  check_cdf_and_ndtri();
  check_randint();
  check_loops();
  check_truncnorm_bounds();
  return check_summary();
}
