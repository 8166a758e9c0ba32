"""Cache keys: sha256 of the RFC 8785 canonical JSON of (spec, solver options, solver version)."""

from __future__ import annotations

import hashlib
from typing import Any

import rfc8785
from pydantic import BaseModel

from solvers import SOLVER_VERSION
from solvers.core.options import SolverOptions


def canonical_payload(model: BaseModel, options: SolverOptions, **extra: Any) -> dict[str, Any]:
    """What a result depends on. Defaults are included, so stating a default changes nothing."""
    return {
        "model": model.model_dump(mode="json"),
        "solver": options.model_dump(mode="json"),
        "version": SOLVER_VERSION,
        **extra,
    }


def spec_hash(model: BaseModel, options: SolverOptions, **extra: Any) -> str:
    """Key order, whitespace and equal float spellings (1, 1.0, 1e0) all give the same key."""
    return hashlib.sha256(rfc8785.dumps(canonical_payload(model, options, **extra))).hexdigest()
