/* The CPython module. Importing it runs the static op registrations in ops.cpp; it exports nothing. */
#include <Python.h>

static struct PyModuleDef rngx_module = {PyModuleDef_HEAD_INIT, "_C", "torch-rngx kernels (ops: torch.ops.rngx)", -1,
                                         NULL, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__C(void) { return PyModule_Create(&rngx_module); }
