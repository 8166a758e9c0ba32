"""A live lab instance for the client: redis-server, the API under uvicorn, one RQ worker (all real processes)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.redis_server import free_port, start_redis

ROOT = Path(__file__).resolve().parents[2]
API_KEY = "client-test-key"
RESULT_PAGE_SIZE = 16
RESULT_PAGE_CURVES = 1

POTENTIAL: dict[str, Any] = {"theory": "rubin_cavity", "mode": "potential", "sigma_w2": 0.5, "b": 0.3, "c": -0.3,
                             "u": 29.45}
U_FIRST_ORDER = 75 * 3.141592653589793 / 8


@dataclass
class Lab:
    url: str
    api_key: str
    redis_url: str


def _spawn(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    with open(log, "w") as out:  # the child keeps its own copy of the descriptor
        return subprocess.Popen(args, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


@pytest.fixture(scope="package")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    logs = tmp_path_factory.mktemp("lab")
    redis_server = start_redis()
    port = free_port()
    env = {
        **os.environ,
        "REDIS_URL": redis_server.url,
        "SADDLELAB_API_KEYS": API_KEY,
        "SADDLELAB_RATE_LIMIT_PER_MINUTE": "0",
        # Small result pages, so that every result the client and the CLI read here spans several pages.
        "SADDLELAB_RESULT_PAGE_SIZE": str(RESULT_PAGE_SIZE),
        "SADDLELAB_RESULT_PAGE_CURVES": str(RESULT_PAGE_CURVES),
        "SADDLELAB_WORKER_HEARTBEAT": "1",
        "SADDLELAB_WORKER_MAINTENANCE": "2",
        "PYTHONWARNINGS": "ignore",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    procs = [
        _spawn([sys.executable, "-m", "uvicorn", "service.app:app", "--host", "127.0.0.1", "--port", str(port)],
               env, logs / "api.log"),
        _spawn([sys.executable, "-m", "service.worker", "--name", "client-tests"], env, logs / "worker.log"),
    ]
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
                raise AssertionError("the lab instance did not start:\n" + (logs / "api.log").read_text()[-3000:])
            time.sleep(0.1)
        yield Lab(url, API_KEY, redis_server.url)
    finally:
        for p in procs:
            p.kill()
            p.wait(10)
        redis_server.stop()
