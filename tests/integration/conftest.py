"""Real worker processes (``python -m service.worker``) on a real redis-server, and an API on the same Redis."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from rq import Worker
from rq.command import PUBSUB_CHANNEL_TEMPLATE
from rq.serializers import JSONSerializer

from service.app import create_app
from service.settings import Settings
from tests.redis_server import RedisServer

ROOT = Path(__file__).resolve().parents[2]
TERMINAL = ("finished", "failed", "cancelled")

POTENTIAL: dict[str, Any] = {"theory": "rubin_cavity", "mode": "potential", "sigma_w2": 0.5, "b": 0.3, "c": -0.3,
                             "u": 29.45}
#: The seed's equal-depth (first-order) point of the potential at sigma_w2 = 0.5, b = 0.3, c = -0.3.
U_FIRST_ORDER = 75 * 3.141592653589793 / 8

#: Liveness knobs small enough that a dead worker is noticed in seconds (production: 5 / 10 / 10).
FAST_WORKER_ENV = {
    "SADDLELAB_WORKER_HEARTBEAT": "1",
    "SADDLELAB_WORKER_HEARTBEAT_GRACE": "4",
    "SADDLELAB_WORKER_MAINTENANCE": "2",
}


def app_settings(redis_url: str | None, **kw: Any) -> Settings:
    base: dict[str, Any] = {"redis_url": redis_url, "api_keys": (), "rate_limit_per_minute": 0}
    base.update(kw)
    return Settings(**base)


class WorkerProcess:
    """One ``python -m service.worker`` subprocess in its own process group (test signals stay out).

    ``name=None``: the worker names itself (``<host>.<pid>.<random>``), as in production; ``self.name`` is then
    known once it has registered."""

    def __init__(self, redis_url: str, name: str | None, log_dir: Path, env: dict[str, str] | None = None,
                 module: str = "service.worker", root: Path = ROOT):
        self.name = name
        self.redis_url = redis_url
        self.log_path = log_dir / f"worker-{name or 'unnamed'}-{len(list(log_dir.glob('worker-*')))}.log"
        env = {**os.environ, "REDIS_URL": redis_url, "PYTHONWARNINGS": "ignore", **FAST_WORKER_ENV, **(env or {})}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH")]))
        self._log = open(self.log_path, "w")  # noqa: SIM115 -- closed in stop()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", module, *(["--name", name] if name else [])],
            cwd=root, env=env, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True,
        )

    @property
    def pid(self) -> int:
        return self.proc.pid

    def wait_registered(self, client: Any, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"worker {self.name} exited early:\n{self.log()}")
            for w in Worker.all(connection=client, serializer=JSONSerializer):
                if w.name == self.name or (self.name is None and w.pid == self.pid):
                    self.name = w.name
                    return
            time.sleep(0.1)
        raise AssertionError(f"worker {self.name} did not register:\n{self.log()}")

    def wait_subscribed(self, client: Any, timeout: float = 60) -> None:
        """Wait until the registered worker listens on its command channel: RQ registers a worker before it
        subscribes, and a stop that comes between the two has no subscription to end."""
        assert self.name is not None, "wait_registered first"
        channel = PUBSUB_CHANNEL_TEMPLATE % self.name
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"worker {self.name} exited early:\n{self.log()}")
            if any(count > 0 for _, count in client.pubsub_numsub(channel)):
                return
            time.sleep(0.05)
        raise AssertionError(f"worker {self.name} did not subscribe to {channel}:\n{self.log()}")

    def signal(self, sig: int) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, sig)

    def log(self) -> str:
        self._log.flush()
        return self.log_path.read_text()[-4000:]

    def exit_status(self, seconds: float) -> int:
        """The worker's exit status once it ends; fails with its log if it is still running after ``seconds``."""
        try:
            return self.proc.wait(seconds)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"worker {self.name} still running after {seconds} s:\n{self.log()}") from None

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)
        self._log.close()


@pytest.fixture()
def start_worker(fresh_redis: RedisServer, tmp_path: Path) -> Iterator[Callable[..., WorkerProcess]]:
    """Factory: start a registered worker on the test Redis; every worker is killed at the end."""
    started: list[WorkerProcess] = []
    client = fresh_redis.client()

    def start(name: str | None) -> WorkerProcess:
        w = WorkerProcess(fresh_redis.url, name, tmp_path)
        started.append(w)
        w.wait_registered(client)
        return w

    yield start
    for w in started:
        w.stop()


@pytest.fixture()
def start_workers(fresh_redis: RedisServer, tmp_path: Path) -> Iterator[Callable[..., list[WorkerProcess]]]:
    """Factory: start several workers at once (each loads every theory: seconds of a loaded machine's time, spent
    side by side rather than one after the other) and wait until all are registered; all are killed at the end."""
    started: list[WorkerProcess] = []
    client = fresh_redis.client()

    def start(*names: str) -> list[WorkerProcess]:
        workers = [WorkerProcess(fresh_redis.url, name, tmp_path) for name in names]
        started.extend(workers)
        for w in workers:
            w.wait_registered(client)
        return workers

    yield start
    for w in started:
        w.stop()


@pytest.fixture()
def api(fresh_redis: RedisServer) -> Iterator[TestClient]:
    with TestClient(create_app(app_settings(fresh_redis.url))) as c:
        yield c


def sweep_request(num: int, *, D: float | None = None, method: str = "continuation", **model: Any) -> dict[str, Any]:
    spec = {**POTENTIAL, **model}
    if D is not None:
        spec["D"] = D
    return {"model": spec, "parameter": "u", "values": {"start": 20, "stop": 40, "num": num}, "method": method}


def job_of(client: TestClient, job_id: str, detail: bool = False) -> dict[str, Any]:
    r = client.get(f"/v1/jobs/{job_id}", params={"detail": "true"} if detail else None)
    assert r.status_code == 200, r.text
    return r.json()


def wait_until(
    client: TestClient, job_id: str, done: Callable[[dict[str, Any]], bool], timeout: float = 300, detail: bool = False
) -> dict[str, Any]:
    """Poll the job until ``done``; ``timeout`` only guards against a hang (generous: a loaded machine is slow)."""
    deadline = time.monotonic() + timeout
    while True:
        r = client.get(f"/v1/jobs/{job_id}", params={"detail": "true"} if detail else None)
        if r.status_code == 503 and time.monotonic() < deadline:
            # Redis did not answer within the API's socket timeout (a loaded machine): the API says so
            # honestly, and a poller tries again, as the client's ``wait`` does.
            time.sleep(0.2)
            continue
        assert r.status_code == 200, r.text
        body = r.json()
        if done(body):
            return body
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not reached within {timeout} s; last status: "
                                 f"{ {k: v for k, v in body.items() if k != 'partial'} }")
        time.sleep(0.1)


def wait_finished(client: TestClient, job_id: str, timeout: float = 300) -> dict[str, Any]:
    return wait_until(client, job_id, lambda b: b["status"] in TERMINAL, timeout)


def events(client: TestClient, job_id: str, kind: str | None = None) -> list[dict[str, Any]]:
    out = job_of(client, job_id, detail=True)["executions"]
    return [e for e in out if kind is None or e["event"] == kind]
