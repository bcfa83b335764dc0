"""One Triton kernel that draws any op of torch_rngx.triton over a whole output, for tests/test_triton.py (under
the interpreter) and benchmarks/gpu_check.py (natively on a GPU)."""
import torch
import triton
import triton.language as tl

import torch_rngx.triton as rt


@triton.jit
def _draw(out_ptr, x_ptr, state_ptr, view_ptr, params_ptr, n, OP: tl.constexpr, NDIM: tl.constexpr,
          BLOCK: tl.constexpr):
    """out = OP over the elements of an output that `view` describes (x read in logical order)."""
    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = i < n
    key, j = rt.locate(tl.where(mask, i, 0), view_ptr, NDIM)  # masked lanes read key 0, not past the state
    seed, offset = rt.load_key(state_ptr + key)
    DTYPE: tl.constexpr = out_ptr.dtype.element_ty
    if OP == "bits32":
        v = rt.word(seed, offset, j).to(DTYPE, bitcast=True)
    elif OP == "bits64":
        v = rt.bits64(seed, offset, j).to(DTYPE, bitcast=True)
    elif OP == "uniform":
        v = rt.uniform(seed, offset, j, params_ptr, DTYPE)
    elif OP == "bernoulli":
        v = rt.bernoulli(seed, offset, j, params_ptr, DTYPE)
    elif OP == "normal":
        v = rt.normal(seed, offset, j, params_ptr, DTYPE)
    elif OP == "noise":
        v = rt.quantize_noise(tl.load(x_ptr + i, mask=mask), seed, offset, j, params_ptr)
    elif OP == "stochastic_round" or OP == "stochastic_round_saturate":
        v = rt.stochastic_round(tl.load(x_ptr + i, mask=mask), seed, offset, j, DTYPE, OP != "stochastic_round")
    else:
        v = rt.dropout(tl.load(x_ptr + i, mask=mask), seed, offset, j, params_ptr)
    tl.store(out_ptr + i, v, mask=mask)


def draw(op, out, state, x=None, params=None, block=64, global_shape=None, global_start=None, fusion=False):
    """Fills `out` (contiguous, on state's device) with OP's values: "bits32", "bits64", "uniform", "noise",
    "dropout", "bernoulli", "normal", "stochastic_round" or "stochastic_round_saturate" (x rounded to out's
    dtype); x (noise, dropout, stochastic_round) in out's shape. fusion: Triton's enable_fp_fusion."""
    view = rt.view(out.shape, state, global_shape, global_start)
    n = out.numel()
    dummy = torch.zeros(1, dtype=torch.float32 if out.element_size() == 1 else out.dtype, device=out.device)
    _draw[(triton.cdiv(n, block),)](out, dummy if x is None else x.contiguous(), state, view,
                                    dummy if params is None else params, n, OP=op, NDIM=out.dim(), BLOCK=block,
                                    enable_fp_fusion=fusion)
    return out
