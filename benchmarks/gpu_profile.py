"""Why the CUDA kernels miss their speed targets (results/perf-log.md, "GPU"): one short run on a GPU that separates
Philox arithmetic from memory traffic. Times (CUDA events, median of 20) at 2^28 float32 elements:

  write-only line: torch.empty_like(x).fill_(1.0)        (4 bytes/element, no arithmetic)
  copy line:       x.clone()                             (8 bytes/element)
  Philox only:     torch_rngx bits int32 (1 word/element, 4 bytes/element written, no float math)
  rand_like, quantize_noise: the ops themselves
  torch.rand_like: cuRAND Philox with its own launch shape

and, when Nsight Compute (ncu) is installed, its SM-throughput and DRAM-throughput percentages for our uniform
kernel. Usage: python3 benchmarks/gpu_profile.py (builds nothing: run benchmarks/gpu_check.py, or
USE_CUDA=1 python3 setup.py build_ext --inplace, first)."""
import json
import os
import shutil
import statistics
import subprocess
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the in-place build

import torch_rngx  # noqa: E402
from torch_rngx import functional as F  # noqa: E402


def timed(fn, reps=20):
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def main():
    n = 1 << 28
    x = torch.randn(n, device="cuda")
    key = F.key(7, device="cuda")
    g = torch_rngx.Generator(7, device="cuda")
    rows = {
        "fill_ (write line)": timed(lambda: torch.empty_like(x).fill_(1.0)),
        "x.clone() (copy line)": timed(lambda: x.clone()),
        "bits int32 (Philox only)": timed(lambda: F.bits((n,), key)),
        "uniform (Philox + float)": timed(lambda: F.uniform(x, key)),
        "rand_like(generator=g)": timed(lambda: torch_rngx.rand_like(x, generator=g)),
        "quantize_noise": timed(lambda: F.quantize_noise(x, key)),
        "torch.rand_like": timed(lambda: torch.rand_like(x)),
    }
    for k, v in rows.items():
        print(f"{k:28s} {v:8.3f} ms  {n * 4 / v / 1e6:8.1f} GB/s written")
    out = {"ms": rows, "numel": n, "gpu": torch.cuda.get_device_name(), "torch": torch.__version__}
    ncu = shutil.which("ncu") or next((p for p in ("/usr/local/cuda/bin/ncu",) if os.path.exists(p)), None)
    if ncu and "--child" not in sys.argv:
        r = subprocess.run([ncu, "--kernel-name", "regex:contiguous_kernel", "--launch-skip", "21", "--launch-count", "1", "--metrics",
                            "sm__throughput.avg.pct_of_peak_sustained_elapsed,"
                            "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed,"
                            "dram__throughput.avg.pct_of_peak_sustained_elapsed,"
                            "sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active,"
                            "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
                            sys.executable, __file__, "--child"], capture_output=True, text=True, timeout=240)
        out["ncu"] = r.stdout[-4000:] + r.stderr[-1000:]
        print(out["ncu"])
    else:
        out["ncu"] = "ncu not found" if not ncu else "child"
    if os.environ.get("OUT") and "--child" not in sys.argv:
        with open(os.path.join(os.environ["OUT"], "gpu_profile.json"), "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
