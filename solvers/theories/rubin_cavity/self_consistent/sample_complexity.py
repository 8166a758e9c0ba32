"""A sweep in P: where the cubic component becomes learnable, for the fixed NNGP kernel and the adaptive theory."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

from solvers.core.results import Catalogue
from solvers.core.sweep import Sweep
from solvers.theories.rubin_cavity.common.closure import nngp_eigenvalues
from solvers.theories.rubin_cavity.common.network import Network
from solvers.theories.rubin_cavity.common.phases import GFL


def first_crossing(ps: Sequence[float], values: Sequence[float | None], level: float) -> float | None:
    """First p where the sampled ``values`` cross ``level`` (linear interpolation), None if never."""
    for (p0, v0), (p1, v1) in itertools.pairwise(zip(ps, values, strict=True)):
        if v0 is None or v1 is None:
            continue
        if (v0 - level) * (v1 - level) <= 0 and v0 != v1:
            return float(p0 + (level - v0) * (p1 - p0) / (v1 - v0))
    return None


def _cubic(cat: Catalogue) -> float | None:
    eq = cat.equilibrium_branch
    return None if eq is None or eq.report is None else eq.report.observables.get("learned_fraction_cubic")


def _cubic_finite_d(cat: Catalogue) -> float | None:
    block = cat.notes.observables.get("finite_D", {}) if cat.notes is not None else {}
    return block.get("learned_fraction_cubic")


def sample_complexity(net: Network, sweep: Sweep) -> dict[str, Any]:
    """The NNGP sample sizes T/λ3, T/λ1; the adaptive onset; where 1 − c/ε reaches 1/2 and 1/10."""
    lam1, lam3 = nngp_eigenvalues(net.sigma_w2, net.D, net.sigma_a2)
    p_cubic = net.T / lam3 if lam3 > 0 else math.inf  # λ3 ∝ D⁻³ underflows only at absurd D or s_a2
    p_linear = net.T / lam1 if lam1 > 0 else math.inf
    ps = [float(v) for v in sweep.values]
    cubic = [_cubic(c) for c in sweep.catalogues]
    cubic_fd = [_cubic_finite_d(c) for c in sweep.catalogues]
    onset = next(
        (sp.parameter for sp in sweep.special_points if sp.transition == "first_order" and GFL in sp.branches), None
    )
    return {
        "nngp": {
            "P_cubic_learnable": p_cubic,
            "P_linear_learnable": p_linear,
            "definition": "(P/T) λ = 1 on the fixed NNGP kernel: half of the component learned; λ3 ∝ D⁻³",
        },
        "adaptive": {
            "P_transition": onset,
            "P_cubic_half": first_crossing(ps, cubic, 0.5),
            "P_cubic_tenth": first_crossing(ps, cubic, 0.1),
            "P_cubic_tenth_finite_D": first_crossing(ps, cubic_fd, 0.1),
            "definition": "first-order onset of the aligned population (u reaches u_c, P_c ∝ √(u_c D/s_a2) T), "
            "and the P at which the cubic learned fraction 1 − c/ε of the sweep reaches 1/2 and 1/10",
        },
        "ratio_nngp_to_transition": p_cubic / onset if onset else None,
    }
