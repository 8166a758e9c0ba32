"""The results the figure tests draw, as the API serves them: computed here through the app in-process, or read
from ``tests/clients/data/`` where the reference images are drawn from stored results (so that a change of the
solvers' traced points does not read as a change of the figures).

    python -m tests.clients.figure_data     # recompute the stored results, then redraw the references:
    SADDLELAB_REDRAW_REFERENCES=1 .venv/bin/python -m pytest tests/clients/test_plot_images.py
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "data"

POTENTIAL = {"theory": "rubin_cavity", "mode": "potential", "sigma_w2": 0.5, "b": 0.3, "c": -0.3, "u": 20}
HCIZ = {"theory": "hciz_mlp", "activation": "tanh", "gamma": 0.5, "Delta": 0.1, "alpha": 2.0}

#: name -> (route, body): the README's potential sweep, hciz_mlp's α sweep, the potential at the equal-depth point,
#: a grid phase diagram and the traced lines of the same box.
REQUESTS: dict[str, tuple[str, dict[str, Any]]] = {
    "potential_sweep": ("/v1/sweeps", {"model": POTENTIAL, "parameter": "u",
                                       "values": {"start": 20, "stop": 40, "num": 41}}),
    "hciz_sweep": ("/v1/sweeps", {"model": HCIZ, "parameter": "alpha", "values": {"start": 2, "stop": 7, "num": 51}}),
    "potential_solve": ("/v1/solve", {"model": {**POTENTIAL, "u": 75 * math.pi / 8, "potential_samples": 201}}),
    "phase_grid": ("/v1/sweeps", {"model": POTENTIAL, "parameter": ["b", "u"], "method": "grid",
                                  "values": [{"start": 0.25, "stop": 0.4, "num": 6},
                                             {"start": 10, "stop": 60, "num": 26}]}),
    "phase_boundary": ("/v1/sweeps", {"model": POTENTIAL, "parameter": ["b", "u"], "method": "boundary",
                                      "values": [[0.25, 0.4], [10, 60]]}),
}


@contextmanager
def app_client() -> Iterator[Any]:
    """The app on the embedded backend, in this process."""
    from fastapi.testclient import TestClient

    from service.app import create_app
    from service.settings import Settings

    with TestClient(create_app(Settings(redis_url=None, api_keys=(), rate_limit_per_minute=0))) as client:
        yield client


def fetch(client: Any, route: str, body: Mapping[str, Any], timeout: float = 300.0) -> dict[str, Any]:
    """A solve's answer, or a job's result once it finished."""
    response = client.post(route, json=body)
    assert response.status_code in (200, 202), response.text
    if route == "/v1/solve":
        return response.json()
    url, deadline = response.json()["status_url"], time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = client.get(url).json()
        if status["status"] == "finished":
            return status["result"]
        assert status["status"] in ("queued", "running"), status
        time.sleep(0.05)
    raise AssertionError(f"{body} did not finish in {timeout} s")


def compute(*names: str) -> dict[str, dict[str, Any]]:
    """The results through the app (a server's job machinery: child processes, paging)."""
    with app_client() as client:
        return {name: fetch(client, *REQUESTS[name]) for name in names}


def compute_sweeps(*names: str) -> dict[str, dict[str, Any]]:
    """Sweep results as a job assembles them, computed in this process (no app to start: seconds faster)."""
    from service.jobs.in_process import run_job

    return json.loads(json.dumps({name: run_job(REQUESTS[name][1]) for name in names}))


def _scalars(table: Mapping[str, Any] | None) -> dict[str, Any]:
    return {k: v for k, v in (table or {}).items() if not isinstance(v, list)}


def _lean(result: dict[str, Any]) -> dict[str, Any]:
    """What a figure of a sweep reads (smaller files): points without their solver diagnostics, states and
    list-valued observables (the wells' tables; a sweep figure draws scalars)."""
    out = dict(result)
    if "points" in out:
        out["points"] = [{**pt, "observables": _scalars(pt.get("observables")),
                          "branches": [{**{k: v for k, v in b.items() if k not in ("diagnostics", "state")},
                                        "observables": _scalars(b.get("observables"))}
                                       for b in pt.get("branches", [])]} for pt in out["points"]]
    out.pop("provenance", None)
    return out


def load(name: str) -> dict[str, Any]:
    return json.loads((DATA / f"{name}.json").read_text())


def main() -> None:
    DATA.mkdir(exist_ok=True)
    for name, result in compute(*REQUESTS).items():
        (DATA / f"{name}.json").write_text(json.dumps(_lean(result), separators=(",", ":")) + "\n")
        print(name, (DATA / f"{name}.json").stat().st_size, "bytes")


if __name__ == "__main__":
    main()
