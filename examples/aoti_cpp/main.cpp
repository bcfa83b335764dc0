// Runs an AOTInductor package that uses torch-rngx ops, with no Python: loads the op library (torch_rngx/_C.abi3.so,
// which defines the rngx ops and registers their CPU kernels; a CUDA package would also need _C_cuda.abi3.so, loaded
// after it), then the package, runs it `calls` times and appends each output's bytes to a file. tests/test_aoti.py
// compares those bytes with eager PyTorch.
//
//   rngx_aoti <op library> <package.pt2> <out.bin> <calls> <rows> <cols> [seed offset]
//
// The input x (rows, cols) float32 holds (i mod 17 - 8) / 4, exact in float32, so Python builds the same one.
// With seed and offset, the model's second input is the state [seed, offset] (int64); without, the package
// owns its state (a module buffer) and advances it on each call, as the eager module does.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <vector>

#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#include <torch/torch.h>

int main(int argc, char** argv) {
  if (argc != 7 && argc != 9) {
    std::cerr << "usage: " << argv[0] << " <op library> <package.pt2> <out.bin> <calls> <rows> <cols> [seed offset]\n";
    return 2;
  }
  // RTLD_LAZY: the library is also a CPython module, whose few C API calls stay unbound until Python calls them.
  if (dlopen(argv[1], RTLD_LAZY | RTLD_GLOBAL) == nullptr) {
    std::cerr << "cannot load " << argv[1] << ": " << dlerror() << "\n";
    return 1;
  }
  const int calls = std::atoi(argv[4]);
  const int64_t rows = std::atoll(argv[5]), cols = std::atoll(argv[6]);
  const at::Tensor x = torch::arange(rows * cols, torch::kFloat32).remainder(17).sub(8).div(4).reshape({rows, cols});
  std::vector<at::Tensor> inputs{x};
  if (argc == 9) {
    const int64_t key[2] = {std::atoll(argv[7]), std::atoll(argv[8])};
    inputs.push_back(torch::tensor(at::ArrayRef<int64_t>(key, 2), torch::kInt64));
  }

  torch::inductor::AOTIModelPackageLoader loader(argv[2]);
  std::ofstream out(argv[3], std::ios::binary);
  for (int i = 0; i < calls; ++i) {
    const at::Tensor y = loader.run(inputs)[0].contiguous();
    out.write(static_cast<const char*>(y.data_ptr()), static_cast<std::streamsize>(y.nbytes()));
  }
  std::cout << "rngx_aoti: " << calls << " call(s) of " << argv[2] << " -> " << argv[3] << "\n";
  return out.good() ? 0 : 1;
}
