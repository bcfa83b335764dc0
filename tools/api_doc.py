"""Writes docs/api.md, the API reference, from the code: every name in the public modules' __all__, with its typed
signature, the torch function it stands in for and its docstring. `make api-doc`; tests/test_api_doc.py fails
while docs/api.md differs from what this writes.

    python tools/api_doc.py [--check]
"""
import importlib
import inspect
import re
import sys
import textwrap
import types
import typing
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
API_MD = ROOT / "docs" / "api.md"
# The public modules, in the reference's order, each with what it is for.
MODULES = {
    "torch_rngx": "Stateful functions, like torch's: each call draws from a Generator, an nn.RNG module or, with "
                  "generator=None, a fresh seed from torch's default generator (so `torch.manual_seed` reproduces "
                  "it).",
    "torch_rngx.nn": "Modules: torch.nn's dropout family, a stream held as model state, and converting a model.",
    "torch_rngx.nn.init": "Weight initialisers, like torch.nn.init's.",
    "torch_rngx.functional": "Stateless functions on explicit keys, like `torch.func._random`: the same key gives the "
                             "same values and is never modified. Import it as `import torch_rngx.functional as rf`.",
    "torch_rngx.optim": "bfloat16 or float16 weights with no float32 master copy: any torch.optim optimizer steps "
                        "them in float32 and rounds back stochastically.",
    "torch_rngx.testing": "torch.library.opcheck over every op, for your CI.",
    "torch_rngx.debug": "Debugging aids: the key-reuse checker (docs/guide.md, \"Catching key reuse\").",
    "torch_rngx.distributed": "DTensor support, registered by `import torch_rngx` (docs/distributed.md).",
}
# The module whose docstring holds a section's shared keyword arguments (a paragraph opening "The keyword arguments ... share(s):").
SHARED = {"torch_rngx": "torch_rngx._stateful", "torch_rngx.functional": "torch_rngx.functional"}
_SECTION = re.compile(r"^(Args:|Keyword args:|Example::)$")
_STANDS_IN = re.compile(r"``(torch\.[^`]+|CompressAI's [^`]+)``")


def module_of(name):
    """A public module by its dotted name; torch_rngx.nn.init is an attribute of torch_rngx.nn, not a package."""
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
    import torch
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


class _Shown:
    """An annotation as text: inspect prints it as it is, without quotes."""

    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return self.text


def _type(t):
    """A resolved type hint as a reader writes it: Optional[X] as X | None, aliases expanded, short class names."""
    import torch
    origin, args = typing.get_origin(t), typing.get_args(t)
    if origin in (typing.Union, getattr(types, "UnionType", typing.Union)):  # X | Y from Python 3.10
        return " | ".join(_type(a) for a in args)
    if origin is not None:
        return f"{getattr(origin, '__name__', str(origin))}[{', '.join(_type(a) for a in args)}]"
    if t is type(None):
        return "None"
    if t is Ellipsis:
        return "..."
    if t in (torch.dtype, torch.device):
        return f"torch.{t.__name__}"
    return getattr(t, "__name__", str(t)).replace("typing.", "")


def signature(name, obj):
    """`name(args) -> return`, with the code's type hints resolved."""
    target = obj.fget if isinstance(obj, property) else obj
    hints = typing.get_type_hints(target.__init__ if inspect.isclass(target) else target)
    if isinstance(obj, property):
        return f"{name}: {_type(hints['return'])}"
    sig = inspect.signature(target)
    params = [p.replace(annotation=_Shown(_type(hints[n]))) if n in hints else p for n, p in sig.parameters.items()]
    returns = _Shown(_type(hints["return"])) if "return" in hints else sig.empty
    return f"{name}{sig.replace(parameters=params, return_annotation=returns)}"


def stands_in_for(doc):
    """The torch function a docstring names as the one it stands in for, or None."""
    summary = doc.split("\n\n", 1)[0]
    match = _STANDS_IN.search(summary)
    return match.group(1) if match and "No torch counterpart" not in summary else None


def shared_keywords(module_name):
    """The shared keyword arguments' text of a section's module docstring, or None."""
    if module_name not in SHARED:
        return None
    doc = inspect.getdoc(importlib.import_module(SHARED[module_name])) or ""
    start = next((m for m in re.finditer(r"^The keyword arguments [^\n]*shares?:$", doc, re.M)), None)
    if start is None:
        raise SystemExit(f"{SHARED[module_name]}'s docstring has no shared keyword arguments paragraph")
    return doc[start.end():].split("\n\n", 1)[0].strip("\n")


def _doc(obj):
    target = obj.fget if isinstance(obj, property) else obj
    return inspect.getdoc(target) or ""


def _body(doc):
    """A docstring as Markdown: the prose as text, Args/Keyword args/Example in one text block."""
    lines = doc.splitlines()
    cut = next((i for i, line in enumerate(lines) if _SECTION.match(line)), len(lines))
    prose = "\n".join(lines[:cut]).strip()
    rest = "\n".join(lines[cut:]).strip()
    return prose + (f"\n\n```text\n{rest}\n```" if rest else "")


def render():
    objects = public_objects()
    names = {}  # an object reachable under several names is documented once, under the first
    for qualified, obj in objects:
        names.setdefault(id(obj), []).append(qualified)
    out = ["# API reference", "",
           "Generated from the code by `make api-doc` (tools/api_doc.py); `tests/test_api_doc.py` fails when it is",
           "stale, or when a public name lacks type hints, a docstring with Args and an Example, or its entry here.",
           "The bits every function produces are defined in [stream.md](stream.md).", "",
           "| name | stands in for |", "|---|---|"]
    for qualified, obj in objects:
        if names[id(obj)][0] == qualified:
            torch_name = stands_in_for(_doc(obj))
            out.append(f"| [`{qualified}`](#{_anchor(qualified)}) | {f'`{torch_name}`' if torch_name else '—'} |")
    current = None
    for qualified, obj in objects:
        if names[id(obj)][0] != qualified:
            continue
        module = qualified.rsplit(".", 1)[0]
        if module != current:
            current = module
            out += ["", f"## {module}", "", MODULES[module]]
            shared = shared_keywords(module)
            if shared is not None:
                out += ["", "**Shared keyword arguments**, which the entries below point to:", "", "```text",
                        textwrap.dedent(shared), "```"]
        aliases = names[id(obj)][1:]
        out += ["", f"### {qualified}", ""]
        if aliases:
            out += ["Also " + ", ".join(f"`{a}`" for a in aliases) + ".", ""]
        short = qualified.rsplit(".", 1)[1]
        kind = "class " if inspect.isclass(obj) else ""
        out += ["```text", kind + signature(short, obj), "```", "", _body(_doc(obj))]
        if inspect.isclass(obj):
            for method_name, member in methods(obj):
                out += ["", f"#### {qualified}.{method_name}", "", "```text", signature(method_name, member), "```", "",
                        _body(_doc(member))]
    return "\n".join(out) + "\n"


def _anchor(heading):
    """GitHub's anchor for a heading: lower case, dots and other punctuation dropped."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def main(argv):
    text = render()
    if "--check" in argv:
        if API_MD.read_text() != text:
            print("docs/api.md is stale: run make api-doc")
            return 1
        return 0
    API_MD.write_text(text)
    print(f"wrote {API_MD.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
