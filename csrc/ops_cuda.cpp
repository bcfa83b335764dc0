// CUDA implementations of the rngx ops: the CPU glue's checks and allocation (glue.h), then the launchers in
// csrc/kernels/ops_cuda.cu, on torch's current stream of x's device. setup.py compiles this file only for the
// CUDA build, with -DUSE_CUDA (which the CUDA parts of the stable ABI need).
#include <torch/csrc/stable/accelerator.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "glue.h"
#include "kernels/ops_cuda.h"

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
                 const Launch& launch) {
  const int32_t dev = like.get_device_index();
  torch::stable::accelerator::DeviceGuard guard(dev);
  Tensor out = empty_like(like, dtype);
  const KeyLayout keys = keys_for(state, out, global_shape, global_start);
  const rngx_job job = make_job(keys, dt, out, in);
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

Tensor uniform(Tensor like, Tensor state, double low, double high, std::optional<ScalarType> dtype,
               GlobalArg global_shape, GlobalArg global_start) {
  check_cuda_state(state, like, "like");
  const rngx_dtype dt = float_dtype(dtype.value_or(like.scalar_type()), "dtype");
  const rngx_params params = uniform_params(low, high, dt);
  return sample_on(like, dtype, state, dt, nullptr, global_shape, global_start, "rngx.uniform",
                   [&](const rngx_job* job, void* stream) { return rngx_cuda_uniform(job, stream, &params); });
}

Tensor quantize_noise(Tensor x, Tensor state, double half, GlobalArg global_shape, GlobalArg global_start) {
  check_cuda_state(state, x, "x");
  const rngx_dtype dt = float_dtype(x.scalar_type(), "x");
  const rngx_params params = noise_params(half, dt);
  return sample_on(x, std::nullopt, state, dt, &x, global_shape, global_start, "rngx.quantize_noise",
                   [&](const rngx_job* job, void* stream) { return rngx_cuda_quantize_noise(job, stream, &params); });
}

Tensor dropout(Tensor x, Tensor state, double p, GlobalArg global_shape, GlobalArg global_start) {
  check_cuda_state(state, x, "x");
  const rngx_dtype dt = float_dtype(x.scalar_type(), "x");
  const rngx_params params = dropout_params(p);
  return sample_on(x, std::nullopt, state, dt, &x, global_shape, global_start, "rngx.dropout",
                   [&](const rngx_job* job, void* stream) { return rngx_cuda_dropout(job, stream, &params); });
}

Tensor normal(Tensor like, Tensor state, double mean, double std, std::optional<ScalarType> dtype,
              GlobalArg global_shape, GlobalArg global_start) {
  check_cuda_state(state, like, "like");
  const rngx_dtype dt = float_dtype(dtype.value_or(like.scalar_type()), "dtype");
  const rngx_params params = normal_params(mean, std, dt);
  return sample_on(like, dtype, state, dt, nullptr, global_shape, global_start, "rngx.normal",
                   [&](const rngx_job* job, void* stream) { return rngx_cuda_normal(job, stream, &params); });
}

Tensor truncated_normal(Tensor like, Tensor state, double mean, double std, double a, double b,
                        std::optional<ScalarType> dtype, GlobalArg global_shape, GlobalArg global_start) {
  check_cuda_state(state, like, "like");
  const rngx_dtype dt = float_dtype(dtype.value_or(like.scalar_type()), "dtype");
  const rngx_params params = truncnorm_params(mean, std, a, b, dt);
  return sample_on(like, dtype, state, dt, nullptr, global_shape, global_start, "rngx.truncated_normal",
                   [&](const rngx_job* job, void* stream) { return rngx_cuda_truncnorm(job, stream, &params); });
}

Tensor bernoulli(Tensor like, Tensor state, double p, GlobalArg global_shape, GlobalArg global_start) {
  check_cuda_state(state, like, "like");
  const rngx_dtype dt = float_dtype(like.scalar_type(), "like");
  STD_TORCH_CHECK(p >= 0 && p <= 1, "rngx.bernoulli: p must be in [0, 1], got ", p);  // false for NaN
  const rngx_params params = rngx_dropout_params(p);
  return sample_on(like, std::nullopt, state, dt, nullptr, global_shape, global_start, "rngx.bernoulli",
                   [&](const rngx_job* job, void* stream) { return rngx_cuda_bernoulli(job, stream, &params); });
}

// A tensor p's values are not read on the host here (that would synchronize): u < p decides, so p <= 0 gives 0
// and p >= 1 gives 1 (docs/cuda.md).
Tensor bernoulli_tensor(Tensor like, Tensor state, Tensor p, GlobalArg global_shape, GlobalArg global_start) {
  check_cuda_state(state, like, "like");
  const rngx_dtype dt = float_dtype(like.scalar_type(), "like");
  check_probabilities(like, p);
  const rngx_params params{};
  return sample_on(like, std::nullopt, state, dt, &p, global_shape, global_start, "rngx.bernoulli",
                   [&](const rngx_job* job, void* stream) { return rngx_cuda_bernoulli(job, stream, &params); });
}

Tensor randint(Tensor like, Tensor state, int64_t low, int64_t high, ScalarType dtype, GlobalArg global_shape,
               GlobalArg global_start) {
  check_cuda_state(state, like, "like");
  const rngx_dtype dt = randint_dtype(dtype);
  const rngx_params params = randint_params(low, high, dtype);
  return sample_on(like, dtype, state, dt, nullptr, global_shape, global_start, "rngx.randint",
                   [&](const rngx_job* job, void* stream) { return rngx_cuda_randint(job, stream, &params); });
}

Tensor exponential(Tensor like, Tensor state, double rate, std::optional<ScalarType> dtype, GlobalArg global_shape,
                   GlobalArg global_start) {
  check_cuda_state(state, like, "like");
  const rngx_dtype dt = float_dtype(dtype.value_or(like.scalar_type()), "dtype");
  const rngx_params params = exponential_params(rate);
  return sample_on(like, dtype, state, dt, nullptr, global_shape, global_start, "rngx.exponential",
                   [&](const rngx_job* job, void* stream) { return rngx_cuda_exponential(job, stream, &params); });
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

}  // namespace

STABLE_TORCH_LIBRARY_IMPL(rngx, CUDA, m) {
  m.impl("bits", TORCH_BOX(&bits));
  m.impl("uniform", TORCH_BOX(&uniform));
  m.impl("quantize_noise", TORCH_BOX(&quantize_noise));
  m.impl("dropout", TORCH_BOX(&dropout));
  m.impl("normal", TORCH_BOX(&normal));
  m.impl("truncated_normal", TORCH_BOX(&truncated_normal));
  m.impl("bernoulli", TORCH_BOX(&bernoulli));
  m.impl("bernoulli_tensor", TORCH_BOX(&bernoulli_tensor));
  m.impl("randint", TORCH_BOX(&randint));
  m.impl("exponential", TORCH_BOX(&exponential));
  m.impl("race", TORCH_BOX(&race));
  m.impl("split", TORCH_BOX(&split));
  m.impl("fold_in", TORCH_BOX(&fold_in));
}
