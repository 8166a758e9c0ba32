"""The reduced single-neuron law on its quadrature nodes, and the averages the equations need."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from solvers.theories.mean_field_ard.reduced_potential import Features, ParityPotential
from solvers.theories.mean_field_ard.wells import Rule, Well, aligned_wells, center_well, mixture_rule


@dataclass(frozen=True)
class Law:
    """Normalised masses p_i at the nodes of ``rule`` with the features there; log Z = log ∫ e^{−Ũ}."""

    pot: ParityPotential
    rule: Rule
    p: np.ndarray
    log_Z: float
    f: Features
    lam: np.ndarray  # Λ at the nodes

    def mean(self, g: np.ndarray) -> float:
        # einsum, not BLAS: a threaded ddot on a shared machine costs more than the sum itself
        return float(np.einsum("i,i->", self.p, g, optimize=False))

    def cov(self, g: np.ndarray, h: np.ndarray) -> float:
        return self.mean(g * h) - self.mean(g) * self.mean(h)

    @property
    def J_S(self) -> np.ndarray:
        return self.f.J_S

    @property
    def aligned_mass(self) -> float:
        """Mass of the aligned wells: the fraction of specialised neurons."""
        kinds = np.array([w.kind == "aligned" for w in self.rule.wells])
        return float(np.sum(self.p[kinds[self.rule.well]])) if kinds.any() else 0.0

    # ---- ∂Ũ/∂(state) at the nodes -----------------------------------------------------------------
    def dU_dt(self) -> np.ndarray:
        net = self.pot.net
        return -self.pot.t * self.J_S**2 / (net.kappa**2 * net.s * self.lam)

    def dU_dlog_rho_rel(self) -> np.ndarray:
        return 0.5 * self.pot.rho_rel * self.f.wS2 - 0.5 * self.pot.net.k

    def dU_dlog_rho_irr(self) -> np.ndarray:
        return 0.5 * self.pot.rho_irr * self.f.q - self.pot.net.shape


def find_wells(pot: ParityPotential, scale: float) -> list[Well]:
    """The central well and every aligned well; ``scale`` (σ_w) fixes the search grid."""
    wells: list[Well] = []
    c = center_well(pot)
    if c is not None:
        wells.append(c)
    wells.extend(aligned_wells(pot, scale))
    return wells


def law(pot: ParityPotential, wells: list[Well], quad: tuple[int, int, int] | None = None) -> Law:
    """The law on the nodes of the mixture rule; ``quad`` = (bulk nodes per coordinate, q nodes, aligned nodes)."""
    bn, qn, an = quad or (None, None, None)
    rule = mixture_rule(pot, wells, bn, qn, an)
    U = pot.from_features(rule.f, rule.Y[:, -1])
    logm = rule.logw - U
    if not np.all(np.isfinite(logm)):
        raise FloatingPointError("non-finite quadrature mass")
    top = float(np.max(logm))
    e = np.exp(logm - top)
    total = float(np.sum(e))
    log_Z = top + math.log(total)
    p = e / total
    lam = pot.net.A + rule.f.Sigma / pot.net.s
    return Law(pot, rule, p, log_Z, rule.f, lam)
