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
"$py" -m pytest -q -p no:cacheprovider tests
