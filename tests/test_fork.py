"""fork: a child forked while other threads draw never waits on a lock one of them held (issue 43, item 7), and what
parent and child draw after it (docs/guarantees.md, "Processes"): each has the Generators as they stood at the fork,
and draws the same words from them as the other, as torch's own generators do.
"""
import os
import signal
import threading
import time

import pytest
import torch

import torch_rngx

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX's")


def _reap(pids, seconds):
    """Waits for every child, killing those still running after `seconds`; returns (hung, failed)."""
    deadline, hung, failed = time.monotonic() + seconds, 0, 0
    for pid in pids:
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                failed += os.waitstatus_to_exitcode(status) != 0
                break
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                hung += 1
                break
            time.sleep(0.005)
    return hung, failed


@pytest.mark.slow("forks 300 children of the test process while 4 threads draw")
def test_children_forked_while_threads_draw_never_wait_on_the_step_lock():
    """Four threads step one CPU Generator without pause (the C++ step's one lock: rngx::step_ through its bare C++
    callable, whose call releases the GIL, and a one-call op) while the main thread forks 300 children, each of which
    steps that Generator at once and exits. Without the fork handlers a child forked while a thread held the lock
    waits for it forever: 5 of 300 did (2 of 200 with two threads)."""
    g = torch_rngx.Generator(1)
    step = torch.ops.rngx.step_.default._op  # the least Python around the lock: it is held most of the time
    stop = threading.Event()

    def steps():
        while not stop.is_set():
            step(g.state, 1)

    def draws():
        x = torch.empty(8)
        while not stop.is_set():
            torch_rngx.rand_like(x, generator=g)  # the one-call op: step and draw under the lock

    threads = [threading.Thread(target=f) for f in (steps, steps, steps, draws)]
    for t in threads:
        t.start()
    pids = []
    try:
        for _ in range(300):
            pid = os.fork()
            if pid == 0:  # the child: a draw of each kind, then out, without the parent's exit handlers
                code = 1
                try:
                    step(g.state, 1)
                    torch_rngx.rand_like(torch.empty(8), generator=g)
                    code = 0
                finally:
                    os._exit(code)
            pids.append(pid)
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert _reap(pids, 30) == (0, 0)


def test_parent_and_child_draw_the_same_words_after_a_fork():
    """The child's Generators, module streams and torch's generator are the parent's as they stood at the fork (the
    process's memory is copied): the next draws in both are equal. Give a child streams of its own (fold_in) to make
    them differ, as torch_rngx.mode does for DataLoader workers."""
    g, rng = torch_rngx.Generator(9), torch_rngx.nn.RNG(10)
    torch_rngx.rand_like(torch.empty(5), generator=g)
    read, write = os.pipe()
    pid = os.fork()
    draws = lambda: torch.cat([  # noqa: E731
        torch_rngx.rand_like(torch.empty(6), generator=g),
        torch_rngx.randn_like(torch.empty(6), generator=rng),
        torch_rngx.rand_like(torch.empty(6)),  # generator=None: a seed from torch's generator
        torch_rngx.rand_like(torch.empty(6), generator=g.fold_in(os.getpid())),
    ])
    if pid == 0:
        try:
            os.write(write, draws().numpy().tobytes())
        finally:
            os._exit(0)
    os.close(write)
    ours = draws()
    with os.fdopen(read, "rb") as f:
        theirs = torch.frombuffer(bytearray(f.read()), dtype=torch.float32)
    assert _reap([pid], 60) == (0, 0)
    assert torch.equal(ours[:18], theirs[:18])  # the copied streams: the same words
    assert not torch.equal(ours[18:], theirs[18:])  # folded in with each process's id: their own


@pytest.mark.parametrize("lock", ["_mode._bind_lock", "_mode._prepared", "_mode._warned_lock", "_step.take_lock"])
def test_a_child_forked_while_a_thread_holds_a_python_lock_starts_with_it_free(lock):
    """torch_rngx's Python locks (entering a mode, building its table, a report, a device state's step), held by
    another thread at the fork: the child enters a mode and draws under it, and takes the lock itself."""
    from torch_rngx._mode import mode as _mode
    from torch_rngx._engine import step as _step

    module, name = lock.split(".")
    held, release = threading.Event(), threading.Event()

    def hold():
        with getattr({"_mode": _mode, "_step": _step}[module], name):
            held.set()
            release.wait()

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait()
    try:
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                with torch_rngx.mode(seed=1):
                    torch.rand(3)
                with getattr({"_mode": _mode, "_step": _step}[module], name):
                    code = 0
            finally:
                os._exit(code)
    finally:
        release.set()
        holder.join()
    assert _reap([pid], 30) == (0, 0)
