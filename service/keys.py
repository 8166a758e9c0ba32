"""Cache and job keys: sha256 of the RFC 8785 canonical JSON of (spec, solver options, solver version, source
fingerprint): two code versions on one Redis never share an answer (:mod:`service.provenance`)."""

from __future__ import annotations

import hashlib
from typing import Any

import rfc8785
from pydantic import BaseModel

from service.provenance import SOURCE_FINGERPRINT
from solvers import SOLVER_VERSION
from solvers.core.options import SolverOptions


def canonical_payload(model: BaseModel, options: SolverOptions, **extra: Any) -> dict[str, Any]:
    """What a result depends on. Defaults are included, so stating a default changes nothing."""
    return {
        "model": model.model_dump(mode="json"),
        "solver": options.model_dump(mode="json"),
        "version": SOLVER_VERSION,
        "source": SOURCE_FINGERPRINT,
        **extra,
    }


#: RFC 8785 (I-JSON) numbers are IEEE doubles: integers beyond this are not representable as numbers.
SAFE_INTEGER = 2**53 - 1


def _exact(obj: Any) -> Any:
    """Integers beyond the I-JSON range written as tagged strings, so that they hash exactly (never rounded)."""
    if isinstance(obj, bool) or obj is None:
        return obj
    if isinstance(obj, int):
        return obj if abs(obj) <= SAFE_INTEGER else f"int:{obj}"
    if isinstance(obj, dict):
        return {k: _exact(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_exact(v) for v in obj]
    return obj


def spec_hash(model: BaseModel, options: SolverOptions, **extra: Any) -> str:
    """Key order, whitespace and equal float spellings (1, 1.0, 1e0) all give the same key."""
    return hashlib.sha256(rfc8785.dumps(_exact(canonical_payload(model, options, **extra)))).hexdigest()
