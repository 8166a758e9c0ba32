"""The products a sweep's points take with their resolvent 1/(T + aκ), from one basis per spectrum.

A point's predictions need k̃0 (ỹ∘d) and (k̃0∘k̃0) d, its weight correlations Zᵀ(ỹ∘d) and Zᵀ diag(d) Z, d = 1/(T + aκ) for
each posterior (the renormalised one and, at each new T, the NNGP one). A single solve computes them directly
(:mod:`~solvers.theories.kernel_renormalization.observables`); along a sweep they come from the
:class:`~solvers.theories.kernel_renormalization.resolvent_basis.ResolventBasis` of the spectrum, certified to its
tolerance, and directly wherever the basis cannot certify a point. Only posteriors of the form A = T + aK (no
rank-one mean term) on a spectrum fixed along the sweep qualify.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from solvers.theories.kernel_renormalization.observables import (
    DENSE_EIGEN_MAX_N0,
    Posterior,
    packed_gram,
    predict_together,
)
from solvers.theories.kernel_renormalization.resolvent_basis import ResolventBasis
from solvers.theories.kernel_renormalization.spectrum import Spectrum

#: Spectra (and their bases) held, and fits remembered (a point asks for its posterior's fit twice).
HELD_BASES = 2
HELD_FITS = 4

#: A posterior's basis and the coefficients of its d in that basis.
Fit = tuple[ResolventBasis, np.ndarray]


class SweepProducts:
    """The bases of the spectra a sweep reports on; ``enabled`` False (a single solve): every product is direct."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._bases: OrderedDict[int, tuple[Spectrum, ResolventBasis]] = OrderedDict()
        self._fits: OrderedDict[tuple[int, float, float], Fit | None] = OrderedDict()

    def predictions(self, posts: Sequence[Posterior], groups: Sequence[int] | None = None
                    ) -> list[tuple[np.ndarray, np.ndarray]]:
        """(mean, variance) at the test points for each posterior: from its basis where certified, else directly
        (those together, one pass over the test kernel). ``groups``: a label per posterior, equal for those of one
        point (fitted as if together, :meth:`ResolventBasis.fit_many`); default: all of them one point."""
        fits = self._fits_of(posts, groups)
        direct = iter(predict_together([post for post, c in zip(posts, fits, strict=True) if c is None]))
        rows = self._combined("predict", posts, fits)
        out = []
        for k, post in enumerate(posts):
            if k not in rows:
                out.append(next(direct))
                continue
            n = post.spectrum.k0_t.shape[0]
            out.append(post.from_products(rows[k][:n, None], rows[k][n:, None]))
        return out

    def weight_products(self, posts: Sequence[Posterior]) -> list[tuple[np.ndarray, np.ndarray] | None]:
        """For each posterior, X̃ᵀA⁻¹y = Zᵀ(ỹ∘d) and X̃ᵀA⁻¹X̃ = Zᵀ diag(d) Z (packed, :func:`packed_gram`) from the
        basis; None: compute them directly."""
        rows = self._combined("weights", posts, self._fits_of(posts))
        out: list[tuple[np.ndarray, np.ndarray] | None] = [None] * len(posts)
        for k, both in rows.items():
            n0 = posts[k].spectrum.z.shape[1]  # type: ignore[union-attr]
            out[k] = both[:n0], both[n0:]
        return out

    def _combined(self, channel: str, posts: Sequence[Posterior], fits: Sequence[Fit | None]) -> dict[int, np.ndarray]:
        """The channel's product for every certified posterior (index -> row), those of one basis in one matrix
        product; a posterior whose basis lacks the channel is left out."""
        groups: dict[int, list[int]] = {}
        for k, fit in enumerate(fits):
            if fit is not None:
                groups.setdefault(id(fit[0]), []).append(k)
        rows: dict[int, np.ndarray] = {}
        for ks in groups.values():
            basis = fits[ks[0]][0]  # type: ignore[index]
            if basis.has(channel):
                cs = _stacked([fits[k][1] for k in ks])  # type: ignore[index]
                rows.update(zip(ks, basis.combine(channel, cs), strict=True))
        return rows

    def _fits_of(self, posts: Sequence[Posterior], groups: Sequence[int] | None = None) -> list[Fit | None]:
        """The basis and coefficients of each posterior's d (None: compute it directly), those of one spectrum
        fitted together; remembered for the last few (at least those of the last call: a report asks for them
        twice)."""
        out: list[Fit | None] = [None] * len(posts)
        todo: dict[int, list[int]] = {}
        for k, post in enumerate(posts):
            if not self.enabled or post.b != 0.0:
                continue
            key = (id(post.spectrum), post.T, post.a)
            if key in self._fits:
                out[k] = self._fits[key]
            else:
                todo.setdefault(id(post.spectrum), []).append(k)
        for ks in todo.values():
            basis = self._basis(posts[ks[0]].spectrum)
            labels = [0] * len(ks) if groups is None else [groups[k] for k in ks]
            for k, c in zip(ks, basis.fit_many([(posts[k].T, posts[k].a) for k in ks], labels), strict=True):
                out[k] = self._fits[(id(posts[k].spectrum), posts[k].T, posts[k].a)] = None if c is None else (basis, c)
        while len(self._fits) > max(HELD_FITS, len(posts)):
            self._fits.popitem(last=False)
        return out

    def _basis(self, sp: Spectrum) -> ResolventBasis:
        held = self._bases.get(id(sp))
        if held is not None and held[0] is sp:
            self._bases.move_to_end(id(sp))
            return held[1]
        self._fits.clear()  # keyed by id(): a spectrum dropped here may leave its id to another
        basis = ResolventBasis(sp.kappa)
        # the products of Posterior.columns() with b = 0 (the weights ỹ∘d, and d itself) with the test kernel, side by
        # side; and the weight correlations' Zᵀ(ỹ∘d) beside the packed Zᵀ diag(d) Z
        basis.channel("predict", lambda cols: np.hstack([(sp.k0_t @ (sp.y_t[:, None] * cols)).T,
                                                         (sp.k0_t_sq @ cols).T]))
        if sp.z is not None and sp.z.shape[1] <= DENSE_EIGEN_MAX_N0:
            z = sp.z
            basis.channel("weights", lambda cols: np.hstack([(z.T @ (sp.y_t[:, None] * cols)).T,
                                                             packed_gram(z, cols)]))
        self._bases[id(sp)] = (sp, basis)
        while len(self._bases) > HELD_BASES:
            self._bases.popitem(last=False)
        return basis


def _stacked(cs: Sequence[np.ndarray]) -> np.ndarray:
    """Coefficient vectors as rows, padded with zeros to the longest (columns added after a fit have none)."""
    out = np.zeros((len(cs), max(c.size for c in cs)))
    for k, c in enumerate(cs):
        out[k, : c.size] = c
    return out
