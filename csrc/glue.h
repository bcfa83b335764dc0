// What the CPU (impl_cpu.cpp) and CUDA (impl_cuda.cpp) glue share: argument checks and unpacking through PyTorch's
// stable ABI, and the output allocation. Keeping one copy keeps the error messages and strides identical.
#pragma once

#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/ops.h>
#include <torch/csrc/stable/tensor.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/adam.h"
#include "kernels/kernels.h"
#include "kernels/op_table.h"

// torch 2.10 and 2.11 name it TORCH_ERROR_CODE_CHECK (torch/headeronly/util/shim_utils.h); 2.12+ add this name.
#ifndef STABLE_TORCH_ERROR_CODE_CHECK
#define STABLE_TORCH_ERROR_CODE_CHECK(call) TORCH_ERROR_CODE_CHECK(call)
#endif

namespace rngx_glue {

using torch::headeronly::ScalarType;
using torch::stable::Tensor;

// A state: int64 or uint64 (the same bits), contiguous, shape (2,) or (*B, 2). Batched states are checked
// against their output by key_layout.
inline void check_state(const Tensor& state) {
  STD_TORCH_CHECK(state.defined(), "rngx: state must be a tensor, got None");
  STD_TORCH_CHECK(state.scalar_type() == ScalarType::Long || state.scalar_type() == ScalarType::UInt64,
                  "rngx: state must be an int64 or uint64 tensor");
  STD_TORCH_CHECK(state.dim() >= 1 && state.size(state.dim() - 1) == 2,
                  "rngx: state must have shape (2,) or (*B, 2): [seed, offset] pairs");
  STD_TORCH_CHECK(state.is_contiguous(), "rngx: state must be contiguous");
}

// A global view's argument (SymInt[]?): the global tensor's shape, or where the output starts in it.
using GlobalArg = std::optional<std::vector<int64_t>>;

// Checks a global view of an output of `sizes`: both arguments or neither, one entry per dim, the output inside
// the global tensor, and the global tensor's element count within int64 (stream positions are 64-bit).
inline bool check_global_view(const int64_t* sizes, int64_t ndim, const GlobalArg& shape, const GlobalArg& start) {
  STD_TORCH_CHECK(shape.has_value() == start.has_value(),
                  "rngx: global_shape and global_start go together: pass both or neither");
  if (!shape.has_value()) return false;
  STD_TORCH_CHECK(static_cast<int64_t>(shape->size()) == ndim && static_cast<int64_t>(start->size()) == ndim,
                  "rngx: global_shape and global_start need one entry per dim of the output (", ndim, "), got ",
                  shape->size(), " and ", start->size());
  int64_t numel = 1;
  for (int64_t d = 0; d < ndim; ++d) {
    const int64_t g = (*shape)[d], s = (*start)[d];
    STD_TORCH_CHECK(s >= 0 && g >= 0 && s <= g - sizes[d], "rngx: dim ", d, " of the output (size ", sizes[d],
                    ") starting at global_start ", s, " does not lie inside global_shape's ", g);
    STD_TORCH_CHECK(!__builtin_mul_overflow(numel, g, &numel), "rngx: global_shape has too many elements");
  }
  return true;
}

// Which key each element of an output of `sizes` uses, and where in its stream (docs/stream.md, "Batched
// states", "Global view"). The strides live here, so a KeyLayout must outlive the jobs that point into it.
struct KeyLayout {
  std::array<int64_t, RNGX_MAX_DIMS> strides{}, positions{};
  rngx_keys keys{};

  // pairs: where the kernel reads the state (host memory for the C kernels, device memory for CUDA), or
  // nullptr to pass a CPU state's single key by value (an empty state has no key, and its output no element).
  // With a global view a batched state's dims are the global tensor's.
  KeyLayout(const Tensor& state, const int64_t* sizes, int64_t ndim, const int64_t* pairs,
            const GlobalArg& global_shape = std::nullopt, const GlobalArg& global_start = std::nullopt) {
    const bool global = check_global_view(sizes, ndim, global_shape, global_start);
    const int64_t* batch_of = global ? global_shape->data() : sizes;
    keys.pairs = pairs;
    if (pairs == nullptr && state.numel() == 2) {
      const auto* s = static_cast<const int64_t*>(state.const_data_ptr());
      keys.seed = static_cast<uint64_t>(s[0]);
      keys.offset = static_cast<uint64_t>(s[1]);
    }
    keys.key_strides = strides.data();
    keys.event = 1;
    if (state.dim() > 1) {
      STD_TORCH_CHECK(state.dim() == ndim + 1, "rngx: a batched state (*B, 2) needs one batch dim per output dim: ",
                      "state has ", state.dim() - 1, ", the output ", ndim);
      for (int64_t d = 0; d < ndim; ++d) {
        const int64_t b = state.size(d);
        STD_TORCH_CHECK(b == 1 || b == batch_of[d], "rngx: state's batch dim ", d, " is ", b, ": it must be 1 or ",
                        batch_of[d], global ? " (global_shape's size)" : " (the output's size)");
        if (b != 1) keys.key_dims = static_cast<int>(d + 1);
        strides[d] = b == 1 ? 0 : state.stride(d);
      }
    }
    if (global) {
      rngx_global_view(&keys, static_cast<int>(ndim), sizes, global_shape->data(), global_start->data(),
                       positions.data());
      return;
    }
    for (int64_t d = keys.key_dims; d < ndim; ++d) keys.event *= sizes[d];
    if (keys.event == 0) keys.event = 1;  // an empty output: no element asks for a key
  }
};

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

// bits' output types: signedness does not change the bits written.
inline rngx_dtype bits_dtype(ScalarType t) {
  switch (t) {
    case ScalarType::Byte: case ScalarType::Char: return RNGX_BITS8;
    case ScalarType::Short: case ScalarType::UInt16: return RNGX_BITS16;
    case ScalarType::Int: case ScalarType::UInt32: return RNGX_BITS32;
    case ScalarType::Long: case ScalarType::UInt64: return RNGX_BITS64;
    default: STD_TORCH_CHECK(false, "rngx.bits: dtype must be an integer type of 8 to 64 bits (not bool)");
  }
  return RNGX_BITS32;  // unreachable
}

inline void check_size(const std::vector<int64_t>& size) {
  int64_t bytes = 8;  // a 64-bit output: its byte count must fit in int64 too
  for (int64_t n : size) {
    STD_TORCH_CHECK(n >= 0, "rngx.bits: size must be non-negative, got ", n);
    STD_TORCH_CHECK(!__builtin_mul_overflow(bytes, n, &bytes), "rngx.bits: size has too many elements");
  }
}

// A sampler's output dtype: torch's, the kernels' name for it, the dtype to allocate (none: first's), for
// DTYPE_INT the values it holds, and for DTYPE_ROUND the input's dtype.
struct OutType {
  ScalarType type;
  rngx_dtype dt;
  std::optional<ScalarType> alloc;
  int64_t min = 0, max = 0;
  rngx_dtype from = RNGX_FLOAT32;
};

// DTYPE_ROUND's dtype argument, told apart from DTYPE_INT's.
struct RoundTo {
  ScalarType dtype;
};

inline const char* float_name(ScalarType t) {
  switch (t) {
    case ScalarType::Half: return "float16";
    case ScalarType::BFloat16: return "bfloat16";
    case ScalarType::Float: return "float32";
    case ScalarType::Double: return "float64";
    case ScalarType::Float8_e4m3fn: return "float8_e4m3fn";
    case ScalarType::Float8_e5m2: return "float8_e5m2";
    default: return nullptr;
  }
}

// DTYPE_OPTIONAL: a float dtype, else first's.
inline OutType out_type(const char*, const Tensor& first, const char*, std::optional<ScalarType> dtype) {
  const ScalarType t = dtype.value_or(first.scalar_type());
  return {t, float_dtype(t, "dtype"), dtype};
}

// DTYPE_FIRST: first's float dtype.
inline OutType out_type(const char*, const Tensor& first, const char* first_name, std::nullopt_t) {
  return {first.scalar_type(), float_dtype(first.scalar_type(), first_name), std::nullopt};
}

// DTYPE_INT: one of RNGX_INT_DTYPES (kernels/op_table.h).
inline OutType out_type(const char* op, const Tensor&, const char*, ScalarType t) {
#define RNGX_INT_OUT(scalar, name, bits, lo, hi) \
  if (t == ScalarType::scalar) return {t, bits_dtype(t), t, lo, hi};
  RNGX_INT_DTYPES(RNGX_INT_OUT)
#undef RNGX_INT_OUT
#define RNGX_INT_NAME(scalar, name, bits, lo, hi) ", " #name
  STD_TORCH_CHECK(false, op, ": dtype must be one of ", RNGX_INT_DTYPES(RNGX_INT_NAME) + 2);
#undef RNGX_INT_NAME
  return {};  // unreachable
}

// DTYPE_ROUND: one of the four targets, of lower precision than first's float dtype (rngx_sround_pair).
inline OutType out_type(const char* op, const Tensor& first, const char* first_name, RoundTo to) {
  const rngx_dtype from = float_dtype(first.scalar_type(), first_name);
  rngx_dtype dt = RNGX_FLOAT32;
  switch (to.dtype) {
    case ScalarType::BFloat16: dt = RNGX_BFLOAT16; break;
    case ScalarType::Half: dt = RNGX_FLOAT16; break;
    case ScalarType::Float8_e4m3fn: dt = RNGX_FLOAT8_E4M3FN; break;
    case ScalarType::Float8_e5m2: dt = RNGX_FLOAT8_E5M2; break;
    default: STD_TORCH_CHECK(false, op, ": dtype must be bfloat16, float16, float8_e4m3fn or float8_e5m2");
  }
  STD_TORCH_CHECK(rngx_sround_pair(from, dt), op, ": dtype (", float_name(to.dtype), ") must be of lower precision than ",
                  first_name, "'s dtype (", float_name(first.scalar_type()), ")");
  OutType out{to.dtype, dt, to.dtype};
  out.from = from;
  return out;
}

// A sampler's row (kernels/op_table.h) as C++: its dtype parameter and argument, the tensor its kernel reads, and the
// dtype's values that DTYPE_INT's derivation takes (DTYPE_ROUND's: the input's dtype).
#define RNGX_DTYPE_PARAM_DTYPE_OPTIONAL std::optional<ScalarType> dtype,
#define RNGX_DTYPE_PARAM_DTYPE_FIRST
#define RNGX_DTYPE_PARAM_DTYPE_INT ScalarType dtype,
#define RNGX_DTYPE_PARAM_DTYPE_ROUND ScalarType dtype,
#define RNGX_DTYPE_LAST_PARAM_DTYPE_OPTIONAL , std::optional<ScalarType> dtype
#define RNGX_DTYPE_LAST_PARAM_DTYPE_FIRST
#define RNGX_DTYPE_LAST_PARAM_DTYPE_INT , ScalarType dtype
#define RNGX_DTYPE_LAST_PARAM_DTYPE_ROUND , ScalarType dtype
#define RNGX_DTYPE_ARG_DTYPE_OPTIONAL dtype
#define RNGX_DTYPE_ARG_DTYPE_FIRST std::nullopt
#define RNGX_DTYPE_ARG_DTYPE_INT dtype
#define RNGX_DTYPE_ARG_DTYPE_ROUND RoundTo{dtype}
#define RNGX_INPUT_like nullptr
#define RNGX_INPUT_x &x
#define RNGX_LIMITS_DTYPE_OPTIONAL(type)
#define RNGX_LIMITS_DTYPE_FIRST(type)
#define RNGX_LIMITS_DTYPE_INT(type) type.min, type.max,
#define RNGX_LIMITS_DTYPE_ROUND(type) type.from,

// "a=1, b=2" for names "(a, b)" (a row's args, stringized) and the values.
template <class... A>
std::string named_values(const char* names, const A&... values) {
  std::ostringstream s;
  s << std::boolalpha;
  const char* at = names;
  auto one = [&](const auto& v) {
    while (*at == '(' || *at == ',' || *at == ' ') ++at;
    const char* end = at;
    while (*end != ',' && *end != ')' && *end != '\0') ++end;
    s << (at == names ? "" : ", ") << std::string(at, end) << "=" << v;
    at = end;
  };
  (one(values), ...);
  std::string out = s.str();
  return out.rfind(", ", 0) == 0 ? out.substr(2) : out;
}

// The name of a sampler's output dtype.
inline const char* out_name(const OutType& out) {
  if (float_name(out.type) != nullptr) return float_name(out.type);
#define RNGX_INT_OUT_NAME(scalar, name, bits, lo, hi) \
  if (out.type == ScalarType::scalar) return #name;
  RNGX_INT_DTYPES(RNGX_INT_OUT_NAME)
#undef RNGX_INT_OUT_NAME
  return "?";
}

// A sampler's numbers from its derivation (rngx_<kernel>_params, kernels/elements.h), which refuses a bad
// argument with its reason: raised here with the op's name, the call's arguments and its output dtype.
template <class... A>
rngx_params sampler_params(const char* op, const OutType& out, const char* refused, const rngx_params& p,
                           const char* names, const A&... values) {
  STD_TORCH_CHECK(refused == nullptr, op, ": ", refused, ", got ", named_values(names, values...), " (output dtype ",
                  out_name(out), ")");
  return p;
}
#define RNGX_SAMPLER_PARAMS(name, out_kind, kernel, args, type)                                                    \
  [&] {                                                                                                           \
    rngx_params rngx_p{}; /* named apart from the op's parameters */                                              \
    const char* refused = rngx_##kernel##_params(type.dt, RNGX_LIMITS_##out_kind(type) RNGX_UNPACK(args), &rngx_p); \
    return sampler_params("rngx." #name, type, refused, rngx_p, #args, RNGX_UNPACK(args));                        \
  }()

// Moves a Generator's state (int64 (2,) = [seed, offset], on any device) past `blocks` Philox blocks in place,
// under the one lock every step of every state takes, so threads sharing a state never get the same words.
// Returns the key before the step; `taken`, if given, gets a copy of the state before the step on its device.
// (library.cpp)
std::array<int64_t, 2> take_key(Tensor& state, uint64_t blocks, Tensor* taken);

// multinomial's race: float64 weights (*R, C), contiguous, C >= 1, on the state's device; draws and need >= 1.
// Returns the output's shape (*R, draws, C).
inline std::vector<int64_t> race_shape(const Tensor& weights, int64_t draws, int64_t need) {
  STD_TORCH_CHECK(weights.defined(), "rngx.race: weights must be a tensor, got None");
  STD_TORCH_CHECK(weights.scalar_type() == ScalarType::Double, "rngx.race: weights must be float64");
  STD_TORCH_CHECK(weights.dim() >= 1 && weights.dim() < RNGX_MAX_DIMS && weights.size(weights.dim() - 1) >= 1,
                  "rngx.race: weights must have shape (*R, C) with C >= 1 and fewer than ", RNGX_MAX_DIMS, " dims");
  STD_TORCH_CHECK(weights.is_contiguous(), "rngx.race: weights must be contiguous");
  STD_TORCH_CHECK(draws >= 1 && need >= 1, "rngx.race: draws and need must be >= 1, got ", draws, " and ", need);
  STD_TORCH_CHECK(need <= weights.size(weights.dim() - 1), "rngx.race: need (", need, ") exceeds the ",
                  weights.size(weights.dim() - 1), " categories");
  std::vector<int64_t> size(weights.sizes().begin(), weights.sizes().end());
  size.insert(size.end() - 1, draws);
  return size;
}

// The race's job: out (*R, draws, C) contiguous, weights read in place with stride 0 across draws. `strides`
// holds both operands' strides and must outlive the job.
inline rngx_job race_job(const KeyLayout& keys, const Tensor& out, const Tensor& weights,
                         std::array<int64_t, 2 * RNGX_MAX_DIMS>& strides) {
  const int64_t nd = out.dim();
  for (int64_t d = 0; d < nd; ++d) {
    strides[d] = out.stride(d);
    strides[RNGX_MAX_DIMS + d] = d < nd - 2 ? weights.stride(d) : d == nd - 2 ? 0 : weights.stride(d - 1);
  }
  rngx_job job{};
  job.keys = keys.keys;
  job.dtype = RNGX_FLOAT64;
  job.ndim = static_cast<int>(nd);
  job.sizes = out.sizes().data();
  job.out = {out.mutable_data_ptr(), strides.data()};
  job.in = {const_cast<void*>(weights.const_data_ptr()), strides.data() + RNGX_MAX_DIMS};
  return job;
}

// Whether a and b have the same shape.
inline bool same_sizes(const Tensor& a, const Tensor& b) {
  bool same = a.dim() == b.dim();
  for (int64_t d = 0; same && d < a.dim(); ++d) same = a.size(d) == b.size(d);
  return same;
}

// bernoulli's tensor p: like's shape (broadcast: strides may be 0), dtype and device.
inline void check_probabilities(const Tensor& like, const Tensor& p) {
  STD_TORCH_CHECK(p.defined(), "rngx.bernoulli: p must be a tensor, got None");
  STD_TORCH_CHECK(p.scalar_type() == like.scalar_type(), "rngx.bernoulli: p must have like's dtype");
  STD_TORCH_CHECK(p.is_cpu() == like.is_cpu() && p.get_device_index() == like.get_device_index(),
                  "rngx.bernoulli: p must be on like's device");
  STD_TORCH_CHECK(same_sizes(p, like), "rngx.bernoulli: p must have like's shape (broadcast it first)");
}

// The job for `out`, reading `in` (if given), with its keys. The tensors and `keys` must outlive the job.
inline rngx_job make_job(const KeyLayout& keys, rngx_dtype dtype, const Tensor& out, const Tensor* in,
                         const Tensor* in2 = nullptr) {
  rngx_job job{};
  job.keys = keys.keys;
  job.dtype = dtype;
  job.ndim = static_cast<int>(out.dim());
  job.sizes = out.sizes().data();
  job.out = {out.mutable_data_ptr(), out.strides().data()};
  if (in != nullptr) job.in = {const_cast<void*>(in->const_data_ptr()), in->strides().data()};
  if (in2 != nullptr) job.in2 = {const_cast<void*>(in2->const_data_ptr()), in2->strides().data()};
  return job;
}

// normal_tensor's mean and std: each like's shape (broadcast: strides may be 0), dtype and device.
inline void check_mean_std(const Tensor& like, const Tensor& t, const char* name) {
  STD_TORCH_CHECK(t.defined(), "rngx.normal_tensor: ", name, " must be a tensor, got None");
  STD_TORCH_CHECK(t.scalar_type() == like.scalar_type(), "rngx.normal_tensor: ", name, " must have like's dtype");
  STD_TORCH_CHECK(t.is_cpu() == like.is_cpu() && t.get_device_index() == like.get_device_index(),
                  "rngx.normal_tensor: ", name, " must be on like's device");
  STD_TORCH_CHECK(same_sizes(t, like), "rngx.normal_tensor: ", name, " must have like's shape (broadcast it first)");
}

inline void check_dims(int64_t ndim) {
  STD_TORCH_CHECK(ndim <= RNGX_MAX_DIMS, "rngx: tensors may have at most ", RNGX_MAX_DIMS, " dims");
}

// fold_in's data: one integer, or one per key (shape state.shape[:-1]); returns its stride in elements.
inline int64_t check_fold_data(const Tensor& state, const Tensor& data) {
  STD_TORCH_CHECK(data.defined(), "rngx.fold_in: data must be a tensor, got None");
  STD_TORCH_CHECK(data.scalar_type() == ScalarType::Long || data.scalar_type() == ScalarType::UInt64,
                  "rngx.fold_in: data must be an int64 or uint64 tensor");
  STD_TORCH_CHECK(data.get_device_index() == state.get_device_index() && data.is_cpu() == state.is_cpu(),
                  "rngx.fold_in: data must be on the state's device");
  if (data.numel() == 1) return 0;
  bool same = data.dim() == state.dim() - 1;
  for (int64_t d = 0; same && d < data.dim(); ++d) same = data.size(d) == state.size(d);
  STD_TORCH_CHECK(same && data.is_contiguous(),
                  "rngx.fold_in: data must hold one value, or be a contiguous tensor of shape state.shape[:-1]");
  return 1;
}

// Whether a layout is dense and non-overlapping: torch's is_non_overlapping_and_dense (c10's
// compute_non_overlapping_and_dense), which decides the strides aten::empty_like gives.
inline bool non_overlapping_and_dense(int64_t dim, const int64_t* sizes, const int64_t* strides) {
  if (dim == 1) return sizes[0] < 2 || strides[0] == 1;
  std::array<int64_t, RNGX_MAX_DIMS> perm{};
  for (int64_t d = 0; d < dim; ++d) perm[d] = d;
  std::sort(perm.begin(), perm.begin() + dim, [&](int64_t a, int64_t b) {  // size 0 and 1 dims last
    if (sizes[a] < 2) return false;
    if (sizes[b] < 2) return true;
    return strides[a] < strides[b];
  });
  int64_t required = 1;
  for (int64_t i = 0; i < dim; ++i) {
    const int64_t size = sizes[perm[i]];
    if (size < 2) return true;
    if (strides[perm[i]] != required) return false;
    required *= size;
  }
  return true;
}

// aten::empty_like(like, dtype=dtype): the allocation the fake kernels make, so strides always agree. For a dense,
// non-overlapping like that is like's own sizes and strides, which empty_strided makes without a dispatcher call
// (about a sixth of a small op's time); any other layout takes torch's own rule.
inline Tensor empty_like(const Tensor& like, std::optional<ScalarType> dtype) {
  const int64_t dim = like.dim();
  if (dim == 0 || non_overlapping_and_dense(dim, like.sizes().data(), like.strides().data())) {
    int32_t device_type = 0, device_index = 0;
    STABLE_TORCH_ERROR_CODE_CHECK(aoti_torch_get_device_type(like.get(), &device_type));
    STABLE_TORCH_ERROR_CODE_CHECK(aoti_torch_get_device_index(like.get(), &device_index));
    const int32_t code = torch::stable::detail::to<int32_t>(torch::stable::detail::from(dtype.value_or(like.scalar_type())));
    AtenTensorHandle out = nullptr;
    STABLE_TORCH_ERROR_CODE_CHECK(aoti_torch_empty_strided(dim, like.sizes().data(), like.strides().data(), code,
                                                           device_type, device_index, &out));
    return Tensor(out);
  }
  std::array<StableIValue, 6> stack{
      torch::stable::detail::from(like),           torch::stable::detail::from(dtype),
      torch::stable::detail::from(std::nullopt), torch::stable::detail::from(std::nullopt),
      torch::stable::detail::from(std::nullopt), torch::stable::detail::from(std::nullopt)};
  STABLE_TORCH_ERROR_CODE_CHECK(torch_call_dispatcher("aten::empty_like", "", stack.data(), TORCH_ABI_VERSION));
  return torch::stable::detail::to<Tensor>(stack[0]);
}

// adam_sround_'s operands: param's dtype (the moments float32) and shape, contiguous, on param's device.
inline void check_adam_operand(const Tensor& t, const Tensor& param, const char* name, bool moment) {
  STD_TORCH_CHECK(t.defined(), "rngx.adam_sround_: ", name, " must be a tensor, got None");
  STD_TORCH_CHECK(t.is_cpu() == param.is_cpu() && t.get_device_index() == param.get_device_index(),
                  "rngx.adam_sround_: ", name, " must be on param's device");
  STD_TORCH_CHECK(moment ? t.scalar_type() == ScalarType::Float : t.scalar_type() == param.scalar_type(),
                  "rngx.adam_sround_: ", name, moment ? " must be float32" : " must have param's dtype");
  STD_TORCH_CHECK(same_sizes(t, param) && t.is_contiguous(), "rngx.adam_sround_: ", name,
                  " must be contiguous, of param's shape");
}

// A fused step's numbers (kernels/adam.h) and its rounding's (stochastic_round from float32 to param's dtype).
struct AdamStep {
  rngx_adam a;
  rngx_params rounding;
};

// adam_sround_'s arguments checked, and torch's scalars derived as torch.optim.adam's _single_tensor_adam makes them:
// in double, as Python computes them (pow for ** and ** 0.5), each rounded to float32 where its kernel takes it.
inline AdamStep adam_of(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                        double lr, double beta1, double beta2, double eps, double weight_decay, bool decoupled,
                        bool maximize, int64_t step) {
  STD_TORCH_CHECK(param.scalar_type() == ScalarType::BFloat16 || param.scalar_type() == ScalarType::Half,
                  "rngx.adam_sround_: param must be bfloat16 or float16");
  STD_TORCH_CHECK(param.is_contiguous(), "rngx.adam_sround_: param must be contiguous");
  check_adam_operand(grad, param, "grad", false);
  check_adam_operand(exp_avg, param, "exp_avg", true);
  check_adam_operand(exp_avg_sq, param, "exp_avg_sq", true);
  STD_TORCH_CHECK(step >= 1, "rngx.adam_sround_: step must be >= 1, got ", step);
  STD_TORCH_CHECK(lr >= 0 && beta1 >= 0 && beta1 < 1 && beta2 >= 0 && beta2 < 1 && eps >= 0 && weight_decay >= 0,
                  "rngx.adam_sround_: lr, eps and weight_decay must be >= 0 and beta1, beta2 in [0, 1), got lr=", lr,
                  ", beta1=", beta1, ", beta2=", beta2, ", eps=", eps, ", weight_decay=", weight_decay);
  AdamStep out{};
  rngx_adam& a = out.a;
  a.param = static_cast<const uint16_t*>(param.const_data_ptr());
  a.grad = static_cast<const uint16_t*>(grad.const_data_ptr());
  a.exp_avg = static_cast<float*>(exp_avg.mutable_data_ptr());
  a.exp_avg_sq = static_cast<float*>(exp_avg_sq.mutable_data_ptr());
  a.dtype = param.scalar_type() == ScalarType::BFloat16 ? RNGX_BFLOAT16 : RNGX_FLOAT16;
  a.maximize = maximize;
  a.l2 = !decoupled && weight_decay != 0;
  a.decay = decoupled && weight_decay != 0;
  a.weight_decay = static_cast<float>(weight_decay);
  a.decay_factor = static_cast<float>(1 - lr * weight_decay);
  a.lerp_weight = static_cast<float>(1 - beta1);
  a.beta2 = static_cast<float>(beta2);
  a.one_minus_beta2 = static_cast<float>(1 - beta2);
  const double t = static_cast<double>(step);
  a.bias_correction2_sqrt = static_cast<float>(std::pow(1 - std::pow(beta2, t), 0.5));
  a.eps = static_cast<float>(eps);
  a.neg_step_size = static_cast<float>(-(lr / (1 - std::pow(beta1, t))));
  STD_TORCH_CHECK(rngx_sround_params(a.dtype, RNGX_FLOAT32, 0, &out.rounding) == nullptr,
                  "rngx.adam_sround_: no rounding from float32 to param's dtype");
  return out;
}

}  // namespace rngx_glue
