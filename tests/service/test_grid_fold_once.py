"""A grid sweep lists a fold once: the aligned well and its barrier are born together between two grid values, so
they are one transition with both names (it was listed once per branch, and its figure label read "28.25 / 28.25")."""

from __future__ import annotations

from fastapi.testclient import TestClient

from service.app import create_app
from tests.service.conftest import settings

POTENTIAL = {"theory": "rubin_cavity", "mode": "potential", "sigma_w2": 0.5, "b": 0.3, "c": -0.3, "u": 29.45}
#: Where the aligned well and its barrier are born (the potential's fold, by continuation: README, seeds).
U_FOLD = 28.322495


def test_a_fold_between_two_grid_values_is_listed_once_with_both_branches() -> None:
    with TestClient(create_app(settings())) as api:
        job = api.post("/v1/sweeps", json={"model": POTENTIAL, "parameter": "u", "method": "grid",
                                           "values": {"start": 20, "stop": 40, "num": 41}}).json()
        body = api.get(f"/v1/jobs/{job['job_id']}", params={"wait": 30}).json()
        while body["status"] not in ("finished", "failed"):
            body = api.get(f"/v1/jobs/{job['job_id']}", params={"wait": 30}).json()
    folds = [t for t in body["result"]["transitions"] if t["type"] == "fold"]
    born = [t for t in folds if abs(t["parameter"] - U_FOLD) <= t["uncertainty"]]
    assert len(born) == 1, folds
    assert sorted(born[0]["branches"]) == ["aligned", "barrier"]
    assert born[0]["parameter"] == 28.25 and born[0]["uncertainty"] == 0.25  # the grid cell [28, 28.5]
    assert len({round(t["parameter"], 9) for t in folds}) == len(folds)  # no value twice
