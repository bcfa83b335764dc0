"""One rank of tests/test_distributed.py: run as `python distributed_worker.py SUITE RANK WORLD MESH INIT_FILE`
(MESH like "2,2"). Every check compares with the same op on the whole tensor in this one process, bit for bit, and
each DTensor's local block with DTensor's own slicing of that reference (distribute_tensor), so replicated parts
must be identical on every rank. Failures are collected and reported together; the exit status is 1 if any."""
import os
import sys
import traceback

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import DTensor, Partial, Replicate, Shard, distribute_tensor

import torch_rngx
import torch_rngx.distributed
from torch_rngx import functional as F

torch._dynamo.config.cache_size_limit = 64
torch._dynamo.config.accumulated_cache_size_limit = 1024

SHAPE = (7, 5, 3)  # over 4 ranks: dim 0 in blocks of 2, 2, 2, 1; dim 1 of 2, 2, 1, 0; dim 2 of 1, 1, 1, 0
PLACEMENTS = {
    1: [[Shard(0)], [Shard(1)], [Shard(2)], [Replicate()]],
    2: [[Shard(0), Shard(1)], [Shard(1), Shard(0)], [Shard(0), Shard(0)], [Replicate(), Shard(2)],
        [Shard(1), Replicate()], [Replicate(), Replicate()]],
}
COMPILED_PLACEMENTS = {1: [[Shard(0)], [Shard(1)], [Replicate()]], 2: [[Shard(1), Shard(0)], [Shard(0), Shard(0)]]}
failures = []


def bits_of(t):
    t = t.detach().contiguous()
    return t.view({1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])


def same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(bits_of(a), bits_of(b))


def check(name, got, want, mesh=None, placements=None):
    """got: a DTensor on mesh with placements; want: the single-process result on the whole tensor."""
    if placements is None:
        ok = same(got, want)
    elif not isinstance(got, DTensor):
        ok = False
    else:  # every rank runs full_tensor()'s collective, whatever it found before
        whole = got.full_tensor()
        mine = spread(want, mesh, placements).to_local()
        ok = tuple(got.placements) == tuple(placements) and same(whole, want) and same(got.to_local(), mine)
    if not ok:
        failures.append(f"{name}: differs")


def case(name, fn):
    try:
        fn()
    except Exception:
        failures.append(f"{name}: raised\n{traceback.format_exc()}")
        print(failures[-1], file=sys.stderr, flush=True)  # now: a rank that raised may leave the others waiting


def raises(name, fn, *words):
    """fn must raise ValueError whose message contains every word."""
    try:
        fn()
    except ValueError as e:
        if all(w in str(e) for w in words):
            return
        failures.append(f"{name}: ValueError without {words}: {e}")
        return
    except Exception as e:  # noqa: BLE001
        failures.append(f"{name}: {type(e).__name__} instead of ValueError: {e}")
        return
    failures.append(f"{name}: did not raise")


def same_on_every_rank(name, value):
    values = [None] * dist.get_world_size()
    dist.all_gather_object(values, value)
    if any(v != values[0] for v in values):
        failures.append(f"{name}: ranks differ: {values}")


def spread(t, mesh, placements):
    """t as a DTensor: DTensor's own split of t, made locally (every rank holds the same t), no communication."""
    return distribute_tensor(t, mesh, placements, src_data_rank=None)


def data(shape=SHAPE, seed=0):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


def stateless(mesh, pl, tag):
    full, w, key = data(), data(seed=1), F.key(11)
    x = spread(full, mesh, pl)
    replicated_key = spread(key, mesh, [Replicate()] * mesh.ndim)
    case(f"{tag} uniform", lambda: check(f"{tag} uniform", F.uniform(x, key, -2.0, 3.0),
                                         F.uniform(full, key, -2.0, 3.0), mesh, pl))
    case(f"{tag} uniform float64", lambda: check(f"{tag} uniform float64", F.uniform(x, key, dtype=torch.float64),
                                                 F.uniform(full, key, dtype=torch.float64), mesh, pl))
    case(f"{tag} quantize_noise", lambda: check(f"{tag} quantize_noise", F.quantize_noise(x, key),
                                                F.quantize_noise(full, key), mesh, pl))
    case(f"{tag} dropout, replicated DTensor key", lambda: check(
        f"{tag} dropout, replicated DTensor key", F.dropout(x, replicated_key, 0.3), F.dropout(full, key, 0.3),
        mesh, pl))

    p_full = torch.rand(SHAPE, generator=torch.Generator().manual_seed(2))
    for name, args in (("normal", (1.0, 2.0)), ("truncated_normal", ()), ("bernoulli", (0.3,)),
                       ("randint", (-5, 9)), ("bernoulli, tensor p", (None,)), ("exponential", (1.5,))):
        op = getattr(F, name.split(",")[0])
        got = (spread(p_full, mesh, pl),) if args == (None,) else args
        case(f"{tag} {name}", lambda op=op, name=name, got=got, want=(p_full,) if args == (None,) else args: check(
            f"{tag} {name}", op(x, key, *got), op(full, key, *want), mesh, pl))
    for name in ("alpha_dropout", "feature_dropout", "feature_alpha_dropout"):
        op = getattr(F, name)
        case(f"{tag} {name}", lambda op=op, name=name: check(f"{tag} {name}", op(x, key, 0.4), op(full, key, 0.4),
                                                              mesh, pl))

    def backward():
        xd, xf = x.detach().requires_grad_(), full.clone().requires_grad_()
        (F.dropout(xd, key, 0.3) * spread(w, mesh, pl)).sum().backward()
        (F.dropout(xf, key, 0.3) * w).sum().backward()
        check(f"{tag} dropout backward", xd.grad.full_tensor(), xf.grad)

    case(f"{tag} dropout backward", backward)


def stateful(mesh, pl, tag):
    full = data()
    x = spread(full, mesh, pl)
    g, ref = torch_rngx.Generator(5), torch_rngx.Generator(5)
    module, ref_module = torch_rngx.nn.Dropout(0.4, seed=9), torch_rngx.nn.Dropout(0.4, seed=9)
    rng, ref_rng = replicated_rng(12, mesh), torch_rngx.nn.RNG(12)

    def draws():
        check(f"{tag} rand_like", torch_rngx.rand_like(x, generator=g), torch_rngx.rand_like(full, generator=ref),
              mesh, pl)
        check(f"{tag} quantize", torch_rngx.quantize(x, generator=g), torch_rngx.quantize(full, generator=ref),
              mesh, pl)
        check(f"{tag} dropout", torch_rngx.dropout(x, 0.2, generator=g), torch_rngx.dropout(full, 0.2, generator=ref),
              mesh, pl)
        check(f"{tag} nn.Dropout(seed=)", module(x), ref_module(full), mesh, pl)
        check(f"{tag} rand_like, replicated DTensor state", torch_rngx.rand_like(x, generator=rng),
              torch_rngx.rand_like(full, generator=ref_rng), mesh, pl)
        check(f"{tag} dropout, replicated DTensor state", torch_rngx.dropout(x, 0.6, generator=rng),
              torch_rngx.dropout(full, 0.6, generator=ref_rng), mesh, pl)
        check(f"{tag} randn_like", torch_rngx.randn_like(x, generator=g), torch_rngx.randn_like(full, generator=ref),
              mesh, pl)
        check(f"{tag} bernoulli_like", torch_rngx.bernoulli_like(x, 0.7, generator=g),
              torch_rngx.bernoulli_like(full, 0.7, generator=ref), mesh, pl)
        check(f"{tag} dropout1d", torch_rngx.dropout1d(x, 0.3, generator=g),
              torch_rngx.dropout1d(full, 0.3, generator=ref), mesh, pl)
        check(f"{tag} alpha_dropout", torch_rngx.alpha_dropout(x, 0.3, True, generator=g),
              torch_rngx.alpha_dropout(full, 0.3, True, generator=ref), mesh, pl)
        torch.manual_seed(3)
        got = torch_rngx.rand_like(x)
        torch.manual_seed(3)
        check(f"{tag} rand_like, generator=None", got, torch_rngx.rand_like(full), mesh, pl)
        xd, xf = x.detach().requires_grad_(), full.clone().requires_grad_()
        torch_rngx.dropout(xd, 0.5, generator=g).sum().backward()
        torch_rngx.dropout(xf, 0.5, generator=ref).sum().backward()
        check(f"{tag} stateful dropout backward", xd.grad.full_tensor(), xf.grad)

    case(f"{tag} stateful", draws)
    ends = (g.state, module.rng_state, rng.state.to_local())
    if not all(same(a, b) for a, b in zip(ends, (ref.state, ref_module.rng_state, ref_rng.state))):
        failures.append(f"{tag}: end states {[e.tolist() for e in ends]} differ from the single-process run's")
    same_on_every_rank(f"{tag} end states", [e.tolist() for e in ends])


def replicated_rng(seed, mesh):
    """An nn.RNG whose state buffer is a DTensor replicated on every mesh dim (as distribute_module makes it)."""
    rng = torch_rngx.nn.RNG(seed)
    rng.state = spread(rng.state, mesh, [Replicate()] * mesh.ndim)
    return rng


def keys_and_errors(mesh):
    key, full = F.key(3), data()
    replicated = spread(key, mesh, [Replicate()] * mesh.ndim)
    x = spread(full, mesh, [Shard(0)] + [Replicate()] * (mesh.ndim - 1))
    case("bits, replicated key", lambda: check("bits, replicated key", F.bits((4, 3), replicated).full_tensor(),
                                               F.bits((4, 3), key)))
    case("fold_in, replicated key", lambda: check("fold_in, replicated key", F.fold_in(replicated, 7).full_tensor(),
                                                  F.fold_in(key, 7)))
    case("split, replicated key", lambda: check("split, replicated key", F.split(replicated, 3).full_tensor(),
                                                F.split(key, 3)))
    sharded_key = spread(key, mesh, [Shard(0)] * mesh.ndim)
    raises("sharded key", lambda: F.dropout(x, sharded_key, 0.1), "state", "Replicate")
    raises("DTensor key, plain x", lambda: F.dropout(full, replicated, 0.1), "state", "x")
    raises("Partial x", lambda: F.dropout(DTensor.from_local(full, mesh, [Partial()] * mesh.ndim), key, 0.1),
           "x", "Partial")
    if mesh.ndim == 2:
        other = init_device_mesh("cpu", (dist.get_world_size(),))
        raises("key on another mesh", lambda: F.dropout(x, spread(key, other, [Replicate()]), 0.1),
               "state", "mesh")
    raises("global view of a DTensor", lambda: F.dropout(x, key, 0.1, global_shape=SHAPE, global_start=(0, 0, 0)),
           "global_shape")


def compiled(mesh, pl, tag, shape=SHAPE):
    full, w, key = data(shape), data(shape, seed=1), F.key(21)

    def step(x, g, rng):
        return (F.dropout(x, key, 0.3) + torch_rngx.rand_like(x, generator=g) + F.quantize_noise(x, key, 0.25)
                + torch_rngx.quantize(x, generator=rng) + torch_rngx.randn_like(x, generator=g)
                + F.bernoulli(x, key, x.abs().clamp(max=1)))

    def loss(x, w):
        return (F.dropout(x, key, 0.3) * w).sum()

    def run():
        x = spread(full, mesh, pl)
        g, ref = torch_rngx.Generator(8), torch_rngx.Generator(8)
        rng, ref_rng = replicated_rng(2, mesh), torch_rngx.nn.RNG(2)
        check(f"{tag} compiled", torch.compile(step, fullgraph=True)(x, g, rng), step(full, ref, ref_rng), mesh, pl)
        if not same(g.state, ref.state) or not same(rng.state.to_local(), ref_rng.state):
            failures.append(f"{tag} compiled: end states differ")
        same_on_every_rank(f"{tag} compiled end states", (g.state.tolist(), rng.state.to_local().tolist()))
        xd, xf = x.detach().requires_grad_(), full.clone().requires_grad_()
        torch.compile(loss, fullgraph=True)(xd, spread(w, mesh, pl)).backward()
        loss(xf, w).backward()
        check(f"{tag} compiled dropout backward", xd.grad.full_tensor(), xf.grad)

    case(f"{tag} compiled", run)


def routed(mesh, pl, tag):
    """torch's own random calls under torch_rngx.mode, on a DTensor and on the whole tensor in this process: the mode
    routes both to the same torch_rngx op, so the DTensor's blocks are the whole result's, eager and compiled."""
    full = data()

    def calls(x):
        return [torch.rand_like(x), torch.randn_like(x), torch.nn.functional.dropout(x, 0.3), torch.bernoulli(x, 0.4)]

    def on_intermediates(x):  # DTensors made by the call itself
        return [torch.empty_like(x).uniform_(-0.5, 0.5), torch.bernoulli(x.abs().clamp(max=1))]

    runs = [("eager", calls, calls), ("eager, intermediates", on_intermediates, on_intermediates),
            ("compiled", torch.compile(calls, fullgraph=True), calls)]
    sharded = [p.dim for p in pl if isinstance(p, Shard)]
    if len(sharded) == len(set(sharded)):  # a dim split over several mesh dims: see docs/distributed.md's limits
        runs.append(("compiled, intermediates", torch.compile(on_intermediates, fullgraph=True), on_intermediates))
    for how, fn, ref_fn in runs:
        def run(how=how, fn=fn, ref_fn=ref_fn):
            g, ref = torch_rngx.Generator(13), torch_rngx.Generator(13)
            with torch_rngx.mode(generator=g):
                got = fn(spread(full, mesh, pl))
            with torch_rngx.mode(generator=ref):
                want = ref_fn(full)
            for i, (a, b) in enumerate(zip(got, want)):
                check(f"{tag} mode {how} call {i}", a, b, mesh, pl)
            if not same(g.state, ref.state):
                failures.append(f"{tag} mode {how}: end state differs from the single-process run's")
        case(f"{tag} mode {how}", run)


def plain_global_view(rank, world, dim):
    """No DTensor: each rank draws its block of a (7, 5) tensor (rows or columns, in torch.chunk's blocks) through
    global_shape/global_start; all_gather puts the blocks back together."""
    key, full = F.key(4), data((7, 5))
    chunk = -(-full.shape[dim] // world)
    begin = min(rank * chunk, full.shape[dim])
    local = full.narrow(dim, begin, min(chunk, full.shape[dim] - begin))  # columns: a strided view
    view = {"global_shape": (7, 5), "global_start": (begin, 0) if dim == 0 else (0, begin)}
    g, ref = torch_rngx.Generator(6), torch_rngx.Generator(6)
    results = {"uniform": (F.uniform(local, key, **view), F.uniform(full, key)),
               "dropout": (F.dropout(local, key, 0.5, **view), F.dropout(full, key, 0.5)),
               "quantize_noise": (F.quantize_noise(local, key, **view), F.quantize_noise(full, key)),
               "bits": (F.bits(local.shape, key, **view), F.bits(full.shape, key)),
               "rand_like": (torch_rngx.rand_like(local, generator=g, **view),
                             torch_rngx.rand_like(full, generator=ref))}
    for name, (mine, want) in results.items():
        blocks = [None] * world
        dist.all_gather_object(blocks, mine)
        check(f"global view dim {dim} {name}", torch.cat(blocks, dim), want)
    same_on_every_rank("global view generator end state", g.state.tolist())
    if not same(g.state, ref.state):
        failures.append("global view: generator end state differs from the single-process run")


# stochastic_round on 1, 2 and 4 ranks (issue 44): every (input, target) pair and the optimizer's rounding.
ROUND_PLACEMENTS = [[Shard(0)], [Shard(1)], [Replicate()]]
ROUND_PAIRS = [(src, dst) for src in (torch.float16, torch.bfloat16, torch.float32, torch.float64)
               for dst in (torch.bfloat16, torch.float16, torch.float8_e4m3fn, torch.float8_e5m2)
               if torch.finfo(dst).eps > torch.finfo(src).eps]


def gatherable_bits(t):
    """t's bit patterns in a dtype gloo gathers: uint8 for float8, int32 for the 16-bit types (gloo has no int16)."""
    b = bits_of(t)
    return b.int() if b.dtype == torch.int16 else b


def check_bits(name, got, want, mesh, placements):
    """check() through the bit patterns: gloo gathers no float8 tensor, so each rank's block is viewed as integers
    before full_tensor()."""
    if not isinstance(got, DTensor):
        failures.append(f"{name}: not a DTensor")
        return
    local = gatherable_bits(got.to_local())
    as_bits = DTensor.from_local(local, mesh, got.placements, run_check=False, shape=got.shape, stride=got.stride())
    check(name, as_bits, gatherable_bits(want), mesh, placements)
    if got.dtype != want.dtype:
        failures.append(f"{name}: dtype {got.dtype}, not {want.dtype}")


def rounding(mesh, pl, tag):
    full, key = data() * torch.logspace(-10, 3, SHAPE[-1]), F.key(31)  # from the float8 subnormals to past 448
    x = spread(full, mesh, pl)

    def stateless():
        for src, dst in ROUND_PAIRS:
            for saturate in (False, True):
                name = f"{tag} stochastic_round {src}->{dst} saturate={saturate}"
                check_bits(name, F.stochastic_round(x.to(src), key, dst, saturate),
                           F.stochastic_round(full.to(src), key, dst, saturate), mesh, pl)

    def stateful():
        g, ref = torch_rngx.Generator(6), torch_rngx.Generator(6)
        for src, dst in ((torch.float32, torch.bfloat16), (torch.float64, torch.float8_e4m3fn)):  # 1 and 2 words
            check_bits(f"{tag} stateful stochastic_round {src}->{dst}",
                       torch_rngx.stochastic_round(x.to(src), dst, generator=g),
                       torch_rngx.stochastic_round(full.to(src), dst, generator=ref), mesh, pl)
        if not same(g.state, ref.state):
            failures.append(f"{tag} stateful stochastic_round: end states differ")
        compiled = torch.compile(lambda v, k: F.stochastic_round(v, k, torch.float8_e5m2, True), fullgraph=True)
        check_bits(f"{tag} compiled stochastic_round", compiled(x, key),
                   F.stochastic_round(full, key, torch.float8_e5m2, True), mesh, pl)

    def optimizer():
        """A bfloat16 weight sharded as a DTensor, the same gradients as the whole one: AdamW's fused step with
        stochastic rounding (its block through the global view) gives the weights (and float32 moments) of the
        single-process run on the whole weight."""
        whole = torch.nn.Parameter(full.bfloat16())
        sharded = torch.nn.Parameter(spread(full.bfloat16(), mesh, pl))
        opts = [torch.optim.AdamW([p], lr=1e-2, weight_decay=0.1) for p in (whole, sharded)]
        roundings = [torch_rngx.optim.stochastic_rounding(opt, seed=99) for opt in opts]
        for step in range(3):
            grad = data(seed=10 + step).bfloat16()
            whole.grad, sharded.grad = grad, spread(grad, mesh, pl)
            for rounding, p in zip(roundings, (whole, sharded)):  # both take the fused step (rngx::adam_sround_)
                if not rounding._fusable(p, rounding.optimizer.param_groups[0]):
                    failures.append(f"{tag} optimizer step {step}: {type(p).__name__} not given the fused step")
            for opt in opts:
                opt.step()
            check_bits(f"{tag} optimizer step {step}", sharded.detach(), whole.detach(), mesh, pl)
        check(f"{tag} optimizer exp_avg", opts[1].state[sharded]["exp_avg"], opts[0].state[whole]["exp_avg"], mesh,
              pl)

    case(f"{tag} stochastic_round", stateless)
    case(f"{tag} stochastic_round stateful and compiled", stateful)
    case(f"{tag} stochastic_round optimizer", optimizer)


def main():
    suite, rank, world, mesh_shape, init_file = sys.argv[1:6]
    rank, world = int(rank), int(world)
    mesh_shape = tuple(int(n) for n in mesh_shape.split(","))
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    mesh = init_device_mesh("cpu", mesh_shape)
    if suite == "eager":
        for pl in PLACEMENTS[mesh.ndim]:
            tag = f"mesh {mesh_shape} {pl}"
            stateless(mesh, pl, tag)
            stateful(mesh, pl, tag)
        keys_and_errors(mesh)
        plain_global_view(rank, world, 0)
        plain_global_view(rank, world, 1)
    elif suite == "compiled":
        for pl in COMPILED_PLACEMENTS[mesh.ndim]:
            compiled(mesh, pl, f"mesh {mesh_shape} {pl}")
    elif suite == "rounding":
        for pl in ROUND_PLACEMENTS:
            rounding(mesh, pl, f"mesh {mesh_shape} {pl}")
    elif suite == "mode":
        for pl in COMPILED_PLACEMENTS[mesh.ndim]:
            routed(mesh, pl, f"mesh {mesh_shape} {pl}")
    else:  # "even": equal blocks, so a rank running another rank's compiled code would get the wrong values silently
        for pl in ([Shard(0)], [Shard(1)]):
            compiled(mesh, pl, f"mesh {mesh_shape} {pl} even", shape=(8, 4, 2))
    dist.destroy_process_group()
    if failures:
        print(f"rank {rank}: {len(failures)} failures\n" + "\n".join(failures), file=sys.stderr)
    else:
        print(f"rank {rank}: ok")
    sys.stdout.flush()
    sys.stderr.flush()
    # Every check is done: skip the interpreter's teardown, where torch 2.14.1 once aborted after a gloo run
    # ("terminate called without an active exception", after this rank had printed its result).
    os._exit(1 if failures else 0)


if __name__ == "__main__":
    main()
