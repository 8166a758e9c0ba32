"""How the self-consistent modes are solved by default."""

from __future__ import annotations

from solvers.core.options import SolverOptions


def auto_means_newton(options: SolverOptions) -> SolverOptions:
    """``method: "auto"`` as Newton (``picard``/``anderson`` stay available when asked for).

    The damped map of the population equations oscillates in GMFL-I (the theory note's warning), and a
    damped step of the finite-sample loop costs one P x P solve, so a damped fallback would only spend the
    time limit before reporting the same non-convergence.
    """
    return options.model_copy(update={"method": "newton"}) if options.method == "auto" else options
