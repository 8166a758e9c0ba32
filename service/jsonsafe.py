"""Turn results into JSON that never carries NaN or Infinity.

A non-finite float becomes ``None`` and its path is listed under ``non_finite`` at the top
level, so a diverging quantity is reported explicitly instead of silently vanishing. A negative
zero (e.g. the free entropy −U(0) of a well at the origin) is written as 0.0: ``-0.0`` in a table
reads like a sign that is not there.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from solvers.core.results import SolveResult


def result_diagnostics(res: SolveResult) -> dict[str, Any]:
    """How one solve went, in the contract's words (wherever a solve is reported)."""
    return {
        "residual": res.residual,
        "iterations": res.iterations,
        "method": res.method,
        "seconds": res.seconds,
        "status": res.status.value,
        "message": res.message,
        "nfev": res.nfev,
    }


def _convert(obj: Any, path: str, bad: list[str]) -> Any:
    # The commonest leaves first (a sweep converts thousands per second); exact types only, so that numpy's
    # float64 (a float subclass) and bool (an int subclass) take the general branches below.
    kind = type(obj)
    if kind is float:
        if math.isfinite(obj):
            return obj + 0.0
        bad.append(path)
        return None
    if kind is str or obj is None:
        return obj
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            key = str(k)
            leaf = type(v)
            # a table's finite floats and plain values in place: no path built, no call, for the commonest entries
            if leaf is float and math.isfinite(v):
                out[key] = v + 0.0
            elif leaf is str or leaf is int or leaf is bool or v is None:
                out[key] = v
            else:
                out[key] = _convert(v, f"{path}.{key}" if path else key, bad)
        return out
    if isinstance(obj, (list, tuple)):
        # Plain finite floats: check them, don't rebuild their paths.
        if obj and all(type(v) is float for v in obj) and all(math.isfinite(v) for v in obj):
            return [v + 0.0 for v in obj]  # -0.0 + 0.0 == +0.0
        return [_convert(v, f"{path}[{i}]", bad) for i, v in enumerate(obj)]
    if isinstance(obj, np.ndarray):
        # Fast path: a finite numeric array converts in one call (sweeps carry many of them).
        if obj.dtype.kind in "biu":
            return obj.tolist()
        if obj.dtype.kind == "f" and bool(np.all(np.isfinite(obj))):
            return (obj + 0.0).tolist()
        return _convert(obj.tolist(), path, bad)
    if isinstance(obj, SolveResult):
        return _convert(result_diagnostics(obj), path, bad)
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        value = float(obj)
        if not math.isfinite(value):
            bad.append(path)
            return None
        return value + 0.0
    return obj


def json_safe_at(obj: Any, path: str, bad: list[str]) -> Any:
    """Plain-Python, finite-only copy of ``obj``, a part at ``path`` of a larger result: the paths of its non-finite
    values are appended to ``bad`` (for the result's ``non_finite``)."""
    return _convert(obj, path, bad)


def json_safe(obj: Any) -> Any:
    """Plain-Python, finite-only copy of ``obj``; lists non-finite paths in ``non_finite``."""
    bad: list[str] = []
    out = _convert(obj, "", bad)
    if bad and isinstance(out, dict):
        out["non_finite"] = sorted(set(out.get("non_finite", []) or []) | set(bad))
    return out
