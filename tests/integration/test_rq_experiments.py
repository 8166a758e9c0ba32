"""Experiments on real RQ workers: each chain is a job; a SIGKILLed worker's chain resumes on another worker from
its last stored block, the finished experiment is exactly the uninterrupted one, and it is shared by an identical
submission."""

from __future__ import annotations

import signal
import time
from typing import Any

import pytest
from fastapi.testclient import TestClient

from service.experiments.redis_store import ExperimentKeys
from tests.integration.conftest import TERMINAL
from tests.integration.uninterrupted import assert_same_experiment

pytestmark = [pytest.mark.redis, pytest.mark.slow]

#: Blocks of 20 draws, each 20 × 40 MALA steps: long enough to be interrupted between two blocks.
REQUEST: dict[str, Any] = {
    "model": {"theory": "hciz_mlp", "activation": "tanh", "gamma": 0.5, "alpha": 3.0, "Delta": 0.1},
    "sizes": {"d": 16, "n_test": 50},
    "sampler": {"method": "mala", "chains": 2, "warmup": 200, "draws": 400, "thin": 40, "block_size": 20, "seed": 3},
}


def _status(api: TestClient, job_id: str, detail: bool = False) -> dict[str, Any]:
    r = api.get(f"/v1/experiments/{job_id}", params={"detail": "true"} if detail else None)
    assert r.status_code == 200, r.text
    return r.json()


def _wait(api: TestClient, job_id: str, done: Any, timeout: float = 180) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        body = _status(api, job_id, detail=True)
        if done(body):
            return body
        assert time.monotonic() < deadline, {k: v for k, v in body.items() if k != "result"}
        time.sleep(0.05)


def test_a_killed_workers_chain_resumes_from_its_last_block(api: TestClient, start_workers, fresh_redis) -> None:
    workers = {w.name: w for w in start_workers("a", "b")}
    job_id = api.post("/v1/experiments", json=REQUEST).json()["job_id"]
    redis = fresh_redis.client()
    computation = _status(api, job_id)["experiment_hash"]  # the key's job id is not the computation's key
    chain_key = ExperimentKeys(computation).chain(0, 0)

    def two_blocks(body: dict[str, Any]) -> bool:
        stored = redis.hget(chain_key, "draws")
        return stored is not None and 40 <= int(stored) < 400

    body = _wait(api, job_id, two_blocks)
    started = next(e for e in body["executions"] if e["event"] == "started" and e["chain"] == 0)
    victim = workers[started["worker"]]
    victim.signal(signal.SIGKILL)
    victim.proc.wait(10)
    stored_at_kill = int(redis.hget(chain_key, "draws"))
    assert 0 < stored_at_kill < 400

    body = _wait(api, job_id, lambda b: b["status"] in TERMINAL)
    assert body["status"] == "finished", body["error"]
    chain0 = [e for e in body["executions"] if e["chain"] == 0 and e["event"] == "started"]
    assert len(chain0) == 2 and chain0[1]["worker"] != victim.name
    # the retry continued after the last stored block: nothing stored was drawn again
    assert chain0[1]["resumed_from"] == stored_at_kill
    assert body["progress"] == {"done": 800, "total": 800}

    # and the experiment is the uninterrupted one, draw for draw
    assert_same_experiment(body["result"], REQUEST)

    # finished: shared by an identical submission, its draws served from Redis, its chains' blocks dropped
    again = api.post("/v1/experiments", json=REQUEST).json()
    assert again["job_id"] == job_id and again["deduplicated"]
    series = api.get(f"/v1/experiments/{job_id}/draws").json()
    assert series["chains"] == 2 and series["draws"] == 400
    assert not redis.keys(f"{ExperimentKeys(computation).meta}:chain:*")
