"""Start and stop a real redis-server on a free loopback port, for the tests that need one."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass

import pytest
import redis

from service.local_server import free_port


@dataclass
class RedisServer:
    port: int
    process: subprocess.Popen
    workdir: str
    #: Extra redis-server arguments (persistence, memory cap), kept across restarts.
    options: tuple[str, ...] = ()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def client(self) -> redis.Redis:
        return redis.Redis.from_url(self.url)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def kill(self) -> None:
        """SIGKILL, as a crash or the kernel's OOM killer would."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def restart(self) -> None:
        self.stop()
        fresh = start_redis(self.port, self.workdir, self.options)
        self.process = fresh.process


def start_redis(port: int | None = None, workdir: str | None = None, options: tuple[str, ...] = ()) -> RedisServer:
    """``options`` override the defaults (no persistence), e.g. ``("--appendonly", "yes")``.

    Without ``port``, a free one is chosen; if another process takes it first (test processes run side by side
    under pytest-xdist), the server is started again on another."""
    binary = shutil.which("redis-server")
    if binary is None:
        message = "redis-server is not installed (the test command installs it from Debian's packages)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    workdir = workdir or tempfile.mkdtemp(prefix="saddlelab-redis-")
    for _ in range(1 if port else 5):
        chosen = port or free_port()
        proc = subprocess.Popen(
            [binary, "--port", str(chosen), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", workdir, "--protected-mode", "no", *options],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        client = redis.Redis(port=chosen)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                # The answer must come from this server, not from another one that holds the port.
                if client.info("server")["process_id"] == proc.pid:
                    return RedisServer(chosen, proc, workdir, tuple(options))
                break
            except redis.exceptions.ConnectionError:
                time.sleep(0.05)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    pytest.fail("redis-server did not start")
