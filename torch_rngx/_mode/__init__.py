"""torch_rngx.mode (mode.py): torch's own random calls, in code you did not write, routed to the stateful functions
(routes.py, rnn.py), with DataLoader workers (workers.py). It stands on the public samplers and the engine."""
