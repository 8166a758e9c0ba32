"""``/v1/experiments`` on the in-process executor: 202 and the job, the result's shape and JSON safety, the theory's
comparison on every branch, deduplication and the cached solve, the time limit, non-finite log-densities
reported (never a 500), and 422s naming the field (and the limit) for everything the plan refuses."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from service.app import create_app
from service.result_schemas import ExperimentResult
from solvers.theories import get as get_theory
from tests.contract.declared_fields import undeclared
from tests.service.conftest import settings

HCIZ = {"theory": "hciz_mlp", "activation": "tanh", "gamma": 0.5, "alpha": 1.0, "Delta": 0.1}
SIZES = {"d": 6, "n_test": 20}
SAMPLER = {"method": "mala", "chains": 2, "warmup": 60, "draws": 60, "block_size": 30, "seed": 1}
KERNEL = {"theory": "kernel_renormalization", "activation": "erf", "N1": 4, "T": 0.1,
          "data": {"kind": "teacher", "P": 6, "P_test": 3, "N0": 3, "seed": 0}}


@pytest.fixture(scope="module")
def api() -> Iterator[TestClient]:
    with TestClient(create_app(settings())) as c:
        yield c


def submit(api: TestClient, **body: Any) -> dict[str, Any]:
    r = api.post("/v1/experiments", json={"model": HCIZ, "sizes": SIZES, "sampler": SAMPLER, **body})
    assert r.status_code == 202, r.text
    return r.json()


def wait(api: TestClient, job_id: str, timeout: float = 300) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        r = api.get(f"/v1/experiments/{job_id}")
        assert r.status_code == 200, r.text
        body = r.json()
        if body["status"] not in ("queued", "running"):
            return body
        assert time.monotonic() < deadline, body
        time.sleep(0.2)


def no_nan(text: str) -> None:
    json.loads(text, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))


@pytest.fixture(scope="module")
def finished(api: TestClient) -> dict[str, Any]:
    accepted = submit(api)
    assert accepted["status_url"] == f"/v1/experiments/{accepted['job_id']}" and not accepted["deduplicated"]
    return wait(api, accepted["job_id"])


def test_an_experiment_is_a_job_with_the_theory_beside_it(api: TestClient, finished: dict[str, Any]) -> None:
    assert finished["status"] == "finished", finished["error"]
    assert finished["progress"] == {"done": 120, "total": 120}
    assert finished["chains"] == {"done": 2, "total": 2} and finished["points"] == {"done": 1, "total": 1}
    result = finished["result"]
    assert result["kind"] == "experiment" and result["theory_name"] == "hciz_mlp"
    assert undeclared(ExperimentResult, result) == []  # its model describes every field
    assert (result["chains"], result["draws"], result["init"]) == (2, 60, "prior")
    assert result["status"] in ("converged", "not_converged") and isinstance(result["converged"], bool)
    for name, est in result["observables"].items():
        assert set(est) == {"mean", "stderr", "ess", "ess_tail", "rhat"}, name
    assert result["gradient_evaluations"] == 2 * (1 + 60 + 60)  # MALA: one gradient per step and one at the start
    assert result["sampler"]["method"] == "mala" and result["device"] == "cpu"
    assert result["sampled"] == [{"name": "W1", "size": 18}] and result["network"]["d"] == 6
    theory = result["theory"]
    assert theory["theory"] == "hciz_mlp" and theory["branches"]
    assert set(theory["comparison"]) == {b["name"] for b in theory["branches"]}
    for branch, rows in theory["comparison"].items():
        assert "generalization_error" in rows, branch
        row = rows["generalization_error"]
        est = result["observables"]["generalization_error"]
        assert row["experiment"] == est["mean"] and row["stderr"] == est["stderr"]
        assert row["z"] == pytest.approx((row["experiment"] - row["theory"]) / row["stderr"])
    no_nan(api.get(f"/v1/experiments/{finished['job_id']}").text)
    # the result describes its quantities: the estimated headline, the theory's order parameters, the spec's fields
    quantities = result["quantities"]
    assert quantities["generalization_error"] == {"symbol": r"$\varepsilon^*$", "units": "1", "role": "headline",
                                                  "long_name": quantities["generalization_error"]["long_name"]}
    assert quantities["Q"]["role"] == "order_parameter" and quantities["alpha"]["role"] == "parameter"


def test_an_experiment_states_its_provenance_with_every_seed(finished: dict[str, Any]) -> None:
    result = finished["result"]
    prov = result["provenance"]
    assert prov["spec_hash"] == result["experiment_hash"] and len(prov["source"]) == 64
    assert set(prov["libraries"]) >= {"numpy", "scipy", "jax", "jaxlib", "blackjax", "arviz-base", "arviz-stats"}
    assert prov["libraries"]["jax"] is not None  # installed here: the chains ran on it
    # Each chain ran with the word its SeedSequence([seed, chain]) gives.
    words = [int(np.random.SeedSequence([1, c]).generate_state(1, dtype=np.uint32)[0]) for c in range(2)]
    assert prov["seeds"] == {"network_seed": 0, "sampler.seed": 1, "sampler.chain_seeds": words}
    assert result["theory"]["provenance"]["source"] == prov["source"]


def test_the_draws_are_served_bounded(api: TestClient, finished: dict[str, Any]) -> None:
    r = api.get(f"/v1/experiments/{finished['job_id']}/draws")
    assert r.status_code == 200
    no_nan(r.text)
    series = r.json()
    assert (series["chains"], series["draws"], series["thin"]) == (2, 60, 1)
    assert len(series["posterior"]["generalization_error"]) == 2
    assert len(series["posterior"]["generalization_error"][0]) == 60
    assert series["components"]["Q_units"] == [3] and len(series["sample_stats"]["lp"][1]) == 60
    assert api.get(f"/v1/experiments/{finished['job_id']}/draws", params={"point": 1}).status_code == 404
    assert api.get("/v1/experiments/nope").status_code == 404


def test_identical_submissions_share_one_job_and_the_solve_is_cached(api: TestClient, finished: dict[str, Any]
                                                                     ) -> None:
    again = submit(api, sampler={**SAMPLER, "chains": 2, "seed": 1, "method": "mala"})  # the defaults spelled out
    assert again["job_id"] == finished["job_id"] and again["deduplicated"]
    other = wait(api, submit(api, sampler={**SAMPLER, "seed": 2})["job_id"])
    assert other["job_id"] != finished["job_id"]
    assert finished["result"]["theory"]["cached"] is False and other["result"]["theory"]["cached"] is True
    assert other["result"]["theory"]["spec_hash"] == finished["result"]["theory"]["spec_hash"]


def test_a_time_limited_experiment_is_answered_but_never_final(api: TestClient) -> None:
    """A run its time limit cut short is answered (status time_limit, ``complete: false``) but is not the
    experiment: the same request resumes its chains from their checkpoints and, with time enough, finishes with
    every draw — exactly those of an uninterrupted run — and only then is it shared as final."""
    from service.experiments.in_process import run_experiment

    request = {"model": HCIZ, "sizes": SIZES, "sampler": {**SAMPLER, "seed": 7}}
    first = wait(api, submit(api, sampler={**SAMPLER, "seed": 7, "time_limit": 1e-3})["job_id"])
    cut = first["result"]
    assert first["status"] == "finished" and cut["status"] == "time_limit" and cut["complete"] is False
    assert cut["converged"] is False and cut["draws"] < SAMPLER["draws"]
    assert f"of {SAMPLER['draws']} draws" in cut["message"]
    no_nan(api.get(f"/v1/experiments/{first['job_id']}").text)

    again = submit(api, sampler=request["sampler"])  # the time limit is not part of the experiment
    assert again["job_id"] == first["job_id"] and not again["deduplicated"]
    done = wait(api, again["job_id"])
    result = done["result"]
    assert done["status"] == "finished" and result["complete"] is True and result["draws"] == SAMPLER["draws"]
    assert result["status"] != "time_limit"
    log = api.get(f"/v1/experiments/{done['job_id']}", params={"detail": "true"}).json()["executions"]
    starts = [e for e in log if e["event"] == "started"]
    assert len(starts) == 4 and sum(e["resumed_from"] is not None for e in starts) == 2  # from their checkpoints
    assert submit(api, sampler=request["sampler"])["deduplicated"]  # final now
    reference = run_experiment(request, settings=settings(), poll=0.05)
    assert result["observables"] == reference["observables"]


def test_non_finite_log_densities_are_counted_and_reported(api: TestClient) -> None:
    # x ← x + h ∇log π + …: with h = 10⁶ the Gaussian prior alone multiplies x by about −10⁶ each step
    unstable = {"method": "langevin", "step_size": 1e6, "chains": 2, "warmup": 60, "draws": 10, "block_size": 10}
    r = api.get(f"/v1/experiments/{submit(api, sampler=unstable)['job_id']}")
    body = wait(api, r.json()["job_id"])
    assert body["status"] == "finished", body["error"]
    result = body["result"]
    assert result["status"] == "numerical_error" and not result["converged"]
    assert result["sampler"]["nonfinite"] + result["sampler"]["warmup_nonfinite"] > 0
    assert result["non_finite"]  # the undefined figures are null, and listed
    no_nan(api.get(f"/v1/experiments/{body['job_id']}").text)


def test_a_learning_curve_is_one_point_per_value(api: TestClient) -> None:
    body = wait(api, submit(api, parameter="Delta", values=[0.1, 0.5],
                            sampler={**SAMPLER, "warmup": 30, "draws": 30})["job_id"])
    assert body["status"] == "finished", body["error"]
    result = body["result"]
    assert result["kind"] == "learning_curve" and result["parameter"] == "Delta" and result["values"] == [0.1, 0.5]
    assert [p["parameter"] for p in result["points"]] == [0.1, 0.5]
    assert body["progress"] == {"done": 120, "total": 120} and body["points"] == {"done": 2, "total": 2}
    # the network and the theory of each value, not of the anchor spec
    assert [p["network"]["Delta"] for p in result["points"]] == [0.1, 0.5]
    assert len({p["theory"]["spec_hash"] for p in result["points"]}) == 2
    assert api.get(f"/v1/experiments/{body['job_id']}/draws", params={"point": 1}).json()["parameter"] == 0.5


def _refused(api: TestClient, body: dict[str, Any]) -> dict[str, Any]:
    r = api.post("/v1/experiments", json=body)
    assert r.status_code == 422, r.text
    return r.json()["detail"][0]


@pytest.mark.parametrize(("changes", "loc", "words"), [
    ({"sizes": {"n_test": 5}}, ["body", "sizes", "d"], "required"),
    ({"sizes": {"d": 6, "width": 3}}, ["body", "sizes", "width"], "Extra"),
    ({"model": {**HCIZ, "Delta": 0.0}}, ["body", "model", "Delta"], "noiseless"),
    ({"model": {"theory": "rubin_cavity", "mode": "potential"}, "sizes": None}, ["body", "model", "mode"],
     "no network"),
    ({"model": KERNEL, "sizes": None, "sampler": {"init": "teacher"}}, ["body", "sampler", "init"], "prior"),
    ({"model": KERNEL, "sizes": None, "sampler": {"method": "sgld", "step_size": 0.1, "batch_size": 2}},
     ["body", "sampler", "method"], "minibatch"),
    ({"sampler": {"keep_positions": True}}, ["body", "sampler", "keep_positions"], "parameters"),
    ({"sampler": {"chains": 65}}, ["body", "sampler", "chains"], "experiment_chains=64"),
    ({"sampler": {"draws": 100_001}}, ["body", "sampler", "draws"], "experiment_draws=100000"),
    ({"model": {**HCIZ, "gamma": 3.0, "alpha": 0.001}, "sizes": {"d": 2000}}, ["body", "sizes", "d"],
     "experiment_parameters=5e+06"),
    ({"sizes": {"d": 2000}}, ["body", "sizes", "d"], "experiment_data=5e+07"),
    ({"model": {**KERNEL, "N1": 2_000_000}, "sizes": None}, ["body", "model", "N1"], "experiment_parameters=5e+06"),
    ({"model": {**KERNEL, "N1": 1_500_000}, "sizes": None, "sampler": {"chains": 32, "draws": 100_000}},
     ["body", "sampler", "draws"], "experiment_work=1e+13"),
    ({"parameter": "Delta", "values": [0.1, 0.0]}, ["body", "values", 1], "noiseless"),
    ({"parameter": "depth", "values": [1, 2]}, ["body", "parameter"], "cannot be varied"),
    ({"parameter": "Delta", "values": {"start": 0.1, "stop": 1, "num": 101}}, ["body", "values", "num"],
     "experiment_points=100"),
    ({"parameter": "Delta"}, ["body"], "together"),
    ({"network_seed": -1}, ["body", "network_seed"], "greater than"),
])
def test_refusals_name_the_field(api: TestClient, changes: dict[str, Any], loc: list[Any], words: str) -> None:
    body = {"model": HCIZ, "sizes": SIZES, **changes}
    detail = _refused(api, {k: v for k, v in body.items() if v is not None})
    assert detail["loc"][:len(loc)] == loc, detail
    assert words in detail["msg"], detail


def test_a_raised_sampler_limit_admits_more_chains(monkeypatch: pytest.MonkeyPatch) -> None:
    body = {"model": HCIZ, "sizes": SIZES, "sampler": {"chains": 65, "draws": 10}}
    monkeypatch.setenv("SADDLELAB_LIMIT_EXPERIMENT_CHAINS", "128")
    from service.experiments.plan import plan
    from service.experiments.schemas import ExperimentRequest
    from service.settings import Settings

    payload = plan(ExperimentRequest.model_validate(body), Settings(redis_url=None))
    assert payload["sampler"]["chains"] == 65


def test_a_theory_without_a_network_is_refused_naming_the_theory(api: TestClient, monkeypatch: pytest.MonkeyPatch
                                                                 ) -> None:
    monkeypatch.setattr(type(get_theory("matrix_denoising")), "experiment_sizes", None)
    detail = _refused(api, {"model": {"theory": "matrix_denoising", "gamma": 0.5, "snr": 1.0}, "sizes": {"d": 4}})
    assert detail["loc"] == ["body", "model", "theory"] and "states no finite network" in detail["msg"]


def test_nan_in_the_request_is_refused(api: TestClient) -> None:
    r = api.post("/v1/experiments", content='{"model": ' + json.dumps(HCIZ) + ', "sampler": {"time_limit": NaN}}',
                 headers={"content-type": "application/json"})
    assert r.status_code == 422
    assert r.json()["detail"][0]["loc"] == ["body", "sampler", "time_limit"]


def test_a_cancelled_experiment_stops_and_resumes_its_chains_when_submitted_again(api: TestClient) -> None:
    long = {**SAMPLER, "draws": 100_000, "block_size": 30, "seed": 5}
    job_id = submit(api, sampler=long)["job_id"]
    deadline = time.monotonic() + 120
    while api.get(f"/v1/experiments/{job_id}").json()["progress"]["done"] < 60:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert api.delete(f"/v1/experiments/{job_id}").json()["status"] == "cancelled"
    time.sleep(0.5)  # a chain stops at its next block
    stopped = api.get(f"/v1/experiments/{job_id}").json()["progress"]["done"]
    time.sleep(0.5)
    assert api.get(f"/v1/experiments/{job_id}").json()["progress"]["done"] == stopped
    again = submit(api, sampler=long)
    assert again["job_id"] == job_id and not again["deduplicated"]
    while not [e for e in api.get(f"/v1/experiments/{job_id}", params={"detail": "true"}).json()["executions"]
               if e["event"] == "started" and e["resumed_from"]]:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    api.delete(f"/v1/experiments/{job_id}")


def test_run_experiment_in_process_gives_the_api_result(finished: dict[str, Any]) -> None:
    """The scripts' entry point (no server) plans and runs the same experiment: the same key, the same draws."""
    from service.experiments.in_process import run_experiment

    seen: list[str] = []
    result = run_experiment({"model": HCIZ, "sizes": SIZES, "sampler": SAMPLER}, settings=settings(), poll=0.05,
                            on_status=lambda s: seen.append(s["status"]))
    assert seen[-1] == "finished"
    assert result["experiment_hash"] == finished["result"]["experiment_hash"]
    assert result["observables"] == finished["result"]["observables"]


def test_the_time_limit_is_hard_inside_a_warmup_and_a_block() -> None:
    """On the embedded executor as on the workers (tests/integration/test_rq_experiment_time_limits.py): a warmup
    of millions of steps and a block of millions of steps are cut at the chain's limit, not after them."""
    cap, big = 8.0, {"d": 24, "n_test": 10}  # about 70 µs a step here: each uncut run takes minutes
    samplers = {"warmup": {"method": "mala", "chains": 1, "warmup": 9_000_000, "draws": 10, "seed": 1},
                "block": {"method": "mala", "chains": 1, "warmup": 10, "draws": 99_000, "thin": 100,
                          "block_size": 99_000, "seed": 2}}
    with TestClient(create_app(settings(experiment_time_limit=cap, local_workers=2))) as c:
        jobs = {name: c.post("/v1/experiments", json={"model": HCIZ, "sizes": big, "sampler": sampler}).json()["job_id"]
                for name, sampler in samplers.items()}
        for name, job_id in jobs.items():
            body = wait(c, job_id)
            assert body["status"] == "finished" and body["result"]["status"] == "time_limit", (name, body["error"])
            log = c.get(f"/v1/experiments/{job_id}", params={"detail": "true"}).json()["executions"]
            started = next(e["time"] for e in log if e["event"] == "started")
            outcome = next(e for e in log if e["event"] == "completed")
            assert outcome["time_limited"] and outcome["time"] - started < cap + 5 + 60, (name, outcome)
            if name == "warmup":
                assert outcome["warmup_steps"] < samplers["warmup"]["warmup"] and outcome["draws"] == 0
            else:
                assert outcome["draws"] < samplers["block"]["draws"]
