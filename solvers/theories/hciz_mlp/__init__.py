"""Replica + HCIZ theory of Bayes-optimal extensive-width MLPs near interpolation (``hciz_mlp``)."""

from solvers.theories.hciz_mlp.theory import HCIZTheory

THEORY = HCIZTheory()

__all__ = ["THEORY", "HCIZTheory"]
