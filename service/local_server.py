"""A SaddleLab server of one's own, for a notebook or a script: ``python -m service`` on a free loopback port,
with the embedded defaults (in-process cache, jobs in child processes, no Redis), stopped with its process group.

    from service.local_server import LocalServer
    from clients import Client

    with LocalServer() as server:                 # or: server = LocalServer().start(); …; server.stop()
        lab = Client(server.url)
        lab.solve({"theory": "rubin_cavity", "mode": "potential"})

The client then talks to it over HTTP exactly as to a lab instance. A server left running is stopped when the
Python process that started it exits.
"""

from __future__ import annotations

import atexit
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType

import httpx

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    """A TCP port of 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_healthy(url: str, proc: subprocess.Popen[bytes], seconds: float) -> None:
    """Return once ``url``'s ``/healthz`` answers 200; RuntimeError if ``proc`` exits first or ``seconds`` pass."""
    deadline = time.monotonic() + seconds
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited during startup (status {proc.returncode})")
        try:
            httpx.get(f"{url}/healthz", timeout=2).raise_for_status()
            return
        except httpx.HTTPError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the server did not answer on {url} within {seconds} s") from None
            time.sleep(0.2)


def stop_process_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the process group ``proc`` leads (started with ``start_new_session``); SIGKILL after 20 s."""
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(5)


class LocalServer:
    """``python -m service`` on ``127.0.0.1:<free port>``; ``env`` adds or overrides settings (``SADDLELAB_…``).
    Without Redis: ``REDIS_URL`` is removed from its environment unless ``env`` sets it."""

    def __init__(self, env: Mapping[str, str] | None = None, startup: float = 120.0, quiet: bool = True,
                 root: Path = ROOT):
        self.root = root
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._env = dict(env or {})
        self._startup = startup
        self._quiet = quiet
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self) -> LocalServer:
        env = {**os.environ, "SADDLELAB_HOST": "127.0.0.1", "SADDLELAB_PORT": str(self.port)}
        env.pop("REDIS_URL", None)
        env.update(self._env)
        out = subprocess.DEVNULL if self._quiet else None
        self._proc = subprocess.Popen([sys.executable, "-m", "service"], cwd=self.root, env=env, stdout=out, stderr=out,
                                      start_new_session=True)
        atexit.register(self.stop)
        try:
            wait_healthy(self.url, self._proc, self._startup)
        except RuntimeError:
            self.stop()
            raise
        return self

    @property
    def pid(self) -> int | None:
        """The server process's PID while it runs (its process group's too)."""
        return None if self._proc is None else self._proc.pid

    def stop(self) -> None:
        """Stop the server and every process it started (its solve and job processes)."""
        proc, self._proc = self._proc, None
        if proc is not None:
            stop_process_group(proc)

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()
