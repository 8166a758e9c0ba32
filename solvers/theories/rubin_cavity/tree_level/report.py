"""What the tree level reports beyond the cavity saddle's report: the kernel's learnabilities and the size of
the term it drops.

Tree level keeps the variance term to first order in s_a2 φᵀ(K + T)⁻¹φ = λ V(ρ). Integrating the neuron's own
readout exactly against Gaussian others would divide the directional reward by 1 + λ V and add ½ log(1 + λ V):
λ V at the populated wells is the relative size of what the expansion leaves out.
"""

from __future__ import annotations

from typing import Any

from solvers.core.results import Report
from solvers.theories.rubin_cavity.common.network import Network
from solvers.theories.rubin_cavity.common.tree_level_potential import TreeLevelPotential
from solvers.theories.rubin_cavity.common.variance_term import Learnability
from solvers.theories.rubin_cavity.self_consistent.report import report as saddle_report
from solvers.theories.rubin_cavity.tree_level.saddle import TreeLevelState


def tree_level_block(net: Network, potential: TreeLevelPotential, learned: Learnability, rho: float) -> dict[str, Any]:
    """κ, the learnabilities, and λ V at the centre and at ``rho`` (the populated aligned well, 0 if none)."""
    lam = net.kappa * net.D
    return {
        "kappa": net.kappa,
        "learnability": {"H1": learned.l11, "H3": learned.l33, "H1_H3": learned.l13, "perpendicular": learned.perp},
        "expansion_parameter": {
            "center": lam * float(potential.variance_term(0.0)),
            "aligned": lam * float(potential.variance_term(rho * rho)) if rho > 0 else None,
        },
    }


def report(net: Network, st: TreeLevelState) -> Report:
    base = saddle_report(net, st.saddle)
    block = tree_level_block(net, st.saddle.potential, st.learned, st.saddle.rho_star)  # type: ignore[arg-type]
    return Report(base.order_parameters, {**base.observables, "tree_level": block})
