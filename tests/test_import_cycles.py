"""torch_rngx's modules import each other in layers (docs/development.md): each module imports only modules of the
layers below its own, so no module reaches itself through its relative imports, top-level or inside functions."""
import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "torch_rngx"
# Lowest first. A call goes down them: a public function (_stateful, functional) checks its arguments (_checks), takes
# its route (_router), whose autograd.Functions (_functions) and Generator step (_step) sit on the op spec (_spec).
LAYERS = [
    {"_torch", "_library", "_version", "_deferred"},
    {"_checks", "_replay", "_reuse", "_random_ops"},
    {"_spec", "params", "debug"},
    {"_step", "triton"},
    {"_functions", "_dtensor", "testing"},
    {"_ops", "_router", "distributed"},
    {"_composite"},
    {"functional"},
    {"generator", "optim"},
    {"_stateful", "_init"},
    {"_mode_workers"},
    {"_mode_rnn"},
    {"_mode_routes"},
    {"_mode"},
    {"nn", "data"},
    {"__main__"},
]


def imports(path: Path, modules: set[str]) -> set[str]:
    """The package modules `path` imports with `from . import m` or `from .m import name`, anywhere in the file."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            names = [node.module] if node.module else [alias.name for alias in node.names]
            found.update(name.split(".")[0] for name in names)
    return found & modules


def graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    files = {p.stem: p for p in package.glob("*.py") if p.stem != "__init__"}
    return {name: imports(path, set(files)) for name, path in files.items()}


def cycle(edges: dict[str, set[str]]) -> list[str]:
    """One import cycle as [a, b, ..., a], or [] when there is none (depth-first search)."""
    done, path = set(), []

    def visit(node):
        if node in path:
            return path[path.index(node):] + [node]
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


def test_the_check_finds_a_cycle(tmp_path):
    (tmp_path / "a.py").write_text("from . import b\n")
    (tmp_path / "b.py").write_text("def f():\n    from .c import g\n")
    (tmp_path / "c.py").write_text("from .a import x\n")
    (tmp_path / "d.py").write_text("from . import a\n")
    assert cycle(graph(tmp_path)) == ["a", "b", "c", "a"]
    (tmp_path / "c.py").write_text("import os\n")
    assert cycle(graph(tmp_path)) == []
