"""`import torch_rngx` costs at most 0.3 s more than `import torch` (issue 45): the median, over 5 fresh processes, of
the time `import torch_rngx` takes once torch is imported. The budget holds the CPU time of that import (user and
system, which other processes on a shared machine do not inflate: at a load average of 9 on 2 cores its wall time
reached 0.8 s where its CPU time stays put); the wall time is reported beside it, and docs/performance.md has
both measured on a quiet run. Nothing of torch.compile's (torch._dynamo, Inductor) nor DTensor's is imported by it:
they load when first used, and the DTensor rules still come with DTensor (tests/test_dtensor_rules_at_import.py)."""
import json
import statistics
import subprocess
import sys

import pytest

BUDGET_S = 0.3
RUNS = 5
HEAVY = ("torch._dynamo", "torch._inductor", "torch.distributed.tensor", "sympy", "triton")

SCRIPT = """
import json, sys, time
t0 = time.perf_counter()
import torch
t1, c1 = time.perf_counter(), time.process_time()
import torch_rngx
t2, c2 = time.perf_counter(), time.process_time()
print(json.dumps({"torch": t1 - t0, "rngx": t2 - t1, "rngx_cpu": c2 - c1,
                  "loaded": [m for m in %r if m in sys.modules]}))
""" % (HEAVY,)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    out = []
    for _ in range(RUNS):  # one after another: concurrent imports would time each other
        run = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300,
                             cwd=tmp_path_factory.mktemp("import"))
        assert run.returncode == 0, run.stderr[-3000:]
        out.append(json.loads(run.stdout.splitlines()[-1]))
    return out


@pytest.mark.slow("5 fresh processes importing torch: about 15 s")
def test_import_costs_at_most_0_3_s_over_torch(runs):
    cpu, wall = (statistics.median(r[k] for r in runs) for k in ("rngx_cpu", "rngx"))
    torch_s = statistics.median(r["torch"] for r in runs)
    assert cpu <= BUDGET_S, (f"import torch_rngx took {cpu:.3f} s of CPU ({wall:.3f} s of wall) after import torch "
                             f"({torch_s:.2f} s), median of {RUNS}: over the {BUDGET_S} s budget; "
                             "`python -X importtime -c 'import torch_rngx'` shows where it goes")


@pytest.mark.slow("5 fresh processes importing torch: about 15 s")
def test_import_loads_neither_dynamo_nor_dtensor(runs):
    assert all(r["loaded"] == [] for r in runs), runs[0]["loaded"]


def test_dtensor_imported_first_gets_the_rules_at_import():
    """The other order: torch.distributed.tensor loaded before torch_rngx, whose import then registers the rules."""
    script = ("import sys, torch.distributed.tensor, torch_rngx\n"
              "assert 'torch_rngx.distributed' in sys.modules and 'torch._dynamo' not in sys.modules\n")
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
