"""dropout(x + bias) + residual in one Triton kernel, forward and backward, bit for bit equal to
`torch_rngx.functional.dropout(x + bias, state, p) + residual` and its gradients (docs/device_api.md).

The mask is never stored: the backward recomputes it from (state, p), as our dropout does. Runs on a GPU, or on
the CPU with TRITON_INTERPRET=1 set before triton (or torch._dynamo) is imported:

    TRITON_INTERPRET=1 python examples/triton_fused_dropout.py
"""
import torch
import triton
import triton.language as tl

import torch_rngx.triton as rt


@triton.jit
def _add(a, b):
    """a + b rounded once to a's dtype (the 16-bit types add in float32, as torch does)."""
    if a.dtype == tl.float64:
        return a + b
    else:
        return rt.to_dtype(a.to(tl.float32) + b.to(tl.float32), a.dtype)


@triton.jit
def _forward(out_ptr, x_ptr, bias_ptr, res_ptr, state_ptr, view_ptr, params_ptr, n, cols, NDIM: tl.constexpr,
             BLOCK: tl.constexpr):
    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = i < n
    key, j = rt.locate(tl.where(mask, i, 0), view_ptr, NDIM)
    seed, offset = rt.load_key(state_ptr + key)
    y = _add(tl.load(x_ptr + i, mask=mask), tl.load(bias_ptr + i % cols, mask=mask))
    out = _add(rt.dropout(y, seed, offset, j, params_ptr), tl.load(res_ptr + i, mask=mask))
    tl.store(out_ptr + i, out, mask=mask)


@triton.jit
def _backward(grad_x_ptr, grad_ptr, state_ptr, view_ptr, params_ptr, n, NDIM: tl.constexpr, BLOCK: tl.constexpr):
    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = i < n
    key, j = rt.locate(tl.where(mask, i, 0), view_ptr, NDIM)
    seed, offset = rt.load_key(state_ptr + key)
    tl.store(grad_x_ptr + i, rt.dropout(tl.load(grad_ptr + i, mask=mask), seed, offset, j, params_ptr), mask=mask)


BLOCK = 1024


def _grid(n):
    return (triton.cdiv(n, BLOCK),)


class FusedDropoutAdd(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, bias, residual, state, p):
        x, residual = x.contiguous(), residual.contiguous()
        params, view = rt.dropout_params(x.dtype, p, x.device), rt.view(x.shape, state)
        out = torch.empty_like(x)
        # No fused multiply-add: dropout's x * scale and the residual's add stay two roundings.
        _forward[_grid(x.numel())](out, x, bias.contiguous(), residual, state, view, params, x.numel(), x.shape[-1],
                                   NDIM=x.dim(), BLOCK=BLOCK, enable_fp_fusion=False)
        ctx.save_for_backward(state, params, view)
        ctx.bias_shape = bias.shape
        return out

    @staticmethod
    def backward(ctx, grad):
        state, params, view = ctx.saved_tensors
        grad = grad.contiguous()
        grad_x = torch.empty_like(grad)
        _backward[_grid(grad.numel())](grad_x, grad, state, view, params, grad.numel(), NDIM=grad.dim(), BLOCK=BLOCK,
                                       enable_fp_fusion=False)
        # x + bias broadcast bias over the leading dims: its gradient is summed back as autograd sums it.
        return grad_x, grad_x.sum_to_size(ctx.bias_shape), grad, None, None


def fused_dropout_add(x, bias, residual, state, p):
    """dropout(x + bias, state, p) + residual; bias has x's last dim, residual x's shape, state a key [seed, offset]
    or a batch of keys (docs/stream.md, "Batched states")."""
    for name, t in (("x", x), ("bias", bias), ("residual", residual)):
        if not isinstance(t, torch.Tensor) or t.dtype != x.dtype or t.device != x.device:
            raise TypeError(f"{name} must be a tensor of x's dtype and device")
    if x.dim() == 0 or bias.shape != x.shape[-1:]:
        raise ValueError(f"bias must have shape (x.shape[-1],), got {tuple(bias.shape)} for x of {tuple(x.shape)}")
    if residual.shape != x.shape:
        raise ValueError(f"residual must have x's shape {tuple(x.shape)}, got {tuple(residual.shape)}")
    return FusedDropoutAdd.apply(x, bias, residual, state, p)


if __name__ == "__main__":
    import torch_rngx.functional as F

    key = F.key(2024)
    x = torch.randn(8, 300, requires_grad=True)
    bias, residual = torch.randn(300, requires_grad=True), torch.randn(8, 300)
    fused = fused_dropout_add(x, bias, residual, key, 0.1)
    eager = F.dropout(x + bias, key, 0.1) + residual
    fused_grads = torch.autograd.grad(fused.square().sum(), (x, bias))
    eager_grads = torch.autograd.grad(eager.square().sum(), (x, bias))
    print("forward equal:", torch.equal(fused, eager))
    print("backward equal:", all(torch.equal(a, b) for a, b in zip(fused_grads, eager_grads)))
