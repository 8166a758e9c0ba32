"""Kernel renormalisation of finite-width Bayesian networks (Pacelli et al. 2023; Corti et al. 2025)."""

from solvers.theories.kernel_renormalization.theory import KernelRenormalizationTheory

THEORY = KernelRenormalizationTheory()

__all__ = ["THEORY", "KernelRenormalizationTheory"]
