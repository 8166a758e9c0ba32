"""A programming error inside a theory is a 500 (logged with the spec hash), never dressed up as non-convergence:
in a solve computed in the API process, and in one computed in its own process."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from fastapi.testclient import TestClient

import service.solving
from service.app import create_app
from solvers.theories import get
from tests.service.conftest import settings

SPEC = {"theory": "matrix_denoising", "gamma": 0.5, "readout": "ones", "snr": 2.0}


def test_a_bug_in_a_theory_is_a_500_and_not_cached(monkeypatch: pytest.MonkeyPatch, caplog) -> None:
    theory = get("matrix_denoising")
    original = theory.problem

    def broken(spec, parameter=None, options=None):  # type: ignore[no-untyped-def]
        p = original(spec, parameter, options)

        def residual(x: np.ndarray, q: float) -> np.ndarray:
            raise KeyError("a bug, not a numerical failure")

        return type(p)(**{**p.__dict__, "residual": residual})

    monkeypatch.setattr(type(theory), "problem", lambda self, *a, **k: broken(*a, **k))
    app = create_app(settings(solve_processes=0))  # in this process, where the patch is seen
    with TestClient(app, raise_server_exceptions=False) as c, caplog.at_level(logging.ERROR):
        r = c.post("/v1/solve", json={"model": SPEC})
        assert r.status_code == 500
        assert any("raised" in rec.getMessage() and len(rec.getMessage()) > 64 for rec in caplog.records)
        monkeypatch.undo()
        ok = c.post("/v1/solve", json={"model": SPEC})
        assert ok.status_code == 200 and ok.json()["cached"] is False


def answer_with_a_bug(send, model, options, settings):  # type: ignore[no-untyped-def]
    """Run in the solve's own process (imported there by name): a theory that raises a KeyError."""
    raise KeyError("a bug in the solve's process")


def test_a_bug_in_a_solve_process_is_a_500_with_its_traceback_logged(monkeypatch: pytest.MonkeyPatch,
                                                                      caplog) -> None:
    monkeypatch.setattr(service.solving, "_answer_in_child", answer_with_a_bug)
    with TestClient(create_app(settings()), raise_server_exceptions=False) as c, caplog.at_level(logging.ERROR):
        r = c.post("/v1/solve", json={"model": SPEC})
        assert r.status_code == 500
        logged = "\n".join(rec.getMessage() for rec in caplog.records)
        assert "KeyError" in logged and "a bug in the solve's process" in logged and "Traceback" in logged
        monkeypatch.undo()
        ok = c.post("/v1/solve", json={"model": SPEC})
        assert ok.status_code == 200 and ok.json()["cached"] is False
