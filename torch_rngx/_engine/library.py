"""Loads the compiled libraries at `import torch_rngx`, or raises an ImportError that says what went wrong and what
to run.

_C (every op schema and the CPU kernels) never links CUDA and loads under any torch build. _C_cuda (the CUDA
kernels, linked against libtorch_cuda and the CUDA runtime) is loaded after it, and only under torch's CUDA build.
A build without _C_cuda (torch's CPU build, or no CUDA toolkit at build time) is complete: CUDA tensors then have
no rngx kernels (docs: cuda/).
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import os
import re
import sys
from typing import Any

import torch

PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # torch_rngx/, above _engine/
_CUDA_LIBRARY = re.compile(r"lib(?:torch_cuda|c10_cuda|cudart|cuda)\.so[.\d]*")


def load() -> None:
    """Imports torch_rngx._C and, under torch's CUDA build, torch_rngx._C_cuda if it was built."""
    _load("_C")
    if torch.version.cuda is not None and importlib.util.find_spec("torch_rngx._C_cuda") is not None:
        _load("_C_cuda")


def _load(name: str) -> None:
    spec = importlib.util.find_spec(f"torch_rngx.{name}")
    # Only the library beside these files: an editable install's finder would supply its own to a copy elsewhere.
    if spec is None or os.path.dirname(os.path.abspath(str(spec.origin))) != PACKAGE:
        raise ImportError(missing_build(PACKAGE, other_copies(PACKAGE)))
    try:
        importlib.import_module(f"torch_rngx.{name}")
    except ImportError as e:
        raise ImportError(unloadable(name, str(spec.origin), str(e), PACKAGE)) from e


def missing_build(package: str, others: list[str]) -> str:
    """The message for a torch_rngx folder without _C; `others`: the installed copies it hides."""
    source = _source_tree(package)
    if others:
        fix = f"build this tree in place: `pip install -e {source}`" if source else "take its folder off PYTHONPATH"
        return (
            f"torch_rngx was imported from {package}, which has no compiled library (_C), and it hides the "
            f"torch-rngx installed in {others[0]}: Python looks in the current folder (or the script's) and "
            f"PYTHONPATH before the installed packages. Run Python from another folder, or {fix}."
        )
    if source:
        return (
            f"torch_rngx's compiled library (_C) is missing from {package}: this source tree is not built. Build "
            f"it in place with `pip install -e {source}` (or `make build` there), or install it with `pip install "
            f"{source}` and run Python from another folder."
        )
    return f"torch_rngx's compiled library (_C) is missing from {package}. Reinstall: {_REINSTALL}."


def unloadable(name: str, path: str, error: str, package: str) -> str:
    """The message for a library that exists but does not load under this torch."""
    source = _source_tree(package)
    rebuild = f"`pip install -e {source}` (or `make build` there)" if source else _REINSTALL
    needed = _CUDA_LIBRARY.search(error)
    if name == "_C_cuda":
        major = str(torch.version.cuda).split(".")[0]
        return (
            f"torch_rngx's CUDA kernels ({path}) do not load with torch {torch.__version__} (CUDA "
            f"{torch.version.cuda}): {error}. Rebuild them against this torch, with a CUDA {major} toolkit: "
            f"{rebuild}; or without them: the same with USE_CUDA=0 in the environment."
        )
    if needed is not None and torch.version.cuda is None:
        return (
            f"{path} was built with CUDA (it needs {needed.group(0)}), which this torch {torch.__version__}, a CPU "
            f"build, does not have: it was built against torch's CUDA build. Rebuild it against this torch: {rebuild}."
        )
    return f"{path} does not load with torch {torch.__version__}: {error}. Rebuild it against this torch: {rebuild}."


_REINSTALL = "`pip install --force-reinstall --no-deps <your torch-rngx clone>` in this environment"


def _source_tree(package: str) -> str | None:
    source = os.path.dirname(package)
    return source if os.path.isfile(os.path.join(source, "setup.py")) else None


def other_copies(package: str) -> list[str]:
    """The other torch_rngx packages this interpreter could import, each with a compiled _C: those on sys.path
    after this one, and those of other finders (such as an editable install's)."""
    specs = [importlib.machinery.PathFinder.find_spec("torch_rngx", [entry or os.getcwd()]) for entry in sys.path]
    for finder in sys.meta_path:
        if finder is importlib.machinery.PathFinder or not hasattr(finder, "find_spec"):
            continue
        try:
            specs.append(finder.find_spec("torch_rngx", None))
        except Exception:  # a probe for the message only: its failure must not replace the error being explained
            continue
    found = []
    for spec in specs:
        for folder in (spec.submodule_search_locations or []) if spec is not None else []:
            if os.path.realpath(folder) != os.path.realpath(package) and _has_library(folder) and folder not in found:
                found.append(folder)
    return found


def _has_library(folder: str) -> bool:
    names = os.listdir(folder) if os.path.isdir(folder) else []
    return any(n.startswith("_C.") and n.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)) for n in names)


load()
# The compiled library, for the engine's modules: the op table's rows, the step's counters, the journal's hooks.
C: Any = sys.modules["torch_rngx._C"]
