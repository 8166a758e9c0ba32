"""Experiment ownership on Redis (no worker needed: the chains wait in the queue): each key's job is its own,
another key's identical submission shares the queued computation, and only the last withdrawal cancels it."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from service.app import create_app
from service.experiments.redis_store import ExperimentKeys
from tests.integration.conftest import app_settings

pytestmark = pytest.mark.redis

ALPHA, BETA = {"X-API-Key": "k-alpha"}, {"X-API-Key": "k-beta"}
REQUEST: dict[str, Any] = {
    "model": {"theory": "hciz_mlp", "activation": "tanh", "gamma": 0.5, "alpha": 1.0, "Delta": 0.1},
    "sizes": {"d": 6, "n_test": 20},
    "sampler": {"method": "mala", "chains": 2, "warmup": 30, "draws": 60, "seed": 4},
}


def test_jobs_of_two_keys_share_one_queued_computation(fresh_redis) -> None:
    redis = fresh_redis.client()
    with TestClient(create_app(app_settings(fresh_redis.url, api_keys=("k-alpha", "k-beta")))) as api:
        a = api.post("/v1/experiments", json=REQUEST, headers=ALPHA).json()
        b = api.post("/v1/experiments", json=REQUEST, headers=BETA).json()
        assert a["job_id"] != b["job_id"] and not a["deduplicated"] and b["deduplicated"]
        for job, stranger in ((a["job_id"], BETA), (b["job_id"], ALPHA)):
            assert api.get(f"/v1/experiments/{job}", headers=stranger).status_code == 404
            assert api.delete(f"/v1/experiments/{job}", headers=stranger).status_code == 404
        computation = api.get(f"/v1/experiments/{a['job_id']}", headers=ALPHA).json()["experiment_hash"]
        assert api.get(f"/v1/experiments/{b['job_id']}", headers=BETA).json()["experiment_hash"] == computation
        assert len(redis.lrange("rq:queue:saddlelab", 0, -1)) == 2  # one job per chain, queued once
        # the job id is not the computation's key: nothing is addressable by the spec's hash alone
        assert api.get(f"/v1/experiments/{computation}", headers=ALPHA).status_code == 404

        assert api.delete(f"/v1/experiments/{a['job_id']}", headers=ALPHA).json()["status"] == "cancelled"
        assert redis.hget(ExperimentKeys(computation).meta, "status") == b"queued"
        assert api.get(f"/v1/experiments/{b['job_id']}", headers=BETA).json()["status"] == "queued"
        assert api.delete(f"/v1/experiments/{b['job_id']}", headers=BETA).json()["status"] == "cancelled"
        assert redis.hget(ExperimentKeys(computation).meta, "status") == b"cancelled"
