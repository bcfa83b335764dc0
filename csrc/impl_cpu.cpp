// CPU kernels of the rngx ops (schemas: kernels/op_table.h). Unpacks tensors through PyTorch's stable ABI, allocates
// outputs exactly as the fake kernels do, and runs the C kernels on torch's intra-op thread pool. Every argument
// is checked again here, so direct torch.ops.rngx calls cannot crash. The samplers' ops (and their one-call forms)
// come from their rows in the op table; the other ops are written out below.
#include <array>
#include <optional>
#include <vector>

#include "glue.h"
#include "kernels/convert.h"
#include "kernels/kernels.h"

namespace {

using namespace rngx_glue;

// Elements per parallel task: large enough that thread start-up is noise.
constexpr int64_t kGrain = 1 << 15;

void check_cpu_state(const Tensor& state) {
  check_state(state);
  STD_TORCH_CHECK(state.is_cpu(), "rngx: state must be on the CPU");
}

KeyLayout keys_for(const Tensor& state, const Tensor& out, const GlobalArg& global_shape,
                   const GlobalArg& global_start) {
  return KeyLayout(state, out.sizes().data(), out.dim(), static_cast<const int64_t*>(state.const_data_ptr()),
                   global_shape, global_start);
}

template <class Kernel>
void run_parallel(const Tensor& out, const Kernel& kernel) {
  torch::stable::parallel_for(0, out.numel(), kGrain, [&](int64_t begin, int64_t end) { kernel(begin, end); });
}

// Every sampler's tail: `out`'s keys (under the global view, if any) and job, reading `in` if given, and the C
// kernel over torch's intra-op pool.
template <class Kernel>
Tensor fill(Tensor out, const Tensor& state, rngx_dtype dt, const Tensor* in, const GlobalArg& global_shape,
            const GlobalArg& global_start, const Kernel& kernel, const Tensor* in2 = nullptr) {
  const KeyLayout keys = keys_for(state, out, global_shape, global_start);
  const rngx_job job = make_job(keys, dt, out, in, in2);
  run_parallel(out, [&](int64_t b, int64_t e) { kernel(&job, b, e); });
  return out;
}

void check_input(const Tensor& x, const char* name = "x") {
  STD_TORCH_CHECK(x.defined(), "rngx: ", name, " must be a tensor, got None");
  STD_TORCH_CHECK(x.is_cpu(), "rngx: ", name, " must be on the CPU, like state");
  check_dims(x.dim());
}

Tensor bits(std::vector<int64_t> size, Tensor state, ScalarType dtype, GlobalArg global_shape, GlobalArg global_start) {
  check_cpu_state(state);
  check_size(size);
  check_dims(static_cast<int64_t>(size.size()));
  const rngx_dtype dt = bits_dtype(dtype);
  return fill(torch::stable::empty(size, dtype), state, dt, nullptr, global_shape, global_start,
              [&](const rngx_job* job, int64_t begin, int64_t end) { rngx_bits(job, begin, end); });
}

// A sampler's CPU op from its row (kernels/op_table.h), and its one-call form, where the row has one: a CPU Generator's
// step and the op in one call (torch_rngx/_router.py: draw). The key is the state before the step, then the
// offset moves past the call's blocks (the row's words per element, take_key). Checked before it moves.
template <class Kernel>
Tensor fill_from(Tensor& state, Tensor out, rngx_dtype dt, int words, const Tensor* in, const Kernel& kernel) {
  STD_TORCH_CHECK(state.defined() && state.scalar_type() == ScalarType::Long && state.dim() == 1 &&
                      state.size(0) == 2 && state.is_cpu() && state.is_contiguous(),
                  "rngx: state must be a Generator's: an int64 CPU tensor of shape (2,) = [seed, offset]");
  const uint64_t blocks = (static_cast<uint64_t>(out.numel()) * static_cast<uint64_t>(words) + 3) / 4;
  const std::array<int64_t, 2> key = take_key(state, blocks, nullptr);
  const KeyLayout keys(state, out.sizes().data(), out.dim(), key.data());
  const rngx_job job = make_job(keys, dt, out, in);
  run_parallel(out, [&](int64_t b, int64_t e) { kernel(&job, b, e); });
  return out;
}

#define RNGX_CPU_SAMPLER(name, first, out_kind, kernel, params, args, schema, words, form, fused)                 \
  Tensor name(Tensor first, Tensor state, RNGX_UNPACK(params), RNGX_DTYPE_PARAM_##out_kind GlobalArg global_shape, \
              GlobalArg global_start) {                                                                           \
    check_cpu_state(state);                                                                                       \
    check_input(first, #first);                                                                                   \
    const OutType out = out_type("rngx." #name, first, #first, RNGX_DTYPE_ARG_##out_kind);                        \
    const rngx_params derived = RNGX_SAMPLER_PARAMS(name, out_kind, kernel, args, out);                           \
    return fill(empty_like(first, out.alloc), state, out.dt, RNGX_INPUT_##first, global_shape, global_start,      \
                [&](const rngx_job* job, int64_t b, int64_t e) { rngx_##kernel(job, &derived, b, e); });         \
  }                                                                                                               \
  RNGX_IF_FUSED(fused, Tensor name##_from_(Tensor state, Tensor first,                                           \
                                           RNGX_UNPACK(params) RNGX_DTYPE_LAST_PARAM_##out_kind) {                \
    check_input(first, #first);                                                                                   \
    const OutType out = out_type("rngx." #name, first, #first, RNGX_DTYPE_ARG_##out_kind);                        \
    const rngx_params derived = RNGX_SAMPLER_PARAMS(name, out_kind, kernel, args, out);                           \
    return fill_from(state, empty_like(first, out.alloc), out.dt, rngx_##kernel##_words(out.dt, &derived),        \
                     RNGX_INPUT_##first,                                                                          \
                     [&](const rngx_job* job, int64_t b, int64_t e) { rngx_##kernel(job, &derived, b, e); });    \
  })
RNGX_SAMPLERS(RNGX_CPU_SAMPLER)
#undef RNGX_CPU_SAMPLER

// Whether every value of p passes `ok` (p's values as floats): read once on the CPU before any draw, each stored
// value once (broadcast dims, stride 0, are read at index 0 only).
template <class T, class ToFloat, class Ok>
bool all_values(const Tensor& p, ToFloat to_float, Ok ok) {
  std::vector<int64_t> size, stride;
  for (int64_t d = 0; d < p.dim(); ++d) {
    if (p.size(d) == 0) return true;
    if (p.stride(d) != 0 && p.size(d) != 1) size.push_back(p.size(d)), stride.push_back(p.stride(d));
  }
  const T* v = static_cast<const T*>(p.const_data_ptr());
  std::vector<int64_t> idx(size.size(), 0);
  for (int64_t at = 0;;) {
    if (!ok(static_cast<double>(to_float(v[at])))) return false;
    int64_t d = static_cast<int64_t>(size.size()) - 1;
    for (; d >= 0; --d) {  // odometer: the next element, in memory offsets
      at += stride[d];
      if (++idx[d] < size[d]) break;
      at -= size[d] * stride[d];
      idx[d] = 0;
    }
    if (d < 0) return true;
  }
}

// Whether every value of a float tensor of dtype dt passes `ok`.
template <class Ok>
bool values_pass(const Tensor& t, rngx_dtype dt, Ok ok) {
  switch (dt) {
    case RNGX_FLOAT16: return all_values<uint16_t>(t, [](uint16_t h) { return rngx_f16_to_f32(h); }, ok);
    case RNGX_BFLOAT16: return all_values<uint16_t>(t, [](uint16_t h) { return rngx_bf16_to_f32(h); }, ok);
    case RNGX_FLOAT32: return all_values<float>(t, [](float f) { return f; }, ok);
    default: return all_values<double>(t, [](double d) { return d; }, ok);
  }
}

Tensor bernoulli_tensor(Tensor like, Tensor state, Tensor p, GlobalArg global_shape, GlobalArg global_start) {
  check_cpu_state(state);
  check_input(like, "like");
  const rngx_dtype dt = float_dtype(like.scalar_type(), "like");
  check_probabilities(like, p);
  STD_TORCH_CHECK(values_pass(p, dt, [](double x) { return x >= 0 && x <= 1; }),
                  "rngx.bernoulli: every p must be in [0, 1]");
  return fill(empty_like(like, std::nullopt), state, dt, &p, global_shape, global_start,
              [&](const rngx_job* job, int64_t begin, int64_t end) { rngx_bernoulli_tensor(job, begin, end); });
}

// std's values must be >= 0 (NaN too is refused), as torch.normal requires; mean's are not checked (torch does not).
Tensor normal_tensor(Tensor like, Tensor state, Tensor mean, Tensor std, GlobalArg global_shape,
                     GlobalArg global_start) {
  check_cpu_state(state);
  check_input(like, "like");
  const rngx_dtype dt = float_dtype(like.scalar_type(), "like");
  check_mean_std(like, mean, "mean");
  check_mean_std(like, std, "std");
  STD_TORCH_CHECK(values_pass(std, dt, [](double x) { return x >= 0; }), "rngx.normal_tensor: every std must be >= 0");
  return fill(
      empty_like(like, std::nullopt), state, dt, &mean, global_shape, global_start,
      [&](const rngx_job* job, int64_t begin, int64_t end) { rngx_normal_tensor(job, begin, end); }, &std);
}

// Every weight finite and >= 0, and at least `need` of each row's positive: torch.multinomial's value checks,
// made before any draw (on the CPU only: on CUDA the values are not read on the host).
void check_weights(const Tensor& weights, int64_t need) {
  const auto* w = static_cast<const double*>(weights.const_data_ptr());
  const int64_t c = weights.size(weights.dim() - 1), rows = weights.numel() / c;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t positive = 0;
    for (int64_t i = r * c; i < (r + 1) * c; ++i) {
      STD_TORCH_CHECK(std::isfinite(w[i]) && w[i] >= 0, "rngx.race: weights must be finite and >= 0, got ", w[i]);
      positive += w[i] > 0;
    }
    STD_TORCH_CHECK(positive >= need, "rngx.race: row ", r, " of weights has ", positive,
                    " positive weights, fewer than need = ", need);
  }
}

Tensor race(Tensor weights, Tensor state, int64_t draws, int64_t need) {
  check_cpu_state(state);
  check_input(weights, "weights");
  const std::vector<int64_t> size = race_shape(weights, draws, need);
  check_weights(weights, need);
  Tensor out = torch::stable::new_empty(weights, size);
  const KeyLayout keys = keys_for(state, out, std::nullopt, std::nullopt);
  std::array<int64_t, 2 * RNGX_MAX_DIMS> strides{};
  const rngx_job job = race_job(keys, out, weights, strides);
  run_parallel(out, [&](int64_t b, int64_t e) { rngx_race(&job, b, e); });
  return out;
}

Tensor split(Tensor state, int64_t num) {
  check_cpu_state(state);
  STD_TORCH_CHECK(num >= 1, "rngx.split: num must be >= 1, got ", num);
  std::vector<int64_t> size{num};
  for (int64_t d = 0; d < state.dim(); ++d) size.push_back(state.size(d));
  Tensor out = torch::stable::new_empty(state, size);
  rngx_split(static_cast<const int64_t*>(state.const_data_ptr()), state.numel() / 2, num,
             static_cast<int64_t*>(out.mutable_data_ptr()));
  return out;
}

Tensor fold_in(Tensor state, Tensor data) {
  check_cpu_state(state);
  const int64_t data_stride = check_fold_data(state, data);
  Tensor out = torch::stable::new_empty(state, state.sizes());
  rngx_fold_in(static_cast<const int64_t*>(state.const_data_ptr()), state.numel() / 2,
               static_cast<const int64_t*>(data.const_data_ptr()), data_stride,
               static_cast<int64_t*>(out.mutable_data_ptr()));
  return out;
}

// Elements a thread updates in float32 before rounding them: 8 KiB, so they are still in L1 when read again.
constexpr int64_t kAdamPiece = 2048;

// Adam's step in float32 (kernels/adam.h), rounded into param as stochastic_round(update, state, param.dtype) rounds
// it: each piece of the update is made into a buffer on the thread's stack, then rounded by the sampler's own
// kernel, whose job reads x from that buffer (its input based so that logical element i is the buffer's i - begin).
void adam_sround_(Tensor param, Tensor grad, Tensor exp_avg, Tensor exp_avg_sq, Tensor state, double lr, double beta1,
                  double beta2, double eps, double weight_decay, bool decoupled, bool maximize, int64_t step,
                  GlobalArg global_shape, GlobalArg global_start) {
  check_cpu_state(state);
  check_input(param, "param");
  const AdamStep adam = adam_of(param, grad, exp_avg, exp_avg_sq, lr, beta1, beta2, eps, weight_decay, decoupled,
                                maximize, step);
  const KeyLayout keys = keys_for(state, param, global_shape, global_start);
  const rngx_job job = make_job(keys, adam.a.dtype, param, &param);
  run_parallel(param, [&](int64_t begin, int64_t end) {
    float update[kAdamPiece];
    for (int64_t b = begin; b < end; b += kAdamPiece) {
      const int64_t e = std::min(end, b + kAdamPiece);
      rngx_adam_update(&adam.a, b, e, update);
      rngx_job piece = job;
      piece.in.data = reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(update) - static_cast<uintptr_t>(b) * 4);
      rngx_sround(&piece, &adam.rounding, b, e);
    }
  });
}

}  // namespace

STABLE_TORCH_LIBRARY_IMPL(rngx, CPU, m) {
#define RNGX_IMPL(name, ...) m.impl(#name, TORCH_BOX(&name));
#define RNGX_IMPL_SAMPLER(name, first, out, kernel, params, args, schema, words, form, fused) \
  RNGX_IMPL(name) RNGX_IF_FUSED(fused, RNGX_IMPL(name##_from_))
  RNGX_SAMPLERS(RNGX_IMPL_SAMPLER)
  RNGX_DEVICE_OPS(RNGX_IMPL)
#undef RNGX_IMPL_SAMPLER
#undef RNGX_IMPL
}
