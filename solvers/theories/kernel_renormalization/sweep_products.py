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
        fits = [self._fit(post) for post in posts]
        direct = iter(predict_together([post for post, c in zip(posts, fits, strict=True) if c is None]))
        out = []
        for post, c in zip(posts, fits, strict=True):
            if c is None:
                out.append(next(direct))
            else:
                basis = self._basis(post.spectrum)
                out.append(post.from_products(basis.combine("mean", c)[:, None],
                                              basis.combine("variance", c)[:, None]))
        return out

    def weight_products(self, post: Posterior) -> tuple[np.ndarray, np.ndarray] | None:
        """X̃ᵀA⁻¹y = Zᵀ(ỹ∘d) and X̃ᵀA⁻¹X̃ = Zᵀ diag(d) Z (packed, :func:`packed_gram`) from the basis; None: compute
        them directly."""
        c = self._fit(post)
        if c is None:
            return None
        basis = self._basis(post.spectrum)
        return (basis.combine("bvec", c), basis.combine("gram", c)) if basis.has("gram") else None

    def _fit(self, post: Posterior) -> np.ndarray | None:
        if not self.enabled or post.b != 0.0:
            return None
        key = (id(post.spectrum), post.T, post.a)
        if key in self._fits:
            return self._fits[key]
        c = self._basis(post.spectrum).fit(post.T, post.a)
        self._fits[key] = c
        while len(self._fits) > HELD_FITS:
            self._fits.popitem(last=False)
        return c

    def _basis(self, sp: Spectrum) -> ResolventBasis:
        held = self._bases.get(id(sp))
        if held is not None and held[0] is sp:
            self._bases.move_to_end(id(sp))
            return held[1]
        self._fits.clear()  # keyed by id(): a spectrum dropped here may leave its id to another
        basis = ResolventBasis(sp.kappa)
        # the columns of Posterior.columns() with b = 0 (weights ỹ∘d and d itself), and the weight correlations'
        basis.channel("mean", lambda cols: (sp.k0_t @ (sp.y_t[:, None] * cols)).T)
        basis.channel("variance", lambda cols: (sp.k0_t_sq @ cols).T)
        if sp.z is not None and sp.z.shape[1] <= DENSE_EIGEN_MAX_N0:
            z = sp.z
            basis.channel("bvec", lambda cols: (z.T @ (sp.y_t[:, None] * cols)).T)
            basis.channel("gram", lambda cols: packed_gram(z, cols))
        self._bases[id(sp)] = (sp, basis)
        while len(self._bases) > HELD_BASES:
            self._bases.popitem(last=False)
        return basis
