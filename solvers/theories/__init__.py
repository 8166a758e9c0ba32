"""Theory registry: one subpackage per theory, each exporting ``THEORY`` (a ``Theory`` instance)."""

from __future__ import annotations

import importlib
import importlib.util
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


@cache
def registry() -> dict[str, Theory]:
    """All installed theories, by name."""
    out: dict[str, Theory] = {}
    for name, module in THEORY_MODULES.items():
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
