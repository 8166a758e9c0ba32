"""Hard limits of a solve: wall-clock (its process is killed), memory (refused beforehand by the theory's estimate,
and capped on the process as a backstop), and ``/healthz`` answering within a second whatever happens.

Regression: teacher data P = 5000, P_test = 10000, N0 = 20000 with SADDLELAB_SOLVE_TIME_LIMIT=5 ran 231 s, said
"converged", peaked at 5.5 GB and kept 4 GB; ``/healthz`` timed out meanwhile.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from service.app import create_app
from solvers.theories.kernel_renormalization.theory import KernelRenormalizationTheory
from tests.service.conftest import settings


def kernel(P: int, P_test: int, N0: int, seed: int = 0) -> dict:
    return {"theory": "kernel_renormalization", "N1": 200, "T": 0.1,
            "data": {"kind": "teacher", "P": P, "P_test": P_test, "N0": N0, "seed": seed}}


@pytest.mark.slow
def test_a_solve_stuck_in_one_long_call_is_killed_at_its_hard_limit() -> None:
    # One eigendecomposition of a 2500 x 2500 kernel takes seconds: the engine's own clock cannot interrupt it.
    with TestClient(create_app(settings(solve_time_limit=0.5, solve_kill_grace=0.5))) as c:
        t0 = time.monotonic()
        r = c.post("/v1/solve", json={"model": kernel(2500, 10, 10)})
        elapsed = time.monotonic() - t0
        assert r.status_code == 200, r.text
        body = r.json()
        assert elapsed < 6, elapsed
        assert body["converged"] is False and body["cached"] is False and body["branches"] == []
        assert body["diagnostics"]["status"] == "time_limit" and body["diagnostics"]["complete"] is False
        assert "killed" in body["diagnostics"]["stopped"]
        # Never cached: asked again, it is computed (and stopped) again.
        assert c.post("/v1/solve", json={"model": kernel(2500, 10, 10)}).json()["cached"] is False


def test_a_spec_that_needs_more_memory_than_allowed_is_refused_before_anything_is_allocated() -> None:
    issue = kernel(5000, 10000, 20000)
    with TestClient(create_app(settings())) as c:  # the default cap: 4 GiB
        t0 = time.monotonic()
        r = c.post("/v1/solve", json={"model": issue})
        # Refused from the estimate, not after trying (which allocates gigabytes and computes for minutes).
        assert time.monotonic() - t0 < 10
        assert r.status_code == 422, r.text
        (err,) = r.json()["detail"]
        assert err["loc"] == ["body", "model", "data", "teacher", "N0"]
        assert "max_solve_memory_bytes=4294967296" in err["msg"] and "MiB" in err["msg"]
        sweep = c.post("/v1/sweeps", json={"model": issue, "parameter": "T", "values": [0.1, 0.2]})
        assert sweep.status_code == 422 and "max_solve_memory_bytes" in sweep.text
    finite = {"theory": "rubin_cavity", "mode": "finite_sample", "P": 3000, "D": 150, "P_test": 2000}
    with TestClient(create_app(settings(max_solve_memory_bytes=256 * 2**20))) as c:
        r = c.post("/v1/solve", json={"model": finite})
        assert r.status_code == 422
        assert r.json()["detail"][0]["loc"] == ["body", "model", "P"]
        assert "max_solve_memory_bytes=268435456" in r.text


@pytest.fixture()
def blind_estimate(monkeypatch: pytest.MonkeyPatch) -> None:
    """An estimate that misses everything (in this process only): the process cap must catch the solve."""
    monkeypatch.setattr(KernelRenormalizationTheory, "memory_bytes", lambda self, spec: 1)


@pytest.mark.slow
def test_the_process_cap_stops_a_solve_the_estimate_missed(blind_estimate: None) -> None:
    hungry = kernel(50, 10000, 6000)  # about 1 GB of inputs
    with TestClient(create_app(settings(max_solve_memory_bytes=300 * 2**20))) as c:
        r = c.post("/v1/solve", json={"model": hungry})
        assert r.status_code == 422, r.text
        assert "needed more memory than the limit max_solve_memory_bytes=314572800" in r.text
        # The API process itself allocated nothing of it, and answers on.
        assert c.post("/v1/solve", json={"model": kernel(20, 10, 8)}).json()["converged"]
        job = c.post("/v1/sweeps", json={"model": hungry, "parameter": "T", "values": [0.1, 0.2]}).json()
        deadline = time.monotonic() + 60
        while (st := c.get(job["status_url"]).json())["status"] in ("queued", "running"):
            assert time.monotonic() < deadline
            time.sleep(0.1)
        assert st["status"] == "failed" and "max_solve_memory_bytes=314572800" in st["error"]


@pytest.fixture()
def silent_redis() -> Iterator[str]:
    """A TCP server that accepts connections and never answers: a hung or black-holed Redis."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except TimeoutError:
                continue

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    yield f"redis://127.0.0.1:{server.getsockname()[1]}/0"
    stop.set()
    t.join(2)
    for s in held:
        s.close()
    server.close()


def test_healthz_answers_within_a_second_when_redis_hangs(silent_redis: str) -> None:
    with TestClient(create_app(settings(redis_url=silent_redis))) as c:
        for _ in range(3):
            t0 = time.monotonic()
            body = c.get("/healthz").json()
            assert time.monotonic() - t0 < 0.8
            assert body["redis"] == "down"
