"""docs/api.md covers every public name, is current, and every public function and method has type hints, a
docstring with Args and an Example that runs (doctest)."""
import doctest
import inspect
import sys
from pathlib import Path

import pytest
import torch

import torch_rngx
import torch_rngx.functional as rf

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import api_doc  # noqa: E402

# Public-looking module globals that are internal on purpose (shared with other private modules).
INTERNAL = {"torch_rngx.functional.blocks_of", "torch_rngx.functional.words_per_element",
            "torch_rngx.functional.SELU_ALPHA"}


def _callables():
    """(qualified name, function) of every public function, class constructor and method."""
    for qualified, obj in api_doc.public_objects():
        yield qualified, obj
        if inspect.isclass(obj):
            for name, member in api_doc.methods(obj):
                yield f"{qualified}.{name}", member.fget if isinstance(member, property) else member


def test_every_public_name_has_an_entry():
    text = api_doc.API_MD.read_text()
    missing = [q for q, _ in _callables() if f"### {q}" not in text and f"`{q}`" not in text]
    assert not missing, f"docs/api.md lacks {missing}: run make api-doc"


def test_api_md_is_current():
    assert api_doc.API_MD.read_text() == api_doc.render(), "docs/api.md is stale: run make api-doc"


def test_every_public_function_is_in_all():
    """A function or class a public module defines without a leading underscore is in its __all__ (and so in
    docs/api.md), or listed as INTERNAL."""
    loose = []
    for module_name in api_doc.MODULES:
        module = api_doc.module_of(module_name)
        for name, obj in vars(module).items():
            defined_here = getattr(obj, "__module__", None) == module.__name__
            if (not name.startswith("_") and defined_here and (inspect.isfunction(obj) or inspect.isclass(obj))
                    and name not in module.__all__ and f"{module_name}.{name}" not in INTERNAL):
                loose.append(f"{module_name}.{name}")
    assert not loose, f"public-looking names outside __all__ (add them to __all__, or prefix _): {loose}"


def test_dir_shows_only_the_public_names():
    for module_name in api_doc.MODULES:
        module = api_doc.module_of(module_name)
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
    for qualified, obj in api_doc.public_objects():
        doc = inspect.getdoc(obj) or ""
        takes_args = bool(inspect.signature(obj).parameters)
        if "Example::" not in doc or (takes_args and "Args:" not in doc):
            lacking.append(qualified)
    assert not lacking, f"give these a docstring with Args: and Example:: (torch's style): {lacking}"


def test_stands_in_for_is_named_or_declined():
    """Each public function or class names the torch function it stands in for, or says there is none."""
    unnamed = [q for q, obj in api_doc.public_objects()
               if api_doc.stands_in_for(inspect.getdoc(obj)) is None
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
