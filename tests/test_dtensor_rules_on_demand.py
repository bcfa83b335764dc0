"""A DTensor passed to a torch_rngx function without `import torch_rngx.distributed` gets its rules all the same:
the first DTensor argument registers them. Run in a fresh process, where nothing has imported them yet."""
import subprocess
import sys

SCRIPT = """
import sys
import torch
import torch.distributed as dist
from torch.distributed.tensor import DeviceMesh, Shard, distribute_tensor
import torch_rngx
import torch_rngx.functional as F

dist.init_process_group("gloo", rank=0, world_size=1, store=dist.HashStore())
x = distribute_tensor(torch.ones(4, 6), DeviceMesh("cpu", [0]), [Shard(0)])
assert "torch_rngx.distributed" not in sys.modules
u = torch_rngx.rand_like(x, generator=torch_rngx.Generator(3))
assert "torch_rngx.distributed" in sys.modules
assert torch.equal(u.full_tensor(), torch_rngx.rand_like(torch.ones(4, 6), generator=torch_rngx.Generator(3)))
got = F.dropout(x, F.key(5), 0.5).full_tensor()
with torch_rngx.debug.key_reuse("off"):  # the same key again, for the plain tensor's values
    assert torch.equal(got, F.dropout(torch.ones(4, 6), F.key(5), 0.5))
dist.destroy_process_group()
print("ok")
"""


def test_first_dtensor_argument_registers_the_rules():
    run = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr[-3000:]
