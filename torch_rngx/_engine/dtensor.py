"""DTensor rules for the rngx ops (torch_rngx.distributed is their public face): each rank draws its block of the op
on the global tensor through the ops' global-view arguments (view_of), with the key the same on every rank.
Registered with torch as torch_dispatch rules for DTensor when this module is imported, which `import torch_rngx`
has done as soon as torch.distributed.tensor is loaded (_deferred); under torch.compile the router calls
compiled_call for a DTensor input."""

import torch
from torch.distributed.tensor import DTensor, Replicate, Shard

from . import step
from .spec import SPECS
from .torch_private import argument_names, shard_order


def view_of(x: DTensor, name: str = "x") -> tuple[list[int], list[int]]:
    """torch_rngx.distributed.global_view: (global_shape, global_start) of this rank's block of x."""
    mesh = x.device_mesh
    coordinate = mesh.get_coordinate()
    if coordinate is None:
        raise ValueError(f"{name}: this rank is not part of {name}'s device mesh")
    size, start = list(x.shape), [0] * x.dim()
    for mesh_dim, placement in enumerate(x.placements):
        if type(placement) is Shard:
            d = placement.dim
            n, chunk = size[d], -(-size[d] // mesh.size(mesh_dim))
            begin = min(chunk * coordinate[mesh_dim], n)
            size[d], start[d] = min(n - begin, chunk), start[d] + begin
        elif placement.is_partial():
            raise ValueError(
                f"{name} has placement {placement} on mesh dim {mesh_dim}: a Partial tensor holds "
                f"summands, not the values to draw for; redistribute {name} to Shard or Replicate first"
            )
        elif not placement.is_replicate():
            raise ValueError(
                f"{name} has placement {placement} on mesh dim {mesh_dim}: torch_rngx ops take Shard(d) "
                f"and Replicate placements only"
            )
    _check_default_order(x, name)
    local = tuple(x.to_local().shape)
    if tuple(size) != local:
        raise ValueError(
            f"{name}: the local tensor has shape {local}, but placements {tuple(x.placements)} give "
            f"{tuple(size)} under DTensor's torch.chunk convention"
        )
    return list(x.shape), start


def _check_default_order(x, name):
    """A tensor dim sharded on several mesh dims must be split in mesh-dim order, the order global_view assumes
    (DTensor may record another one). A dim split over one mesh dim has no order to check, which spares reading
    DTensor's spec: Dynamo cannot read it on a DTensor made inside a compiled function."""
    sharded = [p.dim for p in x.placements if type(p) is Shard]
    if len(sharded) == len(set(sharded)):
        return
    for entry in shard_order(x):
        dims = entry.mesh_dims
        if any(a > b for a, b in zip(dims, dims[1:])):
            raise ValueError(
                f"{name}: tensor dim {entry.tensor_dim} is sharded over mesh dims {entry.mesh_dims} in "
                f"that order; torch_rngx supports only ascending mesh-dim order"
            )


def _replicated_local(state, mesh, name="state"):
    """The plain key behind a key argument: a plain tensor as is, or a DTensor replicated on every mesh dim of
    `mesh` (None: any mesh)."""
    if not isinstance(state, DTensor):
        return state
    if mesh is not None and state.device_mesh != mesh:
        raise ValueError(
            f"{name} is a DTensor on another device mesh than the input's: a DTensor key must live on the "
            f"input's mesh, replicated"
        )
    if not all(p.is_replicate() for p in state.placements):
        raise ValueError(
            f"{name} must be the same key on every rank: a plain tensor or a DTensor with Replicate() on "
            f"every mesh dim, got placements {tuple(state.placements)}"
        )
    return state.to_local()


_VIEW_OF_DTENSOR = (
    "global_shape and global_start are for plain (local) tensors: a DTensor is already the global tensor; pass neither"
)


def _bind(func, args, kwargs):
    names = argument_names(func)
    bound = dict(zip(names, args))
    bound.update(kwargs)
    return bound


def _sampler(x_name, state_name):
    """The rule for an op drawing for a tensor argument x_name with the key state_name."""

    def rule(cls, func, types, args, kwargs):
        a = _bind(func, args, kwargs)
        x = a[x_name]
        if not isinstance(x, DTensor):
            raise ValueError(
                f"{state_name} is a DTensor but {x_name} is a plain tensor: a DTensor key serves DTensor "
                f"inputs only; pass a plain key (the same on every rank) or make {x_name} a DTensor"
            )
        if a.get("global_shape") is not None or a.get("global_start") is not None:
            raise ValueError(_VIEW_OF_DTENSOR)
        a["global_shape"], a["global_start"] = view_of(x, x_name)
        a[state_name] = _replicated_local(a[state_name], x.device_mesh, state_name)
        a[x_name] = x.to_local()
        for name, value in a.items():  # a tensor parameter shaped like x (bernoulli_tensor's p): its block too
            if isinstance(value, DTensor):
                a[name] = _block_like(value, x, name)
        out = func(**a)
        return DTensor.from_local(out, x.device_mesh, x.placements, run_check=False, shape=x.shape, stride=x.stride())

    return rule


def _block_like(t, x, name):
    """This rank's block of a DTensor parameter laid out as x."""
    if t.device_mesh != x.device_mesh or tuple(t.placements) != tuple(x.placements):
        raise ValueError(
            f"{name} is a DTensor with placements {tuple(t.placements)}, but the input has "
            f"{tuple(x.placements)}: a tensor parameter must be laid out like the input"
        )
    return t.to_local()


def _fused(spec):
    """The rule for a Generator's fused step-and-draw (spec.fused): the step by the global tensor's blocks (the
    Generator's step, under its lock), then the sampler, whose own rule draws this rank's block."""

    def rule(cls, func, types, args, kwargs):
        a = _bind(func, args, kwargs)
        x = a[spec.input]
        state = _replicated_local(a.pop("state"), x.device_mesh if isinstance(x, DTensor) else None)
        mark = step.mark(state)
        p = spec.params(spec.positional((x, state), a)[2:])
        key = step.advance(state, spec.blocks(x.numel(), x.dtype, p))
        try:
            return spec.kernel(state=key, **a)
        except BaseException:  # this rank's block refused after the step: the blocks go back, as a plain call's
            step.give_back(mark, state)
            raise

    return rule


def _on_key(cls, func, types, args, kwargs):
    """Ops on keys alone (bits, take_, step_, split, fold_in): a replicated DTensor key gives a replicated
    DTensor."""
    a = _bind(func, args, kwargs)
    keys = {n: v for n, v in a.items() if isinstance(v, DTensor)}
    mesh = next(iter(keys.values())).device_mesh
    for n in keys:
        a[n] = _replicated_local(a[n], mesh, n)
    out = func(**a)
    return DTensor.from_local(out, mesh, [Replicate()] * mesh.ndim, run_check=False)


def compiled_call(spec, x, key, params):
    """Under torch.compile, a DTensor op as Dynamo sees it: to_local, the op on this rank's block with its view as
    constants, from_local. Compiled code is cached by its graph and DTensor's metadata, which do not say which rank
    compiled it; with the view in the graph, each rank's block gets its own cache entry."""
    if spec.global_shape_of(params) is not None:
        raise ValueError(_VIEW_OF_DTENSOR)
    view = view_of(x)
    key = _replicated_local(key, x.device_mesh)
    rest = [_block_like(p, x, "p") if isinstance(p, DTensor) else p for p in params[: spec.view_at]]
    out = spec.kernel(x.to_local(), key, *rest, *view)
    return DTensor.from_local(out, x.device_mesh, x.placements, run_check=False, shape=x.shape, stride=x.stride())


_RULES = {
    **{op.name: _sampler(op.input, "state") for op in SPECS.values()},
    **{op.fused: _fused(op) for op in SPECS.values() if op.fused is not None},
    "bits": _on_key,
    "take_": _on_key,
    "step_": _on_key,
    "split": _on_key,
    "fold_in": _on_key,
}
for _op, _rule in _RULES.items():
    torch.library.register_torch_dispatch(f"rngx::{_op}", DTensor, _rule)
