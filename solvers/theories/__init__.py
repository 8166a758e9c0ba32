"""Theory registry: one subpackage per theory, each exporting ``THEORY`` (a ``Theory`` instance)."""

from __future__ import annotations

import importlib
import importlib.util
import os
from functools import cache

from solvers.theories.base import Theory

#: theory name -> module; every module exports THEORY.
THEORY_MODULES: dict[str, str] = {
    "rubin_cavity": "solvers.theories.rubin_cavity",
    "kernel_renormalization": "solvers.theories.kernel_renormalization",
    "hciz_mlp": "solvers.theories.hciz_mlp",
    "matrix_denoising": "solvers.theories.matrix_denoising",
    "mean_field_ard": "solvers.theories.mean_field_ard",
}


def enabled() -> list[str]:
    """The theories this process serves: all of them, or those named in ``SADDLELAB_THEORIES`` (comma-separated)."""
    chosen = [t.strip() for t in os.environ.get("SADDLELAB_THEORIES", "").split(",") if t.strip()]
    unknown = sorted(set(chosen) - set(THEORY_MODULES))
    if unknown:
        raise ValueError(f"SADDLELAB_THEORIES names unknown theories {unknown}; known: {sorted(THEORY_MODULES)}")
    return chosen or list(THEORY_MODULES)


@cache
def registry() -> dict[str, Theory]:
    """All installed (and enabled) theories, by name."""
    out: dict[str, Theory] = {}
    for name in enabled():
        module = THEORY_MODULES[name]
        if importlib.util.find_spec(module) is None:
            continue
        theory = getattr(importlib.import_module(module), "THEORY", None)
        if theory is None:  # a package without THEORY offers no theory (yet)
            continue
        assert theory.name == name, (theory.name, name)
        out[name] = theory
    return out


def get(name: str) -> Theory:
    return registry()[name]
