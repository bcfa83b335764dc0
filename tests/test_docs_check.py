"""tools/docs_check.py: finds every ```python block, honours the first-line markers and reports failures by
file and line. (`make docs-check` runs the blocks themselves.)"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import docs_check  # noqa: E402

PAGE = """# A page

```python
print("one")
```

```bash
echo not python
```

```python
# needs: cuda, a_module_that_does_not_exist
x = 1
```

```python
# torchrun --nproc-per-node=3
y = 2
```
"""


def test_finds_python_blocks_with_their_lines():
    blocks = docs_check.blocks_of(PAGE, "page.md")
    assert [b.line for b in blocks] == [3, 11, 16]
    assert blocks[0].code == 'print("one")\n' and blocks[0].name == "page.md:3"


def test_unclosed_block_is_an_error():
    try:
        docs_check.blocks_of("```python\nx = 1\n", "bad.md")
    except ValueError as e:
        assert "bad.md:1" in str(e)
    else:
        raise AssertionError("an unclosed block passed")


def test_needs_marker_skips_and_names_what_is_missing():
    block = docs_check.blocks_of(PAGE, "page.md")[1]
    assert "a_module_that_does_not_exist" in docs_check.skip_reason(block)
    assert docs_check.run(block)[0] == "SKIP"
    assert docs_check.skip_reason(docs_check.Block("p.md", 1, "# needs: sys, torch>=2.0\n")) is None
    assert docs_check.skip_reason(docs_check.Block("p.md", 1, "# needs: torch>=99.0\n")) == "needs torch>=99.0"


def test_torchrun_marker_runs_ranks():
    block = docs_check.blocks_of(PAGE, "page.md")[2]
    assert docs_check.command(block, "s.py")[1:] == ["-m", "torch.distributed.run", "--standalone",
                                                      "--nproc-per-node=3", str(docs_check._RANK), "s.py"]
    assert docs_check.command(docs_check.blocks_of(PAGE, "page.md")[0], "s.py")[1:] == ["s.py"]


def test_failing_block_fails_with_its_output():
    status, _, detail = docs_check.run(docs_check.Block("p.md", 1, "raise SystemExit('broken example')\n"))
    assert status == "FAIL" and "broken example" in detail
    assert docs_check.run(docs_check.Block("p.md", 1, "import sys\n"))[0] == "PASS"


def test_alias_other_than_rf_fails():
    block = docs_check.Block("p.md", 1, "from torch_rngx import functional as F\n")
    status, _, detail = docs_check.run(block)
    assert status == "FAIL" and "import torch_rngx.functional as rf" in detail
    assert docs_check.lint(docs_check.Block("p.md", 1, "import torch_rngx.functional as rf\n")) is None


def test_a_torchrun_rank_that_raises_fails_the_block():
    """Each rank runs through tools/docs_rank.py, which skips the interpreter's teardown once the block has run: a
    block that raises must still fail, and one that ends must pass."""
    raising = docs_check.Block("p.md", 1, "# torchrun --nproc-per-node=1\nraise SystemExit('rank broke')\n")
    status, _, detail = docs_check.run(raising)
    assert status == "FAIL" and "rank broke" in detail
    assert docs_check.run(docs_check.Block("p.md", 1, "# torchrun --nproc-per-node=1\nimport sys\n"))[0] == "PASS"
