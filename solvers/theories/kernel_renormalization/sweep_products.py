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


class SweepProducts:
    """The bases of the spectra a sweep reports on; ``enabled`` False (a single solve): every product is direct."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._bases: OrderedDict[int, tuple[Spectrum, ResolventBasis]] = OrderedDict()
        self._fits: OrderedDict[tuple[int, float, float], np.ndarray | None] = OrderedDict()

    def predictions(self, posts: Sequence[Posterior]) -> list[tuple[np.ndarray, np.ndarray]]:
        """(mean, variance) at the test points for each posterior: from its basis where certified, else directly
        (those together, one pass over the test kernel)."""
        fits = self._fits_of(posts)
        direct = iter(predict_together([post for post, c in zip(posts, fits, strict=True) if c is None]))
        fitted = [k for k, c in enumerate(fits) if c is not None]
        # every certified posterior of one spectrum (here: all of them, a problem has one) in one product
        rows = {}
        if fitted:
            basis = self._basis(posts[fitted[0]].spectrum)
            both = basis.combine("predict", _stacked([fits[k] for k in fitted]))  # type: ignore[misc]
            rows = dict(zip(fitted, both, strict=True))
        out = []
        for k, post in enumerate(posts):
            if k not in rows:
                out.append(next(direct))
                continue
            n = post.spectrum.k0_t.shape[0]
            out.append(post.from_products(rows[k][:n, None], rows[k][n:, None]))
        return out

    def weight_products(self, post: Posterior) -> tuple[np.ndarray, np.ndarray] | None:
        """X̃ᵀA⁻¹y = Zᵀ(ỹ∘d) and X̃ᵀA⁻¹X̃ = Zᵀ diag(d) Z (packed, :func:`packed_gram`) from the basis; None: compute
        them directly."""
        c = self._fit(post)
        if c is None:
            return None
        basis = self._basis(post.spectrum)
        if not basis.has("weights"):
            return None
        both = basis.combine("weights", c)
        n0 = post.spectrum.z.shape[1]  # type: ignore[union-attr]
        return both[:n0], both[n0:]

    def _fit(self, post: Posterior) -> np.ndarray | None:
        return self._fits_of([post])[0]

    def _fits_of(self, posts: Sequence[Posterior]) -> list[np.ndarray | None]:
        """The basis coefficients of each posterior's d (None: compute it directly), those of one spectrum fitted
        together; remembered for the last few."""
        out: list[np.ndarray | None] = [None] * len(posts)
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
            for k, c in zip(ks, basis.fit_many([(posts[k].T, posts[k].a) for k in ks]), strict=True):
                out[k] = self._fits[(id(posts[k].spectrum), posts[k].T, posts[k].a)] = c
        while len(self._fits) > HELD_FITS:
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
