"""``mode: "finite_sample"``: adaptive-kernel regression on a seeded training set (P x P kernels)."""

from solvers.theories.rubin_cavity.finite_sample.theory import FiniteSampleTheory

__all__ = ["FiniteSampleTheory"]
