"""tools/docs_names.py (make docs-check): every torch_rngx.<name> the docs and the package's strings write is an
attribute, and every `docs: <page>/` reference in the package's docstrings and messages names a page and a heading
of the site. It caught `torch_rngx.uncovered_names()` in docs/guarantees.md before that function existed (issue 45)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import docs_names  # noqa: E402


def test_docs_name_only_what_exists():
    found = docs_names.stale_names(list(docs_names.doc_texts()) + list(docs_names.package_strings()))
    assert not found, f"names that are not attributes of torch_rngx: {found}"


def test_the_check_catches_a_stale_name():
    found = docs_names.stale_names([("docs/guarantees.md:220", "`torch_rngx.uncovered_list()` lists torch's"),
                                    ("x", "torch_rngx.nn.Droput(0.1) and torch_rngx.nn.Dropout."),
                                    ("y", "torch_rngx.functional.key, torch_rngx.nn.init.trunc_normal_, torch_rngx.md")])
    assert found == [("docs/guarantees.md:220", "torch_rngx.uncovered_list"), ("x", "torch_rngx.nn.Droput")]


def test_references_name_pages_and_headings_that_exist():
    assert docs_names.broken_references(list(docs_names.package_strings())) == []
    found = docs_names.broken_references([
        ("a", 'docs: guide/, "Catching key reuse"'), ("b", "(docs: api/torch_rngx/, 'Shared keyword arguments')"),
        ("c", 'docs: guide/, "No such section"'), ("d", "see docs: nowhere/"), ("e", "docs: stream/"),
        ("f", 'see docs/guide.md, "Catching key reuse"'), ("g", 'api.md, "Shared keyword arguments"')])
    assert [where for where, _ in found] == ["c", "d", "f", "g"]
