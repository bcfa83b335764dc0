#!/usr/bin/env bash
# Installs a torch-rngx wheel into a fresh venv that sees another venv's torch (through a .pth file: that venv is
# only read) and runs the stream, op and library-alone tests from a folder outside the source tree, so the
# installed wheel, never the checkout, is what they import. A wheel built against torch's CUDA build (with
# torch_rngx._C_cuda) works over a CPU torch too: it then loads the CPU library alone.
#   tests/wheel_check.sh <venv with torch, numpy and pytest> <wheel>
set -euo pipefail
torch_venv=$(cd "$1" && pwd)
wheel=$(realpath "$2")
tests=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/rngx-wheel.XXXXXX)
trap 'rm -rf "$work"' EXIT

"$torch_venv/bin/python" -m venv "$work/venv"  # the same CPython as the torch venv, so its .pth applies
py="$work/venv/bin/python"
purelib() { "$1" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])"; }
purelib "$torch_venv/bin/python" > "$(purelib "$py")/torch-venv.pth"
"$py" -m pip install -q --no-deps "$wheel"

mkdir "$work/tests"
cp "$tests"/{conftest.py,reference.py,test_stream.py,test_ops.py,test_load_library.py} "$work/tests/"
cd "$work"
"$py" -c "import torch, torch_rngx; print('wheel', '$(basename "$wheel")', 'on torch', torch.__version__, 'from', torch_rngx.__file__)"
"$py" -c "import sys, torch_rngx; sys.exit(not torch_rngx.__file__.startswith('$work/venv/'))"
# The CUDA library loads, and registers the CUDA kernels, exactly when the wheel has it and torch is a CUDA build;
# the CPU library never links CUDA.
"$py" - <<'PY'
import os
import subprocess
import sys

import torch
import torch_rngx

shipped = [n for n in os.listdir(os.path.dirname(torch_rngx.__file__)) if n.startswith("_C_cuda.")]
loaded = "torch_rngx._C_cuda" in sys.modules
assert loaded == (bool(shipped) and torch.version.cuda is not None), (shipped, loaded, torch.version.cuda)
assert torch._C._dispatch_has_kernel_for_dispatch_key("rngx::uniform", "CUDA") == loaded
needed = subprocess.run(["readelf", "-d", torch_rngx._C.__file__], capture_output=True, text=True, check=True).stdout
assert "cuda" not in needed.lower(), needed
print("the wheel has", "_C and _C_cuda;" if shipped else "_C only;", "torch", torch.__version__, "loads",
      "both: CUDA kernels registered" if loaded else "_C only: no CUDA kernels")
PY
# The C header ships as files (the checkout's are links to csrc/kernels) and compiles alone: word 3 of key [1, 2].
inc=$("$py" -c "import torch_rngx; print(torch_rngx.include_dir())")
find "$inc/torch_rngx" -name '*.h' -type f | grep -q elements.h
cat > "$work/word.c" <<'C'
#include <stdio.h>
#include <torch_rngx/elements.h>
int main(void) {
  uint32_t w;
  rngx_element_words(1, 2, 3, 1, &w);
  printf("%u\n", w);
  return 0;
}
C
${CC:-cc} -std=c11 -ffp-contract=off -I"$inc" -o "$work/word" "$work/word.c" -lm
test "$("$work/word")" = "$("$py" -c "import torch, torch_rngx.functional as F; print(F.bits((4,), torch.tensor([1, 2]), dtype=torch.uint32)[3].item())")"
"$py" -m pytest -q -p no:cacheprovider tests
