"""The tree level's finite-D form: its quadrature problem, its start from the saddle point, its reported block."""

from __future__ import annotations

from typing import Any

from solvers.core.results import SolveResult
from solvers.theories.rubin_cavity.common.network import Network
from solvers.theories.rubin_cavity.common.variance_term import Learnability
from solvers.theories.rubin_cavity.self_consistent.finite_d import FiniteDForm, law_block
from solvers.theories.rubin_cavity.tree_level.quadrature import (
    from_saddle,
    potential_at,
    quadrature_problem,
    residual_of,
)
from solvers.theories.rubin_cavity.tree_level.report import tree_level_block


def block(net: Network, result: SolveResult) -> dict[str, Any]:
    ell = Learnability(*(float(v) for v in result.x[:4]))
    b, c = residual_of(ell, net.epsilon)
    pot = potential_at(net, result.x)
    out = law_block(net, b, c, result, lambda: pot)
    if result.converged:
        wells = out["potential_wells"]
        aligned = [w for w in wells if w["kind"] == "aligned"]
        rho = max(aligned, key=lambda w: w["weight"])["rho"] if aligned else 0.0
        out["tree_level"] = tree_level_block(net, pot, ell, rho)
    return out


TREE_LEVEL = FiniteDForm(quadrature_problem, from_saddle, block)
