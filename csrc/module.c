/* The CPython module. Importing it runs the static op registrations (library.cpp, ops.cpp). It exports only the
 * switch between Philox paths (csrc/kernels/simd.h), which tests and benchmarks use to run every path.
 * It uses functions of the C API only, never its data (no Py_None, no PyExc_*): data symbols are bound when the
 * library loads, functions on first call, so a program without Python (examples/aoti_cpp) can dlopen this
 * library with RTLD_LAZY for its ops. */
#include <Python.h>

#include "kernels/simd.h"

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

static PyObject *set_simd(PyObject *self, PyObject *args) {
  const char *want;
  (void)self;
  if (!PyArg_ParseTuple(args, "s", &want)) return NULL;
  for (int p = 0; p < RNGX_SIMD_COUNT; ++p)
    if (strcmp(want, rngx_simd_name((rngx_simd)p)) == 0 && rngx_simd_select((rngx_simd)p) == 0)
      return Py_BuildValue(""); /* None */
  PyObject *builtins = PyImport_ImportModule("builtins");
  PyObject *value_error = builtins != NULL ? PyObject_GetAttrString(builtins, "ValueError") : NULL;
  Py_XDECREF(builtins);
  if (value_error == NULL) return NULL;
  PyErr_Format(value_error, "set_simd: %s is not a path this build and CPU run", want);
  Py_DECREF(value_error);
  return NULL;
}

static PyMethodDef methods[] = {
    {"simd", simd, METH_NOARGS, "simd() -> str: the Philox path in use: 'scalar', 'avx2' or 'avx512'."},
    {"simd_paths", simd_paths, METH_NOARGS, "simd_paths() -> list[str]: the paths this build and CPU run."},
    {"set_simd", set_simd, METH_VARARGS, "set_simd(name): use that path from now on (ValueError if unsupported)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef rngx_module = {PyModuleDef_HEAD_INIT, "_C", "torch-rngx kernels (ops: torch.ops.rngx)", -1,
                                         methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__C(void) {
  rngx_simd_active(); /* resolve RNGX_SIMD now, on one thread, so a warning about it shows once, at import */
  return PyModule_Create(&rngx_module);
}
