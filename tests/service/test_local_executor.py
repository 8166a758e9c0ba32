"""The embedded executor: a hard job timeout, slots shared fairly between API keys, the queue position.

Regression: two long sweeps of one key held both job threads (estimated 16 h each) while another key's
5-point sweep stayed queued, with no timeout and no way to see where it stood.
"""

from __future__ import annotations

import time

import pytest
from fastapi.testclient import TestClient

from service.app import create_app
from tests.service.conftest import POTENTIAL, settings

A, B, C = {"X-API-Key": "key-a"}, {"X-API-Key": "key-b"}, {"X-API-Key": "key-c"}
KEYS = ("key-a", "key-b", "key-c")


def long_sweep(num: int) -> dict:
    """Minutes of work (a finite-sample solve per value, 0.3 s each, its points from the first second on): busy for
    the whole test. (A potential sweep of 1800 values takes about 1.5 s: no longer long enough.)"""
    model = {"theory": "rubin_cavity", "mode": "finite_sample", "P": 300, "P_test": 50, "D": 20, "N": 100}
    return {"model": model, "parameter": "T", "values": {"start": 0.1, "stop": 0.3, "num": num}, "method": "grid"}


def short_sweep(num: int = 5) -> dict:
    return {"model": POTENTIAL, "parameter": "u", "values": {"start": 20, "stop": 40, "num": num}, "method": "grid"}


def status(c: TestClient, job_id: str, who: dict, detail: bool = False) -> dict:
    r = c.get(f"/v1/jobs/{job_id}", headers=who, params={"detail": "true"} if detail else None)
    assert r.status_code == 200, r.text
    return r.json()


def wait(c: TestClient, job_id: str, who: dict, done, timeout: float = 300) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        body = status(c, job_id, who)
        if done(body):
            return body
        assert time.monotonic() < deadline, {k: v for k, v in body.items() if k != "result"}
        time.sleep(0.05)


@pytest.mark.slow
def test_a_line_past_the_job_timeout_is_killed_and_its_job_fails() -> None:
    with TestClient(create_app(settings(job_timeout=2))) as c:
        job_id = c.post("/v1/sweeps", json=long_sweep(1999)).json()["job_id"]
        t0 = time.monotonic()
        job = wait(c, job_id, {}, lambda b: b["status"] not in ("queued", "running"), timeout=30)
        elapsed = time.monotonic() - t0
    assert job["status"] == "failed" and "exceeded the job timeout of 2 s (job_timeout)" in job["error"]
    assert elapsed < 10  # killed at 2 s (plus the poll), not left to compute for minutes


@pytest.mark.slow
def test_one_key_cannot_hold_every_slot_while_another_waits() -> None:
    with TestClient(create_app(settings(api_keys=KEYS, local_workers=2))) as c:
        first = c.post("/v1/sweeps", json=long_sweep(1800), headers=A).json()["job_id"]
        second = c.post("/v1/sweeps", json=long_sweep(1801), headers=A).json()["job_id"]
        for j in (first, second):
            wait(c, j, A, lambda b: b["status"] == "running" and b["progress"]["done"] > 0)
        t0 = time.monotonic()
        small = c.post("/v1/sweeps", json=short_sweep(), headers=B).json()["job_id"]
        done = wait(c, small, B, lambda b: b["status"] == "finished", timeout=60)
        waited = time.monotonic() - t0
        assert len(done["result"]["points"]) == 5 and waited < 30

        def executions(job_id: str, event: str) -> list[dict]:
            return [e for e in status(c, job_id, A, detail=True)["executions"] if e["event"] == event]

        # Key A lost one slot for the time B needed it; that line went back to the head of A's queue and
        # runs again, resuming from the points it had stored.
        preempted = {j: executions(j, "preempted") for j in (first, second)}
        assert sorted(len(v) for v in preempted.values()) == [0, 1]
        victim = next(j for j, v in preempted.items() if v)
        deadline = time.monotonic() + 30
        while len(executions(victim, "started")) < 2:
            assert time.monotonic() < deadline, "the preempted line did not start again"
            time.sleep(0.05)
        assert executions(victim, "started")[1]["stored"] == preempted[victim][0]["stored"] > 0
        assert all(status(c, j, A)["status"] == "running" for j in (first, second))
        for j in (first, second):
            c.delete(f"/v1/jobs/{j}", headers=A)


@pytest.mark.slow
def test_the_status_shows_the_queue_position() -> None:
    with TestClient(create_app(settings(api_keys=KEYS, local_workers=1))) as c:
        running = c.post("/v1/sweeps", json=long_sweep(1800), headers=A).json()["job_id"]
        wait(c, running, A, lambda b: b["status"] == "running")
        queued = [c.post("/v1/sweeps", json=short_sweep(n), headers=who).json()["job_id"]
                  for n, who in ((5, A), (6, A), (7, B))]
        assert status(c, running, A)["queue_position"] is None  # running, nothing of it waits
        # One slot, held by A: B (no line running) goes first, then A's two in submission order.
        positions = [status(c, j, who)["queue_position"] for j, who in zip(queued, (A, A, B), strict=True)]
        assert positions == [1, 2, 0]
        c.delete(f"/v1/jobs/{running}", headers=A)
        finished = wait(c, queued[0], A, lambda b: b["status"] == "finished")
        assert finished["queue_position"] is None
