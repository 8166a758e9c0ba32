"""The ``rubin_cavity`` family: one :class:`~solvers.theories.base.Theory` per ``mode``, chosen by the spec.

Adding a mode is one entry in :attr:`RubinCavityTheory.modes` (and one model in the spec union).
"""

from __future__ import annotations

from typing import Any, ClassVar

from solvers.theories.modes import Modes
from solvers.theories.quantities import QuantityTable
from solvers.theories.rubin_cavity.finite_sample import FiniteSampleTheory
from solvers.theories.rubin_cavity.potential import PotentialTheory
from solvers.theories.rubin_cavity.quantities import QUANTITIES
from solvers.theories.rubin_cavity.self_consistent import SelfConsistentTheory
from solvers.theories.rubin_cavity.specs import RubinCavitySpec


class RubinCavityTheory(Modes):
    name: ClassVar[str] = "rubin_cavity"
    summary: ClassVar[str] = (
        "Cavity / adaptive-kernel theory of a two-layer erf network learning H1 + ε H3 (Rubin, Seroussi & Ringel "
        "2024; Rubin et al. 2025): overlap potential and its wells, self-consistent residual (b, c), GFL / GMFL "
        "phases, first-order transition and spinodals, learning curves, and the same loop on a finite training set."
    )
    spec_model: ClassVar[Any] = RubinCavitySpec
    quantities: ClassVar[QuantityTable] = QUANTITIES
    modes: ClassVar[dict[str, Any]] = {
        "potential": PotentialTheory(),
        "self_consistent": SelfConsistentTheory(),
        "finite_sample": FiniteSampleTheory(),
    }
