"""The Python examples of docs/device_api.md run as written: their code blocks, in order, as one script in a
fresh process from the repository root, Triton under its interpreter (each block asserts its own results)."""
import os
import re
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def test_device_api_examples_run(tmp_path):
    with open(os.path.join(ROOT, "docs", "device_api.md")) as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), flags=re.S)
    assert len(blocks) >= 3 and all("assert" in b for b in blocks)
    script = tmp_path / "device_api_examples.py"
    script.write_text("\n".join(blocks))
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": os.path.join(ROOT, "examples")}
    run = subprocess.run([sys.executable, str(script)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
