/* The CPython module torch_rngx._C_cuda. Importing it runs impl_cuda.cpp's static registration of the CUDA kernels;
 * torch_rngx._C defines the ops they implement (library.cpp). It has no functions of its own.
 * Like module.c it touches no data of the Python C API, so a program without Python can dlopen it (RTLD_LAZY). */
#include <Python.h>

static struct PyModuleDef rngx_cuda_module = {
    PyModuleDef_HEAD_INIT, "_C_cuda", "torch-rngx CUDA kernels (ops: torch.ops.rngx, defined by torch_rngx._C)", -1,
    NULL, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__C_cuda(void) { return PyModule_Create(&rngx_cuda_module); }
