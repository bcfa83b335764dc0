// The rngx library: every op schema, in one table, and take_'s kernel for any device. Loading the shared library
// alone (torch.ops.load_library, or dlopen in a C++ program such as AOTInductor's runtime) defines the ops;
// the per-device kernels are registered in ops.cpp (CPU) and ops_cuda.cpp (CUDA).
//
// Python (torch_rngx/_ops.py) adds what the stable ABI cannot express at our target version, 2.10: seed_state
// (its nondeterministic_seeded tag needs torch_library_def_with_tags, 2.12), fake kernels (a C++ Meta kernel
// would bar torch.library.register_fake), autograd formulas, vmap rules, and a journaling take_ for checkpointing.
//
// Stable-ABI calls relied on, with the first torch that has each (the "Minimum compatible version" of torch's
// headers; the library macros and shim functions carry none, and are in 2.10's headers, the oldest we build
// against): aoti_torch_library_init_def and aoti_torch_library_def (<= 2.10), STABLE_TORCH_LIBRARY_IMPL and
// StableLibrary::impl (which calls torch_library_impl from 2.10) and TORCH_BOX (<= 2.10); torch::stable::clone
// and copy_ (2.9); torch::stable::to(Tensor, Device) (2.10).
#include <cstdio>
#include <mutex>

#include "glue.h"

namespace {

// One schema per line. Optional arguments go last, with their defaults, so older callers keep working. Every
// sampler ends with an optional global view (docs/stream.md, "Global view").
#define RNGX_VIEW "SymInt[]? global_shape=None, SymInt[]? global_start=None"
constexpr const char* kSchemas[] = {
    "bits(SymInt[] size, Tensor state, ScalarType dtype, " RNGX_VIEW ") -> Tensor",
    "uniform(Tensor like, Tensor state, float low, float high, ScalarType? dtype=None, " RNGX_VIEW ") -> Tensor",
    "quantize_noise(Tensor x, Tensor state, float half, " RNGX_VIEW ") -> Tensor",
    "dropout(Tensor x, Tensor state, float p, " RNGX_VIEW ") -> Tensor",
    "normal(Tensor like, Tensor state, float mean, float std, ScalarType? dtype=None, " RNGX_VIEW ") -> Tensor",
    "truncated_normal(Tensor like, Tensor state, float mean, float std, float a, float b, ScalarType? dtype=None, "
    RNGX_VIEW ") -> Tensor",
    "bernoulli(Tensor like, Tensor state, float p, " RNGX_VIEW ") -> Tensor",
    // p: like's shape (broadcast, stride 0 allowed) and dtype
    "bernoulli_tensor(Tensor like, Tensor state, Tensor p, " RNGX_VIEW ") -> Tensor",
    "randint(Tensor like, Tensor state, int low, int high, ScalarType dtype, " RNGX_VIEW ") -> Tensor",
    "exponential(Tensor like, Tensor state, float rate, ScalarType? dtype=None, " RNGX_VIEW ") -> Tensor",
    // multinomial's race: weights (*R, C) float64 -> E / w of shape (*R, draws, C); each row needs `need`
    // positive weights
    "race(Tensor weights, Tensor state, int draws, int need) -> Tensor",
    "split(Tensor state, int num) -> Tensor",
    "fold_in(Tensor state, Tensor data) -> Tensor",
    // A Generator's step: returns the key for one call, and moves the offset past `blocks` in place.
    "take_(Tensor(a!) state, SymInt blocks) -> Tensor",
    // The small-tensor path: a CPU Generator's step and the op in one dispatcher call (no autograd; never traced).
    "uniform_from_(Tensor(a!) state, Tensor like, float low, float high, ScalarType? dtype=None) -> Tensor",
    "quantize_noise_from_(Tensor(a!) state, Tensor x, float half) -> Tensor",
    "normal_from_(Tensor(a!) state, Tensor like, float mean, float std, ScalarType? dtype=None) -> Tensor",
    "bernoulli_from_(Tensor(a!) state, Tensor like, float p) -> Tensor",
    "randint_from_(Tensor(a!) state, Tensor like, int low, int high, ScalarType dtype) -> Tensor",
};

using rngx_glue::Tensor;

// Serializes steps of every state, as the Python kernel's lock does: threads sharing a state never get the
// same words.
std::mutex take_mutex;

void step_in_place(int64_t* s, int64_t blocks) {
  s[1] = static_cast<int64_t>(static_cast<uint64_t>(s[1]) + static_cast<uint64_t>(blocks));  // wraps modulo 2^64
}

Tensor take_(Tensor state, int64_t blocks) {
  rngx_glue::check_state(state);
  STD_TORCH_CHECK(state.scalar_type() == torch::headeronly::ScalarType::Long && state.dim() == 1 &&
                      state.size(0) == 2,
                  "rngx.take_: state must be a Generator's: an int64 tensor of shape (2,) = [seed, offset]");
  STD_TORCH_CHECK(blocks >= 0, "rngx.take_: blocks must be >= 0, got ", blocks);
  std::lock_guard<std::mutex> lock(take_mutex);
  if (state.is_cpu()) {
    Tensor taken = torch::stable::clone(state);
    step_in_place(static_cast<int64_t*>(state.mutable_data_ptr()), blocks);
    return taken;
  }
  // A device state: step a host copy, then write it back (copy_ is ordered on the device's current stream).
  Tensor host = torch::stable::to(state, torch::stable::Device(torch::headeronly::DeviceType::CPU), false, true);
  Tensor taken = torch::stable::clone(state);
  step_in_place(static_cast<int64_t*>(host.mutable_data_ptr()), blocks);
  torch::stable::copy_(state, host);
  return taken;
}

// What STABLE_TORCH_LIBRARY(rngx, m) does, with its errors handled. The macro's constructor ignores a failed init
// and then defines through a null handle: a crash when another copy of this library, loaded from another path,
// defined rngx first. Here that copy's definitions are kept, with a note on stderr. The handle is never deleted:
// deleting it would remove the ops.
const struct DefineOps {
  DefineOps() {
    TorchLibraryHandle lib = nullptr;
    if (aoti_torch_library_init_def("rngx", __FILE__, __LINE__, &lib) != AOTI_TORCH_SUCCESS) {
      std::fprintf(stderr, "torch-rngx: the rngx ops are already defined (by another copy of this library?)\n");
      return;
    }
    for (const char* schema : kSchemas)
      if (aoti_torch_library_def(lib, schema) != AOTI_TORCH_SUCCESS)
        std::fprintf(stderr, "torch-rngx: cannot define rngx::%s\n", schema);
  }
} define_ops;

}  // namespace

STABLE_TORCH_LIBRARY_IMPL(rngx, CompositeExplicitAutograd, m) { m.impl("take_", TORCH_BOX(&take_)); }
