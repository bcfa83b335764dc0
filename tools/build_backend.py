"""The PEP 517 build backend of pyproject.toml: setuptools', building against the torch already installed.

torch-rngx compiles against torch's headers and links torch's libraries, so it must be built against the torch it
will run with. pip builds in an isolated environment that would hide that torch and install the newest one from
PyPI instead (torch's CUDA build, about 3 GB, whatever build the user has). So where the environment pip installs
into has torch >= 2.10 (CPU or CUDA build), this backend asks for no torch and appends that environment's import
path to the build's, after the build environment's own entries: setup.py then imports the user's torch, while
setuptools and wheel still come from the build environment. Without such a torch it asks for torch >= 2.10, which
pip installs into the build environment and, as a dependency, into the target too.

The environment pip installs into is that of the interpreter running this backend (pip runs it with its own).
"""

import functools
import importlib.util
import json
import os
import subprocess
import sys

from setuptools import build_meta as _setuptools

TORCH = "torch>=2.10"

# The interpreter without pip's build isolation (PYTHONPATH pointing at its build environment, no user site):
# its sys.path, and the version of the torch it would import, without importing torch.
_PROBE = """
import json, sys
from importlib import metadata
try:
    version = metadata.version("torch")
except metadata.PackageNotFoundError:
    version = None
print(json.dumps({"path": sys.path, "torch": version}))
"""


def _release(version):
    return tuple(int(p) for p in version.split("+")[0].split(".")[:2])


@functools.cache
def _have_torch():
    """Whether setup.py can import a torch >= 2.10: the build environment's (no isolation, or the one asked for),
    or the target environment's, whose import path is then appended to sys.path."""
    if importlib.util.find_spec("torch") is not None:
        return True
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONNOUSERSITE")}
    probe = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True)
    if probe.returncode != 0:
        return False
    target = json.loads(probe.stdout)
    if target["torch"] is None or _release(target["torch"]) < (2, 10):
        return False
    sys.path.extend(p for p in target["path"] if p not in sys.path)
    importlib.invalidate_caches()
    if importlib.util.find_spec("torch") is None:
        return False
    print(f"torch-rngx: building against the installed torch {target['torch']}", file=sys.stderr)
    return True


def _requires(config_settings=None):
    # setuptools' own get_requires_* would run setup.py, which needs torch; it asks for nothing we lack.
    return [] if _have_torch() else [TORCH]


def _with_torch(hook):
    @functools.wraps(hook)
    def run(*args, **kwargs):
        _have_torch()
        return hook(*args, **kwargs)

    return run


get_requires_for_build_wheel = _requires
get_requires_for_build_editable = _requires
get_requires_for_build_sdist = _requires
prepare_metadata_for_build_wheel = _with_torch(_setuptools.prepare_metadata_for_build_wheel)
prepare_metadata_for_build_editable = _with_torch(_setuptools.prepare_metadata_for_build_editable)
build_wheel = _with_torch(_setuptools.build_wheel)
build_editable = _with_torch(_setuptools.build_editable)
build_sdist = _with_torch(_setuptools.build_sdist)
