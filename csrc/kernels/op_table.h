// Every rngx op once. The C kernels here generate each row's declarations (kernels.h, kernels_cuda.h), loops
// (loops.c) and launch (kernels_cuda.cu); the glue above this folder defines the ops from the schemas here
// (csrc/library.cpp), generates each sampler's op and its one-call form and registers every kernel from these
// lists (csrc/impl_cpu.cpp for the CPU, csrc/impl_cuda.cpp for CUDA), and exports the rows to Python (csrc/module.c,
// read by torch_rngx/_spec.py). Names and schemas are the ops' interface (users' torch.ops.rngx calls, AOTInductor
// packages): they stay as they are. Preprocessor lists only, so C, C++ and CUDA C all include it; it sits with the
// kernels, which include nothing from outside their folder.
#ifndef RNGX_OP_TABLE_H
#define RNGX_OP_TABLE_H

// Every sampler ends with an optional global view (docs/stream.md, "Global view"). Optional arguments go last,
// with their defaults, so older callers keep working.
#define RNGX_VIEW "SymInt[]? global_shape=None, SymInt[]? global_start=None"

// The samplers: ops that fill an output laid out like their first argument from its key's stream.
//   X(name, first, out, kernel, params, args, schema, words, form, fused)
//   first   `like` (its shape, layout and device only) or `x` (the kernel reads its values too)
//   out     the output dtype: DTYPE_OPTIONAL (`ScalarType? dtype=None`, a float type, else like's), DTYPE_FIRST
//           (first's, a float type), DTYPE_INT (`ScalarType dtype`, one of RNGX_INT_DTYPES) or DTYPE_ROUND
//           (`ScalarType dtype`, a float type of lower precision than x's: rngx_sround_pair)
//   kernel  the C name: rngx_<kernel>_params (the arguments' checks and derivation) and the element functions
//           rngx_<kernel>_element_<dtype> in elements.h; the generated rngx_<kernel> (kernels.h) and
//           rngx_cuda_<kernel> (kernels_cuda.h)
//   params  the C parameters between state and the dtype, args their names, schema their text in the schema
//   words   stream words per element (docs/stream.md): for the float kinds by output dtype (float16, bfloat16,
//           float32, float64), for DTYPE_ROUND by x's dtype in that order; for DTYPE_INT (k, narrow, wide): k words
//           while the range (rngx_params.range) is
//           at most narrow, and an int64 output above it wide words (the element rngx_<kernel>_element_b64_wide)
//   form    ELEMENTS (each element its own words) or PAIRS (elements 2p and 2p + 1 share pair p's 2 * words,
//           rngx_<kernel>_pair_<dtype>)
//   fused   FUSED: also `<name>_from_`, a CPU Generator's step and the op in one dispatcher call (the small-tensor
//           path; no autograd, never traced), or NOT_FUSED
#define RNGX_SAMPLERS(X)                                                                                           \
  X(uniform, like, DTYPE_OPTIONAL, uniform, (double low, double high), (low, high), "float low, float high",       \
    (1, 1, 1, 2), ELEMENTS, FUSED)                                                                                \
  X(quantize_noise, x, DTYPE_FIRST, quantize_noise, (double half), (half), "float half", (1, 1, 1, 2), ELEMENTS,   \
    FUSED)                                                                                                        \
  X(dropout, x, DTYPE_FIRST, dropout, (double p), (p), "float p", (1, 1, 1, 2), ELEMENTS, NOT_FUSED)               \
  X(normal, like, DTYPE_OPTIONAL, normal, (double mean, double std), (mean, std), "float mean, float std",         \
    (1, 1, 1, 2), PAIRS, FUSED)                                                                                   \
  X(truncated_normal, like, DTYPE_OPTIONAL, truncnorm, (double mean, double std, double a, double b),             \
    (mean, std, a, b), "float mean, float std, float a, float b", (2, 2, 2, 2), ELEMENTS, NOT_FUSED)              \
  X(bernoulli, like, DTYPE_FIRST, bernoulli, (double p), (p), "float p", (1, 1, 1, 2), ELEMENTS, FUSED)           \
  X(randint, like, DTYPE_INT, randint, (int64_t low, int64_t high), (low, high), "int low, int high",              \
    (2, 0x100000000, 4), ELEMENTS, FUSED)                                                                         \
  X(exponential, like, DTYPE_OPTIONAL, exponential, (double rate), (rate), "float rate", (1, 1, 1, 2), ELEMENTS,  \
    NOT_FUSED)                                                                                                    \
  X(stochastic_round, x, DTYPE_ROUND, sround, (bool saturate), (saturate), "bool saturate", (1, 1, 1, 2),         \
    ELEMENTS, FUSED)                                                                                              \
  RNGX_EDGE_SAMPLERS(X)

// Issue 43's samplers, which torch_rngx.mode routes torch's calls to: alpha dropout with torch's affine in its
// elements (dropout's words and mask), rrelu in training (uniform's words), and the closed forms over the uniform
// and normal streams that Tensor.cauchy_, log_normal_ and geometric_ stand for.
#define RNGX_EDGE_SAMPLERS(X)                                                                                      \
  X(alpha_dropout, x, DTYPE_FIRST, alpha_dropout, (double p), (p), "float p", (1, 1, 1, 2), ELEMENTS, NOT_FUSED)  \
  X(rrelu, x, DTYPE_FIRST, rrelu, (double lower, double upper), (lower, upper), "float lower, float upper",        \
    (1, 1, 1, 2), ELEMENTS, NOT_FUSED)                                                                            \
  X(cauchy, like, DTYPE_OPTIONAL, cauchy, (double median, double sigma), (median, sigma),                         \
    "float median, float sigma", (1, 1, 1, 2), ELEMENTS, NOT_FUSED)                                               \
  X(log_normal, like, DTYPE_OPTIONAL, log_normal, (double mean, double std), (mean, std), "float mean, float std", \
    (1, 1, 1, 2), PAIRS, NOT_FUSED)                                                                               \
  X(geometric, like, DTYPE_OPTIONAL, geometric, (double p), (p), "float p", (1, 1, 1, 2), ELEMENTS, NOT_FUSED)

// DTYPE_INT's dtypes: X(ScalarType, name, bits, min, max), the values an output of it holds.
#define RNGX_INT_DTYPES(X)                                                                                         \
  X(Byte, uint8, 8, 0, 255)                                                                                        \
  X(Char, int8, 8, -128, 127)                                                                                      \
  X(Short, int16, 16, -32768, 32767)                                                                               \
  X(Int, int32, 32, INT32_MIN, INT32_MAX)                                                                          \
  X(Long, int64, 64, INT64_MIN, INT64_MAX)

// The other ops with a CPU and a CUDA kernel, written out in csrc/impl_cpu.cpp and csrc/impl_cuda.cpp. X(name, schema)
#define RNGX_DEVICE_OPS(X)                                                                                         \
  X(bits, "bits(SymInt[] size, Tensor state, ScalarType dtype, " RNGX_VIEW ") -> Tensor")                          \
  /* p: like's shape (broadcast, stride 0 allowed) and dtype */                                                    \
  X(bernoulli_tensor, "bernoulli_tensor(Tensor like, Tensor state, Tensor p, " RNGX_VIEW ") -> Tensor")            \
  /* multinomial's race: weights (*R, C) float64 -> E / w of shape (*R, draws, C); each row needs `need` positive   \
     weights */                                                                                                    \
  X(race, "race(Tensor weights, Tensor state, int draws, int need) -> Tensor")                                     \
  /* normal with tensor mean and std: like's shape (broadcast, stride 0 allowed) and dtype */                     \
  X(normal_tensor, "normal_tensor(Tensor like, Tensor state, Tensor mean, Tensor std, " RNGX_VIEW ") -> Tensor")   \
  X(split, "split(Tensor state, int num) -> Tensor")                                                               \
  X(fold_in, "fold_in(Tensor state, Tensor data) -> Tensor")                                                       \
  /* Adam's (decoupled: AdamW's) step on bfloat16 or float16 weights in float32 (adam.h), rounded into param with   \
     stochastic_round's words of state (torch_rngx/optim.py's fused step); every tensor contiguous, of param's      \
     shape, the moments float32 */                                                                                \
  X(adam_sround_, "adam_sround_(Tensor(a!) param, Tensor grad, Tensor(b!) exp_avg, Tensor(c!) exp_avg_sq, "        \
                  "Tensor state, float lr, float beta1, float beta2, float eps, float weight_decay, bool decoupled, " \
                  "bool maximize, int step, " RNGX_VIEW ") -> ()")

// Their elementwise kernels, generated as a sampler's (loops.c, kernels_cuda.cu) from
//   X(kernel, types, reads, words, form)
//   types   FLOATS (float16, bfloat16, float32, float64), INTS (8-, 16-, 32-, 64-bit integers) or F64 (float64)
//   reads   the inputs the kernel reads per element, in out's dtype: 1, `in` (bernoulli_tensor's p; race's float64
//           weights, stride 0 across draws), or 2, `in` and `in2` (normal_tensor's mean and std)
//   words   stream words per element, by `types` in that order
//   form    ELEMENTS or PAIRS, as a sampler's
// bits' words by width are also blocks_used's without an op.
#define RNGX_DEVICE_KERNELS(X)                                                                                     \
  X(bits, INTS, 0, (1, 1, 1, 2), ELEMENTS)                                                                         \
  X(bernoulli_tensor, FLOATS, 1, (1, 1, 1, 2), ELEMENTS)                                                           \
  X(race, F64, 1, (2), ELEMENTS)                                                                                   \
  X(normal_tensor, FLOATS, 2, (1, 1, 1, 2), PAIRS)

// A Generator's step: returns the key for one call, and moves the offset past `blocks` in place, under the one lock
// of every state's step (csrc/library.cpp). One kernel for every device. take_ is the step graphs record: it
// consults the checkpoint journal where a process has one (csrc/journal.h); step_ is the bare step.
#define RNGX_ANY_DEVICE_OPS(X)                                                                                     \
  X(take_, "take_(Tensor(a!) state, SymInt blocks) -> Tensor")                                                     \
  X(step_, "step_(Tensor(a!) state, SymInt blocks) -> Tensor")

// A row's tuples: RNGX_PICK(1, (a, b, c)) is b, RNGX_UNPACK((a, b, c)) is a, b, c.
#define RNGX_PICK(i, tuple) RNGX_AT##i tuple
#define RNGX_AT0(...) RNGX_AT0_(__VA_ARGS__, ~)
#define RNGX_AT0_(a, ...) a
#define RNGX_AT1(a, b, ...) b
#define RNGX_AT2(a, b, c, ...) c
#define RNGX_AT3(a, b, c, d, ...) d
#define RNGX_UNPACK(tuple) RNGX_ARGS tuple
#define RNGX_ARGS(...) __VA_ARGS__
#define RNGX_CAT(a, b) RNGX_CAT_(a, b)
#define RNGX_CAT_(a, b) a##b

// A sampler's schema and its one-call form's, from its row.
#define RNGX_DTYPE_SCHEMA_DTYPE_OPTIONAL ", ScalarType? dtype=None"
#define RNGX_DTYPE_SCHEMA_DTYPE_FIRST ""
#define RNGX_DTYPE_SCHEMA_DTYPE_INT ", ScalarType dtype"
#define RNGX_DTYPE_SCHEMA_DTYPE_ROUND ", ScalarType dtype"
#define RNGX_SAMPLER_SCHEMA(name, first, out, kernel, params, args, schema, words, form, fused)                      \
  #name "(Tensor " #first ", Tensor state, " schema RNGX_DTYPE_SCHEMA_##out ", " RNGX_VIEW ") -> Tensor"
#define RNGX_FUSED_SCHEMA(name, first, out, kernel, params, args, schema, words, form, fused)                       \
  #name "_from_(Tensor(a!) state, Tensor " #first ", " schema RNGX_DTYPE_SCHEMA_##out ") -> Tensor"

// What a row's fused column gives: RNGX_IF_FUSED(fused, text) is text for FUSED, nothing for NOT_FUSED.
#define RNGX_IF_FUSED(fused, ...) RNGX_FUSED_IS_##fused(__VA_ARGS__)
#define RNGX_FUSED_IS_FUSED(...) __VA_ARGS__
#define RNGX_FUSED_IS_NOT_FUSED(...)

#endif
