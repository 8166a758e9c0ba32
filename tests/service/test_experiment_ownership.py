"""Experiments are jobs of the key that submitted them: visible and cancellable by that key only (others get 404);
an identical submission by another key shares the computation, not the control; the per-key limit counts the
key's own unfinished experiments."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from service.app import create_app
from tests.service.conftest import settings

ALPHA, BETA = {"X-API-Key": "k-alpha"}, {"X-API-Key": "k-beta"}
#: long enough to be cancelled while it runs: blocks of 30 draws (the sampler of test_experiment_api, compiled once)
REQUEST: dict[str, Any] = {
    "model": {"theory": "hciz_mlp", "activation": "tanh", "gamma": 0.5, "alpha": 1.0, "Delta": 0.1},
    "sizes": {"d": 6, "n_test": 20},
    "sampler": {"method": "mala", "chains": 1, "warmup": 60, "draws": 100_000, "block_size": 30, "seed": 21},
}


@pytest.fixture(scope="module")
def api() -> Iterator[TestClient]:
    with TestClient(create_app(settings(api_keys=("k-alpha", "k-beta"), max_jobs_per_key=1))) as c:
        yield c


def progress(api: TestClient, job_id: str, key: dict[str, str]) -> int:
    r = api.get(f"/v1/experiments/{job_id}", headers=key)
    assert r.status_code == 200, r.text
    return r.json()["progress"]["done"]


def wait_progress(api: TestClient, job_id: str, key: dict[str, str], beyond: int, timeout: float = 120) -> int:
    deadline = time.monotonic() + timeout
    while (done := progress(api, job_id, key)) <= beyond:
        assert time.monotonic() < deadline, f"no draws beyond {beyond}"
        time.sleep(0.05)
    return done


def test_an_experiment_is_its_keys_and_another_key_shares_only_the_computation(api: TestClient) -> None:
    first = api.post("/v1/experiments", json=REQUEST, headers=ALPHA).json()
    a = first["job_id"]
    assert not first["deduplicated"]
    wait_progress(api, a, ALPHA, 0)
    # another key neither sees nor cancels it, nor reads its draws
    for method in ("get", "delete"):
        assert getattr(api, method)(f"/v1/experiments/{a}", headers=BETA).status_code == 404
    assert api.get(f"/v1/experiments/{a}/draws", headers=BETA).status_code == 404
    # the same request by the other key: its own job, on the running computation
    second = api.post("/v1/experiments", json=REQUEST, headers=BETA).json()
    b = second["job_id"]
    assert b != a and second["deduplicated"]
    assert api.get(f"/v1/experiments/{b}", headers=ALPHA).status_code == 404
    hash_a = api.get(f"/v1/experiments/{a}", headers=ALPHA).json()["experiment_hash"]
    assert api.get(f"/v1/experiments/{b}", headers=BETA).json()["experiment_hash"] == hash_a
    # the per-key limit (1) counts each key's own unfinished experiments
    other = {**REQUEST, "sampler": {**REQUEST["sampler"], "seed": 22}}
    assert api.post("/v1/experiments", json=other, headers=ALPHA).status_code == 429
    # the first key cancels: its job reads cancelled, the computation goes on for the other key
    assert api.delete(f"/v1/experiments/{a}", headers=ALPHA).json()["status"] == "cancelled"
    assert api.get(f"/v1/experiments/{a}", headers=ALPHA).json()["status"] == "cancelled"
    running = progress(api, b, BETA)
    assert wait_progress(api, b, BETA, running) > running
    assert api.get(f"/v1/experiments/{b}", headers=BETA).json()["status"] == "running"
    # the last key cancels: the computation stops at its next block
    assert api.delete(f"/v1/experiments/{b}", headers=BETA).json()["status"] == "cancelled"
    time.sleep(0.5)
    stopped = progress(api, b, BETA)
    time.sleep(0.5)
    assert progress(api, b, BETA) == stopped
    # resubmitting by the first key holds its job again and resumes the stopped computation
    again = api.post("/v1/experiments", json=REQUEST, headers=ALPHA).json()
    assert again["job_id"] == a and not again["deduplicated"]
    assert api.get(f"/v1/experiments/{a}", headers=ALPHA).json()["status"] in ("queued", "running")
    assert api.get(f"/v1/experiments/{b}", headers=BETA).json()["status"] == "cancelled"  # still withdrawn
    api.delete(f"/v1/experiments/{a}", headers=ALPHA)
