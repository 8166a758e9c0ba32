"""The engine's view of the theory: residual ∂S/∂x, Hessian, −S, exhaustive root search, names.

x = log Q̄ per layer (and log(1 + Q) for the mean-corrected action). ``enumerate`` sign-scans the
reduced 1-D residual on a log-Q̄ grid and brackets every sign change with brentq, so every
stationary point becomes a branch; the engine polishes each with Newton (analytic Hessian) and
picks the equilibrium by the free entropy −S among the stable ones.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from solvers.core.problem import Problem
from solvers.theories.kernel_renormalization.mean_action import MeanCorrectedAction
from solvers.theories.kernel_renormalization.model import Model, Settings
from solvers.theories.kernel_renormalization.nested_action import NestedAction
from solvers.theories.kernel_renormalization.scalar_action import ScalarAction

#: log Q̄ is kept in this box: Q̄ ∈ [e^-60, e^60] covers every physical case and keeps exp finite.
LOG_BOX = 60.0
#: Name of the solution when the action has a single stationary point.
UNIQUE_NAME = "renormalized"

Action = ScalarAction | MeanCorrectedAction | NestedAction


class KernelRenormalizationProblem:
    """Builds the engine :class:`Problem` and remembers what the exhaustive search found."""

    def __init__(self, model: Model, parameter: str | None) -> None:
        self.model = model
        self.parameter = parameter
        self._actions: OrderedDict[float, Action] = OrderedDict()
        #: p -> [(x, stable)] of the last exhaustive searches (for naming and diagnostics)
        self.found: OrderedDict[float, list[tuple[np.ndarray, bool]]] = OrderedDict()

    # ---- plumbing ----------------------------------------------------------------------------
    def settings(self, p: float) -> Settings:
        return self.model.settings.at(self.parameter, p)

    def action(self, p: float) -> Action:
        key = float(p) if self.parameter else 0.0
        act = self._actions.get(key)
        if act is None:
            act = self.model.action(self.settings(key))
            self._actions[key] = act
            while len(self._actions) > 8:
                self._actions.popitem(last=False)
        return act

    def _usable(self, p: float) -> bool:
        st = self.settings(p)
        return st.valid and not self.model.singular_at_zero_temperature(st)

    # ---- the hooks -----------------------------------------------------------------------------
    def residual(self, x: np.ndarray, p: float) -> np.ndarray:
        if not self._usable(p):
            return np.full(self.model.dim, np.nan)
        with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
            return np.asarray(self.action(p).gradient(np.asarray(x, dtype=float)), dtype=float)

    def jacobian(self, x: np.ndarray, p: float) -> np.ndarray:
        with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
            act = self.action(p)
            assert not isinstance(act, NestedAction)
            return act.hessian(np.asarray(x, dtype=float))

    def free_entropy(self, x: np.ndarray, p: float) -> float:
        with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
            return -float(self.action(p).value(np.asarray(x, dtype=float)))

    def stability(self, x: np.ndarray, p: float) -> float:
        act = self.action(p)
        assert isinstance(act, MeanCorrectedAction)
        return act.stability(np.asarray(x, dtype=float))

    def _margin(self, act: Action, x: np.ndarray) -> float:
        if isinstance(act, MeanCorrectedAction):
            return act.stability(x)
        if isinstance(act, ScalarAction):
            return float(np.linalg.eigvalsh(act.hessian(x))[0])
        return float("nan")

    def enumerate(self, p: float) -> Sequence[tuple[str, np.ndarray]]:
        """Every stationary point, named by its position and stability."""
        if not self._usable(p):
            return []
        act = self.action(p)
        if isinstance(act, NestedAction):
            return []
        with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
            if isinstance(act, ScalarAction):
                points = [np.full(self.model.depth, s) for s in act.stationary_points()]
            else:
                points = act.stationary_points()
            found = [(x, self._margin(act, x) > 0) for x in points if np.all(np.isfinite(x))]
        self.found[float(p)] = found
        while len(self.found) > 8:
            self.found.popitem(last=False)
        names = _names([stable for _, stable in found])
        return [(name, x) for name, (x, _) in zip(names, found, strict=True)]

    def starts(self, p: float) -> dict[str, np.ndarray]:
        """NNGP (Q̄ = 1) always; for the nested recursion also the vanilla solution, its natural guess."""
        out = {"nngp": np.zeros(self.model.dim)}
        if self.model.variant == "nested" and self._usable(p):
            vanilla = self.model.scalar_action(self.settings(p))
            roots = vanilla.stationary_points()
            if roots:
                out["vanilla"] = np.full(self.model.depth, roots[0])
        return out

    def label(self, x: np.ndarray, p: float, start: str) -> str:
        found = self.found.get(float(p))
        if found:
            names = _names([stable for _, stable in found])
            for name, (y, _) in zip(names, found, strict=True):
                if np.all(np.abs(np.asarray(x) - y) <= 1e-6 * np.maximum(1.0, np.abs(y))):
                    return name
            return start
        return UNIQUE_NAME

    def project(self, x: np.ndarray) -> np.ndarray:
        return np.clip(x, -LOG_BOX, LOG_BOX)

    def build(self) -> Problem:
        variant = self.model.variant
        names = [f"log_Qbar_{k + 1}" for k in range(self.model.depth)] if variant != "mean_corrected" else None
        return Problem(
            residual=self.residual,
            dim=self.model.dim,
            starts=self.starts,
            jacobian=None if variant == "nested" else self.jacobian,
            free_entropy=self.free_entropy,
            stability=self.stability if variant == "mean_corrected" else None,
            kind="saddle" if variant == "mean_corrected" else "gradient",
            label=self.label,
            enumerate=None if variant == "nested" else self.enumerate,
            project=self.project,
            names=names or ["log_Qbar", "log_1_plus_Q"],
        )


def _names(stable: list[bool]) -> list[str]:
    """'renormalized' when unique; otherwise minima low_Qbar … high_Qbar and unstable 'barrier's."""
    if len(stable) == 1:
        return [UNIQUE_NAME]
    minima = [i for i, s in enumerate(stable) if s]
    out: list[str] = []
    n_barrier = 0
    for i, s in enumerate(stable):
        if s:
            k = minima.index(i)
            if len(minima) == 1:
                out.append(UNIQUE_NAME)
                continue
            out.append("low_Qbar" if k == 0 else "high_Qbar" if k == len(minima) - 1 else f"mid_Qbar_{k}")
        else:
            n_barrier += 1
            out.append("barrier" if len(stable) - len(minima) == 1 else f"barrier_{n_barrier}")
    return out
