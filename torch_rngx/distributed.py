"""DTensor support: the torch_rngx ops take DTensor inputs (docs: distributed/).

Each rank computes its own block of the op on the global tensor, from its local shape and global offset
(`global_view`), through the ops' global-view arguments: no communication, and the values do not depend on the
mesh or the placements. The result is a DTensor with the input's placements. The key (`state`) is the same on every
rank: a plain tensor, or a DTensor replicated on every mesh dim. Registered as torch_dispatch rules for DTensor
(torch.library.register_torch_dispatch), so they hold eager, under autograd and under torch.compile.

`import torch_rngx` has this module imported as soon as torch.distributed.tensor is (torch_rngx/_engine/deferred.py): at
once if it is loaded, else right after its first import (torch.compile's among them), so the rules are there before
any call on a DTensor, compiled or not.
"""

from torch.distributed.tensor import DTensor

from ._engine import dtensor  # the DTensor rules, registered with torch on import

__all__ = ["global_view"]


def __dir__():
    return __all__


def global_view(x: DTensor, name: str = "x") -> tuple[list[int], list[int]]:
    """(global_shape, global_start) of this rank's block of the DTensor x: the arguments that make a torch_rngx op on
    x.to_local() give this rank's part of the op on x.full_tensor(). Placements Shard(d) and Replicate; a dim sharded
    on several mesh dims is split in mesh-dim order. Shards follow DTensor's torch.chunk convention: blocks of
    ceil(n / k) rows, so the last ranks may get fewer rows or none. No torch counterpart.

    Args:
        x (DTensor): a DTensor on a mesh this rank belongs to.
        name (str): how error messages name x.

    Example::

        >>> shape, start = torch_rngx.distributed.global_view(x_dtensor)  # doctest: +SKIP
        >>> y = rf.dropout(x_dtensor.to_local(), key, 0.1, global_shape=shape, global_start=start)  # doctest: +SKIP
    """
    return dtensor.view_of(x, name)
