"""One rank of a ```python block that tools/docs_check.py runs under torchrun: `python docs_rank.py SCRIPT` runs the
block's script as written, as __main__, then leaves without the interpreter's teardown.

Why: after a gloo run, torch's C++ teardown aborts now and then ("terminate called without an active exception"). It
did once in CI's docs check of docs/distributed.md's DDP block (torch 2.13.0), after the rank had run the whole block
and destroyed its process group, and in about one make dist run in ten before tests/data_worker.py skipped it too, as
tests/distributed_worker.py does. A block that raises still fails: the exception ends the rank before the exit below.
"""
import os
import runpy
import sys

runpy.run_path(sys.argv[1], run_name="__main__")
sys.stdout.flush()
sys.stderr.flush()
os._exit(0)
