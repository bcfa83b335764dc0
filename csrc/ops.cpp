// CPU implementations of the rngx ops (schemas: torch_rngx/_ops.py). Unpacks tensors through PyTorch's
// stable ABI, allocates outputs exactly as the fake kernels do, and runs the C kernels on torch's
// intra-op thread pool. Every argument is checked again here, so direct torch.ops.rngx calls cannot crash.
#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/ops.h>
#include <torch/csrc/stable/tensor.h>

#include <array>
#include <cmath>
#include <optional>
#include <vector>

#include "kernels/ops.h"

namespace {

using torch::headeronly::ScalarType;
using torch::stable::Tensor;

// Elements per parallel task: large enough that thread start-up is noise.
constexpr int64_t kGrain = 1 << 15;

void check_state(const Tensor& state) {
  STD_TORCH_CHECK(state.scalar_type() == ScalarType::Long, "rngx: state must be an int64 tensor");
  STD_TORCH_CHECK(state.dim() == 1 && state.size(0) == 2, "rngx: state must have shape (2,) = [seed, offset]");
  STD_TORCH_CHECK(state.is_cpu(), "rngx: state must be on the CPU");
  STD_TORCH_CHECK(state.is_contiguous(), "rngx: state must be contiguous");
}

rngx_dtype float_dtype(ScalarType t, const char* arg) {
  switch (t) {
    case ScalarType::Half: return RNGX_FLOAT16;
    case ScalarType::BFloat16: return RNGX_BFLOAT16;
    case ScalarType::Float: return RNGX_FLOAT32;
    case ScalarType::Double: return RNGX_FLOAT64;
    default: STD_TORCH_CHECK(false, "rngx: ", arg, " must be float16, bfloat16, float32 or float64");
  }
  return RNGX_FLOAT32;  // unreachable
}

// The job for `out`, reading `in` (if defined). The tensors must outlive the job.
rngx_job make_job(const Tensor& state, rngx_dtype dtype, const Tensor& out, const Tensor* in) {
  STD_TORCH_CHECK(out.dim() <= RNGX_MAX_DIMS, "rngx: tensors may have at most ", RNGX_MAX_DIMS, " dims");
  const auto* s = static_cast<const int64_t*>(state.const_data_ptr());
  rngx_job job{};
  job.seed = static_cast<uint64_t>(s[0]);
  job.offset = static_cast<uint64_t>(s[1]);
  job.dtype = dtype;
  job.ndim = static_cast<int>(out.dim());
  job.sizes = out.sizes().data();
  job.out = {out.mutable_data_ptr(), out.strides().data()};
  if (in != nullptr) job.in = {const_cast<void*>(in->const_data_ptr()), in->strides().data()};
  return job;
}

template <class Kernel>
void run_parallel(const Tensor& out, const Kernel& kernel) {
  torch::stable::parallel_for(0, out.numel(), kGrain, [&](int64_t begin, int64_t end) { kernel(begin, end); });
}

// aten::empty_like(like, dtype=dtype): the allocation the fake kernels make, so strides always agree.
Tensor empty_like(const Tensor& like, std::optional<ScalarType> dtype) {
  std::array<StableIValue, 6> stack{
      torch::stable::detail::from(like),           torch::stable::detail::from(dtype),
      torch::stable::detail::from(std::nullopt), torch::stable::detail::from(std::nullopt),
      torch::stable::detail::from(std::nullopt), torch::stable::detail::from(std::nullopt)};
  STABLE_TORCH_ERROR_CODE_CHECK(torch_call_dispatcher("aten::empty_like", "", stack.data(), TORCH_ABI_VERSION));
  return torch::stable::detail::to<Tensor>(stack[0]);
}

void check_input(const Tensor& x) {
  STD_TORCH_CHECK(x.is_cpu(), "rngx: x must be on the CPU, like state");
}

Tensor bits(std::vector<int64_t> size, Tensor state) {
  check_state(state);
  for (int64_t n : size) STD_TORCH_CHECK(n >= 0, "rngx.bits: size must be non-negative, got ", n);
  Tensor out = torch::stable::empty(size, ScalarType::Long);
  const rngx_job job = make_job(state, RNGX_INT64, out, nullptr);
  run_parallel(out, [&](int64_t b, int64_t e) { rngx_bits(&job, b, e); });
  return out;
}

Tensor uniform(Tensor like, Tensor state, double low, double high, std::optional<ScalarType> dtype) {
  check_state(state);
  check_input(like);
  const rngx_dtype dt = float_dtype(dtype.value_or(like.scalar_type()), "dtype");
  STD_TORCH_CHECK(std::isfinite(low) && std::isfinite(high) && std::isfinite(high - low),
                  "rngx.uniform: low, high and high - low must be finite");
  STD_TORCH_CHECK(low <= high, "rngx.uniform: low must be <= high, got low=", low, ", high=", high);
  Tensor out = empty_like(like, dtype);
  const rngx_job job = make_job(state, dt, out, nullptr);
  run_parallel(out, [&](int64_t b, int64_t e) { rngx_uniform(&job, low, high, b, e); });
  return out;
}

Tensor quantize_noise(Tensor x, Tensor state, double half) {
  check_state(state);
  check_input(x);
  const rngx_dtype dt = float_dtype(x.scalar_type(), "x");
  STD_TORCH_CHECK(std::isfinite(half) && half >= 0, "rngx.quantize_noise: half must be finite and >= 0, got ", half);
  Tensor out = empty_like(x, std::nullopt);
  const rngx_job job = make_job(state, dt, out, &x);
  run_parallel(out, [&](int64_t b, int64_t e) { rngx_quantize_noise(&job, half, b, e); });
  return out;
}

Tensor dropout(Tensor x, Tensor state, double p) {
  check_state(state);
  check_input(x);
  const rngx_dtype dt = float_dtype(x.scalar_type(), "x");
  STD_TORCH_CHECK(p >= 0 && p <= 1, "rngx.dropout: p must be in [0, 1], got ", p);  // false for NaN
  Tensor out = empty_like(x, std::nullopt);
  const rngx_job job = make_job(state, dt, out, &x);
  run_parallel(out, [&](int64_t b, int64_t e) { rngx_dropout(&job, p, b, e); });
  return out;
}

}  // namespace

STABLE_TORCH_LIBRARY_IMPL(rngx, CPU, m) {
  m.impl("bits", TORCH_BOX(&bits));
  m.impl("uniform", TORCH_BOX(&uniform));
  m.impl("quantize_noise", TORCH_BOX(&quantize_noise));
  m.impl("dropout", TORCH_BOX(&dropout));
}
