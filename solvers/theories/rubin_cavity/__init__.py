"""Rubin cavity / adaptive-kernel theory of a two-layer erf network (theory name ``rubin_cavity``)."""

from solvers.theories.rubin_cavity.specs import (
    MAX_FINITE_SAMPLE_P,
    FiniteSampleSpec,
    PotentialSpec,
    RubinCavitySpec,
    SelfConsistentSpec,
)
from solvers.theories.rubin_cavity.theory import RubinCavityTheory

THEORY = RubinCavityTheory()

__all__ = [
    "MAX_FINITE_SAMPLE_P",
    "THEORY",
    "FiniteSampleSpec",
    "PotentialSpec",
    "RubinCavitySpec",
    "RubinCavityTheory",
    "SelfConsistentSpec",
]
