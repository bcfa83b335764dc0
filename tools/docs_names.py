"""The docs name only what exists (make docs-check):

1. every `torch_rngx.<name>` (dotted, any depth) written in README.md, docs/ and the package's strings (docstrings and
   messages) resolves to an attribute of the installed package: a renamed or removed function leaves no reference
   behind;
2. every reference to the documentation site in the package's strings, written `docs: <path>` (a page's path in the
   built site, `guide/`) and optionally followed by `, "<section>"`, names a page of docs/ and a heading on it; and
   no string names a page by its file in the repository (docs/guide.md), which an installed wheel does not have.

    python tools/docs_names.py          # exit status 1 and one line per stale name or reference
"""

import ast
import importlib
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PACKAGE = ROOT / "torch_rngx"
NAME = re.compile(r"(?<![\w./])torch_rngx(?:\.[A-Za-z_]\w*)+")
REFERENCE = re.compile(r"docs: ((?:[a-z_]+/)+)(?:, ?[\"']([^\"']+)[\"'])?")
REPOSITORY_PATH = re.compile(r"\b(?:docs/)?[a-z_]+\.md\b")  # a file of the repository, which no installed wheel has
HEADING = re.compile(r"^#{1,6} (.+)$", re.M)
# The compiled libraries setup.py builds: a CPU build has no torch_rngx._C_cuda, which the docs name all the same.
LIBRARIES = set(re.findall(r'Extension\(\s*"(torch_rngx\.\w+)"', (ROOT / "setup.py").read_text()))
FILE_SUFFIXES = (".md", ".py", ".so", ".h", ".json")


def resolves(dotted):
    """Whether a dotted name is an attribute of the package (importing submodules on the way, as `import` would), or
    one of its compiled libraries."""
    if dotted in LIBRARIES:
        return True
    parts = dotted.split(".")
    obj = importlib.import_module(parts[0])
    for i, part in enumerate(parts[1:], start=1):
        if hasattr(obj, part):
            obj = getattr(obj, part)
            continue
        try:
            obj = importlib.import_module(".".join(parts[: i + 1]))
        except ImportError:
            return False
    return True


def written_names(text):
    """Each torch_rngx.<name> in a text, without a trailing dot (the end of a sentence); file names (torch_rngx.md)
    are not names."""
    names = (m.group(0).rstrip(".") for m in NAME.finditer(text))
    return [n for n in names if not n.endswith(FILE_SUFFIXES)]


def package_strings():
    """(file:line, text) of every string literal of the package: docstrings and messages."""
    for path in sorted(PACKAGE.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                yield f"{path.relative_to(ROOT)}:{node.lineno}", node.value
            elif isinstance(node, ast.JoinedStr):  # an f-string's text parts, joined
                text = "".join(v.value for v in node.values if isinstance(v, ast.Constant))
                yield f"{path.relative_to(ROOT)}:{node.lineno}", text


def doc_texts():
    """(file:line, line) of README.md and every page of docs/."""
    for path in [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]:
        for n, line in enumerate(path.read_text().splitlines(), start=1):
            yield f"{path.relative_to(ROOT)}:{n}", line


def page_of(path):
    """The docs/ file a site path names (guide/ -> docs/guide.md, api/ -> docs/api/index.md), or None."""
    stem = path.rstrip("/")
    for candidate in (DOCS / f"{stem}.md", DOCS / stem / "index.md"):
        if candidate.is_file():
            return candidate
    return None


def headings(page):
    """The headings of a page as a reader sees them: markdown's, without backticks."""
    return [h.replace("`", "").strip() for h in HEADING.findall(page.read_text())]


def stale_names(texts):
    found = []
    for where, text in texts:
        for name in written_names(text):
            if not resolves(name):
                found.append((where, name))
    return found


def broken_references(texts):
    found = []
    for where, text in texts:
        for m in REPOSITORY_PATH.finditer(text):
            found.append((where, f"{m.group(0)}: a repository path; write the site's, docs: <page>/"))
        for m in REFERENCE.finditer(" ".join(text.split())):
            path, section = m.group(1), m.group(2)
            page = page_of(path)
            if page is None:
                found.append((where, f"docs: {path}: no such page in docs/"))
            elif section is not None and not any(section.lower() in h.lower() for h in headings(page)):
                found.append((where, f'docs: {path}, "{section}": no such heading in {page.relative_to(ROOT)}'))
    return found


def main():
    strings = list(package_strings())
    names = stale_names(list(doc_texts()) + strings)
    references = broken_references(strings)
    failed = False
    for where, name in names:
        print(f"{where}: {name} is not an attribute of torch_rngx")
        failed = True
    for where, what in references:
        print(f"{where}: {what}")
    failed |= bool(references)
    checked = sum(len(written_names(t)) for _, t in list(doc_texts()) + strings)
    print(f"docs_names: {checked} torch_rngx names and the package's docs: references checked; "
          f"{'FAILED' if failed else 'ok'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
