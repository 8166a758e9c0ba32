"""``mode: "self_consistent"``: the population theory (D → ∞ saddle point and finite-D quadrature)."""

from solvers.theories.rubin_cavity.self_consistent.theory import SelfConsistentTheory

__all__ = ["SelfConsistentTheory"]
