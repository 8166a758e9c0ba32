"""A live SaddleLab server for tests that talk to it as a person would (a browser, the CLI, curl)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import httpx

from tests.redis_server import free_port

ROOT = Path(__file__).resolve().parents[1]


@contextmanager
def live_server(env: Mapping[str, str] | None = None, startup: float = 120.0) -> Iterator[str]:
    """``python -m service`` on a free loopback port with the embedded defaults (no Redis); yields its base URL."""
    port = free_port()
    full = {**os.environ, "SADDLELAB_HOST": "127.0.0.1", "SADDLELAB_PORT": str(port), **(env or {})}
    full.pop("REDIS_URL", None)
    proc = subprocess.Popen([sys.executable, "-m", "service"], cwd=ROOT, env=full, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + startup
        while True:
            if proc.poll() is not None:
                raise RuntimeError("the server exited during startup")
            try:
                httpx.get(f"{base}/healthz", timeout=2).raise_for_status()
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline:
                    raise RuntimeError("the server did not come up") from None
                time.sleep(0.2)
        yield base
    finally:
        os.killpg(proc.pid, 15)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait(5)
