"""An experiment's time limit on real RQ workers: the limit is hard on every chain — inside a long warmup, inside a
huge block, inside one draw too long to fit — and a run it cut short is never served as final: any submission of
it resumes its chains from their checkpoints, and the experiment it finishes is the uninterrupted one.

Regressions: with ``SADDLELAB_EXPERIMENT_TIME_LIMIT=1`` a 600-draw run ended ``time_limit`` with 50 draws, and an
identical request by another key, or by the same key after the limit was raised, was deduplicated into those 50
draws for the result's lifetime; with the limit at 5 s a MALA chain with ``warmup: 40000`` ran 76 s (the limit was
checked between blocks only).
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from fastapi.testclient import TestClient

from service.app import create_app
from tests.integration.conftest import TERMINAL, app_settings
from tests.integration.uninterrupted import assert_same_experiment
from tests.redis_server import RedisServer

pytestmark = [pytest.mark.redis, pytest.mark.slow]

A, B = {"X-API-Key": "key-a"}, {"X-API-Key": "key-b"}
HCIZ = {"theory": "hciz_mlp", "activation": "tanh", "gamma": 0.5, "alpha": 1.0, "Delta": 0.1}
SIZES = {"d": 6, "n_test": 10}
REQUEST: dict[str, Any] = {"model": HCIZ, "sizes": SIZES, "sampler": {"method": "mala", "chains": 2, "warmup": 300,
                                                                      "draws": 120, "block_size": 50, "seed": 4}}
#: What the limit must cut, whatever the machine: many minutes of sampling each, uncut, on a network of 1 152
#: weights and 2 304 training samples (about 1 ms a step here); one draw of a million steps alone outlasts the
#: limit and its grace many times over.
BIG = {"d": 48, "n_test": 10}
LONG_WARMUP = {"method": "mala", "chains": 1, "warmup": 9_000_000, "draws": 10, "seed": 1}
HUGE_BLOCK = {"method": "mala", "chains": 1, "warmup": 10, "draws": 99_000, "thin": 100, "block_size": 99_000,
              "seed": 2}
ONE_LONG_DRAW = {"method": "mala", "chains": 1, "warmup": 10, "draws": 1, "thin": 1_000_000, "seed": 3}
#: Long enough for a chain's start (its network built, its sampler compiled) on a loaded machine.
CAP, GRACE = 15.0, 2.0


def _status(api: TestClient, job_id: str, headers: dict[str, str], detail: bool = True) -> dict[str, Any]:
    r = api.get(f"/v1/experiments/{job_id}", params={"detail": "true"} if detail else None, headers=headers)
    assert r.status_code == 200, r.text
    return r.json()


def _wait(api: TestClient, job_id: str, headers: dict[str, str], timeout: float = 240) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while (body := _status(api, job_id, headers))["status"] not in TERMINAL:
        assert time.monotonic() < deadline, {k: v for k, v in body.items() if k != "result"}
        time.sleep(0.1)
    return body


def _submit(api: TestClient, headers: dict[str, str], request: dict[str, Any] = REQUEST) -> dict[str, Any]:
    r = api.post("/v1/experiments", json=request, headers=headers)
    assert r.status_code == 202, r.text
    return r.json()


def _api(redis: RedisServer, cap: float) -> TestClient:
    return TestClient(create_app(app_settings(redis.url, api_keys=("key-a", "key-b"), experiment_time_limit=cap,
                                              experiment_kill_grace=GRACE)))


def test_a_time_limited_experiment_is_never_served_as_final(fresh_redis: RedisServer, start_workers) -> None:
    start_workers("w1", "w2")
    with _api(fresh_redis, cap=1e-3) as api:  # a limit no chain can sample within, on any machine
        job_a = _submit(api, A)["job_id"]
        cut = _wait(api, job_a, A)
        assert cut["status"] == "finished", cut["error"]
        assert cut["result"]["status"] == "time_limit" and cut["result"]["complete"] is False
        assert cut["result"]["draws"] < REQUEST["sampler"]["draws"]

        shared = _submit(api, B)  # another key, the same experiment: not the cut run, a resumed one
        assert not shared["deduplicated"]
        again = _wait(api, shared["job_id"], B)
        assert again["result"]["complete"] is False
        resumed = [e for e in again["executions"] if e["event"] == "started" and e["resumed_from"] is not None]
        assert len(resumed) >= 2  # both chains went on from what the first run stored

    with _api(fresh_redis, cap=3600) as api:  # the instance restarted with time enough
        resubmitted = _submit(api, A)
        assert resubmitted["job_id"] == job_a and not resubmitted["deduplicated"]
        done = _wait(api, job_a, A)
        result = done["result"]
        assert done["status"] == "finished" and result["complete"] is True, done["error"]
        assert result["draws"] == REQUEST["sampler"]["draws"] and result["status"] != "time_limit"
        assert _submit(api, B)["deduplicated"]  # final now, for every key
        assert _status(api, shared["job_id"], B)["result"]["complete"] is True

    assert_same_experiment(result, REQUEST)  # the experiment, run here in one piece


def _elapsed(body: dict[str, Any]) -> float:
    log = body["executions"]
    start = next(e["time"] for e in log if e["event"] == "started")
    end = next(e["time"] for e in log if e["event"] == "completed")
    return end - start


def test_the_time_limit_is_hard_inside_a_warmup_a_block_and_a_draw(fresh_redis: RedisServer,
                                                                    start_workers) -> None:
    workers = start_workers("w1", "w2", "w3")  # one each for the three experiments: the three limits run at once
    with _api(fresh_redis, cap=CAP) as api:
        jobs = {name: _submit(api, A, {"model": HCIZ, "sizes": BIG, "sampler": sampler})["job_id"]
                for name, sampler in (("warmup", LONG_WARMUP), ("block", HUGE_BLOCK), ("draw", ONE_LONG_DRAW))}
        bodies = {name: _wait(api, job_id, A, timeout=300) for name, job_id in jobs.items()}
        for name, body in bodies.items():
            assert body["status"] == "finished", (name, body["error"])
            assert body["result"]["status"] == "time_limit" and body["result"]["complete"] is False, name
            outcome = next(e for e in body["executions"] if e["event"] == "completed")
            assert outcome["time_limited"], (name, outcome)
            # the chain's own clock: its limit, the abandoned call's grace, and its start (the network built and
            # the sampler compiled, before any step), on a loaded machine
            assert _elapsed(body) < CAP + GRACE + 60, (name, _elapsed(body))
        warm = next(e for e in bodies["warmup"]["executions"] if e["event"] == "completed")
        assert warm["warmup_steps"] < LONG_WARMUP["warmup"] and warm["draws"] == 0  # cut inside the warmup
        block = next(e for e in bodies["block"]["executions"] if e["event"] == "completed")
        assert block["draws"] < HUGE_BLOCK["draws"]  # cut inside what was one block
        draw = next(e for e in bodies["draw"]["executions"] if e["event"] == "completed")
        assert draw["draws"] == 0 and draw["abandoned_call"]  # one draw longer than the limit: abandoned
        # the work horse that abandoned the call exited with its job: both workers take new work at once
        quick = _submit(api, A, {**REQUEST, "sampler": {**REQUEST["sampler"], "seed": 99, "warmup": 50,
                                                        "draws": 20}})["job_id"]
        assert _wait(api, quick, A, timeout=120)["status"] == "finished"
        assert all(w.proc.poll() is None for w in workers)
