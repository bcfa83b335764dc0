/* The CPU walk: which elements, in which order, with which words. Every element's value depends only on its
 * logical index, so callers may split a tensor into any chunks, on any threads, and get the same bits.
 *
 * One pass over memory: each op reads its input (if any) once and writes its output once, with the words made
 * in L1-sized batches right before use. The dims are first collapsed (size-1 dims dropped, neighbours merged
 * where both operands allow), so a contiguous tensor is one row and a channels_last one is rows of H*W with
 * stride C. Rows are visited with an odometer, never a per-element div/mod, and each op's loop runs along one
 * row with a constant stride. */
#include "walk.h"

#include <string.h>

#include "keys.h"
#include "philox.h"
#include "stream.h"

/* Words per batch: whole SIMD groups (AVX-512 fills 32 blocks = 128 words at a time), few enough that the
 * words stay in L1 next to the data they meet. */
#define BATCH_WORDS 512
/* Rows strided in memory (channels_last: stride C) are walked in tiles of TILE_ROWS rows and TILE_WORDS
 * words per row, so neighbouring rows fill the same cache lines while those are still in cache. */
#define TILE_ROWS 16
#define TILE_WORDS 256

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* ---- layout ---- */

/* The memory offsets (elements) of a row's first element, and the row's index over the outer dims. */
typedef struct {
  int64_t idx[RNGX_MAX_DIMS];
  int64_t out, in, in2;
} rngx_cursor;

static void cursor_seek(const rngx_layout *l, int64_t row, rngx_cursor *c) {
  c->out = c->in = c->in2 = 0;
  for (int d = l->nd - 2; d >= 0; --d) {
    c->idx[d] = row % l->size[d];
    row /= l->size[d];
    c->out += c->idx[d] * l->so[d];
    c->in += c->idx[d] * l->si[d];
    c->in2 += c->idx[d] * l->si2[d];
  }
}

static void cursor_next(const rngx_layout *l, rngx_cursor *c) {
  for (int d = l->nd - 2; d >= 0; --d) {
    c->out += l->so[d];
    c->in += l->si[d];
    c->in2 += l->si2[d];
    if (++c->idx[d] < l->size[d]) return;
    c->out -= l->size[d] * l->so[d];
    c->in -= l->size[d] * l->si[d];
    c->in2 -= l->size[d] * l->si2[d];
    c->idx[d] = 0;
  }
}

typedef struct {
  const rngx_job *job;
  const rngx_op *op;
  const rngx_layout *l;
  int k;                 /* words per element */
  int64_t size, in_size; /* element sizes in bytes: the output's, the input's */
} rngx_walk;

void rngx_key_of_segment(const rngx_job *job, int64_t q, uint64_t *seed, uint64_t *offset, uint64_t *pos) {
  const rngx_keys *keys = &job->keys;
  const int seg_dims = keys->seg_dims > keys->key_dims ? keys->seg_dims : keys->key_dims;
  int64_t at;
  rngx_segment(q, seg_dims, keys->key_dims, job->sizes, keys->key_strides, keys->pos_strides, keys->first, &at, pos);
  *seed = keys->pairs == NULL ? keys->seed : (uint64_t)keys->pairs[at];
  *offset = keys->pairs == NULL ? keys->offset : (uint64_t)keys->pairs[at + 1];
}

/* The lane (word within its block) of element i's first word. */
static uint64_t lane_of(const rngx_walk *wk, int64_t i) {
  const int64_t event = wk->job->keys.event, q = i / event;
  uint64_t seed, offset, pos;
  rngx_key_of_segment(wk->job, q, &seed, &offset, &pos);
  return (uint64_t)wk->k * (pos + (uint64_t)(i - q * event)) & 3u;
}

/* The words of logical elements [i, i + n), one segment after another, from buf + HEAD on: the first segment's
 * whole blocks go to buf + HEAD, so its words start at buf + HEAD + lane_of(i); each later segment's words go
 * right after the words before them, its first block written `lane` words early over the (saved and restored)
 * last words of the segment before. buf holds HEAD + lane_of(i) + k * n words, plus 3 that a last block may
 * write. */
#define HEAD 4
static const uint32_t *words_for(const rngx_walk *wk, int64_t i, int64_t n, uint32_t *buf) {
  const int64_t event = wk->job->keys.event, k = wk->k;
  uint32_t *next = buf + HEAD;
  const uint32_t *words = NULL;
  for (int64_t end = i + n; i < end;) {
    const int64_t q = i / event, j = i - q * event, m = min64(end - i, event - j);
    uint64_t seed, offset, pos;
    rngx_key_of_segment(wk->job, q, &seed, &offset, &pos);
    const uint64_t e = pos + (uint64_t)j, first = offset + rngx_element_block(e, (unsigned)k);
    const uint64_t lane = rngx_element_lane(e, (unsigned)k);
    const int64_t blocks = (int64_t)((lane + (uint64_t)(k * m) + 3u) >> 2);
    if (words == NULL) {
      rngx_fill_blocks(seed, first, blocks, next);
      words = next + lane;
      next += lane;
    } else {
      uint32_t saved[3];
      memcpy(saved, next - lane, lane * sizeof *saved);
      rngx_fill_blocks(seed, first, blocks, next - lane);
      memcpy(next - lane, saved, lane * sizeof *saved);
    }
    next += k * m;
    i += m;
  }
  return words;
}

/* Elements from i on that the batch holding i may take: all, or for a paired op the rest of i's segment (a later
 * segment's words would overwrite the partner words words_for leaves around this one's). */
static int64_t batch_room(const rngx_walk *wk, int64_t i) {
  const int64_t event = wk->job->keys.event;
  return wk->op->paired ? event - i % event : INT64_MAX;
}

/* Whether element i's stream index is odd (paired ops: the second of its pair). */
static int odd_at(const rngx_walk *wk, int64_t i) { return (int)(lane_of(wk, i) / (uint64_t)wk->k) & 1; }

/* The op's loop on n elements of one row from column col, whose row starts at memory offsets `at` (out, in,
 * in2). */
typedef struct {
  int64_t out, in, in2;
} rngx_row;

static void span_at(const rngx_walk *wk, const uint32_t *w, int64_t n, rngx_row at, int64_t col, int odd) {
  const rngx_layout *l = wk->l;
  const int64_t so = l->so[l->nd - 1], si = l->si[l->nd - 1], si2 = l->si2[l->nd - 1];
  const int reads = wk->op->reads_input;
  const rngx_span r = {w,
                       n,
                       so,
                       si,
                       (char *)wk->job->out.data + (at.out + col * so) * wk->size,
                       reads > 0 ? (const char *)wk->job->in.data + (at.in + col * si) * wk->in_size : 0,
                       odd,
                       reads > 1 ? (const char *)wk->job->in2.data + (at.in2 + col * si2) * wk->in_size : 0,
                       si2};
  wk->op->loop(wk->op, &r);
}

/* Logical order, in batches of consecutive elements, each cut into spans along rows. Batches end on block
 * boundaries, so after the first every batch is whole SIMD groups. */
static void walk_batches(const rngx_walk *wk, int64_t begin, int64_t end) {
  uint32_t buf[HEAD + BATCH_WORDS + 4];
  const int64_t row_len = wk->l->size[wk->l->nd - 1];
  rngx_cursor c;
  cursor_seek(wk->l, begin / row_len, &c);
  int64_t col = begin % row_len;
  for (int64_t i = begin; i < end;) {
    const int64_t n = min64(min64(end - i, (BATCH_WORDS - (int64_t)lane_of(wk, i)) / wk->k), batch_room(wk, i));
    const uint32_t *w = words_for(wk, i, n, buf);
    const int odd = wk->op->paired && odd_at(wk, i);
    for (int64_t j = 0; j < n;) {
      const int64_t len = min64(row_len - col, n - j);
      span_at(wk, w + wk->k * j, len, (rngx_row){c.out, c.in, c.in2}, col, odd ^ (int)(j & 1));
      j += len;
      col += len;
      if (col == row_len) {
        col = 0;
        cursor_next(wk->l, &c);
      }
    }
    i += n;
  }
}

/* Tiles of TILE_ROWS rows by TILE_WORDS words per row, each row's piece clipped to [begin, end). */
static void walk_tiles(const rngx_walk *wk, int64_t begin, int64_t end) {
  uint32_t buf[HEAD + TILE_WORDS + 8];
  rngx_row row_at[TILE_ROWS];
  const int64_t row_len = wk->l->size[wk->l->nd - 1], width = TILE_WORDS / wk->k, last_row = (end - 1) / row_len;
  rngx_cursor c;
  cursor_seek(wk->l, begin / row_len, &c);
  for (int64_t row = begin / row_len; row <= last_row; row += TILE_ROWS) {
    const int rows = (int)min64(TILE_ROWS, last_row - row + 1);
    for (int t = 0; t < rows; ++t) {
      row_at[t] = (rngx_row){c.out, c.in, c.in2};
      cursor_next(wk->l, &c);
    }
    for (int64_t col = 0; col < row_len; col += width) {
      for (int t = 0; t < rows; ++t) {
        const int64_t start = (row + t) * row_len;
        const int64_t hi = min64(start + min64(col + width, row_len), end);
        for (int64_t lo = max64(start + col, begin), n; lo < hi; lo += n) {
          n = min64(hi - lo, batch_room(wk, lo));
          span_at(wk, words_for(wk, lo, n, buf), n, row_at[t], lo - start, wk->op->paired && odd_at(wk, lo));
        }
      }
    }
  }
}

void rngx_execute(const rngx_job *job, const rngx_op *op, int64_t begin, int64_t end) {
  rngx_layout l;
  if (begin >= end) return;
  rngx_collapse(job, op->reads_input, &l);
  const rngx_walk wk = {job, op, &l, op->k, rngx_dtype_size(job->dtype), rngx_dtype_size(op->in_dtype)};
  const int strided = l.so[l.nd - 1] != 1 || (op->reads_input > 0 && l.si[l.nd - 1] != 1) ||
                      (op->reads_input > 1 && l.si2[l.nd - 1] != 1);
  if (l.nd >= 2 && strided && l.size[l.nd - 1] >= TILE_WORDS / wk.k)
    walk_tiles(&wk, begin, end);
  else
    walk_batches(&wk, begin, end);
}
