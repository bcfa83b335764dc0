"""The engine: the op spec and its checks, each call's route, the autograd Functions and the ops'
registrations, a Generator's step, the checkpoint journal, the key-reuse checker, the DTensor rules, the library
loader and every private torch name (torch_private). It imports nothing of the package above it."""
