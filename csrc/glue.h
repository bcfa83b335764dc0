// What the CPU (ops.cpp) and CUDA (ops_cuda.cpp) glue share: argument checks and unpacking through PyTorch's
// stable ABI, and the output allocation. Keeping one copy keeps the error messages and strides identical.
#pragma once

#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/ops.h>
#include <torch/csrc/stable/tensor.h>

#include <array>
#include <cmath>
#include <optional>
#include <vector>

#include "kernels/ops.h"

namespace rngx_glue {

using torch::headeronly::ScalarType;
using torch::stable::Tensor;

inline void check_state_dtype_shape(const Tensor& state) {
  STD_TORCH_CHECK(state.defined(), "rngx: state must be a tensor, got None");
  STD_TORCH_CHECK(state.scalar_type() == ScalarType::Long, "rngx: state must be an int64 tensor");
  STD_TORCH_CHECK(state.dim() == 1 && state.size(0) == 2, "rngx: state must have shape (2,) = [seed, offset]");
}

inline void check_state_contiguous(const Tensor& state) {
  STD_TORCH_CHECK(state.is_contiguous(), "rngx: state must be contiguous");
}

inline rngx_dtype float_dtype(ScalarType t, const char* arg) {
  switch (t) {
    case ScalarType::Half: return RNGX_FLOAT16;
    case ScalarType::BFloat16: return RNGX_BFLOAT16;
    case ScalarType::Float: return RNGX_FLOAT32;
    case ScalarType::Double: return RNGX_FLOAT64;
    default: STD_TORCH_CHECK(false, "rngx: ", arg, " must be float16, bfloat16, float32 or float64");
  }
  return RNGX_FLOAT32;  // unreachable
}

inline void check_size(const std::vector<int64_t>& size) {
  int64_t bytes = 8;  // an int64 output: its byte count must fit in int64 too
  for (int64_t n : size) {
    STD_TORCH_CHECK(n >= 0, "rngx.bits: size must be non-negative, got ", n);
    STD_TORCH_CHECK(!__builtin_mul_overflow(bytes, n, &bytes), "rngx.bits: size has too many elements");
  }
}

// A double that rounds to a finite float32: below FLT_MAX + half its ulp (the tie rounds to infinity).
inline bool finite_as_float(double v) { return std::fabs(v) < 0x1.ffffffp+127; }

// <= 32-bit types compute in float32, so there low, high and high - low must be finite in float32.
inline void check_interval(double low, double high, rngx_dtype dt) {
  STD_TORCH_CHECK(std::isfinite(low) && std::isfinite(high) && std::isfinite(high - low),
                  "rngx.uniform: low, high and high - low must be finite");
  STD_TORCH_CHECK(dt == RNGX_FLOAT64 || (finite_as_float(low) && finite_as_float(high) && finite_as_float(high - low)),
                  "rngx.uniform: low, high and high - low must be finite in float32, the compute type of ",
                  "float32, float16 and bfloat16, got low=", low, ", high=", high);
  STD_TORCH_CHECK(low <= high, "rngx.uniform: low must be <= high, got low=", low, ", high=", high);
}

inline void check_half(double half, rngx_dtype dt) {
  STD_TORCH_CHECK(std::isfinite(half) && half >= 0, "rngx.quantize_noise: half must be finite and >= 0, got ", half);
  STD_TORCH_CHECK(dt == RNGX_FLOAT64 ? std::isfinite(2 * half) : finite_as_float(2 * half),
                  "rngx.quantize_noise: half is too large: 2 * half must be finite in the compute type, got ", half);
}

inline void check_probability(double p) {
  STD_TORCH_CHECK(p >= 0 && p <= 1, "rngx.dropout: p must be in [0, 1], got ", p);  // false for NaN
}

// The job for `out`, reading `in` (if given). Reads [seed, offset] when the state is on the CPU; a CUDA
// kernel reads a device state itself. The tensors must outlive the job.
inline rngx_job make_job(const Tensor& state, rngx_dtype dtype, const Tensor& out, const Tensor* in) {
  STD_TORCH_CHECK(out.dim() <= RNGX_MAX_DIMS, "rngx: tensors may have at most ", RNGX_MAX_DIMS, " dims");
  rngx_job job{};
  if (state.is_cpu()) {
    const auto* s = static_cast<const int64_t*>(state.const_data_ptr());
    job.seed = static_cast<uint64_t>(s[0]);
    job.offset = static_cast<uint64_t>(s[1]);
  }
  job.dtype = dtype;
  job.ndim = static_cast<int>(out.dim());
  job.sizes = out.sizes().data();
  job.out = {out.mutable_data_ptr(), out.strides().data()};
  if (in != nullptr) job.in = {const_cast<void*>(in->const_data_ptr()), in->strides().data()};
  return job;
}

// aten::empty_like(like, dtype=dtype): the allocation the fake kernels make, so strides always agree.
inline Tensor empty_like(const Tensor& like, std::optional<ScalarType> dtype) {
  std::array<StableIValue, 6> stack{
      torch::stable::detail::from(like),           torch::stable::detail::from(dtype),
      torch::stable::detail::from(std::nullopt), torch::stable::detail::from(std::nullopt),
      torch::stable::detail::from(std::nullopt), torch::stable::detail::from(std::nullopt)};
  STABLE_TORCH_ERROR_CODE_CHECK(torch_call_dispatcher("aten::empty_like", "", stack.data(), TORCH_ABI_VERSION));
  return torch::stable::detail::to<Tensor>(stack[0]);
}

}  // namespace rngx_glue
