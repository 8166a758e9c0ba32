"""Extensive-rank symmetric matrix denoising: the matrix channel of the HCIZ theory of extensive-width networks.

``get_table(gamma, readout)`` (in :mod:`.table`) gives m_S(λ), mmse_S(λ), dm_S/dλ, M(λ) = ∫_0^λ m_S, ι(λ)
and m_S^{-1}; the conventions are stated in the docstring of :mod:`.table`.
"""

from solvers.theories.matrix_denoising.table import OverlapTable, get_table
from solvers.theories.matrix_denoising.theory import MatrixDenoisingTheory

THEORY = MatrixDenoisingTheory()

__all__ = ["THEORY", "MatrixDenoisingTheory", "OverlapTable", "get_table"]
