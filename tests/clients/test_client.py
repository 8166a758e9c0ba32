"""The thin client against a live lab instance (uvicorn + Redis + an RQ worker)."""

from __future__ import annotations

import numpy as np
import pytest

from clients import (
    Client,
    ConnectionFailed,
    InvalidRequest,
    JobCancelled,
    NotFound,
    Unauthorized,
    rows,
    series,
    to_csv,
    values_spec,
)
from tests.clients.conftest import POTENTIAL, RESULT_PAGE_CURVES, RESULT_PAGE_SIZE, U_FIRST_ORDER, Lab
from tests.redis_server import free_port

pytestmark = [pytest.mark.redis, pytest.mark.slow]


@pytest.fixture()
def client(lab: Lab):
    with Client(lab.url, api_key=lab.api_key, timeout=30, poll_interval=0.1) as c:
        yield c


def test_health_and_theories(client: Client) -> None:
    h = client.health()
    assert h["status"] == "ok" and h["cache"] == "redis" and h["redis"] == "ok" and h["auth"] == "api_key"
    theories = {t["name"]: t for t in client.theories()}
    assert "u" in theories["rubin_cavity"]["sweepable"]
    assert theories["rubin_cavity"]["schema"]


def test_solve_is_cached_the_second_time(client: Client) -> None:
    spec = {**POTENTIAL, "u": 31.0}
    first, second = client.solve(spec), client.solve(spec)
    assert first["cached"] is False and second["cached"] is True
    assert second["spec_hash"] == first["spec_hash"]
    # Above the first-order point the aligned well is the equilibrium.
    assert first["equilibrium"] == "aligned" and first["order_parameters"]["rho_star"] > 0


def test_sweep_blocks_with_a_progress_bar_and_returns_the_result(client: Client, capsys) -> None:
    result = client.sweep(POTENTIAL, "u", {"start": 20, "stop": 40, "num": 41}, progress=True)
    bar = capsys.readouterr().err
    assert "41/41" in bar and "finished" in bar
    assert len(result["points"]) == 41
    first = [t for t in result["transitions"] if t["kind"] == "first_order"]
    assert len(first) == 1 and first[0]["parameter"] == pytest.approx(U_FIRST_ORDER, abs=1e-6)
    assert len([t for t in result["transitions"] if t["kind"] == "spinodal"]) == 2
    xs, rho = series(result, "rho_star")
    assert xs == pytest.approx(np.linspace(20, 40, 41).tolist())
    assert all(r == 0 for x, r in zip(xs, rho, strict=True) if x < first[0]["parameter"])
    assert all(r > 0 for x, r in zip(xs, rho, strict=True) if x > first[0]["parameter"])
    table = rows(result)
    assert table[0]["u"] == 20 and table[0]["equilibrium"] == "center" and "rho_star" in table[0]
    assert to_csv(result).splitlines()[2].startswith("u,equilibrium,converged")  # after the units and symbols
    # The traced curves come one per page here: the client joins them.
    assert [c["name"] for c in result["curves"]] == ["center", "aligned"] and RESULT_PAGE_CURVES == 1
    assert min(result["curves"][1]["parameter"]) == pytest.approx(28.322495, abs=1e-6)
    assert result["provenance"]["spec_hash"] and len(result["provenance"]["source"]) == 64


def test_phase_diagram_through_the_client(client: Client) -> None:
    result = client.sweep(POTENTIAL, ["b", "u"], [np.array([0.28, 0.3]), {"start": 20, "stop": 40, "num": 11}],
                          progress=False)
    assert result["parameters"] == ["b", "u"] and len(result["points"]) == 22
    line = next(ln for ln in result["lines"] if ln["kind"] == "first_order")
    assert [q["b"] for q in line["points"]] == [0.28, 0.3]
    assert line["points"][1]["u"] == pytest.approx(U_FIRST_ORDER, abs=1e-6)
    assert rows(result)[0].keys() >= {"b", "u", "equilibrium"}
    # Each row's traced curves, tagged with the row; the diagram's provenance, from its rows.
    assert sorted({c["at"]["b"] for c in result["curves"]}) == [0.28, 0.3]
    assert len(result["provenance"]["source"]) == 64 and "varies" not in result["provenance"]


def test_a_result_of_several_pages_is_read_whole_or_one_page_at_a_time(client: Client) -> None:
    accepted = client.submit_sweep(POTENTIAL, "u", {"start": 20, "stop": 40, "num": 41}, method="grid")
    result = client.wait(accepted["job_id"], progress=False)  # the server sends 16 points per page
    assert len(result["points"]) == 41 > RESULT_PAGE_SIZE
    np.testing.assert_allclose([p["parameter"] for p in result["points"]], np.linspace(20, 40, 41), atol=1e-12)
    whole = client.job(accepted["job_id"])
    assert whole["page"] == {"of": "result.points", "offset": 0, "limit": RESULT_PAGE_SIZE, "returned": 41,
                             "total": 41, "next": None}
    one = client.job(accepted["job_id"], offset=16, limit=16)
    assert one["page"] == {"of": "result.points", "offset": 16, "limit": 16, "returned": 16, "total": 41,
                           "next": 32}
    assert one["result"]["points"] == result["points"][16:32]
    # A grid traces no curves, and says so.
    assert result["curves"] is None and "grid" in result["curves_reason"] and "curve_page" not in whole


def test_submit_job_and_cancel(client: Client) -> None:
    accepted = client.submit_sweep({**POTENTIAL, "D": 150}, "u", {"start": 20, "stop": 40, "num": 1500})
    job_id = accepted["job_id"]
    assert client.last_job_id == job_id
    assert client.job(job_id)["status"] in ("queued", "running")
    assert client.cancel(job_id)["status"] == "cancelled"
    with pytest.raises(JobCancelled) as err:
        client.wait(job_id, progress=False)
    assert err.value.job["status"] == "cancelled"


def test_http_errors_carry_the_servers_message(lab: Lab, client: Client) -> None:
    with pytest.raises(InvalidRequest) as bad:
        client.solve({**POTENTIAL, "u": -1})
    assert bad.value.status_code == 422 and "u" in str(bad.value) and bad.value.errors
    with pytest.raises(InvalidRequest) as unsweepable:
        client.submit_sweep(POTENTIAL, "epsilon", [1.0, 2.0])
    assert "parameter" in str(unsweepable.value) and "cannot be swept" in str(unsweepable.value)
    with pytest.raises(NotFound, match="no job"):
        client.job("does-not-exist")
    with Client(lab.url, api_key="wrong") as stranger, pytest.raises(Unauthorized, match="X-API-Key"):
        stranger.theories()
    with Client(f"http://127.0.0.1:{free_port()}", timeout=2) as nowhere, pytest.raises(ConnectionFailed):
        nowhere.health()


def test_values_spec_accepts_lists_arrays_ranges_and_mappings() -> None:
    assert values_spec(np.array([1, 2.5])) == [1.0, 2.5]
    assert values_spec(range(3)) == [0.0, 1.0, 2.0]
    assert values_spec({"start": 1, "stop": 2, "num": 3}) == {"start": 1, "stop": 2, "num": 3}


def test_a_crafted_job_id_cannot_reach_another_route(lab: Lab, client: Client) -> None:
    """Regression: ``cancel("../experiments/<id>")`` (and ``saddlelab cancel``) cancelled an experiment through the
    sweep route — httpx resolved the dot segment in the unquoted id."""
    from service import cli

    long_experiment = client.submit_experiment(
        {"theory": "hciz_mlp", "activation": "tanh", "gamma": 0.5, "alpha": 1.0, "Delta": 0.1},
        sampler={"method": "mala", "chains": 1, "warmup": 10, "draws": 100_000, "seed": 11},
        sizes={"d": 6, "n_test": 10})["job_id"]
    long_sweep = client.submit_sweep({**POTENTIAL, "D": 150}, "u", {"start": 20, "stop": 40, "num": 1999})["job_id"]
    try:
        for crafted in (f"../experiments/{long_experiment}", f"./../experiments/{long_experiment}", "..", "."):
            with pytest.raises(NotFound):
                client.cancel(crafted)
            with pytest.raises(NotFound):
                client.job(crafted)
        remote = ["--url", lab.url, "--api-key", lab.api_key]
        assert cli.main(["cancel", f"../experiments/{long_experiment}", *remote]) == 1
        assert client.experiment_status(long_experiment)["status"] in ("queued", "running")
        for crafted in (f"../jobs/{long_sweep}", f"../../v1/jobs/{long_sweep}"):
            with pytest.raises(NotFound):
                client.cancel_experiment(crafted)
            with pytest.raises(NotFound):
                client.experiment_status(crafted)
        assert client.job(long_sweep)["status"] in ("queued", "running")
    finally:
        client.cancel_experiment(long_experiment)
        client.cancel(long_sweep)
