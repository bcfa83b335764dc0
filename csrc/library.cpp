// The rngx library: every op schema (from the op table, kernels/op_table.h), and take_'s kernel for any device.
// Loading the shared library alone (torch.ops.load_library, or dlopen in a C++ program such as AOTInductor's
// runtime) defines the ops; the per-device kernels are registered in impl_cpu.cpp (CPU, in this library, _C) and
// impl_cuda.cpp (CUDA, in the library _C_cuda, which links CUDA and is loaded after this one).
//
// Python adds what the stable ABI cannot express at our target version, 2.10: seed_state (its
// nondeterministic_seeded tag needs torch_library_def_with_tags, 2.12; torch_rngx/_step.py), fake kernels (a C++
// Meta kernel would bar torch.library.register_fake), autograd formulas and vmap rules (torch_rngx/_ops.py), and
// the checkpoint journal that take_ consults (journal.h, torch_rngx/_replay.py).
//
// Stable-ABI calls relied on, with the first torch that has each (the "Minimum compatible version" of torch's
// headers; the library macros and shim functions carry none, and are in 2.10's headers, the oldest we build
// against): aoti_torch_library_init_def and aoti_torch_library_def (<= 2.10), STABLE_TORCH_LIBRARY_IMPL and
// StableLibrary::impl (which calls torch_library_impl from 2.10) and TORCH_BOX (<= 2.10); torch::stable::clone
// and copy_ (2.9); torch::stable::to(Tensor, Device) (2.10); aoti_torch_empty_strided (<= 2.10).
#include <pthread.h>

#include <algorithm>
#include <cstdio>
#include <mutex>

#include "glue.h"
#include "journal.h"
#include "steps.h"

const rngx_journal* rngx_journal_hooks = nullptr;

namespace {

// Every schema, from kernels/op_table.h: each sampler's, its one-call form's where it has one, and the other ops'.
#define RNGX_SCHEMA(name, schema) schema,
#define RNGX_SAMPLER_ROW_SCHEMA(...) RNGX_SAMPLER_SCHEMA(__VA_ARGS__),
#define RNGX_FUSED_ROW_SCHEMA(name, first, out, kernel, params, args, schema, words, form, fused)                   \
  RNGX_IF_FUSED(fused, RNGX_FUSED_SCHEMA(name, first, out, kernel, params, args, schema, words, form, fused), )
constexpr const char* kSchemas[] = {RNGX_SAMPLERS(RNGX_SAMPLER_ROW_SCHEMA) RNGX_DEVICE_OPS(RNGX_SCHEMA)
                                        RNGX_SAMPLERS(RNGX_FUSED_ROW_SCHEMA) RNGX_ANY_DEVICE_OPS(RNGX_SCHEMA)};
#undef RNGX_FUSED_ROW_SCHEMA
#undef RNGX_SAMPLER_ROW_SCHEMA
#undef RNGX_SCHEMA

using rngx_glue::Tensor;

// The one lock of every state's step. A process forked while another thread held it would start with it held and
// no thread to release it: so a fork takes it first (no step is half done at the fork), and parent and child each
// release it after.
std::mutex take_mutex;
const int fork_safe = pthread_atfork([] { take_mutex.lock(); }, [] { take_mutex.unlock(); },
                                     [] { take_mutex.unlock(); });

// This thread's newest steps of CPU states (steps.h): the state each moved, the key it returned and its blocks.
struct LoggedStep {
  int64_t* state;  // null once given back
  rngx_step step;
};
thread_local std::array<LoggedStep, RNGX_STEPS_KEPT> logged;
thread_local uint64_t steps_made = 0;

// An uninitialized int64 CPU tensor of shape (2,), for a key.
Tensor cpu_key() {
  const int64_t size = 2, stride = 1;
  AtenTensorHandle out = nullptr;
  STD_TORCH_CHECK(aoti_torch_empty_strided(1, &size, &stride, aoti_torch_dtype_int64(), aoti_torch_device_type_cpu(), 0,
                                           &out) == AOTI_TORCH_SUCCESS,
                  "rngx: cannot allocate a key");
  return Tensor(out);
}

void step_in_place(int64_t* s, uint64_t blocks) {
  s[1] = static_cast<int64_t>(static_cast<uint64_t>(s[1]) + blocks);  // wraps modulo 2^64
}

void check_step(const char* op, const Tensor& state, int64_t blocks) {
  rngx_glue::check_state(state);
  STD_TORCH_CHECK(state.scalar_type() == torch::headeronly::ScalarType::Long && state.dim() == 1 &&
                      state.size(0) == 2,
                  op, ": state must be a Generator's: an int64 tensor of shape (2,) = [seed, offset]");
  STD_TORCH_CHECK(blocks >= 0, op, ": blocks must be >= 0, got ", blocks);
}

Tensor step_(Tensor state, int64_t blocks) {
  check_step("rngx.step_", state, blocks);
  Tensor taken;
  rngx_glue::take_key(state, static_cast<uint64_t>(blocks), &taken);
  return taken;
}

// The step as graphs record it: a CPU state asks the checkpoint journal first, when one may be open (journal.h); a
// recomputation then gets the recorded key back and the state does not move. A device state in a process with
// Python has take_'s Python kernel (torch_rngx/_step.py), which steps it on the device without a host sync.
Tensor take_(Tensor state, int64_t blocks) {
  check_step("rngx.take_", state, blocks);
  const rngx_journal* journal = rngx_journal_hooks;
  Tensor taken;
  if (journal == nullptr || !state.is_cpu() || !journal->open()) {
    rngx_glue::take_key(state, static_cast<uint64_t>(blocks), &taken);
    return taken;
  }
  const void* owner = state.const_data_ptr();
  std::array<int64_t, 2> key{};
  char why[2048] = "";
  const int replayed = journal->replay(owner, key.data(), why, sizeof why);
  STD_TORCH_CHECK(replayed >= 0, why);
  if (replayed == 1) {
    taken = cpu_key();
    std::copy(key.begin(), key.end(), static_cast<int64_t*>(taken.mutable_data_ptr()));
    return taken;
  }
  key = rngx_glue::take_key(state, static_cast<uint64_t>(blocks), &taken);
  STD_TORCH_CHECK(journal->record(owner, key.data(), why, sizeof why) == 0, why);
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

// The caller checks the state (take_, impl_cpu.cpp's fused ops).
std::array<int64_t, 2> rngx_glue::take_key(Tensor& state, uint64_t blocks, Tensor* taken) {
  if (state.is_cpu()) {
    // The key's tensor is allocated before the lock, directly (a clone would be one more dispatcher call).
    if (taken != nullptr) *taken = cpu_key();
    std::lock_guard<std::mutex> lock(take_mutex);
    auto* s = static_cast<int64_t*>(state.mutable_data_ptr());
    const std::array<int64_t, 2> key{s[0], s[1]};
    step_in_place(s, blocks);
    logged[steps_made++ % RNGX_STEPS_KEPT] = {s, {key[0], key[1], blocks}};
    if (taken != nullptr) std::copy(key.begin(), key.end(), static_cast<int64_t*>(taken->mutable_data_ptr()));
    return key;
  }
  std::lock_guard<std::mutex> lock(take_mutex);
  if (taken != nullptr) *taken = torch::stable::clone(state);
  // A device state: step a host copy, then write it back (copy_ is ordered on the device's current stream).
  Tensor host = torch::stable::to(state, torch::stable::Device(torch::headeronly::DeviceType::CPU), false, true);
  auto* s = static_cast<int64_t*>(host.mutable_data_ptr());
  const std::array<int64_t, 2> key{s[0], s[1]};
  step_in_place(s, blocks);
  torch::stable::copy_(state, host);
  return key;
}

uint64_t rngx_steps_made(void) { return steps_made; }

int rngx_give_back(uint64_t since, void* state, rngx_step* given, int max) {
  const uint64_t kept = steps_made > RNGX_STEPS_KEPT ? steps_made - RNGX_STEPS_KEPT : 0;
  int count = 0;
  std::lock_guard<std::mutex> lock(take_mutex);
  for (uint64_t i = steps_made; i > std::max(since, kept); --i) {
    LoggedStep& e = logged[(i - 1) % RNGX_STEPS_KEPT];
    if (e.state != state) continue;  // another state's, or given back already
    const rngx_step& t = e.step;
    if (e.state[0] != t.seed || static_cast<uint64_t>(e.state[1]) != static_cast<uint64_t>(t.offset) + t.blocks)
      break;  // drawn past since (another thread), or set anew: these blocks may be someone else's now
    e.state[1] = t.offset;
    e.state = nullptr;
    if (count < max) given[count++] = t;
  }
  return count;
}

STABLE_TORCH_LIBRARY_IMPL(rngx, CompositeExplicitAutograd, m) {
#define RNGX_IMPL(name, schema) m.impl(#name, TORCH_BOX(&name));
  RNGX_ANY_DEVICE_OPS(RNGX_IMPL)
#undef RNGX_IMPL
}
