"""The API reference (docs/api/, rendered from the docstrings by mkdocstrings) covers every public module, and every
public function and method has type hints and a docstring with Args and an Example that runs (doctest); each names
the torch function it stands in for or says there is none. tests/test_docs_site.py checks the built site has an
entry for every public name."""
import doctest
import importlib
import inspect
import re
from pathlib import Path

import pytest
import torch

import torch_rngx
import torch_rngx.functional as rf

API = Path(__file__).resolve().parent.parent / "docs" / "api"
# The public modules, each with the page of the reference that renders it.
MODULES = {
    "torch_rngx": "torch_rngx.md",
    "torch_rngx.stateful": "torch_rngx.md",
    "torch_rngx.nn": "nn.md",
    "torch_rngx.nn.init": "nn.md",
    "torch_rngx.functional": "functional.md",
    "torch_rngx.data": "data.md",
    "torch_rngx.optim": "optim.md",
    "torch_rngx.testing": "testing.md",
    "torch_rngx.debug": "debug.md",
    "torch_rngx.distributed": "distributed.md",
}
# Public-looking module globals that are internal on purpose (shared with other private modules).
INTERNAL = {"torch_rngx.functional.blocks_of", "torch_rngx.functional.words_per_element",
            "torch_rngx.functional.SELU_ALPHA", "torch_rngx.stateful.dropout_from"}
_STANDS_IN = re.compile(r"``(torch\.[^`]+|CompressAI's [^`]+)``")


def module_of(name):
    """A public module by its dotted name, or one its parent holds as an attribute."""
    parent, _, attr = name.rpartition(".")
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError:
        return getattr(module_of(parent), attr)


def public_objects():
    """(qualified name, object) for every public function and class, in MODULES order; modules are skipped."""
    found = []
    for module_name in MODULES:
        module = module_of(module_name)
        for name in module.__all__:
            obj = getattr(module, name)
            if not inspect.ismodule(obj):
                found.append((f"{module_name}.{name}", obj))
    return found


def methods(cls):
    """(name, function or property) a class defines itself or inherits from its private bases, not torch.nn.Module's
    hooks: the public methods a user calls."""
    seen = {}
    for base in cls.__mro__:
        if base in (object, torch.nn.Module) or (base is not cls and not base.__name__.startswith("_")):
            continue
        for name, member in vars(base).items():
            if name.startswith("_") or name in seen or hasattr(torch.nn.Module, name) and name != "forward":
                continue
            if inspect.isfunction(member) or isinstance(member, (property, staticmethod)):
                seen[name] = member
    return sorted(seen.items())


def stands_in_for(doc):
    """The torch function a docstring names as the one it stands in for, or None."""
    summary = doc.split("\n\n", 1)[0]
    match = _STANDS_IN.search(summary)
    return match.group(1) if match and "No torch counterpart" not in summary else None


def _callables():
    """(qualified name, function) of every public function, class constructor and method."""
    for qualified, obj in public_objects():
        yield qualified, obj
        if inspect.isclass(obj):
            for name, member in methods(obj):
                yield f"{qualified}.{name}", member.fget if isinstance(member, property) else member


def test_every_public_module_has_a_page_that_renders_it():
    """mkdocstrings renders a module's public members (filters: no leading underscore) from one `::: module` line."""
    for module_name, page in MODULES.items():
        text = (API / page).read_text()
        assert re.search(rf"^::: {re.escape(module_name)}$", text, re.M), f"docs/api/{page} does not render {module_name}"


def test_every_public_function_is_in_all():
    """A function or class a public module defines without a leading underscore is in its __all__ (and so in the
    API reference), or listed as INTERNAL."""
    loose = []
    for module_name in MODULES:
        module = module_of(module_name)
        for name, obj in vars(module).items():
            defined_here = getattr(obj, "__module__", None) == module.__name__
            if (not name.startswith("_") and defined_here and (inspect.isfunction(obj) or inspect.isclass(obj))
                    and name not in module.__all__ and f"{module_name}.{name}" not in INTERNAL):
                loose.append(f"{module_name}.{name}")
    assert not loose, f"public-looking names outside __all__ (add them to __all__, or prefix _): {loose}"


def test_dir_shows_only_the_public_names():
    for module_name in MODULES:
        module = module_of(module_name)
        extra = set(dir(module)) - set(module.__all__) - {"__version__"}
        assert not extra, f"dir({module_name}) shows helpers {sorted(extra)}"
    assert "draw" not in dir(torch_rngx.nn.init) and "math" not in dir(rf)


def test_type_hints():
    unhinted = []
    for qualified, fn in _callables():
        sig = inspect.signature(fn)
        params = [p for n, p in sig.parameters.items()
                  if n != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        returns = inspect.isclass(fn) or fn.__name__ == "__init__" or sig.return_annotation is not sig.empty
        if any(p.annotation is p.empty for p in params) or not returns:
            unhinted.append(qualified)
    assert not unhinted, f"add type hints to {unhinted}"


def test_docstrings_have_args_and_an_example():
    lacking = []
    for qualified, obj in public_objects():
        doc = inspect.getdoc(obj) or ""
        takes_args = bool(inspect.signature(obj).parameters)
        if "Example::" not in doc or (takes_args and "Args:" not in doc):
            lacking.append(qualified)
    assert not lacking, f"give these a docstring with Args: and Example:: (torch's style): {lacking}"


def test_stands_in_for_is_named_or_declined():
    """Each public function or class names the torch function it stands in for, or says there is none."""
    unnamed = [q for q, obj in public_objects()
               if stands_in_for(inspect.getdoc(obj)) is None
               and "No torch counterpart" not in inspect.getdoc(obj) and "torch has no" not in inspect.getdoc(obj)]
    assert not unnamed, f"name the torch function these stand in for (``torch.x``) or say none: {unnamed}"


@pytest.mark.key_reuse_ok("every docstring example starts from rf.key(0), as a reader's would")
def test_examples_run():
    globs = {"torch": torch, "torch_rngx": torch_rngx, "rf": rf}
    finder, runner = doctest.DocTestFinder(recurse=False), doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    ran = 0
    for qualified, obj in _callables():
        for test in finder.find(obj, qualified, globs=dict(globs)):
            runner.run(test)
            ran += len(test.examples)
    assert runner.failures == 0, f"{runner.failures} docstring examples failed (the report above names them)"
    assert ran > 50
