/* Every kernel of kernels.h against a per-element reference written from the stream v2 contract (reference.h; issue 8,
 * docs/stream.md): the element at local index j of its key (seed, offset) takes words k*j .. k*j + k - 1 of
 * that key, W(t) = block(seed, offset + t / 4)[t % 4], whatever its memory position; with batched keys, its
 * leading key_dims indices pick the key (stride 0: broadcast) and the rest give j.
 *
 * Each case runs on contiguous, channels_last, transposed and sliced-with-gaps buffers (inputs also expanded,
 * stride 0), for the 4 float dtypes and bits at 8/16/32/64 bits, with one key by value (offsets at the 2^32
 * carry and near the 2^64 wrap) and with batched keys in memory (per sample, per channel, broadcast dims,
 * per element, keys padded apart, runs of odd length), whole and split into chunks: random ones and ones cut
 * right at, before and after key boundaries. Buffers are allocated to their exact span and pre-filled with a
 * sentinel, so a write to a gap shows here and one past the end under ASan. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kernels/convert.h"
#include "kernels/kernels.h"
#include "reference.h"

enum { NDIM = 4 };
typedef struct { const char *name; int64_t strides[NDIM], start, span; } layout;

static const rngx_dtype ALL_DTYPES[] = {RNGX_FLOAT16, RNGX_BFLOAT16, RNGX_FLOAT32, RNGX_FLOAT64,
                                        RNGX_BITS8,   RNGX_BITS16,   RNGX_BITS32,   RNGX_BITS64};
static const rngx_dtype FLOAT_DTYPES[] = {RNGX_FLOAT16, RNGX_BFLOAT16, RNGX_FLOAT32, RNGX_FLOAT64};
static const uint8_t SENTINEL = 0xA5;

static uint64_t rng_state = 0x5DEECE66Dull;
static uint64_t next_u64(void) { /* xorshift64 */
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  return rng_state ^= rng_state << 17;
}

static uint64_t load_bits(const void *buf, rngx_dtype dt, int64_t pos) {
  uint64_t b = 0; /* little-endian: the low bytes hold the element */
  memcpy(&b, (const char *)buf + (size_t)pos * ref_elsize(dt), ref_elsize(dt));
  return b;
}

/* ---- keys: one by value, or a (*B, 2) state in memory ---- */

/* B_d = sizes[d] where batched[d], else 1; keys `pad` pairs apart in memory (1: a contiguous state). */
typedef struct { const char *name; int by_value, batched[NDIM], pad; } key_cfg;

typedef struct {
  rngx_keys keys;
  int64_t key_strides[NDIM];
  int64_t *pairs; /* malloc'd, exactly the state's span */
} key_set;

/* Offsets that keys in memory draw from: block 0, odd ones, the 2^32 carry, the last blocks before 2^64. */
static const uint64_t KEY_OFFSETS[] = {0, 1, 3, 17, (1ull << 32) - 2, 0 - 1ull, 0 - 2ull, 0 - 5ull, 0x0123456789ABCDEFull};

static void make_keys(const key_cfg *cfg, const int64_t *sizes, uint64_t seed, uint64_t offset, key_set *ks) {
  memset(ks, 0, sizeof *ks);
  int64_t npairs = 1, stride = 2 * cfg->pad;
  ks->keys.key_strides = ks->key_strides;
  for (int d = NDIM - 1; d >= 0; --d) {
    const int64_t b = cfg->batched[d] ? sizes[d] : 1;
    ks->key_strides[d] = b == 1 ? 0 : stride; /* as the glue does: 0 where the state broadcasts */
    if (b != 1 && ks->keys.key_dims == 0) ks->keys.key_dims = d + 1;
    stride *= b;
    npairs *= b;
  }
  ks->keys.event = 1;
  for (int d = ks->keys.key_dims; d < NDIM; ++d) ks->keys.event *= sizes[d];
  if (cfg->by_value) {
    ks->keys.seed = seed;
    ks->keys.offset = offset;
    return;
  }
  const int64_t words = 2 * cfg->pad * npairs;
  ks->pairs = malloc((size_t)words * sizeof *ks->pairs);
  for (int64_t w = 0; w < words; ++w) ks->pairs[w] = (int64_t)0x5A5A5A5A5A5A5A5Aull; /* the gaps: never read */
  for (int64_t p = 0; p < npairs; ++p) {
    ks->pairs[2 * cfg->pad * p] = (int64_t)(p % 5 == 4 ? seed : next_u64()); /* two keys share a seed */
    ks->pairs[2 * cfg->pad * p + 1] =
        (int64_t)(npairs == 1 ? offset : KEY_OFFSETS[(uint64_t)(p + (int64_t)(next_u64() % 3)) % 9]);
  }
  ks->keys.pairs = ks->pairs;
  ks->keys.seed = ~seed; /* must be ignored: the keys are in pairs */
  ks->keys.offset = 12345;
}

/* ---- running the kernels ---- */

typedef struct {
  int64_t sizes[NDIM], numel;
  rngx_dtype dt;
  const layout *out_l, *in_l;
  void *out, *in; /* whole allocations, span elements each */
  const rngx_keys *keys;
} fixture;

static rngx_job job_of(const fixture *f, void *out) {
  const size_t es = ref_elsize(f->dt);
  return (rngx_job){.keys = *f->keys, .dtype = f->dt, .ndim = NDIM, .sizes = f->sizes,
                    .out = {(char *)out + (size_t)f->out_l->start * es, f->out_l->strides},
                    .in = {(char *)f->in + (size_t)f->in_l->start * es, f->in_l->strides}};
}

static void run_job(const rngx_job *job, const op_call *c, int64_t begin, int64_t end) { run_call(job, c, begin, end); }

static int64_t pos_of(const layout *l, const int64_t *sizes, int64_t i) {
  int64_t pos = l->start;
  for (int d = NDIM - 1; d >= 0; --d) {
    pos += (i % sizes[d]) * l->strides[d];
    i /= sizes[d];
  }
  return pos;
}

/* Chunk ends for [0, numel): random lengths 0..299 (some cross a batch), or cut around key boundaries: at
 * q * event - 1, q * event and q * event + 1 in turn, so chunks start and end inside, at and across runs. */
static int64_t next_end(int how, int64_t begin, int64_t numel, int64_t event, int64_t *q) {
  int64_t end = begin;
  if (how == 0) {
    end = begin + (int64_t)(next_u64() % 300);
  } else {
    while (end <= begin && *q * event - 1 <= numel) {
      end = *q * event + (*q % 3) - 1;
      ++*q;
    }
    if (end <= begin) end = numel;
  }
  return end > numel ? numel : end;
}

static const char *describe(const fixture *f, const op_call *c, const char *keys) {
  static char buf[256];
  snprintf(buf, sizeof buf, "%s(%g, %g) %s out=%s in=%s keys=%s sizes=(%lld,%lld,%lld,%lld)", REF_OP_NAMES[c->op],
           c->a, c->b, REF_DTYPE_NAMES[f->dt], f->out_l->name, f->in_l->name, keys, (long long)f->sizes[0],
           (long long)f->sizes[1], (long long)f->sizes[2], (long long)f->sizes[3]);
  return buf;
}

/* One full call against the reference, gaps untouched, then the same call in chunks, bit for bit. */
static void check_call(const fixture *f, const op_call *c, const char *keys_name) {
  const size_t es = ref_elsize(f->dt), bytes = (size_t)f->out_l->span * es;
  char *chunked = malloc(bytes), *written = calloc(1, (size_t)f->out_l->span);
  memset(f->out, SENTINEL, bytes);
  const rngx_job job = job_of(f, f->out);
  run_job(&job, c, 0, f->numel);
  long bad = 0;
  for (int64_t i = 0; i < f->numel; ++i) {
    const int64_t p = pos_of(f->out_l, f->sizes, i);
    const ref_key k = ref_key_of(&job, i);
    const uint64_t got = load_bits(f->out, f->dt, p);
    const uint64_t want = ref_element(c, f->dt, k.seed, k.offset, k.j, load_bits(f->in, f->dt, pos_of(f->in_l, f->sizes, i)));
    written[p] = 1;
    if (got != want && bad++ == 0 && check_failed < CHECK_MAX_PRINTED)
      printf("%s: element %lld (key %llx/%llu, j %lld) is 0x%llx, want 0x%llx\n", describe(f, c, keys_name),
             (long long)i, (unsigned long long)k.seed, (unsigned long long)k.offset, (long long)k.j,
             (unsigned long long)got, (unsigned long long)want);
  }
  CHECK(bad == 0);
  long touched_gaps = 0;
  for (int64_t p = 0; p < f->out_l->span; ++p)
    for (size_t byte = 0; !written[p] && byte < es; ++byte)
      touched_gaps += ((const uint8_t *)f->out)[(size_t)p * es + byte] != SENTINEL;
  CHECK_MSG(touched_gaps == 0, "    %s\n", describe(f, c, keys_name));
  const rngx_job cjob = job_of(f, chunked);
  for (int how = 0; how < 2; ++how) {
    memset(chunked, SENTINEL, bytes);
    int64_t q = 1;
    for (int64_t begin = 0, end; begin < f->numel; begin = end) {
      end = next_end(how, begin, f->numel, f->keys->event, &q);
      run_job(&cjob, c, begin, end);
    }
    CHECK_MSG(memcmp(chunked, f->out, bytes) == 0, "    chunks %d: %s\n", how, describe(f, c, keys_name));
  }
  free(chunked);
  free(written);
}

static void fill_input(void *in, rngx_dtype dt, int64_t span) {
  for (int64_t p = 0; p < span; ++p) {
    const float r = (float)((int64_t)(next_u64() % 8001) - 4000) / 1000.0f; /* [-4, 4], zeros too */
    const float v = p % 97 == 0 ? -0.0f : r;
    const uint64_t b = dt == RNGX_FLOAT64 ? ref_f64_bits(v) : ref_store_f32(dt, v);
    memcpy((char *)in + (size_t)p * ref_elsize(dt), &b, ref_elsize(dt));
  }
}

static int make_layouts(const int64_t *s, layout *l) { /* s = (N, C, H, W) */
  const int64_t N = s[0], C = s[1], H = s[2], W = s[3], numel = N * C * H * W;
  const int64_t p3 = 2, p2 = 2 * W, p1 = (H + 2) * p2, p0 = (C + 1) * p1; /* padded (N, C+1, H+2, 2W) */
  l[0] = (layout){"contiguous", {C * H * W, H * W, W, 1}, 0, numel};
  l[1] = (layout){"channels_last", {H * W * C, 1, W * C, C}, 0, numel};
  l[2] = (layout){"transposed", {C * W * H, W * H, 1, H}, 0, numel};
  l[3] = (layout){"sliced", {p0, p1, p2, p3}, p1 + p2 + 1, N * p0};
  l[4] = (layout){"expanded", {H * W, 0, W, 1}, 0, N * H * W}; /* inputs only: aliases elements */
  return 4;                                                     /* output layouts; l[4] too for inputs */
}

static const key_cfg KEY_CFGS[] = {
    {"one key in memory (B all 1)", 0, {0, 0, 0, 0}, 1},
    {"(N,1,1,1) per sample", 0, {1, 0, 0, 0}, 1},
    {"(N,C,1,1)", 0, {1, 1, 0, 0}, 1},
    {"(1,C,1,1) broadcast N", 0, {0, 1, 0, 0}, 1},
    {"(N,1,H,1) broadcast C, pad 2", 0, {1, 0, 1, 0}, 2},
    {"(1,1,H,1)", 0, {0, 0, 1, 0}, 1},
    {"(N,C,H,W) per element", 0, {1, 1, 1, 1}, 1},
    {"(1,C,1,W) per element, broadcast, pad 3", 0, {0, 1, 0, 1}, 3},
};
enum { N_KEY_CFGS = sizeof KEY_CFGS / sizeof KEY_CFGS[0] };

static void check_all_layouts(void) {
  /* Rows shorter and longer than the kernels' batches and tiles, and more rows than one tile of rows; the
   * large shapes run fewer keys and calls to stay quick. Key runs: 210, 42, 7 (odd: not whole blocks) and 1 on
   * the first shape; on the others, rows of 300 or 261 per key, or one key per element. */
  static const int64_t shapes[][NDIM] = {{2, 5, 6, 7}, {1, 3, 1, 300}, {1, 18, 1, 261}};
  /* Bounds that are not values of the dtype too (0.1, 0.7; +-1000.3 is 1000.5 in float16): lo and hi are rounded
   * to it, and the width is their difference rounded again. */
  const op_call calls[] = {{OP_UNIFORM, -3, 7.25}, {OP_NOISE, 0.5, 0},       {OP_DROPOUT, 0.3, 0},
                           {OP_UNIFORM, 0, 1},     {OP_UNIFORM, -0.5, 0.5},   {OP_UNIFORM, 2, 2},
                           {OP_UNIFORM, 0.1, 0.7}, {OP_UNIFORM, -1000.3, 1000.9},
                           {OP_NOISE, 3, 0},       {OP_NOISE, 0.1, 0},        {OP_DROPOUT, 0.5, 0},
                           {OP_DROPOUT, 1, 0},     {OP_DROPOUT, 0.1, 0}};
  const op_call bits_call = {OP_BITS, 0, 0};
  enum { N_CALLS = sizeof calls / sizeof calls[0], N_OFFSETS = 7, N_PAIRS = 2 * N_OFFSETS };
  const uint64_t seeds[2] = {0, 0xFEDCBA9876543210ull};
  /* block offsets: odd, the 2^32 carry inside the call, the 2^64 wrap inside the call */
  const uint64_t offsets[N_OFFSETS] = {0, 1, 2, 5, (1ull << 32) - 3, 0 - 1ull, 0 - 7ull};
  const size_t first_pair[] = {0, N_PAIRS - 3, N_PAIRS - 2}; /* per shape: which by-value (seed, offset) run */
  const size_t batched_calls[] = {3, 3, 1};                  /* per shape: calls with keys in memory */
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s) {
    layout l[5];
    const int n_out = make_layouts(shapes[s], l);
    fixture f = {.sizes = {shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3]}};
    f.numel = f.sizes[0] * f.sizes[1] * f.sizes[2] * f.sizes[3];
    for (size_t d = 0; d < sizeof ALL_DTYPES / sizeof *ALL_DTYPES; ++d) {
      const int bits = ref_is_bits(ALL_DTYPES[d]);
      f.dt = ALL_DTYPES[d];
      for (int lo = 0; lo < n_out; ++lo)
        for (int li = 0; li <= n_out; ++li) {
          if (bits && li > 0) continue; /* bits reads no input */
          f.out_l = &l[lo];
          f.in_l = &l[li];
          f.out = malloc((size_t)f.out_l->span * ref_elsize(f.dt));
          f.in = malloc((size_t)f.in_l->span * ref_elsize(f.dt));
          fill_input(f.in, f.dt, f.in_l->span);
          for (size_t c = 0; c < (bits ? 1 : N_CALLS); ++c) {
            const op_call *call = bits ? &bits_call : &calls[c];
            const key_cfg by_value = {"by value", 1, {0, 0, 0, 0}, 1};
            for (size_t pair = first_pair[s]; pair < N_PAIRS; ++pair) {
              key_set ks;
              make_keys(&by_value, f.sizes, seeds[pair / N_OFFSETS], offsets[pair % N_OFFSETS], &ks);
              f.keys = &ks.keys;
              check_call(&f, call, by_value.name);
            }
            if (!bits && c >= batched_calls[s]) continue;
            for (int k = 0; k < N_KEY_CFGS; ++k) {
              key_set ks;
              make_keys(&KEY_CFGS[k], f.sizes, next_u64(), offsets[(size_t)k % N_OFFSETS], &ks);
              f.keys = &ks.keys;
              check_call(&f, call, KEY_CFGS[k].name);
              free(ks.pairs);
            }
          }
          free(f.out);
          free(f.in);
        }
    }
  }
}

/* The spec's own words for batched keys, checked without the reference: with a (N,1,1,1) state each sample is
 * the op on that sample alone with its own key; along a broadcast dim values repeat; a state whose B is all ones
 * is the unbatched key. */
static void check_batched_properties(void) {
  enum { N = 3, C = 4, H = 5, W = 3, CHW = C * H * W, NUMEL = N * CHW };
  const int64_t sizes[NDIM] = {N, C, H, W}, strides[NDIM] = {CHW, H * W, W, 1}, one[NDIM] = {1, 1, 1, 1};
  const int64_t ssizes[3] = {C, H, W}, sstrides[3] = {H * W, W, 1};
  const rngx_dtype dts[] = {RNGX_FLOAT32, RNGX_FLOAT64, RNGX_BITS64, RNGX_BITS8};
  const int64_t pairs[2 * C] = {1, 0, 2, 5, (int64_t)0x8000000000000001ull, -1, 3, -2}; /* C > N keys */
  for (size_t d = 0; d < sizeof dts / sizeof *dts; ++d) {
    const rngx_dtype dt = dts[d];
    const size_t es = ref_elsize(dt);
    char *whole = malloc(NUMEL * es), *part = malloc(CHW * es), *flat = malloc(NUMEL * es);
    const int64_t key_strides[NDIM] = {2, 0, 0, 0};
    rngx_job job = {.keys = {.pairs = pairs, .key_dims = 1, .key_strides = key_strides, .event = CHW},
                    .dtype = dt, .ndim = NDIM, .sizes = sizes, .out = {whole, strides}};
    const op_call c = {ref_is_bits(dt) ? OP_BITS : OP_UNIFORM, -1, 1};
    run_job(&job, &c, 0, NUMEL);
    for (int n = 0; n < N; ++n) {
      const rngx_job sj = {.keys = {.seed = (uint64_t)pairs[2 * n], .offset = (uint64_t)pairs[2 * n + 1], .event = CHW},
                           .dtype = dt, .ndim = 3, .sizes = ssizes, .out = {part, sstrides}};
      run_job(&sj, &c, 0, CHW);
      CHECK_MSG(memcmp(whole + (size_t)n * CHW * es, part, CHW * es) == 0, "    %s sample %d\n", REF_DTYPE_NAMES[dt], n);
    }
    /* (1,C,1,1) broadcast over N: every sample equal; (1,1,1,1) in memory: the unbatched key (pairs[0]). */
    const int64_t bstrides[NDIM] = {0, 2, 0, 0};
    job.keys = (rngx_keys){.pairs = pairs, .key_dims = 2, .key_strides = bstrides, .event = H * W};
    run_job(&job, &c, 0, NUMEL);
    for (int n = 1; n < N; ++n) CHECK(memcmp(whole, whole + (size_t)n * CHW * es, CHW * es) == 0);
    job.keys = (rngx_keys){.pairs = pairs, .key_dims = 0, .key_strides = one, .event = NUMEL};
    run_job(&job, &c, 0, NUMEL);
    job.keys = (rngx_keys){.seed = 1, .offset = 0, .event = NUMEL};
    job.out.data = flat;
    run_job(&job, &c, 0, NUMEL);
    CHECK(memcmp(whole, flat, NUMEL * es) == 0);
    free(whole), free(part), free(flat);
  }
}

/* The rules that need no reference: dropout p=0 copies, p=1 zeroes, u == p keeps; noise with half=0 is x. */
static void check_special_params(void) {
  enum { N = 600 };
  const int64_t sizes[1] = {N}, stride[1] = {1};
  for (size_t d = 0; d < 4; ++d) {
    const rngx_dtype dt = FLOAT_DTYPES[d];
    const size_t es = ref_elsize(dt);
    char *x = malloc(N * es), *out = malloc(N * es);
    fill_input(x, dt, N);
    rngx_job job = {.keys = {.seed = 42, .offset = 3, .event = N}, .dtype = dt, .ndim = 1, .sizes = sizes,
                    .out = {out, stride}, .in = {x, stride}};
    run_job(&job, &(op_call){OP_DROPOUT, 0.0, 0}, 0, N);
    CHECK(memcmp(out, x, N * es) == 0);
    run_job(&job, &(op_call){OP_DROPOUT, 1.0, 0}, 0, N);
    long nonzero = 0;
    for (int64_t i = 0; i < N; ++i) nonzero += load_bits(out, dt, i) != 0;
    CHECK(nonzero == 0);
    run_job(&job, &(op_call){OP_NOISE, 0.0, 0}, 0, N);
    long differ = 0; /* numerically equal: -0 + (+0) is +0 in IEEE arithmetic */
    for (int64_t i = 0; i < N; ++i)
      differ += dt == RNGX_FLOAT64 ? ref_bits_f64(load_bits(out, dt, i)) != ref_bits_f64(load_bits(x, dt, i))
                                   : ref_load_f32(dt, load_bits(out, dt, i)) != ref_load_f32(dt, load_bits(x, dt, i));
    CHECK(differ == 0);
    /* p equal to element 5's own u: kept (u >= p), and an infinitesimally larger p drops it. */
    const uint32_t w0 = ref_word(42, 3, dt, 5, 0), w1 = ref_word(42, 3, dt, 5, 1);
    const double u = dt == RNGX_FLOAT64 ? (double)ref_m53(w0, w1) * 0x1p-53 : (double)(w0 & 0xFFFFFFu) * 0x1p-24;
    const uint64_t one = dt == RNGX_FLOAT64 ? ref_f64_bits(1.0) : ref_store_f32(dt, 1.0f);
    memcpy(x + 5 * es, &one, es);
    run_job(&job, &(op_call){OP_DROPOUT, u, 0}, 5, 6);
    CHECK(load_bits(out, dt, 5) != 0);
    run_job(&job, &(op_call){OP_DROPOUT, nextafter(u, 2.0), 0}, 5, 6);
    CHECK(load_bits(out, dt, 5) == 0);
    free(x);
    free(out);
  }
}

/* 0-dim tensors (one element, no sizes), by value and in memory, and empty calls. */
static void check_degenerate(void) {
  const int64_t pair[2] = {9, 11};
  for (size_t d = 0; d < sizeof ALL_DTYPES / sizeof *ALL_DTYPES; ++d) {
    const rngx_dtype dt = ALL_DTYPES[d];
    const op_call c = {ref_is_bits(dt) ? OP_BITS : OP_NOISE, 0.5, 0};
    for (int in_memory = 0; in_memory < 2; ++in_memory) {
      uint64_t out = 0, x = dt == RNGX_FLOAT64 ? ref_f64_bits(1.5) : ref_store_f32(dt, 1.5f);
      const rngx_keys keys = in_memory ? (rngx_keys){.pairs = pair, .event = 1}
                                       : (rngx_keys){.seed = 9, .offset = 11, .event = 1};
      const rngx_job job = {.keys = keys, .dtype = dt, .ndim = 0, .out = {&out, NULL}, .in = {&x, NULL}};
      run_job(&job, &c, 0, 1);
      CHECK(out == ref_element(&c, dt, 9, 11, 0, x));
      out = 0x1234;
      run_job(&job, &c, 0, 0);
      run_job(&job, &c, 1, 1);
      CHECK(out == 0x1234);
    }
  }
}

/* The parameters the kernels read, from the spec: uniform's bounds as values of the dtype (through float32, so a
 * double rounds twice) and their float32 difference rounded to it, float64 unrounded; noise's -half and 2 half;
 * dropout keeps iff the integer behind u is >= ceil(p * 2^bits), scaling by 1 / (1 - p). */
static void check_params(void) {
  const double values[] = {0, -0.0, 1, 0.1, -0.7, 1000.3, -1000.9, 65504, 65520, 1e-8, 3.0e38, -1e30, 2.5, 1 + 0x1p-11 + 0x1p-40};
  enum { NV = sizeof values / sizeof values[0] };
  for (size_t d = 0; d < 4; ++d) {
    const rngx_dtype dt = FLOAT_DTYPES[d];
    for (size_t i = 0; i < NV; ++i) {
      if (dt != RNGX_FLOAT64) {
        const float got = rngx_round_to(dt, values[i]), want = ref_round_to(dt, values[i]);
        CHECK_MSG(memcmp(&got, &want, 4) == 0, "    round_to(%s, %g): %a, want %a\n", REF_DTYPE_NAMES[dt], values[i],
                  (double)got, (double)want);
      }
      for (size_t j = 0; j < NV; ++j) {
        const double low = values[i], high = values[j];
        rngx_params p = {0};
        const char *refused = rngx_uniform_params(dt, low, high, &p);
        const float lo = ref_round_to(dt, low), hi = ref_round_to(dt, high), width = ref_round_to(dt, hi - lo);
        /* refused exactly when low > high or a bound or the width is not finite in the dtype */
        const int valid = low <= high && (dt == RNGX_FLOAT64 || (isfinite(lo) && isfinite(hi) && isfinite(width)));
        CHECK_MSG((refused == NULL) == valid, "    uniform_params(%s, %g, %g): %s\n", REF_DTYPE_NAMES[dt], low, high,
                  refused ? refused : "accepted");
        if (refused != NULL) continue;
        if (dt == RNGX_FLOAT64) {
          CHECK(p.lo64 == low && p.width64 == high - low);
        } else {
          CHECK_MSG((p.lo == lo || (isnan(p.lo) && isnan(lo))) && (p.width == width || (isnan(p.width) && isnan(width))),
                    "    uniform_params(%s, %g, %g): lo %a width %a, want %a %a\n", REF_DTYPE_NAMES[dt], low, high,
                    (double)p.lo, (double)p.width, (double)lo, (double)width);
        }
      }
    }
  }
  /* A double that float32 rounds to a float16 tie: through float32 it goes to even (1), directly it would not. */
  CHECK(rngx_round_to(RNGX_FLOAT16, 1 + 0x1p-11 + 0x1p-40) == 1.0f);
  CHECK(rngx_round_to(RNGX_FLOAT16, 1000.3) == 1000.5f);
  CHECK(rngx_round_to(RNGX_BFLOAT16, 0.1) == 0.10009765625f);
  const double halves[] = {0, 0.5, 0.1, 3, 1e-30, 1e38};
  for (size_t i = 0; i < sizeof halves / sizeof *halves; ++i) {
    const double h = halves[i];
    rngx_params p = {0};
    CHECK(rngx_quantize_noise_params(RNGX_FLOAT32, h, &p) == NULL);
    CHECK(p.lo == (float)-h && p.width == (float)(2 * h) && p.lo64 == -h && p.width64 == 2 * h);
  }
  const double ps[] = {0, 0.1, 0.3, 0.5, 1.0 / 3, 0.999, 1, 0x1p-24, 0x1p-25, 0x1p-53, 1 - 0x1p-53};
  for (size_t i = 0; i < sizeof ps / sizeof *ps; ++i) {
    const double q = ps[i];
    rngx_params p = {0};
    CHECK(rngx_dropout_params(RNGX_FLOAT32, q, &p) == NULL);
    CHECK_MSG(p.keep == (uint32_t)ceil(q * 16777216.0) && p.keep64 == (uint64_t)ceil(q * 9007199254740992.0),
              "    dropout_params(%a): keep %u %llu\n", q, p.keep, (unsigned long long)p.keep64);
    if (q < 1) CHECK(p.scale64 == 1 / (1 - q) && p.scale == (float)(1 / (1 - q)));
    /* keep is the least integer m with m * 2^-bits >= p */
    CHECK(p.keep == 0 || (double)(p.keep - 1) * 0x1p-24 < q);
    CHECK((double)p.keep * 0x1p-24 >= q);
  }
}

/* The op table's words (csrc/kernels/op_table.h) as the spec gives them: bits and the float ops here. */
static void check_words_per_element(void) {
  for (size_t d = 0; d < sizeof ALL_DTYPES / sizeof *ALL_DTYPES; ++d) {
    const rngx_dtype dt = ALL_DTYPES[d];
    if (ref_is_bits(dt)) CHECK(rngx_bits_words(dt) == ref_k(dt));
    else CHECK(rngx_uniform_words(dt, NULL) == ref_k(dt) && rngx_quantize_noise_words(dt, NULL) == ref_k(dt) &&
               rngx_dropout_words(dt, NULL) == ref_k(dt));
  }
}

int main(void) {
  check_words_per_element();
  check_params();
  check_all_layouts();
  check_batched_properties();
  check_special_params();
  check_degenerate();
  return check_summary();
}
