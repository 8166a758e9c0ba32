"""Mean-field theory of feature learning with input feature selection (``mean_field_ard``)."""

from solvers.theories.mean_field_ard.theory import MeanFieldARDTheory

THEORY = MeanFieldARDTheory()

__all__ = ["THEORY", "MeanFieldARDTheory"]
