// Every rngx op once. library.cpp defines the ops from the schemas here; ops.cpp (CPU) and ops_cuda.cpp (CUDA)
// generate each sampler's kernel from its row and register every kernel from these lists. Names and schemas are
// the ops' interface (users' torch.ops.rngx calls, AOTInductor packages): they stay as they are.
#pragma once

// Every sampler ends with an optional global view (docs/stream.md, "Global view"). Optional arguments go last,
// with their defaults, so older callers keep working.
#define RNGX_VIEW "SymInt[]? global_shape=None, SymInt[]? global_start=None"

// The samplers: ops that fill an output laid out like their first argument, with one kernel per device.
//   X(name, first, out, kernel, derive, params, args, schema)
//   first   `like` (its shape, layout and device only) or `x` (the kernel reads it too)
//   out     the output dtype: DTYPE_OPTIONAL (`ScalarType? dtype=None`, a float type, else like's), DTYPE_FIRST
//           (first's, a float type) or DTYPE_INT (`ScalarType dtype`, an integer type)
//   kernel  rngx_<kernel> (kernels/ops.h) on the CPU, rngx_cuda_<kernel> (kernels/ops_cuda.h) on CUDA
//   derive  rngx_glue::<derive>(op, out, args...) (glue.h): checks the arguments, returns the kernel's rngx_params
//   params  the C++ parameters between state and the dtype, args their names, schema their text in the schema
#define RNGX_SAMPLERS(X)                                                                                           \
  X(uniform, like, DTYPE_OPTIONAL, uniform, uniform_params, (double low, double high), (low, high),                \
    "float low, float high")                                                                                      \
  X(quantize_noise, x, DTYPE_FIRST, quantize_noise, noise_params, (double half), (half), "float half")             \
  X(dropout, x, DTYPE_FIRST, dropout, dropout_params, (double p), (p), "float p")                                  \
  X(normal, like, DTYPE_OPTIONAL, normal, normal_params, (double mean, double std), (mean, std),                   \
    "float mean, float std")                                                                                      \
  X(truncated_normal, like, DTYPE_OPTIONAL, truncnorm, truncnorm_params,                                           \
    (double mean, double std, double a, double b), (mean, std, a, b), "float mean, float std, float a, float b")  \
  X(bernoulli, like, DTYPE_FIRST, bernoulli, dropout_params, (double p), (p), "float p")                           \
  X(randint, like, DTYPE_INT, randint, randint_params, (int64_t low, int64_t high), (low, high),                   \
    "int low, int high")                                                                                          \
  X(exponential, like, DTYPE_OPTIONAL, exponential, exponential_params, (double rate), (rate), "float rate")

// The other ops with a CPU and a CUDA kernel, written out in ops.cpp and ops_cuda.cpp. X(name, schema)
#define RNGX_DEVICE_OPS(X)                                                                                         \
  X(bits, "bits(SymInt[] size, Tensor state, ScalarType dtype, " RNGX_VIEW ") -> Tensor")                          \
  /* p: like's shape (broadcast, stride 0 allowed) and dtype */                                                    \
  X(bernoulli_tensor, "bernoulli_tensor(Tensor like, Tensor state, Tensor p, " RNGX_VIEW ") -> Tensor")            \
  /* multinomial's race: weights (*R, C) float64 -> E / w of shape (*R, draws, C); each row needs `need` positive   \
     weights */                                                                                                    \
  X(race, "race(Tensor weights, Tensor state, int draws, int need) -> Tensor")                                     \
  X(split, "split(Tensor state, int num) -> Tensor")                                                               \
  X(fold_in, "fold_in(Tensor state, Tensor data) -> Tensor")

// The small-tensor path: a CPU Generator's step and the op in one dispatcher call (no autograd; never traced).
// CPU kernels only (ops.cpp).
#define RNGX_CPU_OPS(X)                                                                                            \
  X(uniform_from_, "uniform_from_(Tensor(a!) state, Tensor like, float low, float high, ScalarType? dtype=None) "  \
                   "-> Tensor")                                                                                    \
  X(quantize_noise_from_, "quantize_noise_from_(Tensor(a!) state, Tensor x, float half) -> Tensor")            \
  X(normal_from_, "normal_from_(Tensor(a!) state, Tensor like, float mean, float std, ScalarType? dtype=None) "   \
                  "-> Tensor")                                                                                    \
  X(bernoulli_from_, "bernoulli_from_(Tensor(a!) state, Tensor like, float p) -> Tensor")                        \
  X(randint_from_, "randint_from_(Tensor(a!) state, Tensor like, int low, int high, ScalarType dtype) -> Tensor")

// A Generator's step: returns the key for one call, and moves the offset past `blocks` in place, under the one lock
// of every state's step (library.cpp). One kernel for every device. take_ is the step graphs record: it consults the
// checkpoint journal where a process has one (journal.h); step_ is the bare step.
#define RNGX_ANY_DEVICE_OPS(X)                                                                                     \
  X(take_, "take_(Tensor(a!) state, SymInt blocks) -> Tensor")                                                     \
  X(step_, "step_(Tensor(a!) state, SymInt blocks) -> Tensor")

// A sampler's schema from its row.
#define RNGX_DTYPE_SCHEMA_DTYPE_OPTIONAL ", ScalarType? dtype=None"
#define RNGX_DTYPE_SCHEMA_DTYPE_FIRST ""
#define RNGX_DTYPE_SCHEMA_DTYPE_INT ", ScalarType dtype"
#define RNGX_SAMPLER_SCHEMA(name, first, out, kernel, derive, params, args, schema)                                \
  #name "(Tensor " #first ", Tensor state, " schema RNGX_DTYPE_SCHEMA_##out ", " RNGX_VIEW ") -> Tensor"
