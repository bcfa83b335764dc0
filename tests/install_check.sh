#!/usr/bin/env bash
# The README's install line as a user runs it (make install-check): a copy of this checkout as a clone holds it
# (tracked and untracked files, nothing git ignores: no build, no venv), `pip install .` there into a fresh venv
# that sees another venv's CPU torch through a .pth file (that venv is only read), with pip's build isolation on.
# A stale build folder planted there first must not reach the package. Then, from outside the tree, the README's
# quick start; inside it, the ImportError naming the tree that shadows the installed package.
#   tests/install_check.sh <venv with torch's CPU build>
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
torch_venv=$(cd "$1" && pwd)
work=$(mktemp -d /tmp/rngx-install.XXXXXX)
trap 'rm -rf "$work"' EXIT

mkdir "$work/src"
git -C "$root" ls-files -z -co --exclude-standard | tar -C "$root" --null -T - --ignore-failed-read -cf - | tar -C "$work/src" -xf -
"$torch_venv/bin/python" -m venv "$work/venv"  # the same CPython as the torch venv, so its .pth applies
py="$work/venv/bin/python"
purelib() { "$1" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])"; }
purelib "$torch_venv/bin/python" > "$(purelib "$py")/torch-venv.pth"
"$py" -c "import torch; assert torch.version.cuda is None, 'expected a CPU torch'; print('torch', torch.__version__)"

# A build folder left by another build (another torch, or the CUDA variant), newer than every source: setuptools
# alone would ship these files. setup.py must build afresh and drop the _C_cuda it does not build.
stale="$work/src/build/$("$py" -c "import sys, sysconfig; print(f'lib.{sysconfig.get_platform()}-{sys.implementation.cache_tag}')")/torch_rngx"
mkdir -p "$stale"
echo "a stale build" > "$stale/_C.abi3.so"
echo "a stale build" > "$stale/_C_cuda.abi3.so"

echo "== pip install . (the README's line), build isolation on"
(cd "$work/src" && time "$work/venv/bin/pip" install -q .)

echo "== the README's quick start, from outside the tree"
cd "$work"
"$py" - "$root/README.md" <<'PY'
import os
import re
import sys

quick_start = re.search(r"^## Quick start\n+(?:<!--.*-->\n)?```python\n(.*?)^```", open(sys.argv[1]).read(),
                        re.S | re.M).group(1)
exec(compile(quick_start, "README.md, Quick start", "exec"))

import torch
import torch_rngx

here = os.path.dirname(torch_rngx.__file__)
assert here.startswith(os.path.join(sys.prefix, "lib")), f"imported {here}, not the installed package"
# A CPU torch gets the CPU library only, nvcc or not, and that library links no CUDA.
assert not any(n.startswith("_C_cuda") for n in os.listdir(here)), os.listdir(here)
assert "torch_rngx._C_cuda" not in sys.modules
print("quick start ran on torch", torch.__version__, "with", torch_rngx._C.__file__)
PY
echo "== the wheel pip built carries LICENSE, and the metadata its license, version and URLs"
"$py" - <<'PY'
from importlib.metadata import distribution, version

import torch_rngx

dist = distribution("torch-rngx")
licenses = [f for f in dist.files if f.name == "LICENSE"]
assert licenses and "BSD 3-Clause License" in licenses[0].read_text(), dist.files
assert dist.metadata["License-Expression"] == "BSD-3-Clause", dist.metadata["License-Expression"]
assert version("torch-rngx") == torch_rngx.__version__, (version("torch-rngx"), torch_rngx.__version__)
assert any(u.startswith("Changelog, ") for u in dist.metadata.get_all("Project-URL")), dist.metadata.get_all("Project-URL")
print("LICENSE at", licenses[0], "; version", torch_rngx.__version__)
PY
echo "== python -m torch_rngx and --json: the bug report's fields and the self-check (exit status 1 on a failure)"
"$py" -m torch_rngx
"$py" -m torch_rngx --json > "$work/report.json"
"$py" -c "import json, sys; r = json.load(open(sys.argv[1])); assert r['ok'] and r['build']['torch'], r" "$work/report.json"
lib=$("$py" -c "import torch_rngx; print(torch_rngx._C.__file__)")
if readelf -d "$lib" | grep -i "NEEDED.*cuda"; then
  echo "$lib links CUDA"; exit 1
fi

echo "== import torch_rngx inside the tree: an ImportError that names the shadowing"
cd "$work/src"
if out=$("$py" -c "import torch_rngx" 2>&1); then
  echo "import torch_rngx inside the source tree was expected to fail"; exit 1
fi
echo "$out" | tail -1
echo "$out" | tail -1 | grep -q "ImportError: torch_rngx was imported from $work/src/torch_rngx, which has no compiled library (_C), and it hides the torch-rngx installed in $work/venv/"
