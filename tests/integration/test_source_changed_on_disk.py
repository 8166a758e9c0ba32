"""A running API or worker whose source changed on disk neither serves nor stores under its old fingerprint.

The fingerprint reads every file under ``solvers/`` at start, but a solve imports some modules only when it
needs them (here the rectangular matrix-denoising channel). An instance whose files were edited after its start
would compute with the new code under the old fingerprint, and a clean instance of the old code on the same
Redis would then serve that number as its own. Each instance here runs from a copy of the source, and the copy's
lazily imported module is edited while it runs.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from service.app import create_app
from service.local_server import LocalServer
from service.provenance import SOURCE_FINGERPRINT
from tests.integration.conftest import ROOT, WorkerProcess, app_settings, sweep_request, wait_finished
from tests.redis_server import RedisServer

LAZY_MODULE = "solvers/theories/matrix_denoising/rectangular_point.py"
SYMMETRIC = {"theory": "matrix_denoising", "gamma": 0.5, "snr": 1.5}
RECTANGULAR = {"theory": "matrix_denoising", "shape": "rectangular", "gamma": 0.5, "eta": 2.0, "snr": 1.5}


def _copy(dest: Path) -> Path:
    for package in ("service", "solvers", "clients"):
        shutil.copytree(ROOT / package, dest / package, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def _edit(checkout: Path) -> None:
    with open(checkout / LAZY_MODULE, "a") as f:
        f.write("\nEDITED_WHILE_RUNNING = True\n")


def test_an_api_whose_lazily_imported_module_changed_refuses_to_solve(tmp_path: Path) -> None:
    checkout = _copy(tmp_path)
    env = {"PYTHONPATH": str(checkout), "PYTHONWARNINGS": "ignore"}
    with LocalServer(env, root=checkout) as server, httpx.Client(base_url=server.url, timeout=120) as http:
        assert http.get("/healthz").json()["source"] == SOURCE_FINGERPRINT  # the copy is this tree, unedited
        first = http.post("/v1/solve", json={"model": SYMMETRIC})
        assert first.status_code == 200, first.text
        _edit(checkout)
        for spec in (RECTANGULAR, SYMMETRIC):  # a cold solve that imports the module, a cached one
            r = http.post("/v1/solve", json={"model": spec})
            assert r.status_code == 503, r.text
            assert LAZY_MODULE in r.json()["detail"] and "restart" in r.json()["detail"]
        r = http.post("/v1/sweeps", json={"model": SYMMETRIC, "parameter": "snr", "values": [1.0, 2.0]})
        assert r.status_code == 503, r.text
        assert http.get("/healthz").status_code == 200


@pytest.mark.redis
def test_a_worker_whose_source_changed_fails_its_line_with_the_reason(fresh_redis: RedisServer,
                                                                      tmp_path: Path) -> None:
    checkout = _copy(tmp_path / "checkout")
    logs = tmp_path / "logs"
    logs.mkdir()
    worker = WorkerProcess(fresh_redis.url, "edited", logs, env={"PYTHONPATH": str(checkout)}, root=checkout)
    try:
        worker.wait_registered(fresh_redis.client())
        _edit(checkout)
        with TestClient(create_app(app_settings(fresh_redis.url))) as api:
            job_id = api.post("/v1/sweeps", json=sweep_request(3)).json()["job_id"]
            body = wait_finished(api, job_id)
        assert body["status"] == "failed", body
        assert "changed on disk" in str(body.get("error")), body
    finally:
        worker.stop()

