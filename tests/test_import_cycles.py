"""torch_rngx's modules import each other in layers (docs/development.md): each module imports only modules of the
layers below its own, so no module reaches itself through its relative imports, top-level or inside functions."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "torch_rngx"
# Lowest first, by folder: the engine (_engine/: the spec, checks, routes, autograd Functions, registrations, the step,
# journal, reuse checker, DTensor rules, loader and torch shim) under the public samplers (functional, generator,
# stateful), the mode (_mode/), which routes torch's calls to them, and the modules that use the mode (nn, data). A
# call goes down them: a public function checks its arguments (checks), takes its route (router), whose
# autograd.Functions (functions) and Generator step (step) sit on the op spec (spec).
ENGINE = [
    {"_engine.torch_private", "_engine.library", "_engine.deferred", "_version"},
    {"_engine.checks", "_engine.journal", "_engine.reuse", "_engine.random_ops"},
    {"_engine.spec"},
    {"_engine.step"},
    {"_engine.functions", "_engine.dtensor"},
    {"_engine.registrations", "_engine.router"},
    {"_engine.composite"},
]
PUBLIC = [
    {"params", "debug", "testing", "distributed"},
    {"triton", "functional"},
    {"generator", "optim"},
    {"stateful", "nn.init"},
]
MODE = [{"_mode.workers"}, {"_mode.rnn"}, {"_mode.routes"}, {"_mode.mode"}]
ABOVE = [{"nn", "data"}, {"__main__"}]
LAYERS = ENGINE + PUBLIC + MODE + ABOVE


def modules(package: Path = PACKAGE) -> dict[str, Path]:
    """Every module by its dotted name under the package ("_engine.spec"; a package by its own name, "nn"), but the
    packages' faces that only hold a docstring (torch_rngx/__init__.py imports the rest and is left out)."""
    found = {}
    for path in package.rglob("*.py"):
        parts = list(path.relative_to(package).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
            if not parts or not any(
                isinstance(n, (ast.Import, ast.ImportFrom)) for n in ast.walk(ast.parse(path.read_text()))
            ):
                continue
        found[".".join(parts)] = path
    return found


def imports(path: Path, name: str, known: set[str]) -> set[str]:
    """The package modules `path` (module `name`) imports with relative imports, anywhere in the file: `from . import
    m`, `from .m import x`, `from ..p import m` (a module of p, or p itself)."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level >= 1:
            base = package[: len(package) - (node.level - 1)]
            if node.module:
                base = base + node.module.split(".")
            candidates = [".".join(base)] if node.module else []
            candidates += [".".join(base + [alias.name]) for alias in node.names]
            found.update(c for c in candidates if c in known)
    return found - {name}


def graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    files = modules(package)
    return {name: imports(path, name, set(files)) for name, path in files.items()}


def cycle(edges: dict[str, set[str]]) -> list[str]:
    """One import cycle as [a, b, ..., a], or [] when there is none (depth-first search)."""
    done, path = set(), []

    def visit(node):
        if node in path:
            return path[path.index(node) :] + [node]
        if node in done:
            return []
        path.append(node)
        for nxt in sorted(edges[node]):
            found = visit(nxt)
            if found:
                return found
        path.pop()
        done.add(node)
        return []

    for start in sorted(edges):
        found = visit(start)
        if found:
            return found
    return []


def test_every_module_imports_only_lower_layers():
    layer = {module: i for i, modules in enumerate(LAYERS) for module in modules}
    edges = graph()
    assert set(edges) == set(layer), f"modules without a layer, or layers without a module: {set(edges) ^ set(layer)}"
    upward = [f"{m} -> {d}" for m, deps in sorted(edges.items()) for d in sorted(deps) if layer[d] >= layer[m]]
    assert not upward, f"imports that do not go down the layers: {upward}"


def test_no_import_cycle():
    found = cycle(graph())
    assert not found, f"torch_rngx has an import cycle: {' -> '.join(found)}"


def test_the_engine_imports_nothing_above_it():
    """The folders show the layers: nothing in _engine/ imports a module outside it, nothing in _mode/ a module
    that uses the mode."""
    edges = graph()
    engine = [
        f"{m} -> {d}"
        for m, deps in edges.items()
        if m.startswith("_engine.")
        for d in deps
        if not d.startswith("_engine.")
    ]
    assert not engine, engine
    mode_up = [
        f"{m} -> {d}"
        for m, deps in edges.items()
        if m.startswith("_mode.")
        for d in deps
        if d in ("nn", "data", "__main__")
    ]
    assert not mode_up, mode_up


def test_the_check_finds_a_cycle(tmp_path):
    (tmp_path / "a.py").write_text("from . import b\n")
    (tmp_path / "b.py").write_text("def f():\n    from .c import g\n")
    (tmp_path / "c.py").write_text("from .a import x\n")
    (tmp_path / "d.py").write_text("from . import a\n")
    assert cycle(graph(tmp_path)) == ["a", "b", "c", "a"]
    (tmp_path / "c.py").write_text("import os\n")
    assert cycle(graph(tmp_path)) == []
