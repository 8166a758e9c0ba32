"""A sweep whose points would store more than the instance's ``job_stored_bytes`` is refused before anything runs:
a 422 at the field the points grow with, naming the limit and the estimate.

Regression: kernel_renormalization with P_test = 10 000 (at its limit) over 2 000 temperatures (at the limit)
was accepted; each stored point carries the predictor at every test point (about 417 kB), the line's hash grew to
0.9 GB and its assembly failed past the work horse's memory."""

from __future__ import annotations

from fastapi.testclient import TestClient

from service.schemas import SweepRequest
from service.settings import Settings
from service.sweep_plan import plan


def sweep(P_test: int, num: int) -> dict:
    model = {"theory": "kernel_renormalization", "N1": 200, "T": 0.1,
             "data": {"kind": "teacher", "P": 50, "P_test": P_test, "N0": 10, "seed": 0}}
    return {"model": model, "parameter": "T", "values": {"start": 0.01, "stop": 1.0, "num": num}, "method": "grid"}


def test_a_sweep_of_large_points_past_the_byte_limit_is_refused_at_the_field_they_grow_with(client: TestClient) -> None:
    r = client.post("/v1/sweeps", json=sweep(10_000, 2000))
    assert r.status_code == 422, r.text
    (err,) = r.json()["detail"]
    assert err["loc"][:2] == ["body", "model"] and err["loc"][-1] == "P_test", err
    # 2 000 points of 20 000 numbers at 22 characters: about 1 060 MiB with Redis's overhead, over 512 MiB.
    assert "job_stored_bytes=536870912" in err["msg"] and "1,059 MiB" in err["msg"], err["msg"]


def test_the_same_sweep_under_the_limit_is_planned_and_the_limit_is_the_instance_s() -> None:
    settings = Settings(redis_url=None)
    assert plan(SweepRequest.model_validate(sweep(10_000, 400)), settings)["stored_bytes_limit"] == 512 * 2**20
    assert plan(SweepRequest.model_validate(sweep(100, 2000)), settings)  # small points: any number the limits allow
    tight = Settings(redis_url=None, limits={"job_stored_bytes": 50 * 2**20})
    try:
        plan(SweepRequest.model_validate(sweep(10_000, 400)), tight)
    except Exception as exc:  # the 422 of the route above, raised by the plan
        assert "job_stored_bytes=52428800" in str(exc), exc
    else:
        raise AssertionError("a sweep over a 50 MiB limit was planned")
