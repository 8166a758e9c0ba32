"""``mode: "potential"``: the overlap potential at fixed residual coefficients (no self-consistency)."""

from solvers.theories.rubin_cavity.potential.theory import PotentialTheory

__all__ = ["PotentialTheory"]
