// CUDA kernels of the rngx ops: the CPU glue's checks and allocation (glue.h), then the launchers in
// csrc/kernels/kernels_cuda.cu, on torch's current stream of x's device. The samplers' kernels come from their rows
// in the op table (kernels/op_table.h); the other ops are written out below. setup.py compiles this file into its own
// library, torch_rngx._C_cuda, with -DUSE_CUDA (which the CUDA parts of the stable ABI need), so the CPU library
// _C never links CUDA.
#include <torch/csrc/stable/accelerator.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "glue.h"
#include "kernels/kernels_cuda.h"

namespace {

using namespace rngx_glue;

std::string where(const Tensor& t) { return t.is_cpu() ? "cpu" : "cuda:" + std::to_string(t.get_device_index()); }

// A CUDA state must sit on x's GPU: the kernel reads it there when it runs, so the op stays valid under
// CUDA graph capture. A CPU state holding one key is read now and passed by value (fine eagerly, frozen in a
// captured graph); a batched one must be on the GPU.
void check_cuda_state(const Tensor& state, const Tensor& x, const char* name) {
  check_state(state);
  STD_TORCH_CHECK(x.is_cuda(), "rngx: ", name, " is on ", where(x), " but state is on ", where(state));
  STD_TORCH_CHECK(state.is_cpu() || (state.is_cuda() && state.get_device_index() == x.get_device_index()),
                  "rngx: ", name, " is on ", where(x), " but state is on ", where(state),
                  " (state must be on the CPU or on the same GPU)");
  STD_TORCH_CHECK(state.is_cuda() || state.numel() == 2, "rngx: a batched state for ", name, " on ", where(x),
                  " must be on that GPU, got one on the CPU");
  check_dims(x.dim());
}

KeyLayout keys_for(const Tensor& state, const Tensor& out, const GlobalArg& global_shape,
                   const GlobalArg& global_start) {
  const auto* pairs = state.is_cuda() ? static_cast<const int64_t*>(state.const_data_ptr()) : nullptr;
  return KeyLayout(state, out.sizes().data(), out.dim(), pairs, global_shape, global_start);
}

void* current_stream(int32_t device) {
  void* stream = nullptr;
  STABLE_TORCH_ERROR_CODE_CHECK(aoti_torch_get_current_cuda_stream(device, &stream));
  return stream;
}

// A launcher's cudaError_t, reported the way torch reports CUDA errors.
void check_launch(int err, const char* op) {
  if (err == 0) return;
  char* msg = nullptr;
  torch_c10_cuda_check_msg(err, __FILE__, op, static_cast<uint32_t>(__LINE__), true, &msg);
  std::string text = msg != nullptr ? msg : std::string("rngx: CUDA error ") + std::to_string(err) + " in " + op;
  if (msg != nullptr) torch_c10_cuda_free_error_msg(msg);
  throw std::runtime_error(text);
}

// Every sampler's tail on the GPU of `like`: the output (like's layout, `dtype` or like's), its keys (under the
// global view, if any) and job, reading `in` if given, and the launch on the device's current stream.
template <class Launch>
Tensor sample_on(const Tensor& like, std::optional<ScalarType> dtype, const Tensor& state, rngx_dtype dt,
                 const Tensor* in, const GlobalArg& global_shape, const GlobalArg& global_start, const char* op,
                 const Launch& launch, const Tensor* in2 = nullptr) {
  const int32_t dev = like.get_device_index();
  torch::stable::accelerator::DeviceGuard guard(dev);
  Tensor out = empty_like(like, dtype);
  const KeyLayout keys = keys_for(state, out, global_shape, global_start);
  const rngx_job job = make_job(keys, dt, out, in, in2);
  check_launch(launch(&job, current_stream(dev)), op);
  return out;
}

Tensor bits(std::vector<int64_t> size, Tensor state, ScalarType dtype, GlobalArg global_shape, GlobalArg global_start) {
  // Only a CUDA state brings bits here; the output goes on its device, as the fake kernel says.
  check_state(state);
  check_size(size);
  check_dims(static_cast<int64_t>(size.size()));
  const rngx_dtype dt = bits_dtype(dtype);
  const int32_t dev = state.get_device_index();
  torch::stable::accelerator::DeviceGuard guard(dev);
  Tensor out = torch::stable::new_empty(state, size, dtype);
  const KeyLayout keys = keys_for(state, out, global_shape, global_start);
  const rngx_job job = make_job(keys, dt, out, nullptr);
  check_launch(rngx_cuda_bits(&job, current_stream(dev)), "rngx.bits");
  return out;
}

// A sampler's CUDA kernel from its row (kernels/op_table.h).
#define RNGX_CUDA_SAMPLER(name, first, out_kind, kernel, params, args, schema, words, form, fused)                \
  Tensor name(Tensor first, Tensor state, RNGX_UNPACK(params), RNGX_DTYPE_PARAM_##out_kind GlobalArg global_shape, \
              GlobalArg global_start) {                                                                           \
    check_cuda_state(state, first, #first);                                                                       \
    const OutType out = out_type("rngx." #name, first, #first, RNGX_DTYPE_ARG_##out_kind);                        \
    const rngx_params derived = RNGX_SAMPLER_PARAMS(name, out_kind, kernel, args, out);                           \
    return sample_on(first, out.alloc, state, out.dt, RNGX_INPUT_##first, global_shape, global_start,             \
                     "rngx." #name, [&](const rngx_job* job, void* stream) {                                      \
                       return rngx_cuda_##kernel(job, stream, &derived);                                          \
                     });                                                                                          \
  }
RNGX_SAMPLERS(RNGX_CUDA_SAMPLER)
#undef RNGX_CUDA_SAMPLER

// A tensor p's values are not read on the host here (that would synchronize): u < p decides, so p <= 0 gives 0
// and p >= 1 gives 1 (docs/cuda.md).
Tensor bernoulli_tensor(Tensor like, Tensor state, Tensor p, GlobalArg global_shape, GlobalArg global_start) {
  check_cuda_state(state, like, "like");
  const rngx_dtype dt = float_dtype(like.scalar_type(), "like");
  check_probabilities(like, p);
  return sample_on(like, std::nullopt, state, dt, &p, global_shape, global_start, "rngx.bernoulli",
                   [&](const rngx_job* job, void* stream) { return rngx_cuda_bernoulli_tensor(job, stream); });
}

// std's values are not read on the host here (that would synchronize): a negative std scales as it is.
Tensor normal_tensor(Tensor like, Tensor state, Tensor mean, Tensor std, GlobalArg global_shape,
                     GlobalArg global_start) {
  check_cuda_state(state, like, "like");
  const rngx_dtype dt = float_dtype(like.scalar_type(), "like");
  check_mean_std(like, mean, "mean");
  check_mean_std(like, std, "std");
  return sample_on(
      like, std::nullopt, state, dt, &mean, global_shape, global_start, "rngx.normal_tensor",
      [&](const rngx_job* job, void* stream) { return rngx_cuda_normal_tensor(job, stream); }, &std);
}

// The weights' values are not read on the host here (that would synchronize): a zero, negative or NaN weight
// never wins, and a row without a positive weight gives category 0 (docs/cuda.md).
Tensor race(Tensor weights, Tensor state, int64_t draws, int64_t need) {
  check_cuda_state(state, weights, "weights");
  const std::vector<int64_t> size = race_shape(weights, draws, need);
  const int32_t dev = weights.get_device_index();
  torch::stable::accelerator::DeviceGuard guard(dev);
  Tensor out = torch::stable::new_empty(weights, size);
  const KeyLayout keys = keys_for(state, out, std::nullopt, std::nullopt);
  std::array<int64_t, 2 * RNGX_MAX_DIMS> strides{};
  const rngx_job job = race_job(keys, out, weights, strides);
  check_launch(rngx_cuda_race(&job, current_stream(dev)), "rngx.race");
  return out;
}

Tensor split(Tensor state, int64_t num) {
  check_state(state);
  STD_TORCH_CHECK(num >= 1, "rngx.split: num must be >= 1, got ", num);
  const int32_t dev = state.get_device_index();
  torch::stable::accelerator::DeviceGuard guard(dev);
  std::vector<int64_t> size{num};
  for (int64_t d = 0; d < state.dim(); ++d) size.push_back(state.size(d));
  Tensor out = torch::stable::new_empty(state, size);
  check_launch(rngx_cuda_split(static_cast<const int64_t*>(state.const_data_ptr()), state.numel() / 2, num,
                               static_cast<int64_t*>(out.mutable_data_ptr()), current_stream(dev)),
               "rngx.split");
  return out;
}

Tensor fold_in(Tensor state, Tensor data) {
  check_state(state);
  const int64_t data_stride = check_fold_data(state, data);
  const int32_t dev = state.get_device_index();
  torch::stable::accelerator::DeviceGuard guard(dev);
  Tensor out = torch::stable::new_empty(state, state.sizes());
  check_launch(rngx_cuda_fold_in(static_cast<const int64_t*>(state.const_data_ptr()), state.numel() / 2,
                                 static_cast<const int64_t*>(data.const_data_ptr()), data_stride,
                                 static_cast<int64_t*>(out.mutable_data_ptr()), current_stream(dev)),
               "rngx.fold_in");
  return out;
}

// Adam's step in float32 (kernels/adam.h) into a float32 buffer, then rounded into param by the sampler's own kernel
// reading it, both on the device's current stream: the CPU's bits (its pieces and the buffer here hold the same
// update).
void adam_sround_(Tensor param, Tensor grad, Tensor exp_avg, Tensor exp_avg_sq, Tensor state, double lr, double beta1,
                  double beta2, double eps, double weight_decay, bool decoupled, bool maximize, int64_t step,
                  GlobalArg global_shape, GlobalArg global_start) {
  check_cuda_state(state, param, "param");
  const AdamStep adam = adam_of(param, grad, exp_avg, exp_avg_sq, lr, beta1, beta2, eps, weight_decay, decoupled,
                                maximize, step);
  const int32_t dev = param.get_device_index();
  torch::stable::accelerator::DeviceGuard guard(dev);
  Tensor update = torch::stable::new_empty(param, param.sizes(), ScalarType::Float);
  check_launch(rngx_cuda_adam_update(&adam.a, static_cast<float*>(update.mutable_data_ptr()), param.numel(),
                                     current_stream(dev)),
               "rngx.adam_sround_");
  const KeyLayout keys = keys_for(state, param, global_shape, global_start);
  const rngx_job job = make_job(keys, adam.a.dtype, param, &update);
  check_launch(rngx_cuda_sround(&job, current_stream(dev), &adam.rounding), "rngx.adam_sround_");
}

}  // namespace

STABLE_TORCH_LIBRARY_IMPL(rngx, CUDA, m) {
#define RNGX_IMPL(name, ...) m.impl(#name, TORCH_BOX(&name));
  RNGX_SAMPLERS(RNGX_IMPL)
  RNGX_DEVICE_OPS(RNGX_IMPL)
#undef RNGX_IMPL
}
