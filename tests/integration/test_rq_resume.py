"""A worker killed or stopped in the middle of a sweep: the sweep resumes elsewhere from its last stored point."""

from __future__ import annotations

import os
import signal
import time

import numpy as np
import pytest
from fastapi.testclient import TestClient

from tests.integration.conftest import U_FIRST_ORDER, events, sweep_request, wait_finished, wait_until

pytestmark = [pytest.mark.redis, pytest.mark.slow]

#: Long enough (a few seconds of points at D = 150) to be interrupted in the middle.
NUM = 700


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead too
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _check_complete(job: dict, num: int) -> None:
    assert job["status"] == "finished", job
    assert job["progress"] == {"done": num, "total": num}
    points = job["result"]["points"]
    np.testing.assert_allclose([p["parameter"] for p in points], np.linspace(20, 40, num), rtol=0, atol=1e-12)
    first = [t for t in job["result"]["transitions"] if t["kind"] == "first_order"]
    assert len(first) == 1 and first[0]["parameter"] == pytest.approx(U_FIRST_ORDER, abs=1e-6)
    assert len([t for t in job["result"]["transitions"] if t["kind"] == "spinodal"]) == 2
    # Points from before and after the interruption are one consistent sweep: the equilibrium
    # switches from the centre to the aligned well exactly at the first-order point.
    for p in points:
        assert p["equilibrium"] == ("center" if p["parameter"] < first[0]["parameter"] else "aligned")
        assert p["converged"]
    # The resumed line traced its curves again: every refined spinodal is a row of them.
    marked = [c["parameter"][m["index"]] for c in job["result"]["curves"] for m in c["special"]]
    for t in job["result"]["transitions"]:
        assert any(u == pytest.approx(t["parameter"], abs=1e-8) for u in marked), t


def test_sigkilled_worker_the_sweep_resumes_on_another_worker(api: TestClient, start_workers) -> None:
    workers = {w.name: w for w in start_workers("a", "b")}
    job_id = api.post("/v1/sweeps", json=sweep_request(NUM, D=150)).json()["job_id"]
    wait_until(api, job_id, lambda b: b["progress"]["done"] >= 30)
    started = events(api, job_id, "started")
    assert len(started) == 1
    victim, horse = workers[started[0]["worker"]], started[0]["pid"]
    survivor = next(w for w in workers.values() if w is not victim)

    victim.signal(signal.SIGKILL)
    killed_at = time.monotonic()
    victim.proc.wait(10)
    # The work horse dies with its worker: nobody keeps computing the line behind the new owner's back.
    deadline = time.monotonic() + 10
    while _alive(horse) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(horse)
    stored_at_kill = api.get(f"/v1/jobs/{job_id}").json()["progress"]["done"]
    assert 0 < stored_at_kill < NUM

    # Abandoned-job detection hands the line to the surviving worker within a minute.
    resumed = wait_until(api, job_id, lambda b: len([e for e in b["executions"] if e["event"] == "started"]) == 2,
                         timeout=60, detail=True)
    assert time.monotonic() - killed_at < 60
    second = [e for e in resumed["executions"] if e["event"] == "started"][1]
    assert second["worker"] == survivor.name
    assert second["stored"] == stored_at_kill

    job = wait_finished(api, job_id)
    _check_complete(job, NUM)
    done = events(api, job_id, "completed")
    # The surviving worker reused every stored point and computed only the rest.
    assert [(e["worker"], e["reused"], e["computed"]) for e in done] == [
        (survivor.name, stored_at_kill, NUM - stored_at_kill)
    ]


def test_stopped_worker_hands_its_line_back_after_the_current_point(api: TestClient, start_workers) -> None:
    workers = {w.name: w for w in start_workers("a", "b")}
    job_id = api.post("/v1/sweeps", json=sweep_request(NUM - 1, D=150)).json()["job_id"]
    wait_until(api, job_id, lambda b: b["progress"]["done"] >= 30)
    owner = workers[events(api, job_id, "started")[0]["worker"]]
    survivor = next(w for w in workers.values() if w is not owner)

    owner.signal(signal.SIGTERM)  # what `docker compose stop` sends
    assert owner.exit_status(30) == 0, owner.log()
    handoff = events(api, job_id, "handed_off")
    assert len(handoff) == 1 and 0 < handoff[0]["stored"] < NUM - 1

    job = wait_finished(api, job_id)
    _check_complete(job, NUM - 1)
    second = events(api, job_id, "started")[1]
    assert second["worker"] == survivor.name and second["stored"] == handoff[0]["stored"]
    assert [(e["reused"], e["computed"]) for e in events(api, job_id, "completed")] == [
        (handoff[0]["stored"], NUM - 1 - handoff[0]["stored"])
    ]
