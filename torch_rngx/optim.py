"""Training with bfloat16 (or float16) weights and no float32 master copy, for any torch.optim optimizer.

    torch_rngx.optim.stochastic_rounding(optimizer)

Each step then runs in float32 and rounds its result back into the weights' dtype with stochastic_round, so an
update smaller than half a step of the weights' dtype moves them on average instead of vanishing (a bfloat16 weight
of 1.0 never moves by an update below 2^-9 under round-to-nearest). The draws of parameter i at step t take the key
fold_in(fold_in(key(seed), t), i): a resumed run rounds exactly as the uninterrupted one, and a parameter sharded as
a DTensor (FSDP2's) exactly as the whole one, since each rank rounds its block through the global view.

torch.optim.Adam and AdamW take a fused step (one op, rngx::adam_sround_, reads each weight, gradient and moment
once and rounds in the same pass; CPU and CUDA give the same bits); every other optimizer steps float32 stand-ins,
then rounds.
"""

from __future__ import annotations

import operator
import sys
from typing import Any, Optional

import torch

from . import functional
from ._engine import reuse
from ._engine.spec import rngx as ops
from ._engine.spec import words_per_element
from ._engine.torch_private import optimizer_step_dtype

__all__ = ["StochasticRounding", "stochastic_rounding"]

# The weight dtypes the rounding keeps; float32 (and float64) parameters are the optimizer's as before.
LOW = (torch.bfloat16, torch.float16)
# The optimizers whose step is fused with the rounding (exactly these classes: a subclass may change the step), and
# the group options that change torch's step from the formula the fused op computes.
FUSED = (torch.optim.Adam, torch.optim.AdamW)
_UNFUSED_OPTIONS = ("amsgrad", "capturable", "differentiable", "fused")
_SEED, _STEP = "stochastic_round_seed", "stochastic_round_step"  # each param group's (its state_dict saves them)


def __dir__():
    return __all__


class StochasticRounding:
    """What stochastic_rounding returns: the step and load_state_dict hooks it registers on an optimizer.
    `remove()` takes them off (the optimizer then steps its parameters in their own dtype again).
    No torch counterpart; make one with stochastic_rounding.

    Each param group keeps the seed and its count of rounded steps in `stochastic_round_seed` and
    `stochastic_round_step`: optimizer.state_dict() saves them and load_state_dict restores them.

    During a step the optimizer sees a float32 stand-in for each low-precision parameter with a gradient (a new
    Parameter holding float32 copies of its value and gradient, in its place in the param group, with its state);
    the parameter itself is never swapped or retyped, so a DTensor parameter or any tensor subclass works alike.
    A parameter that takes the fused step (`fused`) is stepped before the optimizer's own step, which sees an empty
    Parameter without a gradient in its place.

    Args:
        optimizer (torch.optim.Optimizer): the optimizer it rounds for.
        seed (int): the seed of its keys, in [0, 2^64).
        fused (bool): whether torch.optim.Adam and AdamW step their parameters with the fused op.

    Example::

        >>> opt = torch.optim.SGD(torch.nn.Linear(2, 2).bfloat16().parameters(), lr=0.1)
        >>> rounding = torch_rngx.optim.stochastic_rounding(opt, seed=3)
        >>> rounding.seed
        3
        >>> rounding.remove()
    """

    def __init__(self, optimizer: torch.optim.Optimizer, seed: int, fused: bool = True) -> None:
        self.optimizer, self.seed, self.fused = optimizer, seed, fused
        self._stand_ins: list = []  # (index, parameter, its float32 stand-in, group, position) while a step runs
        self._stepped: list = []  # (parameter, group, position) of those the fused op stepped, set aside
        self._step_keys: dict = {}  # index -> its key, for the step that runs
        self._handles = [
            optimizer.register_step_pre_hook(self._to_float32),
            optimizer.register_step_post_hook(self._round_back),
            optimizer.register_load_state_dict_pre_hook(self._load_as_float32),
            optimizer.register_load_state_dict_post_hook(self._restore),
        ]

    def remove(self) -> None:
        """Takes the step and load_state_dict hooks off the optimizer: its later steps update the bfloat16 and float16
        parameters in their own dtype, as without stochastic_rounding."""
        for handle in self._handles:
            handle.remove()

    def _params(self):
        """(index in the optimizer's state_dict, parameter, its group, its position there) of every low-precision
        parameter."""
        index = 0
        for group in self.optimizer.param_groups:
            group.setdefault(_SEED, self.seed)
            group.setdefault(_STEP, 0)
            for pos, p in enumerate(group["params"]):
                if p.dtype in LOW:
                    yield index, p, group, pos
                index += 1

    def _stand_in(self, index, p, group, pos, value):
        """Puts `value` (a float32 Parameter) in p's place in its group, with p's optimizer state."""
        group["params"][pos] = value
        if p in self.optimizer.state:
            self.optimizer.state[value] = self.optimizer.state.pop(p)
        self._stand_ins.append((index, p, value, group, pos))

    def _restore(self, optimizer: Any = None) -> None:
        """Each parameter back in its place, with the state its stand-in has now."""
        stepped, self._stepped = self._stepped, []
        for p, group, pos in stepped:
            group["params"][pos] = p
        stand_ins, self._stand_ins = self._stand_ins, []
        for _, p, value, group, pos in stand_ins:
            group["params"][pos] = p
            if value in self.optimizer.state:
                self.optimizer.state[p] = self.optimizer.state.pop(value)

    def _to_float32(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        """Before the step: the fused step for the parameters that take it, set aside; float32 stand-ins for the other
        low-precision parameters with a gradient, so the optimizer (and the state it makes, such as Adam's moments)
        works in float32. A step that raised left its stand-ins: they go first. A closure computes the gradients
        inside the step, so a step given one takes no fused step."""
        self._restore()
        closure = len(args) > 1 or kwargs.get("closure") is not None  # args: (optimizer, *step's)
        with torch.no_grad():
            params = [(index, p, group, pos) for index, p, group, pos in self._params() if p.grad is not None]
            # every key of the step, derived once: the fused parameters' now, the stand-ins' after the step
            keys = self._keys([(index, group) for index, _, group, _ in params]) if params else []
            self._step_keys = {index: key for (index, *_), key in zip(params, keys)}
            for index, p, group, pos in params:
                if not closure and self._fusable(p, group):
                    self._adam_step(p, group, self._step_keys[index])
                    group["params"][pos] = torch.nn.Parameter(torch.empty(0))  # no gradient: the step skips it
                    self._stepped.append((p, group, pos))
                    continue
                value = torch.nn.Parameter(p.detach().float(), requires_grad=p.requires_grad)
                value.grad = p.grad.float()
                self._stand_in(index, p, group, pos, value)

    def _round_back(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        """After the step: each float32 result rounded stochastically into its parameter, in place; every group's
        step count moves on."""
        rounded = [(p, value, index) for index, p, value, _, _ in self._stand_ins]
        self._restore()
        with torch.no_grad():
            for p, value, index in rounded:
                p.copy_(functional.stochastic_round(value.detach(), self._step_keys[index], p.dtype))
            for group in self.optimizer.param_groups:
                group[_STEP] = group.get(_STEP, 0) + 1

    def _fusable(self, p, group) -> bool:
        """Whether p takes the fused step: a CPU or CUDA parameter (or a DTensor of them) of torch.optim.Adam or AdamW
        itself, without the options that change its formula, its gradient and any moments it has dense, contiguous
        and on its device."""
        if not self.fused or type(self.optimizer) not in FUSED or any(group.get(o) for o in _UNFUSED_OPTIONS):
            return False
        if not _in_range(group):  # torch steps with what it was given; the fused op refuses it, so it never raises
            return False
        dtensor = _dtensor_type()
        if type(p) not in (torch.nn.Parameter, torch.Tensor, dtensor) or type(p.grad) is not type(p.data):
            return False
        state = self.optimizer.state.get(p, {})
        moments = [state[name] for name in ("exp_avg", "exp_avg_sq") if name in state]
        if len(moments) != (2 if state else 0) or any(m.dtype != torch.float32 or m.shape != p.shape for m in moments):
            return False
        tensors = [_local(t) for t in (p, p.grad, *moments)]
        device = tensors[0].device
        return (
            device.type in ("cpu", "cuda")
            and p.grad.dtype == p.dtype
            and all(t.device == device and t.layout == torch.strided and t.is_contiguous() for t in tensors)
        )

    def _adam_step(self, p, group, key) -> None:
        """torch.optim.Adam's (AdamW's) step on p in float32, rounded into p with stochastic_round under key: one
        rngx::adam_sround_ call on p's (local) tensors. Its state is the one torch's step on a float32 copy keeps.
        The key-reuse checker (where on) is told the words first, so a refused draw changes nothing."""
        view: tuple = (None, None)
        if isinstance(p, _dtensor_type() or ()):  # its block's place in the whole, as the DTensor rule gives it
            from ._engine.dtensor import view_of

            view = view_of(p, "param")
        local = _local(p)
        if reuse.active is not None:  # the words stochastic_round of a float32 x reads
            reuse.active.draw("adam_sround_", key, local.shape, words_per_element(torch.float32), *view)
        state = self.optimizer.state[p]
        if not state:
            state["step"] = torch.tensor(0.0, dtype=optimizer_step_dtype())
            for name in ("exp_avg", "exp_avg_sq"):
                state[name] = torch.zeros_like(p, dtype=torch.float32, memory_format=torch.preserve_format)
        state["step"] += 1
        beta1, beta2 = (float(b) for b in group["betas"])
        decoupled = group.get("decoupled_weight_decay", isinstance(self.optimizer, torch.optim.AdamW))
        ops.adam_sround_(
            local,
            _local(p.grad),
            _local(state["exp_avg"]),
            _local(state["exp_avg_sq"]),
            key,
            float(group["lr"]),
            beta1,
            beta2,
            float(group["eps"]),
            float(group["weight_decay"]),
            bool(decoupled),
            bool(group["maximize"]),
            int(state["step"].item()),
            *view,
        )

    @staticmethod
    def _keys(params):
        """fold_in(fold_in(key(seed), step), index) for each (index, group): each (seed, step) key once (groups
        stepped together share it), then one call for every parameter's."""
        step_keys: dict = {}
        for _, group in params:
            at = group[_SEED], group[_STEP]
            if at not in step_keys:
                step_keys[at] = functional.fold_in(functional.key(at[0]), at[1])
        keys = torch.stack([step_keys[group[_SEED], group[_STEP]] for _, group in params])
        return functional.fold_in(keys, torch.tensor([index for index, _ in params], dtype=torch.int64))

    def _load_as_float32(self, optimizer: Any, state_dict: Any) -> None:
        """load_state_dict converts each saved state tensor to its parameter's dtype: for the rounded parameters that
        is float32, the dtype the steps made it in, so each has an (uninitialized) float32 stand-in while loading."""
        self._restore()
        for index, p, group, pos in list(self._params()):
            self._stand_in(index, p, group, pos, torch.empty_like(p, dtype=torch.float32))


def _dtensor_type() -> Any:
    """DTensor's class where torch.distributed.tensor is loaded (no DTensor exists before), else None: this module
    does not load it."""
    module = sys.modules.get("torch.distributed.tensor")
    return None if module is None else module.DTensor


def _local(t):
    """A DTensor's local tensor; any other tensor itself."""
    return t.to_local() if isinstance(t, _dtensor_type() or ()) else t


def _in_range(group) -> bool:
    """Whether a param group's numbers are those torch.optim.Adam's constructor accepts (a group edited after it may
    hold others): lr, eps and weight_decay >= 0, both betas in [0, 1)."""
    try:
        lr, eps, decay = (float(group[k]) for k in ("lr", "eps", "weight_decay"))
        beta1, beta2 = (float(b) for b in group["betas"])
        return lr >= 0 and eps >= 0 and decay >= 0 and 0 <= beta1 < 1 and 0 <= beta2 < 1
    except (TypeError, ValueError, RuntimeError):  # a tensor of many values, or no number at all
        return False


def stochastic_rounding(
    optimizer: torch.optim.Optimizer, seed: Optional[int] = None, fused: bool = True
) -> StochasticRounding:
    """Makes `optimizer` step its bfloat16 and float16 parameters in float32 and round the result back with
    stochastic rounding (functional.stochastic_round): low-precision weights with no float32 master copy, whose small
    updates still add up. One line for any torch.optim optimizer. No torch counterpart (torchao's
    ``_AdamW(bf16_stochastic_round=True)`` is one optimizer of this kind).

    Before each step, every such parameter with a gradient is given float32 copies of itself and its gradient; the
    optimizer updates them as it updates float32 parameters (so its state, Adam's moments for one, is float32); then
    each result is rounded stochastically into the parameter's own storage, with the key
    fold_in(fold_in(key(seed), t), i) for its index i in the optimizer's state_dict at the t-th rounded step. The seed
    and step counts live in the param groups, so optimizer.state_dict() carries them and a run resumed from it rounds
    exactly as the uninterrupted one; a parameter sharded as a DTensor rounds exactly as the whole. Float32 and
    float64 parameters are left to the optimizer.

    Args:
        optimizer (torch.optim.Optimizer): any optimizer; its other behaviour is unchanged.
        seed (int, optional): in [0, 2^64); default one drawn from torch's default CPU generator (so
            torch.manual_seed fixes it).
        fused (bool): True (the default): torch.optim.Adam and AdamW (those classes, not subclasses) step each CPU or
            CUDA parameter in one fused op, rngx::adam_sround_, faster than their own float32 step and with no float32
            copies, unless amsgrad, capturable, differentiable or fused is set or a closure is given. Its float32
            update is torch's formula with each operation one IEEE operation, rounded once (docs: training/): the
            same bits on every CPU and on CUDA, where torch's own kernels differ by their fused multiply-adds and
            square root. False: every optimizer steps float32 stand-ins, bit for bit its own float32 step.

    Returns:
        StochasticRounding: its `remove()` takes the rounding off again.

    Example::

        >>> model = torch.nn.Linear(4, 2).to(torch.bfloat16)
        >>> opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        >>> rounding = torch_rngx.optim.stochastic_rounding(opt, seed=0)
        >>> model(torch.randn(3, 4, dtype=torch.bfloat16)).float().sum().backward()
        >>> opt.step()
        >>> model.weight.dtype, opt.state[model.weight]["exp_avg"].dtype
        (torch.bfloat16, torch.float32)
    """
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(f"optimizer must be a torch.optim.Optimizer, got {type(optimizer).__name__}")
    if seed is None:
        seed = int(torch.randint(0, 1 << 62, (), dtype=torch.int64))
    functional.key(seed)  # checks it as a key's seed, naming it
    if not isinstance(fused, bool):
        raise TypeError(f"fused must be a bool, got {type(fused).__name__}")
    return StochasticRounding(optimizer, operator.index(seed), fused)
