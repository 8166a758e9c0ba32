"""Valid rubin_cavity specs at the float extremes are answered (200, converged or not with its reason), never a
500: a tiny T (every T from 1e-80 to 1e-199 overflowed h³ in the overlap potential), and the closure's
determinant that cancelled to zero (N = 7.08e11, s_a2 = 59 206, T = 5.26e-127, D = 2.7e8)."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from service.app import create_app
from tests.service.conftest import settings

SPECS: list[dict[str, Any]] = [
    *({"theory": "rubin_cavity", "mode": "self_consistent", "T": T} for T in (1e-80, 1e-100, 1e-130, 1e-150)),
    {"theory": "rubin_cavity", "mode": "self_consistent", "N": 7.08e11, "s_a2": 59206, "T": 5.26e-127, "D": 2.7e8},
    {"theory": "rubin_cavity", "mode": "self_consistent", "treatment": "tree_level", "T": 1e-100},
    {"theory": "rubin_cavity", "mode": "self_consistent", "scaling": "standard", "T": 1e-100},
    {"theory": "rubin_cavity", "mode": "finite_sample", "T": 1e-100, "P": 60, "P_test": 20, "D": 20},
]


@pytest.fixture(scope="module")
def client() -> TestClient:
    with TestClient(create_app(settings(solve_time_limit=20.0)), raise_server_exceptions=False) as c:
        yield c


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: f"{s['mode']}-T{s['T']:g}-{s.get('treatment', '')}"
                                                      f"{s.get('scaling', '')}")
def test_a_tiny_temperature_is_answered(client: TestClient, spec: dict[str, Any]) -> None:
    r = client.post("/v1/solve", json={"model": spec})
    assert r.status_code == 200, r.text[:2000]
    body = r.json()
    assert body["diagnostics"]["status"] and body["diagnostics"]["message"]
    for branch in body["branches"]:
        assert branch["converged"] in (True, False)
