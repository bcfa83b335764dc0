#!/usr/bin/env bash
# Installs a torch-rngx wheel into a fresh venv that sees another venv's torch (through a .pth file: that venv is
# only read) and runs the stream, op and library-alone tests from a folder outside the source tree, so the
# installed wheel, never the checkout, is what they import.
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
