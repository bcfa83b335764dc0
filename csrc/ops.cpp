// CPU implementations of the rngx ops (schemas: torch_rngx/_ops.py). Unpacks tensors through PyTorch's
// stable ABI, allocates outputs exactly as the fake kernels do, and runs the C kernels on torch's
// intra-op thread pool. Every argument is checked again here, so direct torch.ops.rngx calls cannot crash.
#include <optional>
#include <vector>

#include "glue.h"
#include "kernels/ops.h"

namespace {

using namespace rngx_glue;

// Elements per parallel task: large enough that thread start-up is noise.
constexpr int64_t kGrain = 1 << 15;

void check_state(const Tensor& state) {
  check_state_dtype_shape(state);
  STD_TORCH_CHECK(state.is_cpu(), "rngx: state must be on the CPU");
  check_state_contiguous(state);
}

template <class Kernel>
void run_parallel(const Tensor& out, const Kernel& kernel) {
  torch::stable::parallel_for(0, out.numel(), kGrain, [&](int64_t begin, int64_t end) { kernel(begin, end); });
}

void check_input(const Tensor& x, const char* name = "x") {
  STD_TORCH_CHECK(x.defined(), "rngx: ", name, " must be a tensor, got None");
  STD_TORCH_CHECK(x.is_cpu(), "rngx: ", name, " must be on the CPU, like state");
}

Tensor bits(std::vector<int64_t> size, Tensor state) {
  check_state(state);
  check_size(size);
  Tensor out = torch::stable::empty(size, ScalarType::Long);
  const rngx_job job = make_job(state, RNGX_INT64, out, nullptr);
  run_parallel(out, [&](int64_t b, int64_t e) { rngx_bits(&job, b, e); });
  return out;
}

Tensor uniform(Tensor like, Tensor state, double low, double high, std::optional<ScalarType> dtype) {
  check_state(state);
  check_input(like, "like");
  const rngx_dtype dt = float_dtype(dtype.value_or(like.scalar_type()), "dtype");
  check_interval(low, high, dt);
  Tensor out = empty_like(like, dtype);
  const rngx_job job = make_job(state, dt, out, nullptr);
  run_parallel(out, [&](int64_t b, int64_t e) { rngx_uniform(&job, low, high, b, e); });
  return out;
}

Tensor quantize_noise(Tensor x, Tensor state, double half) {
  check_state(state);
  check_input(x);
  const rngx_dtype dt = float_dtype(x.scalar_type(), "x");
  check_half(half, dt);
  Tensor out = empty_like(x, std::nullopt);
  const rngx_job job = make_job(state, dt, out, &x);
  run_parallel(out, [&](int64_t b, int64_t e) { rngx_quantize_noise(&job, half, b, e); });
  return out;
}

Tensor dropout(Tensor x, Tensor state, double p) {
  check_state(state);
  check_input(x);
  const rngx_dtype dt = float_dtype(x.scalar_type(), "x");
  check_probability(p);
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
