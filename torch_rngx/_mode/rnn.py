"""torch.lstm, gru, rnn_tanh and rnn_relu (what nn.LSTM, GRU and RNN call) under torch_rngx.mode, routed: with
dropout > 0 in training, torch draws the dropout between layers inside its C++ op; routed, the layers run one
at a time through torch's own op (one layer, no dropout) with torch_rngx's dropout on each layer's output but the
last, as torch defines it. Padded and packed sequences, bidirectional, proj_size (LSTM), batch_first, and hx as
given (nn's modules always pass one).

torch.compile does not trace the recurrent modules (torch._dynamo.config.allow_rnn is off by default; on, AOTAutograd
fails on torch.lstm in training), so a traced call whose dropout draws runs eagerly, routed, with the compiled code
around it: a graph break, where torch's own modules break the graph anyway."""

from __future__ import annotations

import torch

from .. import stateful as rr


def _recurrent(op, cells):
    """The route of one recurrent op; `cells` is 2 for the LSTM's (h, c) state, 1 for the others' h."""

    def route(g, *args, **kwargs):
        if kwargs:
            return None
        # padded: (input, hx, params, has_biases, layers, dropout, train, bidirectional, batch_first);
        # packed: (data, batch_sizes, hx, params, has_biases, layers, dropout, train, bidirectional).
        packed = isinstance(args[1] if cells == 2 else args[2], torch.Tensor)
        head, (hx, params, has_biases, layers, p, train, bidirectional, *tail) = args[: 1 + packed], args[1 + packed :]
        if not (train and p > 0 and layers > 1):
            return op(*args)  # draws nothing
        if torch.compiler.is_compiling():
            return _by_layers_eager(g, op, cells, head, hx, params, has_biases, layers, p, train, bidirectional, tail)
        return _by_layers(g, op, cells, head, hx, params, has_biases, layers, p, train, bidirectional, tail)

    return route


def _by_layers(g, op, cells, head, hx, params, has_biases, layers, p, train, bidirectional, tail):
    directions = 2 if bidirectional else 1
    per_layer = len(params) // layers
    x, states = head[0], []
    for layer in range(layers):
        rows = slice(layer * directions, (layer + 1) * directions)
        state = [h[rows] for h in hx] if cells == 2 else hx[rows]
        weights = params[layer * per_layer : (layer + 1) * per_layer]
        out = op(x, *head[1:], state, weights, has_biases, 1, 0.0, train, bidirectional, *tail)
        x, states = out[0], states + [out[1:]]
        if layer < layers - 1:
            x = rr.dropout(x, p, generator=g)
    return (x, *(torch.cat([s[i] for s in states]) for i in range(cells)))


_by_layers_eager = _by_layers  # torch.compiler.disable(_by_layers) once prepare() ran


def prepare():
    """Run by torch_rngx.mode's first use, not at import: torch.compiler.disable imports torch._dynamo."""
    global _by_layers_eager
    if _by_layers_eager is _by_layers:
        _by_layers_eager = torch.compiler.disable(_by_layers)


RECURRENT = {
    torch.lstm: _recurrent(torch.lstm, 2),
    torch.gru: _recurrent(torch.gru, 1),
    torch.rnn_tanh: _recurrent(torch.rnn_tanh, 1),
    torch.rnn_relu: _recurrent(torch.rnn_relu, 1),
}
