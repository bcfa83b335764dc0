// The three CUDA walks over a job's elements, shared by every op (kernels_cuda.cu generates each op's functor from
// its row).
//
// An op is a functor with `T` (the output's element type in memory), `TI` (the inputs': T but for
// stochastic_round), `K` (stream words per element), `kReads` (the inputs it reads: 0, 1 `in`, or 2 `in` and `in2`)
// and `T operator()(TI x, const uint32_t *w) const` (w: the element's K words).
// Each walk hands out groups of 4 logically consecutive elements, so one Philox block (two for K == 2)
// covers a group that starts a key's segment or lies inside one with its first word on lane 0. A paired op
// (kPaired, normal) instead has `void pair(const uint32_t *w, T &c, T &s) const`: the two elements 2p and 2p + 1
// of a key's stream from their 2K words (group_values); one that reads two inputs (normal_tensor) takes theirs,
// `pair(w, xc, xs, yc, ys, c, s)`. Elements, words and
// offsets are 64-bit throughout.
#ifndef RNGX_LAYOUTS_CUH
#define RNGX_LAYOUTS_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include <type_traits>

#include "job.h"
#include "keys.h"

namespace rngx {

// Every launch goes through this macro, so tests/cuda_emu can run the kernels on the CPU (no GPU in CI).
#ifndef RNGX_LAUNCH
#define RNGX_LAUNCH(kernel, grid, block, stream, ...) kernel<<<grid, block, 0, stream>>>(__VA_ARGS__)
#endif

constexpr int kThreads = 256;
// Grid-stride beyond this many blocks (a few waves on any GPU of the A100's size or larger): each thread then
// makes several groups, so its start-up (indices, the key) is paid once for many Philox blocks.
constexpr int64_t kMaxBlocks = 4096;

// The job's keys (rngx_keys) by value: the [seed, offset] pairs are read from device memory by the kernel
// itself (CUDA-graph safe), or the single key is passed by value (pairs == nullptr).
struct Keys {
  const int64_t *pairs;
  uint64_t seed, offset, first;
  int key_dims, seg_dims;  // seg_dims: max(rngx_keys' key_dims, seg_dims), the dims that index segments
  int64_t event;
  int64_t sizes[RNGX_MAX_DIMS], strides[RNGX_MAX_DIMS];  // strides: the key's (d < key_dims), else positions'

  // The key of segment q and its first element's stream position (keys.h). (seed0, offset0): the job's key when
  // it has one, read once per thread.
  __device__ __forceinline__ void segment(int64_t q, uint64_t seed0, uint64_t offset0, uint64_t &s, uint64_t &o,
                                          uint64_t &pos) const {
    int64_t at;
    rngx_segment(q, seg_dims, key_dims, sizes, strides, strides, first, &at, &pos);
    s = key_dims == 0 ? seed0 : (uint64_t)pairs[at];
    o = key_dims == 0 ? offset0 : (uint64_t)pairs[at + 1];
  }
};

// Word r of the words from element e's first on (K words per element; r < 4 - its lane, so one block).
template <int K>
__device__ __forceinline__ uint32_t element_word(uint64_t seed, uint64_t offset, uint64_t e, int r) {
  return rngx_block(seed, offset + rngx_element_block(e, K)).v[rngx_element_lane(e, K) + r];
}

// w[0 .. NW) = NW words of key (seed, offset) from the first of element e of K words per element (word K e): the
// ceil(NW / 4) Philox blocks from its block, and one more when the words run past them.
template <int NW, int K>
__device__ __forceinline__ void fetch_words(uint64_t seed, uint64_t offset, uint64_t e, uint32_t (&w)[NW]) {
  constexpr int NB = (NW + 3) / 4;
  const uint64_t b = offset + rngx_element_block(e, K);
  const unsigned s = rngx_element_lane(e, K);
  uint32_t a[4 * NB + 4];
#pragma unroll
  for (int q = 0; q < NB; ++q) {
    const rngx_ctr c = rngx_block(seed, b + q);
#pragma unroll
    for (int r = 0; r < 4; ++r) a[4 * q + r] = c.v[r];
  }
  if (s == 0) {
#pragma unroll
    for (int j = 0; j < NW; ++j) w[j] = a[j];
    return;
  }
  if (s + NW > 4 * NB) {
    const rngx_ctr c = rngx_block(seed, b + NB);
#pragma unroll
    for (int r = 0; r < 4; ++r) a[4 * NB + r] = c.v[r];
  }
  // Constant indices only, so `a` stays in registers.
#pragma unroll
  for (int j = 0; j < NW; ++j) w[j] = s == 1 ? a[j + 1] : s == 2 ? a[j + 2] : a[j + 3];
}

// The key of a job with one key (key_dims == 0), read once per thread; zeros otherwise.
__device__ __forceinline__ void single_key(const Keys &keys, uint64_t &seed, uint64_t &offset) {
  seed = offset = 0;
  if (keys.key_dims == 0) {
    seed = keys.pairs == nullptr ? keys.seed : (uint64_t)keys.pairs[0];
    offset = keys.pairs == nullptr ? keys.offset : (uint64_t)keys.pairs[1];
  }
}

// The words of logical elements i0 .. i0 + 3: from one segment when they lie in one, else element by element.
// (seed0, offset0): the job's key when it has one key.
template <int K>
__device__ __forceinline__ void group_words(const Keys &keys, uint64_t seed0, uint64_t offset0, int64_t i0,
                                            uint32_t (&w)[4 * K]) {
  const int64_t q = keys.seg_dims == 0 ? 0 : i0 / keys.event, j = i0 - q * keys.event;
  uint64_t seed = seed0, offset = offset0, pos = keys.first;
  if (keys.seg_dims != 0) keys.segment(q, seed0, offset0, seed, offset, pos);
  if (j + 4 <= keys.event) {
    fetch_words<4 * K, K>(seed, offset, pos + (uint64_t)j, w);
    return;
  }
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    const int64_t qe = (i0 + e) / keys.event, je = i0 + e - qe * keys.event;
    keys.segment(qe, seed0, offset0, seed, offset, pos);
#pragma unroll
    for (int r = 0; r < K; ++r) w[K * e + r] = element_word<K>(seed, offset, pos + (uint64_t)je, r);
  }
}

template <class Op, class = void>
struct IsPaired {
  static constexpr bool value = false;
};
template <class Op>
struct IsPaired<Op, decltype((void)Op::kPaired)> {
  static constexpr bool value = Op::kPaired;
};

// A paired op's element at stream index e of key (seed, offset): the pair e / 2's value, cos or sin by e's parity.
// A pair's two values (c, s) from its words; an op that reads two inputs gets the even element's (xc, yc) and the
// odd one's (xs, ys).
template <class Op, class T = typename Op::T>
__device__ __forceinline__ void pair_of(const Op &op, const uint32_t *w, T xc, T xs, T yc, T ys, T &c, T &s) {
  if constexpr (Op::kReads == 2) {
    op.pair(w, xc, xs, yc, ys, c, s);
  } else {
    op.pair(w, c, s);
  }
}

template <class Op>
__device__ __forceinline__ typename Op::T paired_value(const Op &op, uint64_t seed, uint64_t offset, uint64_t e,
                                                       typename Op::T x, typename Op::T x2) {
  constexpr int K = Op::K;
  uint32_t w[2 * K];
#pragma unroll
  for (int r = 0; r < 2 * K; ++r) w[r] = element_word<K>(seed, offset, e & ~1ull, r);
  typename Op::T c, s;
  pair_of(op, w, x, x, x2, x2, c, s);
  return (e & 1) ? s : c;
}

// The values y[0 .. 4) of logical elements i0 .. i0 + 3 (x, x2: their inputs, for ops that read them).
template <class Op>
__device__ __forceinline__ void group_values(const Op &op, const Keys &keys, uint64_t seed0, uint64_t offset0,
                                             int64_t i0, const typename Op::TI (&x)[4], const typename Op::TI (&x2)[4],
                                             typename Op::T (&y)[4]) {
  constexpr int K = Op::K;
  if constexpr (!IsPaired<Op>::value) {
    uint32_t w[4 * K];
    group_words<K>(keys, seed0, offset0, i0, w);
#pragma unroll  // constant j keeps w in registers
    for (int j = 0; j < 4; ++j) y[j] = op(x[j], w + K * j);
  } else {
    // The pairs that hold the 4 elements: 2 when the first has an even stream index, else 3, from one fetch of
    // the 3 pairs' words when the group lies in one segment.
    const int64_t q = keys.seg_dims == 0 ? 0 : i0 / keys.event, j = i0 - q * keys.event;
    uint64_t seed = seed0, offset = offset0, pos = keys.first;
    if (keys.seg_dims != 0) keys.segment(q, seed0, offset0, seed, offset, pos);
    if (j + 4 <= keys.event) {
      const uint64_t e0 = pos + (uint64_t)j;
      uint32_t w[6 * K];
      fetch_words<6 * K, K>(seed, offset, e0 & ~1ull, w);
      typename Op::T a0, a1, b0, b1;
      if (e0 & 1) {  // pairs (i0 - 1, i0), (i0 + 1, i0 + 2), (i0 + 3, i0 + 4): the outside elements unused
        typename Op::T c0, c1;
        pair_of(op, w, x[0], x[0], x2[0], x2[0], a0, a1);
        pair_of(op, w + 2 * K, x[1], x[2], x2[1], x2[2], b0, b1);
        pair_of(op, w + 4 * K, x[3], x[3], x2[3], x2[3], c0, c1);
        y[0] = a1, y[1] = b0, y[2] = b1, y[3] = c0;
      } else {
        pair_of(op, w, x[0], x[1], x2[0], x2[1], a0, a1);
        pair_of(op, w + 2 * K, x[2], x[3], x2[2], x2[3], b0, b1);
        y[0] = a0, y[1] = a1, y[2] = b0, y[3] = b1;
      }
      return;
    }
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int64_t qe = (i0 + e) / keys.event, je = i0 + e - qe * keys.event;
      keys.segment(qe, seed0, offset0, seed, offset, pos);
      y[e] = paired_value(op, seed, offset, pos + (uint64_t)je, x[e], x2[e]);
    }
  }
}

// Four elements as aligned 8- or 16-byte accesses: one for 2- and 4-byte types, two for 8-byte ones.
template <class T>
struct Wide {
  static constexpr int kBytes = 4 * sizeof(T) < 16 ? 4 * sizeof(T) : 16;
  static constexpr int kPer = kBytes / sizeof(T);
  struct alignas(kBytes) Chunk { T v[kPer]; };
};

template <class T>
__device__ __forceinline__ void load4(const T *p, T (&v)[4]) {
  using C = typename Wide<T>::Chunk;
#pragma unroll
  for (int c = 0; c < 4 / Wide<T>::kPer; ++c) {
    const C ch = reinterpret_cast<const C *>(p)[c];
#pragma unroll
    for (int e = 0; e < Wide<T>::kPer; ++e) v[c * Wide<T>::kPer + e] = ch.v[e];
  }
}

template <class T>
__device__ __forceinline__ void store4(T *p, const T (&v)[4]) {
  using C = typename Wide<T>::Chunk;
#pragma unroll
  for (int c = 0; c < 4 / Wide<T>::kPer; ++c) {
    C ch;
#pragma unroll
    for (int e = 0; e < Wide<T>::kPer; ++e) ch.v[e] = v[c * Wide<T>::kPer + e];
    reinterpret_cast<C *>(p)[c] = ch;
  }
}

// ---- contiguous: element i at out[i] (and in[i], in2[i]); `wide` when every pointer suits load4/store4 ----
template <class Op>
__global__ void __launch_bounds__(kThreads) contiguous_kernel(Op op, Keys keys, typename Op::T *out,
                                                              const typename Op::TI *in, const typename Op::TI *in2,
                                                              int64_t n, bool wide) {
  using T = typename Op::T;
  using TI = typename Op::TI;
  uint64_t seed0, offset0;
  single_key(keys, seed0, offset0);
  const int64_t groups = (n + 3) / 4, step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t g = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; g < groups; g += step) {
    const int64_t i0 = 4 * g;
    const bool full = wide && i0 + 4 <= n;
    TI x[4] = {}, x2[4] = {};
    T y[4];
    if constexpr (Op::kReads > 0) {  // loads first: their latency hides behind the Philox rounds
      if (full) {
        load4(in + i0, x);
      } else {
#pragma unroll
        for (int j = 0; j < 4; ++j)
          if (i0 + j < n) x[j] = in[i0 + j];
      }
    }
    if constexpr (Op::kReads > 1) {
      if (full) {
        load4(in2 + i0, x2);
      } else {
#pragma unroll
        for (int j = 0; j < 4; ++j)
          if (i0 + j < n) x2[j] = in2[i0 + j];
      }
    }
    group_values(op, keys, seed0, offset0, i0, x, x2, y);
    if (full) {
      store4(out + i0, y);
    } else {
#pragma unroll
      for (int j = 0; j < 4; ++j)
        if (i0 + j < n) out[i0 + j] = y[j];
    }
  }
}

// ---- batched transpose: logical (n, c, l) at out[n*sN + l*sL + c] (channels_last after merging H, W, ...) ----
// A tile of 32 c x 32 l goes through shared memory: loads and stores run along c (coalesced), while the
// values are made along l, 4 logically consecutive elements per Philox block.
struct Transposed {
  int64_t N, C, L, out_n, out_l, in_n, in_l, in2_n, in2_l;
};
constexpr int kTile = 32, kRows = kThreads / kTile;

template <class Op>
__global__ void __launch_bounds__(kThreads) transposed_kernel(Op op, Keys keys, typename Op::T *out,
                                                              const typename Op::TI *in, const typename Op::TI *in2,
                                                              Transposed g) {
  using T = typename Op::T;
  using TI = typename Op::TI;
  constexpr bool kSame = std::is_same<T, TI>::value;
  __shared__ TI tile[kTile][kTile + 1];  // [l][c]; the pad spreads a column over the banks
  __shared__ TI tile2[Op::kReads > 1 ? kTile : 1][kTile + 1];  // in2's, for an op that reads it
  // An op whose output type differs from its input's (stochastic_round) writes its values to a tile of their own.
  __shared__ T out_tile[kSame ? 1 : kTile][kTile + 1];
  T(*const yt)[kTile + 1] = kSame ? reinterpret_cast<T(*)[kTile + 1]>(tile) : out_tile;
  uint64_t seed0, offset0;
  single_key(keys, seed0, offset0);
  const int tx = threadIdx.x, ty = threadIdx.y, t = ty * kTile + tx;
  const int vc = t >> 3, vl = (t & 7) * 4;  // this thread's value group: column vc, rows vl .. vl + 3
  for (int64_t n = blockIdx.z; n < g.N; n += gridDim.z)
    for (int64_t c0 = (int64_t)blockIdx.y * kTile; c0 < g.C; c0 += (int64_t)gridDim.y * kTile)
      for (int64_t l0 = (int64_t)blockIdx.x * kTile; l0 < g.L; l0 += (int64_t)gridDim.x * kTile) {
        const int64_t c = c0 + tx;
        if (Op::kReads && c < g.C)
          for (int r = ty; r < kTile && l0 + r < g.L; r += kRows) tile[r][tx] = in[n * g.in_n + (l0 + r) * g.in_l + c];
        if (Op::kReads > 1 && c < g.C)
          for (int r = ty; r < kTile && l0 + r < g.L; r += kRows)
            tile2[Op::kReads > 1 ? r : 0][tx] = in2[n * g.in2_n + (l0 + r) * g.in2_l + c];
        __syncthreads();
        if (c0 + vc < g.C) {
          const int64_t i0 = ((n * g.C) + c0 + vc) * g.L + l0 + vl;
          TI x[4] = {}, x2[4] = {};
          T y[4];
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            if (Op::kReads && l0 + vl + j < g.L) x[j] = tile[vl + j][vc];
            if (Op::kReads > 1 && l0 + vl + j < g.L) x2[j] = tile2[Op::kReads > 1 ? vl + j : 0][vc];
          }
          group_values(op, keys, seed0, offset0, i0, x, x2, y);
#pragma unroll
          for (int j = 0; j < 4; ++j)
            if (l0 + vl + j < g.L) yt[vl + j][vc] = y[j];
        }
        __syncthreads();
        if (c < g.C)
          for (int r = ty; r < kTile && l0 + r < g.L; r += kRows) out[n * g.out_n + (l0 + r) * g.out_l + c] = yt[r][tx];
        __syncthreads();  // the next tile reuses `tile`
      }
}

// ---- any other strides: one div/mod chain per group of 4, then a step along the innermost dim ----
__device__ __forceinline__ void locate(const rngx_layout &g, int64_t i, int64_t &po, int64_t &pi, int64_t &pi2,
                                       int64_t &inner) {
  po = pi = pi2 = 0;
  for (int d = g.nd - 1; d >= 0; --d) {
    const int64_t q = i / g.size[d], r = i - q * g.size[d];
    if (d == g.nd - 1) inner = r;
    po += r * g.so[d];
    pi += r * g.si[d];
    pi2 += r * g.si2[d];
    i = q;
  }
}

template <class Op>
__global__ void __launch_bounds__(kThreads) strided_kernel(Op op, Keys keys, typename Op::T *out,
                                                           const typename Op::TI *in, const typename Op::TI *in2,
                                                           int64_t n, rngx_layout g) {
  using T = typename Op::T;
  using TI = typename Op::TI;
  uint64_t seed0, offset0;
  single_key(keys, seed0, offset0);
  const int last = g.nd - 1;
  const int64_t groups = (n + 3) / 4, step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t grp = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; grp < groups; grp += step) {
    const int64_t i0 = 4 * grp;
    int64_t po[4] = {}, pi, pi2, inner = 0;
    TI x[4] = {}, x2[4] = {};
    T y[4];
    locate(g, i0, po[0], pi, pi2, inner);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      if (i0 + j >= n) break;
      if (j > 0) {
        po[j] = po[j - 1];
        if (++inner < g.size[last]) {
          po[j] += g.so[last];
          pi += g.si[last];
          pi2 += g.si2[last];
        } else {
          locate(g, i0 + j, po[j], pi, pi2, inner);
        }
      }
      if (Op::kReads) x[j] = in[pi];
      if (Op::kReads > 1) x2[j] = in2[pi2];
    }
    group_values(op, keys, seed0, offset0, i0, x, x2, y);
#pragma unroll
    for (int j = 0; j < 4; ++j)
      if (i0 + j < n) out[po[j]] = y[j];
  }
}

// ---- choosing the walk ----

inline unsigned blocks_for(int64_t groups) {
  const int64_t b = (groups + kThreads - 1) / kThreads;
  return (unsigned)(b < kMaxBlocks ? b : kMaxBlocks);
}

inline unsigned clamp_dim(int64_t v, int64_t most) { return (unsigned)(v < most ? v : most); }

inline Keys keys_of(const rngx_job *job) {
  const rngx_keys &jk = job->keys;
  Keys k{};
  k.pairs = jk.pairs;
  k.seed = jk.seed;
  k.offset = jk.offset;
  k.first = jk.first;
  k.key_dims = jk.key_dims;
  k.seg_dims = jk.seg_dims > jk.key_dims ? jk.seg_dims : jk.key_dims;
  k.event = jk.event;
  for (int d = 0; d < k.seg_dims; ++d) {
    k.sizes[d] = job->sizes[d];
    k.strides[d] = d < k.key_dims ? jk.key_strides[d] : jk.pos_strides[d];
  }
  return k;
}

template <class Op>
int launch(const Op &op, const rngx_job *job, void *stream_ptr) {
  using T = typename Op::T;
  using TI = typename Op::TI;
  int64_t n = 1;
  for (int d = 0; d < job->ndim; ++d) n *= job->sizes[d];
  if (n == 0) return (int)cudaSuccess;
  const cudaStream_t stream = (cudaStream_t)stream_ptr;
  const Keys st = keys_of(job);
  T *out = (T *)job->out.data;
  const TI *in = Op::kReads ? (const TI *)job->in.data : nullptr;
  const TI *in2 = Op::kReads > 1 ? (const TI *)job->in2.data : nullptr;
  rngx_layout c;
  rngx_collapse(job, Op::kReads, &c);
  const int reads = Op::kReads;
  // Whether dim d runs along memory for every operand.
  const auto unit = [&](int d) { return c.so[d] == 1 && (reads < 1 || c.si[d] == 1) && (reads < 2 || c.si2[d] == 1); };
  if (c.nd == 1 && unit(0)) {
    const uintptr_t a = Wide<T>::kBytes - 1, ai = Wide<TI>::kBytes - 1;
    const bool wide = ((uintptr_t)out & a) == 0 && (reads < 1 || ((uintptr_t)in & ai) == 0) &&
                      (reads < 2 || ((uintptr_t)in2 & ai) == 0);
    RNGX_LAUNCH(contiguous_kernel<Op>, blocks_for((n + 3) / 4), kThreads, stream, op, st, out, in, in2, n, wide);
  } else if ((c.nd == 2 || c.nd == 3) && unit(c.nd - 2)) {
    const int l = c.nd - 1;
    const Transposed g = {c.nd == 3 ? c.size[0] : 1, c.size[l - 1], c.size[l], c.nd == 3 ? c.so[0] : 0,
                          c.so[l], c.nd == 3 ? c.si[0] : 0, c.si[l], c.nd == 3 ? c.si2[0] : 0, c.si2[l]};
    const dim3 grid(clamp_dim((g.L + kTile - 1) / kTile, INT32_MAX), clamp_dim((g.C + kTile - 1) / kTile, 65535),
                    clamp_dim(g.N, 65535));
    RNGX_LAUNCH(transposed_kernel<Op>, grid, dim3(kTile, kRows), stream, op, st, out, in, in2, g);
  } else {
    RNGX_LAUNCH(strided_kernel<Op>, blocks_for((n + 3) / 4), kThreads, stream, op, st, out, in, in2, n, c);
  }
  return (int)cudaGetLastError();
}

}  // namespace rngx

#endif
