"""A two-parameter phase diagram fans out one job per row over real workers and assembles into one result."""

from __future__ import annotations

import numpy as np
import pytest
from fastapi.testclient import TestClient

from service.jobs.lines import fixed_for_row, run_line
from service.schemas import JobStatus, SweepRequest
from service.settings import Settings
from service.sweep_plan import plan
from tests.integration.conftest import POTENTIAL, U_FIRST_ORDER, events, wait_finished

pytestmark = [pytest.mark.redis, pytest.mark.slow]

B_ROWS = [0.25, 0.28, 0.3, 0.33]
U_NUM = 41


def test_phase_diagram_in_b_and_u_assembles_from_one_job_per_row(api: TestClient, start_workers) -> None:
    start_workers("a", "b")
    req = {"model": POTENTIAL, "parameter": ["b", "u"], "values": [B_ROWS, {"start": 20, "stop": 40, "num": U_NUM}]}
    r = api.post("/v1/sweeps", json=req)
    assert r.status_code == 202, r.text
    job_id = r.json()["job_id"]
    job = wait_finished(api, job_id, timeout=120)
    assert job["status"] == "finished", job
    assert job["kind"] == "phase_diagram"
    JobStatus.model_validate(job)
    assert job["chunks"] == {"done": len(B_ROWS), "total": len(B_ROWS)}
    assert job["progress"] == {"done": len(B_ROWS) * U_NUM, "total": len(B_ROWS) * U_NUM}

    # One queue job per row, each run to completion exactly once.
    done = events(api, job_id, "completed")
    assert sorted(e["line"] for e in done) == list(range(len(B_ROWS)))

    result = job["result"]
    assert result["parameters"] == ["b", "u"]
    coords = [tuple(p["parameter"]) for p in result["points"]]
    expected = [(b, u) for b in B_ROWS for u in np.linspace(20, 40, U_NUM)]
    np.testing.assert_allclose(coords, expected, rtol=0, atol=1e-12)

    # The first-order line crosses every row, in increasing b, through the seed's point at b = 0.3.
    line = next(ln for ln in result["lines"] if ln["kind"] == "first_order")
    assert [q["b"] for q in line["points"]] == B_ROWS
    at = {q["b"]: q["u"] for q in line["points"]}
    assert at[0.3] == pytest.approx(U_FIRST_ORDER, abs=1e-6)
    # A larger residual b deepens the aligned well: the transition moves to smaller u.
    assert all(x > y for x, y in zip([at[b] for b in B_ROWS], [at[b] for b in B_ROWS[1:]], strict=False))

    # Each row agrees with the same line computed directly, in this process, without the queue.
    payload = plan(SweepRequest.model_validate(req), Settings(redis_url=None))
    for row, b in enumerate(B_ROWS):
        direct = run_line(payload, fixed=fixed_for_row(payload, row))
        got = sorted((t["kind"], t["parameter"]) for t in result["transitions"] if t["at"]["b"] == b)
        want = sorted((t["kind"], t["parameter"]) for t in direct["transitions"])
        assert [k for k, _ in got] == [k for k, _ in want]
        np.testing.assert_allclose([p for _, p in got], [p for _, p in want], rtol=1e-9)
        rows = [p for p in result["points"] if p["parameter"][0] == b]
        assert [p["equilibrium"] for p in rows] == [p["equilibrium"] for p in direct["points"]]
