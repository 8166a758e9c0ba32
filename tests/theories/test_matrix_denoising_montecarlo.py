"""mmse_S against Monte Carlo denoising of sampled matrices with rotation-invariant estimators (d = 600)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from solvers.theories.matrix_denoising.point import mmse_point, spectrum
from tests.theories.test_matrix_denoising_spectrum import readout_quantiles

D = 600
INSTANCES = 3


@pytest.fixture(autouse=True)
def _one_blas_thread() -> Iterator[None]:
    # Multi-threaded BLAS on small matrices is much slower when the cores are shared.
    with threadpool_limits(limits=1):
        yield


def _errors(gamma: float, readout: str, lam: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Per instance: error of the oracle RIE and of the plug-in RIE built from the theory's G_Y.

    Oracle: ξ_i = u_iᵀ S̃ u_i, the best estimator with Y's eigenvectors (it knows S̃); its error
    (1/d)(‖S̃‖² − Σ ξ_i²) tends to the Bayes error for rotation-invariant S̃. Plug-in: the
    Bun–Bouchaud–Potters formula ξ(y) = [y − 2 Re G_Y(y)]/√λ with the computed Stieltjes transform.
    """
    rng = np.random.default_rng(seed)
    k = round(gamma * D)
    v = readout_quantiles(readout, k)
    sp = spectrum(gamma, readout, lam)
    oracle, plugin = [], []
    for _ in range(INSTANCES):
        W = rng.standard_normal((k, D))
        S = (W.T * v) @ W / np.sqrt(k * D)
        A = rng.standard_normal((D, D))
        Y = np.sqrt(lam) * S + (A + A.T) / np.sqrt(2 * D)
        y, U = np.linalg.eigh(Y)
        xi_oracle = np.einsum("ij,ij->j", U, S @ U)
        oracle.append((np.sum(S * S) - np.sum(xi_oracle**2)) / D)
        G, _ = sp.stieltjes(y)
        xi = (y - 2.0 * G.real) / np.sqrt(lam)
        S_hat = (U * xi) @ U.T
        plugin.append(np.sum((S - S_hat) ** 2) / D)
    return np.array(oracle), np.array(plugin)


@pytest.mark.parametrize(
    ("gamma", "readout", "lam"),
    [
        (0.5, "ones", 2.0),
        (2.0, "rademacher", 1.0),
        (0.5, "uniform", 4.0),
        (1.5, "gaussian", 0.7),
        (0.5, "four_point", 8.0),
        (0.3, "rademacher", 30.0),
    ],
)
def test_mmse_matches_monte_carlo_denoising(gamma: float, readout: str, lam: float) -> None:
    oracle, plugin = _errors(gamma, readout, lam, seed=11)
    mmse = mmse_point(gamma, readout, lam).mmse
    # Finite-d bias of both estimators is O(1/d); the sampling spread across instances is smaller.
    se = max(np.std(oracle, ddof=1), np.std(plugin, ddof=1)) / np.sqrt(INSTANCES)
    tol = 4 * se + 3.0 / D * mmse + 2e-3 * mmse
    assert abs(np.mean(oracle) - mmse) < tol
    assert abs(np.mean(plugin) - mmse) < tol
    # The oracle knows S̃: it can only be better than the plug-in estimator, instance by instance.
    assert np.all(oracle <= plugin + 1e-12)
