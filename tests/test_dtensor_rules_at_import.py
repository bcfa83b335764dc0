"""DTensor arguments need no `import torch_rngx.distributed`: `import torch_rngx` registers the rules, so eager calls
and compiled functions, which could not import them, both get them; a DTensor made inside a compiled function
included. Run in a fresh process, where nothing else has imported them."""
import subprocess
import sys

SCRIPT = """
import sys
import torch
import torch.distributed as dist
import torch_rngx
import torch_rngx.functional as F
from torch.distributed.tensor import DeviceMesh, Replicate, Shard, distribute_tensor

assert "torch_rngx.distributed" in sys.modules
dist.init_process_group("gloo", rank=0, world_size=1, store=dist.HashStore())
x = distribute_tensor(torch.ones(4, 6), DeviceMesh("cpu", [0]), [Shard(0)])
u = torch_rngx.rand_like(x, generator=torch_rngx.Generator(3))
assert torch.equal(u.full_tensor(), torch_rngx.rand_like(torch.ones(4, 6), generator=torch_rngx.Generator(3)))
got = F.dropout(x, F.key(5), 0.5).full_tensor()
with torch_rngx.debug.key_reuse("off"):  # the same key again, for the plain tensor's values
    assert torch.equal(got, F.dropout(torch.ones(4, 6), F.key(5), 0.5))

# A module's stream held as a replicated DTensor steps as the plain one does (rngx::step_'s rule).
rng, plain = torch_rngx.nn.RNG(9), torch_rngx.nn.RNG(9)
rng.state = distribute_tensor(rng.state, x.device_mesh, [Replicate()])
got = torch_rngx.dropout(x, 0.5, generator=rng)
with torch_rngx.debug.key_reuse("off"):  # the same stream again, for the plain tensor's values
    assert torch.equal(got.full_tensor(), torch_rngx.dropout(torch.ones(4, 6), 0.5, generator=plain))
assert torch.equal(rng.state.full_tensor(), plain.state)


def noise(x):  # the DTensor drawn on is made inside the compiled function
    return torch.empty_like(x).uniform_(-0.5, 0.5)


with torch_rngx.mode(generator=torch_rngx.Generator(3)):
    got = torch.compile(noise, fullgraph=True)(x)
with torch_rngx.mode(generator=torch_rngx.Generator(3)):
    want = noise(torch.ones(4, 6))
assert isinstance(got, type(x)) and torch.equal(got.full_tensor(), want)
dist.destroy_process_group()
print("ok")
"""


def test_import_registers_the_rules_for_eager_and_compiled_calls():
    run = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr[-3000:]
