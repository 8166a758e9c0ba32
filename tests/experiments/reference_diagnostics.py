"""MCMC diagnostics written from their definitions, to check the library the engine uses.

Vehtari, Gelman, Simpson, Carpenter, Bürkner (2021), "Rank-normalization, folding, and localization: an improved
R-hat" (their appendix's order: split, then rank-normalise), and the Stan reference manual ("Effective sample
size"): every chain is split in halves; a rank-normalised series replaces each draw by Φ⁻¹((r − 3/8)/(S + 1/4)) of
its rank r among all S draws kept; split R-hat is
√(var⁺/W); the ESS is S/τ with τ from Geyer's initial positive and monotone sequences of the multi-chain
autocorrelation ρ̂_t = 1 − (W − mean_chains γ̂_t)/var⁺. Plain loops and numpy only: nothing here comes from ArviZ.
"""

from __future__ import annotations

import numpy as np
from scipy import stats


def split(x: np.ndarray) -> np.ndarray:
    """(chains, draws) → (2·chains, ⌊draws/2⌋): first and last halves (the middle draw of an odd count dropped)."""
    half = x.shape[1] // 2
    return np.concatenate([x[:, :half], x[:, x.shape[1] - half:]], axis=0)


def rank_normalise(x: np.ndarray) -> np.ndarray:
    ranks = stats.rankdata(x, method="average").reshape(x.shape)
    return stats.norm.ppf((ranks - 3 / 8) / (x.size + 1 / 4))


def _within_and_total(x: np.ndarray) -> tuple[float, float]:
    """W (mean within-chain variance) and var⁺ = (n − 1)/n W + B/n of (chains, draws)."""
    n = x.shape[1]
    w = float(np.mean(np.var(x, axis=1, ddof=1)))
    b_over_n = float(np.var(np.mean(x, axis=1), ddof=1)) if x.shape[0] > 1 else 0.0
    return w, (n - 1) / n * w + b_over_n


def rhat_rank(x: np.ndarray) -> float:
    """max(split R-hat of the rank-normalised draws, of the rank-normalised folded draws |x − median|), the median
    of the draws kept by the split."""

    def rhat(y: np.ndarray) -> float:
        w, total = _within_and_total(rank_normalise(y))
        return float(np.sqrt(total / w))

    halves = split(x)
    return max(rhat(halves), rhat(np.abs(halves - np.median(halves))))


def _autocovariance(chain: np.ndarray) -> np.ndarray:
    """γ̂_t = (1/n) Σ_{i<n−t} (x_i − x̄)(x_{i+t} − x̄), t = 0 … n − 1, by direct sums."""
    d = chain - chain.mean()
    n = d.size
    return np.array([np.dot(d[: n - t], d[t:]) / n for t in range(n)])


def ess(x: np.ndarray) -> float:
    """Effective sample size of (chains, draws) values (no splitting or ranking here)."""
    m, n = x.shape
    if np.ptp(x) < np.finfo(float).resolution:
        return float(x.size)
    gamma = np.array([_autocovariance(c) for c in x])
    w = gamma[:, 0].mean() * n / (n - 1)
    total = w * (n - 1) / n + (np.var(x.mean(axis=1), ddof=1) if m > 1 else 0.0)
    rho = 1.0 - (w - gamma.mean(axis=0)) / total
    rho[0] = 1.0
    # Geyer's initial positive sequence: the pairs P_j = ρ_{2j} + ρ_{2j+1} (2j + 1 ≤ n − 2), read in order up to the
    # first that is not positive; that last pair read (or the last within the length) ends the sequence and
    # contributes only its even term, as in Stan: τ = −1 + 2 Σ_{j<J} P_j + ρ_{2J}.
    pairs = [rho[0] + rho[1]]
    while pairs[-1] > 0 and 2 * len(pairs) + 1 <= n - 2:
        j = len(pairs)
        pairs.append(rho[2 * j] + rho[2 * j + 1])
    last = len(pairs) - 1
    end = rho[2 * last] if pairs[-1] >= 0 or rho[2 * last] > 0 else 0.0
    kept = pairs[:last]
    # Geyer's initial monotone sequence: each kept pair at most the one before
    for j in range(1, len(kept)):
        kept[j] = min(kept[j], kept[j - 1])
    tau = -1.0 + 2.0 * sum(kept) + end
    tau = max(tau, 1.0 / np.log10(x.size))
    return float(x.size / tau)


def ess_bulk(x: np.ndarray) -> float:
    return ess(rank_normalise(split(x)))


def ess_tail(x: np.ndarray, probabilities: tuple[float, float] = (0.05, 0.95)) -> float:
    """min over the two quantiles q of the ESS of the indicator series 1{x ≤ q}."""
    out = []
    for p in probabilities:
        q = np.quantile(x, p)
        out.append(ess(split((x <= q).astype(float))))
    return min(out)


def mcse_mean(x: np.ndarray) -> float:
    """sd / √ESS, with the ESS of the split (not rank-normalised) draws."""
    return float(np.std(x, ddof=1) / np.sqrt(ess(split(x))))
