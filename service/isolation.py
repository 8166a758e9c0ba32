"""Computations in killable child processes: a hard wall-clock limit and a memory cap they cannot escape.

A cooperative time limit (the engine looks at the clock between iterations) cannot stop one long
numerical call — an eigendecomposition of a large kernel, drawing a large data set — and a thread
cannot be killed; memory a computation allocated in the API process stays there. Each cold solve,
and each line of a job on the embedded backend, therefore runs in a child process:

- forked from a server process that has already imported the engine and every theory
  (multiprocessing's ``forkserver`` context with :mod:`service.warm` preloaded): a child starts in
  about 10 ms and shares no thread, lock or socket with the API;
- with an address-space limit (``RLIMIT_AS``) of its own size at start plus ``memory_bytes``: an
  allocation beyond it fails with MemoryError inside the child (a backstop behind the theory's
  estimate, which the API checks before anything is allocated);
- killed (SIGKILL) by the parent at its deadline, or when the parent is told to stop it; it also
  arms ``alarm()`` on itself a little after the deadline, and asks the kernel for SIGKILL when its parent
  (the fork server, which exits with the API process however that ends) is gone
  (``PR_SET_PDEATHSIG``): nothing it computes outlives the process that wanted it;
- when it ends, every byte it allocated returns to the system.

Messages travel over a pipe: the target is called as ``target(send, *args)`` and may ``send``
intermediate messages (points of a sweep line); its return value is the result. An exception in
the child comes back as :class:`ChildFailed` carrying the traceback text, a MemoryError as
:class:`ChildOutOfMemory`.
"""

from __future__ import annotations

import contextlib
import ctypes
import io
import math
import multiprocessing
import os
import resource
import signal
import threading
import time
import traceback
from collections.abc import Callable
from multiprocessing import context, forkserver, popen_forkserver, reduction, spawn, util
from typing import Any

#: Modules every child has imported before it starts (see :mod:`service.warm`).
PRELOAD = ["service.warm"]
#: Seconds after the parent's deadline at which a child ends itself (SIGALRM), should the parent be gone.
SELF_DESTRUCT_MARGIN = 10.0

_CTX = multiprocessing.get_context("forkserver")
_CTX.set_forkserver_preload(PRELOAD)


class _Popen(popen_forkserver.Popen):
    """The fork server's launch without re-running the parent's ``__main__`` in the child.

    multiprocessing re-imports the main module in every child (to find functions defined there); our
    targets live in importable modules, and re-running a main script (a notebook's, a benchmark's, one that
    builds an app at import) would cost a second per solve. Otherwise this is CPython's ``_launch``.
    """

    def _launch(self, process_obj: Any) -> None:
        prep_data = spawn.get_preparation_data(process_obj._name)
        prep_data.pop("init_main_from_name", None)
        prep_data.pop("init_main_from_path", None)
        buf = io.BytesIO()
        context.set_spawning_popen(self)
        try:
            reduction.dump(prep_data, buf)
            reduction.dump(process_obj, buf)
        finally:
            context.set_spawning_popen(None)
        self.sentinel, w = forkserver.connect_to_new_process(self._fds)
        parent_w = os.dup(w)  # the child's sentinel of this process, as in CPython
        self.finalizer = util.Finalize(self, util.close_fds, (parent_w, self.sentinel))
        with open(w, "wb", closefd=True) as f:
            f.write(buf.getbuffer())
        self.pid = forkserver.read_signed(self.sentinel)


class _Process(context.ForkServerProcess):
    @staticmethod
    def _Popen(process_obj: Any) -> _Popen:
        return _Popen(process_obj)

Send = Callable[[Any], None]


class ChildKilled(Exception):
    """The child was killed: ``reason`` is "deadline" (its wall-clock limit) or "stopped" (asked by the caller)."""

    def __init__(self, reason: str, seconds: float):
        self.reason = reason
        self.seconds = seconds
        super().__init__(f"killed after {seconds:.1f} s ({reason})")


class ChildFailed(Exception):
    """The computation raised in the child; ``remote_traceback`` is its traceback text."""

    def __init__(self, kind: str, message: str, remote_traceback: str):
        self.kind = kind
        self.remote_traceback = remote_traceback
        super().__init__(f"{kind}: {message}")


class ChildOutOfMemory(Exception):
    """An allocation in the child exceeded its address-space limit."""


class ChildDied(Exception):
    """The child ended without an answer (killed from outside, e.g. by the kernel's OOM killer)."""


def vm_size() -> int:
    """This process's virtual size in bytes (what RLIMIT_AS counts)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def limit_address_space(extra_bytes: int) -> int:
    """Cap this process's address space at its current size plus ``extra_bytes``; returns the cap."""
    cap = vm_size() + int(extra_bytes)
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard if hard != resource.RLIM_INFINITY else cap))
    return cap


#: ``prctl`` option: the signal the kernel sends this process when its parent ends (linux/prctl.h).
PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int | None = None) -> None:
    """Have the kernel SIGKILL this process as soon as its parent ends (Linux; elsewhere nothing changes).

    A parent that ended before the request took effect has already handed this process to another: then it ends
    itself at once. ``parent``: the pid it must be (default: the parent at the call)."""
    parent = parent or os.getppid()
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # no prctl here (not Linux): the self-destruct alarm remains
        return
    if os.getppid() != parent:
        os.kill(os.getpid(), signal.SIGKILL)


def _release_fork_server() -> None:
    """The fork server (this process's parent) exits when no process holds its "alive" pipe any more: the API's
    copy, and the one each forked child inherits. A child that kept its copy would keep the fork server, and so
    itself, alive after the API is gone; it never starts processes of its own, so it lets it go."""
    alive = getattr(forkserver._forkserver, "_forkserver_alive_fd", None)
    if alive is not None:
        with contextlib.suppress(OSError):
            os.close(alive)
        forkserver._forkserver._forkserver_alive_fd = None


def _child_main(conn: Any, target: Callable[..., Any], args: tuple[Any, ...], memory_bytes: int | None,
                alarm_seconds: float | None) -> None:
    _release_fork_server()
    die_with_parent()
    if alarm_seconds:
        signal.alarm(max(1, math.ceil(alarm_seconds)))
    if memory_bytes:
        limit_address_space(memory_bytes)
    try:
        result = target(lambda message: conn.send(("msg", message)), *args)
        conn.send(("done", result))
    except MemoryError as exc:
        conn.send(("memory", str(exc)[:500]))
    except Exception as exc:  # forwarded to the parent, which treats it as a bug (logged, 500); nothing is hidden
        conn.send(("error", type(exc).__name__, str(exc)[:2000], traceback.format_exc()[-8000:]))
    finally:
        conn.close()


def run_child(
    target: Callable[..., Any],
    args: tuple[Any, ...] = (),
    *,
    seconds: float | None = None,
    memory_bytes: int | None = None,
    on_message: Callable[[Any], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    poll: float = 0.25,
) -> Any:
    """Run ``target(send, *args)`` in a child process and return its result.

    ``seconds``: wall-clock limit (the child is killed at it: :class:`ChildKilled`); ``memory_bytes``:
    address space the child may add to its size at start; ``on_message``: called in this thread with
    each message the child sends; ``should_stop``: asked every ``poll`` seconds, True kills the child.
    """
    recv, send = _CTX.Pipe(duplex=False)
    alarm = seconds + SELF_DESTRUCT_MARGIN if seconds else None
    proc = _Process(target=_child_main, args=(send, target, args, memory_bytes, alarm), daemon=True)
    started = time.monotonic()
    proc.start()
    send.close()
    deadline = None if seconds is None else started + seconds
    checked = started
    try:
        while True:
            now = time.monotonic()
            # Checked every `poll` seconds even while messages stream in without pause.
            if deadline is not None and now >= deadline:
                raise ChildKilled("deadline", now - started)
            if should_stop is not None and now - checked >= poll:
                checked = now
                if should_stop():
                    raise ChildKilled("stopped", now - started)
            wait = poll if deadline is None else max(0.0, min(poll, deadline - now))
            if not recv.poll(wait):
                continue
            try:
                kind, *rest = recv.recv()
            except EOFError:
                proc.join(5)
                raise ChildDied(f"the computation's process ended without an answer (exit code "
                                f"{proc.exitcode})") from None
            if kind == "msg":
                if on_message is not None:
                    on_message(rest[0])
                continue
            if kind == "done":
                return rest[0]
            if kind == "memory":
                raise ChildOutOfMemory(rest[0])
            raise ChildFailed(*rest)
    finally:
        recv.close()
        if proc.is_alive():
            proc.kill()  # done or given up on: nothing of it is needed any more
        # The fork server reports the exit a little later; the answer does not wait for that.
        threading.Thread(target=_reap, args=(proc,), daemon=True, name="saddlelab-reap").start()


def _reap(proc: Any) -> None:
    proc.join(30)
    with contextlib.suppress(ValueError):
        proc.close()
