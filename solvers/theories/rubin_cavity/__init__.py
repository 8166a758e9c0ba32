"""Rubin cavity / adaptive-kernel theory of a two-layer erf network (theory name ``rubin_cavity``).

Layout: ``potential/``, ``self_consistent/`` and ``finite_sample/`` hold one mode each (its
``Theory`` and bound problem); ``common/`` holds what they share (the overlap potential and its
law, the closure, the erf projections, phases); ``specs.py`` the validated specs of all modes.
"""

from solvers.theories.rubin_cavity.specs import FiniteSampleSpec, PotentialSpec, RubinCavitySpec, SelfConsistentSpec
from solvers.theories.rubin_cavity.theory import RubinCavityTheory

THEORY = RubinCavityTheory()

__all__ = [
    "THEORY",
    "FiniteSampleSpec",
    "PotentialSpec",
    "RubinCavitySpec",
    "RubinCavityTheory",
    "SelfConsistentSpec",
]
