"""Algorithm 1 of the 2025 paper, "annealing of solutions across scaling regimes", on the engine.

With s_a2 = g/(χN) and T = T̃/χ the population theory moves from the NNGP limit (χ → 0: u = χ u₁ → 0 at
fixed η and κ) to mean-field scaling (χ = N). The paper starts from the NNGP predictor and solves the tree
level at each χ of an increasing list from the previous solution; here the control parameter of the
tree-level population problem is χ (the spec itself is χ = 1: s_a2 → s_a2/χ, T → T/χ). At the first, small χ
the problem's GFL start is the NNGP limit up to O(u) (u = χ u₁), and the engine's continuation follows the
solution in χ from there, locating the transitions on the way as it does for any sweep.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from solvers.core.options import SolverOptions
from solvers.core.sweep import Sweep, run_sweep
from solvers.theories.rubin_cavity.common.network import Network, NetworkAt, network_of
from solvers.theories.rubin_cavity.common.solving import auto_means_newton
from solvers.theories.rubin_cavity.specs import SelfConsistentSpec
from solvers.theories.rubin_cavity.tree_level.problem import problem_on


class ChiAt(NetworkAt):
    """χ ↦ the network with s_a2/χ and T/χ (u ∝ χ; η and κ = η/N fixed)."""

    def __init__(self, base: Network):
        super().__init__(base, "chi")

    def __call__(self, chi: float) -> Network:
        return replace(self.base, s_a2=self.base.s_a2 / chi, T=self.base.T / chi)


def anneal(spec: SelfConsistentSpec, chis: Sequence[float], options: SolverOptions | None = None) -> Sweep:
    """The tree-level population solution along ``chis`` (increasing), by continuation from the NNGP limit."""
    options = auto_means_newton(options or SolverOptions())
    return run_sweep(problem_on(ChiAt(network_of(spec)), "chi", options, chis), chis, options, method="continuation")
