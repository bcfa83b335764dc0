/* The CPython module. Importing it runs the static op registrations (library.cpp, impl_cpu.cpp). It exports the op
 * table's rows (kernels/op_table.h), from which torch_rngx/_spec.py derives each op's words per element and one-call
 * form; the switch between Philox paths (csrc/kernels/simd.h), which tests and benchmarks use to run every path; and
 * set_journal, which hands the C++ step the checkpoint journal (journal.h); and steps_made and give_back, through
 * which a call that raises gives back the blocks its steps took (steps.h); and fold_in_split, mt_states and mt_put, the
 * data loader's keys of a batch without tensors and its seeding of Python's random in place.
 * It uses functions of the C API only, never its data (no Py_None, no PyExc_*): data symbols are bound when the
 * library loads, functions on first call, so a program without Python (examples/aoti_cpp) can dlopen this
 * library with RTLD_LAZY for its ops. */
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "journal.h"
#include "kernels/kernels.h"
#include "kernels/op_table.h"
#include "kernels/simd.h"
#include "steps.h"

/* ---- the op table ---- */

static PyObject *none(void) { return Py_BuildValue(""); }

/* A row's words by dtype name, in its order. */
static PyObject *float_words(int f16, int bf16, int f32, int f64) {
  return Py_BuildValue("{s:i,s:i,s:i,s:i}", "float16", f16, "bfloat16", bf16, "float32", f32, "float64", f64);
}

static PyObject *int_words(int k) {
  PyObject *words = PyDict_New();
#define RNGX_PY_INT_WORDS(scalar, name, bits, lo, hi)                                                             \
  if (words != NULL) {                                                                                            \
    PyObject *v = PyLong_FromLong(k);                                                                             \
    if (v == NULL || PyDict_SetItemString(words, #name, v) < 0) Py_CLEAR(words);                                  \
    Py_XDECREF(v);                                                                                                \
  }
  RNGX_INT_DTYPES(RNGX_PY_INT_WORDS)
#undef RNGX_PY_INT_WORDS
  return words;
}

#define RNGX_PY_KIND_DTYPE_OPTIONAL "optional"
#define RNGX_PY_KIND_DTYPE_FIRST "first"
#define RNGX_PY_KIND_DTYPE_INT "int"
#define RNGX_PY_KIND_DTYPE_ROUND "round"
#define RNGX_PY_WORDS_DTYPE_OPTIONAL(words) float_words(RNGX_UNPACK(words))
#define RNGX_PY_WORDS_DTYPE_FIRST(words) float_words(RNGX_UNPACK(words))
#define RNGX_PY_WORDS_DTYPE_INT(words) int_words(RNGX_PICK(0, words))
#define RNGX_PY_WORDS_DTYPE_ROUND(words) float_words(RNGX_UNPACK(words)) /* by x's dtype */
#define RNGX_PY_NARROW_DTYPE_OPTIONAL(words) none()
#define RNGX_PY_NARROW_DTYPE_FIRST(words) none()
#define RNGX_PY_NARROW_DTYPE_INT(words) PyLong_FromUnsignedLongLong(RNGX_PICK(1, words))
#define RNGX_PY_NARROW_DTYPE_ROUND(words) none()
#define RNGX_PY_WIDE_DTYPE_OPTIONAL(words) PyDict_New()
#define RNGX_PY_WIDE_DTYPE_FIRST(words) PyDict_New()
#define RNGX_PY_WIDE_DTYPE_INT(words) Py_BuildValue("{s:i}", "int64", RNGX_PICK(2, words))
#define RNGX_PY_WIDE_DTYPE_ROUND(words) PyDict_New()
#define RNGX_PY_PAIRED_ELEMENTS 0
#define RNGX_PY_PAIRED_PAIRS 1
#define RNGX_PY_FUSED_FUSED(name) #name "_from_"
#define RNGX_PY_FUSED_NOT_FUSED(name) NULL

static int append(PyObject *list, PyObject *item) {
  const int rc = item == NULL ? -1 : PyList_Append(list, item);
  Py_XDECREF(item);
  return rc;
}

static PyObject *samplers(PyObject *self, PyObject *args) {
  (void)self, (void)args;
  PyObject *rows = PyList_New(0);
#define RNGX_PY_ROW(name, first, out, kernel, params, args, schema, words, form, fused)                           \
  if (rows != NULL &&                                                                                             \
      append(rows, Py_BuildValue("{s:s,s:s,s:s,s:s,s:N,s:N,s:N,s:N,s:z}", "name", #name, "first", #first, "dtype", \
                                 RNGX_PY_KIND_##out, "params", schema, "words", RNGX_PY_WORDS_##out(words),       \
                                 "paired", PyBool_FromLong(RNGX_PY_PAIRED_##form), "narrow",                      \
                                 RNGX_PY_NARROW_##out(words), "wide", RNGX_PY_WIDE_##out(words), "fused",         \
                                 RNGX_PY_FUSED_##fused(name))) < 0)                                               \
    Py_CLEAR(rows);
  RNGX_SAMPLERS(RNGX_PY_ROW)
#undef RNGX_PY_ROW
  return rows;
}

#define RNGX_PY_KERNEL_WORDS_FLOATS(words) float_words(RNGX_UNPACK(words))
#define RNGX_PY_KERNEL_WORDS_INTS(words)                                                                          \
  Py_BuildValue("{i:i,i:i,i:i,i:i}", 8, RNGX_PICK(0, words), 16, RNGX_PICK(1, words), 32, RNGX_PICK(2, words), 64, \
                RNGX_PICK(3, words))
#define RNGX_PY_KERNEL_WORDS_F64(words) Py_BuildValue("{s:i}", "float64", RNGX_PICK(0, words))

static PyObject *kernel_words(PyObject *self, PyObject *args) {
  (void)self, (void)args;
  PyObject *out = PyDict_New();
#define RNGX_PY_KERNEL(kernel, types, reads, words, form)                                                         \
  if (out != NULL) {                                                                                              \
    PyObject *w = RNGX_PY_KERNEL_WORDS_##types(words);                                                            \
    if (w == NULL || PyDict_SetItemString(out, #kernel, w) < 0) Py_CLEAR(out);                                    \
    Py_XDECREF(w);                                                                                                \
  }
  RNGX_DEVICE_KERNELS(RNGX_PY_KERNEL)
#undef RNGX_PY_KERNEL
  return out;
}

/* ---- the Philox paths ---- */

static PyObject *simd(PyObject *self, PyObject *args) {
  (void)self, (void)args;
  return PyUnicode_FromString(rngx_simd_name(rngx_simd_active()));
}

static PyObject *simd_paths(PyObject *self, PyObject *args) {
  (void)self, (void)args;
  PyObject *paths = PyList_New(0);
  for (int p = 0; paths != NULL && p < RNGX_SIMD_COUNT; ++p) {
    if (!rngx_simd_supported((rngx_simd)p)) continue;
    PyObject *name = PyUnicode_FromString(rngx_simd_name((rngx_simd)p));
    if (name == NULL || PyList_Append(paths, name) < 0) Py_CLEAR(paths);
    Py_XDECREF(name);
  }
  return paths;
}

/* Raises the builtin exception `type` ("ValueError", ...) with the message format % text; returns NULL. The type is
 * looked up, not linked (PyExc_* are data). */
static PyObject *raise_builtin(const char *type, const char *format, const char *text) {
  PyObject *builtins = PyImport_ImportModule("builtins");
  PyObject *error = builtins != NULL ? PyObject_GetAttrString(builtins, type) : NULL;
  Py_XDECREF(builtins);
  if (error != NULL) PyErr_Format(error, format, text);
  Py_XDECREF(error);
  return NULL;
}

static PyObject *set_simd(PyObject *self, PyObject *args) {
  const char *want;
  (void)self;
  if (!PyArg_ParseTuple(args, "s", &want)) return NULL;
  for (int p = 0; p < RNGX_SIMD_COUNT; ++p)
    if (strcmp(want, rngx_simd_name((rngx_simd)p)) == 0 && rngx_simd_select((rngx_simd)p) == 0)
      return Py_BuildValue(""); /* None */
  return raise_builtin("ValueError", "set_simd: %s is not a path this build and CPU run", want);
}

/* ---- what this library was built with (python -m torch_rngx prints it) ---- */
#ifndef RNGX_BUILT_WITH_TORCH
#define RNGX_BUILT_WITH_TORCH "unknown" /* setup.py defines it; a build by other means says so */
#endif
#define RNGX_STRING(x) #x
#define RNGX_EXPANDED(x) RNGX_STRING(x)

static PyObject *build(PyObject *self, PyObject *args) {
  (void)self, (void)args;
  return Py_BuildValue("{s:s,s:s,s:s,s:s}", "torch", RNGX_BUILT_WITH_TORCH, "torch_target_version",
                       RNGX_EXPANDED(TORCH_TARGET_VERSION), "py_limited_api", RNGX_EXPANDED(Py_LIMITED_API),
                       "compiler", __VERSION__);
}

/* ---- the checkpoint journal (journal.h), in Python: torch_rngx/_step.py gives it through set_journal ---- */
static PyObject *hooks_on_stack; /* torch's top saved-tensor hooks (None when there are none), given False */
static PyObject *graph_task;     /* torch's running backward pass: -1 outside one */
static PyObject *replay_draw, *record_draw, *py_false, *py_none;

/* The Python exception being raised, as text in message; clears it. */
static void take_message(char *message, size_t size) {
  PyObject *type, *value, *trace;
  PyErr_Fetch(&type, &value, &trace);
  PyObject *text = value != NULL ? PyObject_Str(value) : NULL;
  PyObject *utf8 = text != NULL ? PyUnicode_AsUTF8String(text) : NULL;
  snprintf(message, size, "%s", utf8 != NULL ? PyBytes_AsString(utf8) : "torch_rngx: the checkpoint journal failed");
  Py_XDECREF(utf8), Py_XDECREF(text), Py_XDECREF(type), Py_XDECREF(value), Py_XDECREF(trace);
  PyErr_Clear();
}

static int journal_open(void) {
  PyGILState_STATE gil = PyGILState_Ensure();
  int open = 1; /* a test that fails takes the journal's path, whose Python raises what went wrong */
  PyObject *hooks = PyObject_CallFunctionObjArgs(hooks_on_stack, py_false, NULL);
  if (hooks == py_none) {
    PyObject *task = PyObject_CallFunctionObjArgs(graph_task, NULL);
    open = task == NULL || PyLong_AsLongLong(task) != -1;
    Py_XDECREF(task);
  }
  Py_XDECREF(hooks);
  PyErr_Clear();
  PyGILState_Release(gil);
  return open;
}

static int journal_replay(const void *owner, int64_t key[2], char *message, size_t size) {
  PyGILState_STATE gil = PyGILState_Ensure();
  PyObject *got = PyObject_CallFunction(replay_draw, "K", (unsigned long long)(uintptr_t)owner);
  long long seed = 0, offset = 0;
  int answer = got == NULL ? -1 : got == py_none ? 0 : PyArg_ParseTuple(got, "LL", &seed, &offset) ? 1 : -1;
  if (answer < 0) take_message(message, size);
  key[0] = seed, key[1] = offset;
  Py_XDECREF(got);
  PyGILState_Release(gil);
  return answer;
}

static int journal_record(const void *owner, const int64_t key[2], char *message, size_t size) {
  PyGILState_STATE gil = PyGILState_Ensure();
  PyObject *done = PyObject_CallFunction(record_draw, "KLL", (unsigned long long)(uintptr_t)owner, (long long)key[0],
                                         (long long)key[1]);
  if (done == NULL) take_message(message, size);
  Py_XDECREF(done);
  PyGILState_Release(gil);
  return done == NULL ? -1 : 0;
}

static const rngx_journal journal = {journal_open, journal_replay, journal_record};

static PyObject *set_journal(PyObject *self, PyObject *args) {
  PyObject *hooks, *task, *replay, *record;
  (void)self;
  if (!PyArg_ParseTuple(args, "OOOO", &hooks, &task, &replay, &record)) return NULL;
  if (rngx_journal_hooks == NULL) { /* once: the step reads these without a lock */
    Py_INCREF(hooks), Py_INCREF(task), Py_INCREF(replay), Py_INCREF(record);
    hooks_on_stack = hooks, graph_task = task, replay_draw = replay, record_draw = record;
    py_false = PyBool_FromLong(0), py_none = Py_BuildValue("");
    rngx_journal_hooks = &journal;
  }
  return Py_BuildValue("");
}

/* ---- a failed call's steps (steps.h), for torch_rngx/_step.py ---- */

static PyObject *steps_made(PyObject *self, PyObject *args) {
  (void)self, (void)args;
  return PyLong_FromUnsignedLongLong(rngx_steps_made());
}

static PyObject *give_back(PyObject *self, PyObject *args) {
  unsigned long long since, state;
  (void)self;
  if (!PyArg_ParseTuple(args, "KK", &since, &state)) return NULL;
  rngx_step given[RNGX_STEPS_KEPT];
  const int n = rngx_give_back(since, (void *)(uintptr_t)state, given, RNGX_STEPS_KEPT);
  PyObject *out = PyList_New(0);
  for (int i = 0; out != NULL && i < n; ++i)
    if (append(out, Py_BuildValue("(LLK)", (long long)given[i].seed, (long long)given[i].offset,
                                  (unsigned long long)given[i].blocks)) < 0)
      Py_CLEAR(out);
  return out;
}

/* ---- key derivation without tensors ---- */

/* fold_in_split(seed, offset, data, num) -> bytearray: for each d of data (ints in [0, 2^64), fold_in's int64 bits),
 * the num keys of split(fold_in((seed, offset), d), num), in split's order (key i of d b at (i * n + b) * 2), each
 * key's two int64 words in this machine's order. The loader's keys of a batch of samples (torch_rngx/data.py) with
 * the ops' own derivation, in one call where four tensor ops and a tensor made from a list took 20 µs for one. */
static PyObject *fold_in_split(PyObject *self, PyObject *args) {
  long long seed, offset;
  PyObject *data;
  int num;
  (void)self;
  if (!PyArg_ParseTuple(args, "LLOi", &seed, &offset, &data, &num)) return NULL;
  const Py_ssize_t n = PySequence_Size(data);
  if (n < 0) return NULL;
  const int64_t k = num > 0 ? num : 0;
  int64_t *words = PyMem_Malloc(sizeof(int64_t) * (size_t)(5 * n + 1));
  if (words == NULL) return PyErr_NoMemory();
  int64_t *keys = words, *folded = words + 2 * n, *indices = words + 4 * n;
  for (Py_ssize_t b = 0; b < n; ++b) {
    PyObject *item = PySequence_GetItem(data, b);
    const unsigned long long d = item == NULL ? 0 : PyLong_AsUnsignedLongLong(item);
    Py_XDECREF(item);
    if (PyErr_Occurred() != NULL) {
      PyMem_Free(words);
      return NULL;
    }
    keys[2 * b] = seed, keys[2 * b + 1] = offset, indices[b] = (int64_t)d;
  }
  rngx_fold_in(keys, n, indices, 1, folded);
  PyObject *out = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)(sizeof(int64_t) * 2 * k * n));
  if (out != NULL) rngx_split(folded, n, k, (int64_t *)PyByteArray_AsString(out));
  PyMem_Free(words);
  return out;
}

/* ---- Python's random, seeded in place ---- */

/* What random.seed(seed) makes of a random.Random's Mersenne Twister for an int seed in [0, 2^64), as CPython's
 * RandomObject holds it (`int index; uint32_t state[624]`, found and checked against getstate() by
 * torch_rngx/data.py, which also clears gauss_next as random.seed does): init_by_array of the seed's 32-bit words,
 * least significant first, as many as its bits need (at least one), after init_genrand(19650218), which is the same
 * for every seed and is made once here; the index is 624. Each of init_by_array's 1247 steps waits on the last, so
 * one seed takes 3.2-3.6 µs here; `lanes` seeds mixed side by side (word w of lane l at mt[w * lanes + l]) overlap
 * their steps, and sixteen take 1.1-1.3 µs each. */
enum { MT_N = 624, MT_LANES = 16 };
typedef struct {
  int index;
  uint32_t state[MT_N];
} mt_object_state;

static uint32_t mt_start[MT_N]; /* init_genrand(19650218) */

/* Inlined with `lanes` a constant at each call: the loops over lanes vectorise. */
static inline __attribute__((always_inline)) void mt_mix(const uint64_t *seeds, int lanes, uint32_t *mt,
                                                         mt_object_state *out) {
  uint32_t add[2][MT_LANES]; /* what step s adds: key[j] + j, j = s mod (the seed's words) */
  for (int l = 0; l < lanes; ++l) {
    const uint32_t low = (uint32_t)seeds[l], high = (uint32_t)(seeds[l] >> 32);
    add[0][l] = low, add[1][l] = high != 0 ? high + 1 : low;
  }
  for (int w = 0; w < MT_N; ++w)
    for (int l = 0; l < lanes; ++l) mt[w * lanes + l] = mt_start[w];
  const size_t width = sizeof(uint32_t) * (size_t)lanes;
  size_t i = 1;
  for (size_t s = 0; s < MT_N; ++s) {
    uint32_t *row = mt + i * (size_t)lanes;
    const uint32_t *last = row - lanes, *a = add[s & 1];
    for (int l = 0; l < lanes; ++l) row[l] = (row[l] ^ ((last[l] ^ (last[l] >> 30)) * 1664525u)) + a[l];
    if (++i >= MT_N) memcpy(mt, mt + (MT_N - 1) * lanes, width), i = 1;
  }
  for (size_t s = 1; s < MT_N; ++s) {
    uint32_t *row = mt + i * (size_t)lanes;
    const uint32_t *last = row - lanes, minus = (uint32_t)i;
    for (int l = 0; l < lanes; ++l) row[l] = (row[l] ^ ((last[l] ^ (last[l] >> 30)) * 1566083941u)) - minus;
    if (++i >= MT_N) memcpy(mt, mt + (MT_N - 1) * lanes, width), i = 1;
  }
  for (int l = 0; l < lanes; ++l) {
    out[l].index = MT_N;
    out[l].state[0] = 0x80000000u;
    for (int w = 1; w < MT_N; ++w) out[l].state[w] = mt[w * lanes + l];
  }
}

/* mt_states(seeds) -> bytes: random.seed(seed)'s state for each seed of `seeds` (ints in [0, 2^64)), one after
 * another, each as the object holds it; by sixteen, and one by one for a rest of under six (sixteen lanes cost about as
 * much as five or six seeds alone). */
static PyObject *mt_states(PyObject *self, PyObject *args) {
  PyObject *list;
  (void)self;
  if (!PyArg_ParseTuple(args, "O", &list)) return NULL;
  const Py_ssize_t n = PySequence_Size(list);
  if (n < 0) return NULL;
  uint64_t *seeds = PyMem_Malloc(sizeof(uint64_t) * (size_t)(n + MT_LANES));
  uint32_t *mt = PyMem_Malloc(sizeof(uint32_t) * MT_N * MT_LANES);
  PyObject *out = seeds == NULL || mt == NULL ? PyErr_NoMemory()
                                              : PyBytes_FromStringAndSize(NULL, (Py_ssize_t)sizeof(mt_object_state) * n);
  for (Py_ssize_t k = 0; out != NULL && k < n + MT_LANES; ++k) {
    PyObject *item = k < n ? PySequence_GetItem(list, k) : NULL;
    seeds[k] = item == NULL ? 0 : PyLong_AsUnsignedLongLong(item);
    Py_XDECREF(item);
    if (PyErr_Occurred() != NULL) Py_CLEAR(out);
  }
  if (out != NULL) {
    if (mt_start[MT_N - 1] == 0) {
      uint32_t s = 19650218u;
      for (uint32_t w = 0; w < MT_N; ++w) mt_start[w] = s, s = 1812433253u * (s ^ (s >> 30)) + w + 1;
    }
    mt_object_state *states = (mt_object_state *)PyBytes_AsString(out), last[MT_LANES];
    Py_ssize_t k = 0;
    for (; n - k >= 6; k += MT_LANES) {
      mt_mix(seeds + k, MT_LANES, mt, last);
      memcpy(states + k, last, sizeof(mt_object_state) * (size_t)(n - k < MT_LANES ? n - k : MT_LANES));
    }
    for (; k < n; ++k) mt_mix(seeds + k, 1, mt, states + k);
  }
  PyMem_Free(seeds);
  PyMem_Free(mt);
  return out;
}

/* mt_put(random, offset, states, k): state k of mt_states' bytes written into the random.Random `random` at
 * `offset` bytes (its index and words). */
static PyObject *mt_put(PyObject *self, PyObject *args) {
  PyObject *random, *states;
  Py_ssize_t offset, k;
  (void)self;
  if (!PyArg_ParseTuple(args, "OnOn", &random, &offset, &states, &k)) return NULL;
  char *bytes;
  Py_ssize_t size;
  if (PyBytes_AsStringAndSize(states, &bytes, &size) < 0) return NULL;
  if (k < 0 || k >= size / (Py_ssize_t)sizeof(mt_object_state))
    return raise_builtin("IndexError", "mt_put: %s", "k is not a state of `states`");
  memcpy((char *)random + offset, bytes + k * (Py_ssize_t)sizeof(mt_object_state), sizeof(mt_object_state));
  return none();
}

static PyMethodDef methods[] = {
    {"samplers", samplers, METH_NOARGS,
     "samplers() -> list[dict]: the op table's samplers (csrc/kernels/op_table.h): name, first ('like' or 'x'), dtype "
     "('optional', 'first' or 'int'), params (the schema's text), words (per element, by output dtype name), paired, "
     "narrow and wide (an 'int' row's: the range up to which `words` hold, and the int64 words above it) and fused "
     "(the one-call op's name, or None)."},
    {"kernel_words", kernel_words, METH_NOARGS,
     "kernel_words() -> dict: the other ops' words per element (csrc/kernels/op_table.h), by dtype name, and bits' "
     "by width in bits (also blocks_used's without an op)."},
    {"simd", simd, METH_NOARGS, "simd() -> str: the Philox path in use: 'scalar', 'avx2' or 'avx512'."},
    {"simd_paths", simd_paths, METH_NOARGS, "simd_paths() -> list[str]: the paths this build and CPU run."},
    {"set_simd", set_simd, METH_VARARGS, "set_simd(name): use that path from now on (ValueError if unsupported)."},
    {"build", build, METH_NOARGS,
     "build() -> dict: what this library was built with: the torch it was built against ('torch'), its stable ABI "
     "target (TORCH_TARGET_VERSION), the CPython limited API (Py_LIMITED_API) and the C compiler."},
    {"set_journal", set_journal, METH_VARARGS,
     "set_journal(hooks_on_stack, graph_task, replay, record): the checkpoint journal that rngx::take_ consults "
     "(csrc/journal.h); the first call sets it for the life of the process."},
    {"steps_made", steps_made, METH_NOARGS, "steps_made() -> int: how many steps of CPU states this thread has made."},
    {"give_back", give_back, METH_VARARGS,
     "give_back(since, state_ptr) -> list[(seed, offset, blocks)]: gives back, newest first, this thread's steps after "
     "its first `since` of the live CPU state at data pointer state_ptr, each while the state stands where it left "
     "it (csrc/steps.h); returns those given back."},
    {"fold_in_split", fold_in_split, METH_VARARGS,
     "fold_in_split(seed, offset, data, num) -> bytearray: for each d of data (ints in [0, 2^64)), the num keys of "
     "split(fold_in((seed, offset), d), num) as the ops derive them, in split's order, two native int64 words each."},
    {"mt_states", mt_states, METH_VARARGS,
     "mt_states(seeds) -> bytes: random.seed(seed)'s Mersenne Twister state for each int seed in [0, 2^64) of `seeds`, "
     "one after another, each as CPython's random.Random holds it (int index; uint32 state[624])."},
    {"mt_put", mt_put, METH_VARARGS,
     "mt_put(random, offset, states, k): state k of mt_states' bytes written into the random.Random `random` at "
     "`offset` bytes (its index and words; gauss_next is the caller's to clear)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef rngx_module = {PyModuleDef_HEAD_INIT, "_C", "torch-rngx kernels (ops: torch.ops.rngx)", -1,
                                         methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__C(void) {
  rngx_simd_active(); /* resolve RNGX_SIMD now, on one thread, so a warning about it shows once, at import */
  PyObject *module = PyModule_Create(&rngx_module);
  if (module != NULL && PyModule_AddIntConstant(module, "STEPS_KEPT", RNGX_STEPS_KEPT) < 0) Py_CLEAR(module);
  return module;
}
