"""Which machine a benchmark ran on, printed next to its figures (results/perf-log.md keeps one table per ISA).

The CPU model, the Philox path torch_rngx uses (torch_rngx._C.simd(): RNGX_SIMD picks it), the clone of our float
loops (target_clones: chosen by the CPU at load, so RNGX_SIMD does not change it) and torch's own kernels' ISA
(torch.backends.cpu.get_cpu_capability(): ATEN_CPU_CAPABILITY picks it).
"""
import os
import platform

import torch

from torch_rngx import _C


def _cpuinfo():
    """(model name, flags) from /proc/cpuinfo; on other systems platform's guess and no flags."""
    model, flags = "", set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and not model:
                    model = value.strip()
                elif key.strip() == "flags" and not flags:
                    flags = set(value.split())
    except OSError:
        pass
    return model or platform.processor() or platform.machine(), flags


def describe():
    model, flags = _cpuinfo()
    loops = "avx512f" if "avx512f" in flags else "avx2" if "avx2" in flags else "default" if flags else "unknown"
    return {"cpu": model, "cpus": os.cpu_count(), "philox": _C.simd(), "float_loops": loops,
            "torch_isa": torch.backends.cpu.get_cpu_capability(), "torch": torch.__version__}


def line():
    d = describe()
    return (f"machine: {d['cpu']} ({d['cpus']} CPUs); torch_rngx Philox {d['philox']}, float loops "
            f"{d['float_loops']} clone; torch {d['torch']} kernels {d['torch_isa']}")
