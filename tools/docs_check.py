"""Runs every ```python block of README.md and docs/*.md, each as a script in a fresh process, and reports each
block by file and line: `make docs-check`.

A block's first line may say what it needs; the reader sees the same line:
    # needs: cuda                     skipped (by name) without a GPU
    # needs: torch>=2.14, compressai  skipped unless torch is at least that version and the modules import
    # torchrun --nproc-per-node=2     run as that many ranks by torch's launcher (each rank sets up its own
                                      process group, e.g. gloo on the CPU; each rank leaves without the
                                      interpreter's teardown: tools/docs_rank.py)
Every other block runs as written, in a temporary folder. Blocks never import torch_rngx.functional under any
alias but `rf` (readers take `F` for torch.nn.functional).

    python tools/docs_check.py [--needing NEED] [FILE | FILE:LINE ...]    (default: README.md and docs/*.md)

--needing torch>=2.14 runs only the blocks whose `# needs:` line names that (make interop, under torch 2.14.1).
"""
import argparse
import concurrent.futures
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ALIAS = "rf"
TIMEOUT_S = 600
_RANK = ROOT / "tools" / "docs_rank.py"
_FENCE = re.compile(r"^```python\s*$")
_NEEDS = re.compile(r"^#\s*needs:\s*(.+)$")
_TORCHRUN = re.compile(r"^#\s*torchrun\s+--nproc-per-node[= ](\d+)\s*$")
_FUNCTIONAL_ALIAS = re.compile(r"(?:from\s+torch_rngx\s+import\s+functional|import\s+torch_rngx\.functional)"
                               r"\s+as\s+(\w+)")


@dataclass
class Block:
    path: str   # relative to the repository root
    line: int   # the line of the opening fence, 1-based
    code: str

    @property
    def name(self):
        return f"{self.path}:{self.line}"

    @property
    def first_line(self):
        return self.code.split("\n", 1)[0].strip()


def blocks_of(text, path):
    """The ```python blocks of a Markdown text, in order."""
    blocks, lines, start = [], None, None
    for number, line in enumerate(text.splitlines(), 1):
        if lines is None:
            if _FENCE.match(line):
                lines, start = [], number
        elif line.strip() == "```":
            blocks.append(Block(path, start, "\n".join(lines) + "\n"))
            lines = None
        else:
            lines.append(line)
    if lines is not None:
        raise ValueError(f"{path}:{start}: a ```python block is never closed")
    return blocks


def skip_reason(block):
    """Why this machine cannot run the block (its `# needs:` line), or None."""
    match = _NEEDS.match(block.first_line)
    if match is None:
        return None
    missing = [need for need in (n.strip() for n in match.group(1).split(",")) if not _available(need)]
    return f"needs {', '.join(missing)}" if missing else None


def _available(need):
    if need == "cuda":
        import torch
        return torch.cuda.is_available()
    version = re.fullmatch(r"torch\s*>=\s*(\d+)\.(\d+)", need)
    if version:
        import torch
        have = tuple(int(v) for v in re.match(r"(\d+)\.(\d+)", torch.__version__).groups())
        return have >= (int(version.group(1)), int(version.group(2)))
    if not re.fullmatch(r"[A-Za-z_][\w.]*", need):
        raise ValueError(f"unknown need {need!r}: use cuda, torch>=X.Y or a module name")
    return importlib.util.find_spec(need) is not None


def lint(block):
    """What in the block breaks the docs' conventions, or None."""
    for alias in _FUNCTIONAL_ALIAS.findall(block.code):
        if alias != ALIAS:
            return f"imports torch_rngx.functional as {alias}: use `import torch_rngx.functional as {ALIAS}`"
    return None


def command(block, script):
    """How to run the block's script: plain Python, or torchrun's ranks, each through tools/docs_rank.py (the block
    as written, then the rank's exit without the interpreter's teardown: that file says why)."""
    match = _TORCHRUN.match(block.first_line)
    if match is None:
        return [sys.executable, str(script)]
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={match.group(1)}",
            str(_RANK), str(script)]


def run(block):
    """(status, seconds, detail): status PASS, FAIL or SKIP."""
    problem = lint(block)
    if problem:
        return "FAIL", 0.0, problem
    reason = skip_reason(block)
    if reason:
        return "SKIP", 0.0, reason
    with tempfile.TemporaryDirectory(prefix="docs_check_") as folder:
        script = Path(folder) / (re.sub(r"\W", "_", block.name) + ".py")
        script.write_text(block.code)
        start = time.perf_counter()
        try:
            done = subprocess.run(command(block, script), cwd=folder, capture_output=True, text=True,
                                  timeout=TIMEOUT_S, env=_env())
        except subprocess.TimeoutExpired:
            return "FAIL", time.perf_counter() - start, f"timed out after {TIMEOUT_S} s"
        seconds = time.perf_counter() - start
    if done.returncode != 0:
        return "FAIL", seconds, (done.stdout + done.stderr).strip()[-3000:]
    return "PASS", seconds, ""


def _env():
    """The blocks import this checkout's torch_rngx (and examples/), whichever Python runs them; without a GPU,
    Triton kernels run on its CPU interpreter."""
    path = os.environ.get("PYTHONPATH")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "examples")] + ([path] if path else []))}
    if not _available("cuda"):
        env.setdefault("TRITON_INTERPRET", "1")
    return env


def selected(args):
    """The blocks the arguments name: files, or FILE:LINE for one block."""
    targets = args or ["README.md"] + sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))
    blocks = []
    for target in targets:
        path, _, line = target.partition(":")
        found = blocks_of((ROOT / path).read_text(), path)
        if line:
            found = [b for b in found if b.line == int(line)]
            if not found:
                raise SystemExit(f"no ```python block opens at {target}")
        blocks += found
    return blocks


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("targets", nargs="*", help="FILE or FILE:LINE (default: README.md and docs/*.md)")
    parser.add_argument("--needing", help="only the blocks whose `# needs:` line names this")
    args = parser.parse_args(argv)
    blocks = selected(args.targets)
    if args.needing:
        blocks = [b for b in blocks if args.needing in (_NEEDS.match(b.first_line) or [""])[0]]
    counts = {"PASS": 0, "FAIL": 0, "SKIP": 0}
    # Each block is a process of its own: one per core at a time, reported in the order of the pages.
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        for block, (status, seconds, detail) in zip(blocks, pool.map(run, blocks)):
            counts[status] += 1
            print(f"{status} {block.name} ({seconds:.1f} s){': ' + detail if status == 'SKIP' else ''}", flush=True)
            if status == "FAIL":
                print("    " + detail.replace("\n", "\n    "), flush=True)
    print(f"docs check: {counts['PASS']} passed, {counts['FAIL']} failed, {counts['SKIP']} skipped "
          f"of {len(blocks)} blocks")
    return 1 if counts["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
