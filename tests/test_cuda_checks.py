"""Device rules for the CUDA path that hold on any machine (docs/cuda.md, "Where the state lives"): a CPU state
holding one key also serves CUDA inputs, a batched one must be on the input's device, a CUDA state serves only
its own GPU's. Devices are stand-ins, so no GPU is needed."""
from types import SimpleNamespace

import pytest
import torch

import torch_rngx
from torch_rngx._engine import checks as _checks


def on(device, shape=(2,)):
    """A stand-in tensor: a device and a shape, nothing else."""
    return SimpleNamespace(device=torch.device(device), shape=torch.Size(shape), dim=lambda: len(shape),
                           numel=lambda: torch.Size(shape).numel())


def accepts(x, s):
    """Whether same_device lets an input on device x draw with a state on device s."""
    try:
        _checks.same_device(on(x), on(s))
    except ValueError:
        return False
    return True


@pytest.mark.parametrize("x, s", [("cpu", "cpu"), ("cuda:0", "cuda:0"), ("cuda:1", "cpu"), ("meta", "cuda:0")])
def test_allowed(x, s):
    assert accepts(x, s)


@pytest.mark.parametrize("shape", [(1, 2), (1, 1, 2)])
def test_a_cpu_state_of_one_key_serves_cuda_inputs(shape):
    _checks.same_device(on("cuda:0"), on("cpu", shape))


def test_a_batched_cpu_state_does_not_serve_cuda_inputs():
    with pytest.raises(ValueError, match="batched state for x on cuda:0"):
        _checks.same_device(on("cuda:0"), on("cpu", (3, 1, 2)))


@pytest.mark.parametrize("x, s", [("cpu", "cuda:0"), ("cuda:0", "cuda:1")])
def test_rejected_with_both_devices_named(x, s):
    with pytest.raises(ValueError, match=f"x is on {x} but state is on {s}"):
        _checks.same_device(on(x), on(s))


def test_state_device_error_names_argument():
    with pytest.raises(ValueError, match="state must be on the CPU or a CUDA device"):
        _checks.state(torch.zeros(2, dtype=torch.int64, device="meta"))


def test_generator_devices():
    assert torch_rngx.Generator(0).device.type == "cpu"
    with pytest.raises(ValueError, match="device must be 'cpu' or 'cuda'"):
        torch_rngx.Generator(0, device="meta")
