"""The engine's view of the theory: residual ∂S/∂x, Hessian, −S, exhaustive root search, names, report.

x = log Q̄ per layer (and log(1 + Q) for the mean-corrected action). ``enumerate`` sign-scans the
reduced 1-D residual on a log-Q̄ grid and brackets every sign change with brentq, so every
stationary point becomes a branch; the engine polishes each with Newton (analytic Hessian) and
picks the equilibrium by the free entropy −S among the stable ones.

One :class:`KernelRenormalizationProblem` is built per solve or sweep from its :class:`Model`; it
remembers, per control value p, the settings, whether the equations exist there, the action and
what the exhaustive search found, and reports solutions through the same model
(:mod:`~solvers.theories.kernel_renormalization.report`).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from solvers.core.errors import NUMERICAL, is_numerical
from solvers.core.problem import Problem
from solvers.core.results import Catalogue, Notes, Report
from solvers.theories.kernel_renormalization.mean_action import MeanCorrectedAction
from solvers.theories.kernel_renormalization.model import Model, Settings
from solvers.theories.kernel_renormalization.nested_action import NestedAction
from solvers.theories.kernel_renormalization.report import Reporter
from solvers.theories.kernel_renormalization.scalar_action import ScalarAction

#: log Q̄ is kept in this box: Q̄ ∈ [e^-60, e^60] covers every physical case and keeps exp finite.
LOG_BOX = 60.0
#: Name of the solution when the action has a single stationary point.
UNIQUE_NAME = "renormalized"
#: Control values whose state (settings, action) a problem holds, and whose searches it remembers.
HELD_POINTS = 8
HELD_SEARCHES = 16
#: Control values held along a sweep that reports its points together (their actions share the spectrum's arrays,
#: so a point costs a few hundred bytes): a block of points is reported from the states its solves used.
HELD_SWEEP_POINTS = 256

Action = ScalarAction | MeanCorrectedAction | NestedAction
IGNORE = {"over": "ignore", "under": "ignore", "invalid": "ignore", "divide": "ignore"}


@dataclass(frozen=True)
class Point:
    """What the problem knows at one control value: the settings, and the action where the equations exist."""

    settings: Settings
    action: Action | None
    #: why there are no equations here (no kernel for these data, or T = 0 with a singular kernel), or None
    failure: str | None
    singular_at_zero_temperature: bool

    @property
    def usable(self) -> bool:
        return self.action is not None


def numerical_message(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


class KernelRenormalizationProblem:
    """Builds the engine :class:`Problem` and remembers what the exhaustive search found."""

    def __init__(self, model: Model, parameter: str | None) -> None:
        self.model = model
        self.parameter = parameter
        self._points: OrderedDict[float, Point] = OrderedDict()
        #: p -> [(x, stable)] of the last exhaustive searches (for naming and diagnostics)
        self.found: OrderedDict[float, list[tuple[np.ndarray, bool]]] = OrderedDict()
        #: p -> why the exhaustive search could not run
        self.search_errors: OrderedDict[float, str] = OrderedDict()
        self.reporter = Reporter(self)
        #: A sweep of the one-variable action on one spectrum reports its points together (the resolvent basis and
        #: the test kernel are shared by all of them).
        self.reports_together = (parameter is not None and model.variant == "scalar"
                                 and model.one_spectrum(parameter))
        self._held = HELD_SWEEP_POINTS if self.reports_together else HELD_POINTS

    # ---- plumbing ----------------------------------------------------------------------------
    def _key(self, p: float) -> float:
        return float(p) if self.parameter else 0.0

    def point(self, p: float) -> Point:
        key = self._key(p)
        pt = self._points.get(key)
        if pt is None:
            st = self.model.settings.at(self.parameter, key)
            failure = self.model.failure(st) if st.valid else None
            singular = st.valid and failure is None and self.model.singular_at_zero_temperature(st)
            usable = st.valid and failure is None and not singular
            # a sweep scans one spectrum at many points: there the scan table pays
            act = self.model.action(st, scan_table=self.parameter is not None) if usable else None
            pt = Point(st, act, failure, singular)
            self._points[key] = pt
            while len(self._points) > self._held:
                self._points.popitem(last=False)
        return pt

    def settings(self, p: float) -> Settings:
        return self.point(p).settings

    def action(self, p: float) -> Action:
        act = self.point(p).action
        if act is None:
            return self.model.action(self.settings(p))
        return act

    def usable(self, p: float) -> bool:
        return self.point(p).usable

    # ---- the hooks -----------------------------------------------------------------------------
    # The residual is ∂S/∂x divided by a positive weight per component (1 + Q̄, or 1 + Q̄/τ for the
    # conjugate equation): the roots are the same, and the residual stays O(1) even where Q̄ ≫ 1, so an
    # absolute tolerance is reachable whatever the scale of Q̄ (at T = 0 with strong priors Q̄ ~ 1e5).
    def _weights(self, act: Action, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """w(x) > 0 and its Jacobian dw/dx."""
        if isinstance(act, MeanCorrectedAction):
            q, qe = np.exp(x[0]), np.exp(x[0] + x[1])
            return np.array([1.0 + q, 1.0 + qe]), np.array([[q, 0.0], [qe, qe]])
        q = np.exp(x)
        return 1.0 + q, np.diag(q)

    def residual(self, x: np.ndarray, p: float) -> np.ndarray:
        act = self.point(p).action
        if act is None:
            return np.full(self.model.dim, np.nan)
        x = np.asarray(x, dtype=float)
        with np.errstate(**IGNORE):
            # the weights alone (their Jacobian is for Newton's)
            w = self._weights(act, x)[0] if isinstance(act, MeanCorrectedAction) else 1.0 + np.exp(x)
            return np.asarray(act.gradient(x), dtype=float) / w

    def jacobian(self, x: np.ndarray, p: float) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        with np.errstate(**IGNORE):
            act = self.action(p)
            assert not isinstance(act, NestedAction)
            g, h = act.gradient(x), act.hessian(x)
            w, dw = self._weights(act, x)
            return h / w[:, None] - (g / w**2)[:, None] * dw

    def free_entropy(self, x: np.ndarray, p: float) -> float:
        with np.errstate(**IGNORE):
            return -float(self.action(p).value(np.asarray(x, dtype=float)))

    def stability(self, x: np.ndarray, p: float) -> float:
        """Smallest curvature of S itself (not of the weighted residual): > 0 at a minimum."""
        with np.errstate(**IGNORE):
            return self._margin(self.action(p), np.asarray(x, dtype=float))

    def _margin(self, act: Action, x: np.ndarray) -> float:
        if isinstance(act, MeanCorrectedAction):
            return act.stability(x)
        if isinstance(act, ScalarAction):
            return act.smallest_curvature(x)
        # nested: central differences of the exact gradient
        e = 1e-5
        cols = [(act.gradient(x + e * v) - act.gradient(x - e * v)) / (2 * e) for v in np.eye(x.size)]
        hess = np.column_stack(cols)
        return float(np.linalg.eigvalsh(0.5 * (hess + hess.T))[0])

    def search(self, p: float) -> list[tuple[np.ndarray, bool]]:
        """Every stationary point at ``p`` with its stability, from the exhaustive scan (memoised)."""
        key = float(p)
        if key in self.found:
            return self.found[key]
        found: list[tuple[np.ndarray, bool]] = []
        act = self.point(p).action
        if act is not None and not isinstance(act, NestedAction):
            try:
                with np.errstate(**IGNORE):
                    if isinstance(act, ScalarAction):
                        points = [np.full(self.model.depth, s) for s in act.stationary_points()]
                    else:
                        points = act.stationary_points()
                    found = [(x, self._margin(act, x) > 0) for x in points if np.all(np.isfinite(x))]
            except (*NUMERICAL, ValueError) as exc:
                if not is_numerical(exc):
                    raise
                # e.g. labels so large that the root interval overflows: report, do not raise
                self.search_errors[key] = numerical_message(exc)
                while len(self.search_errors) > HELD_SEARCHES:
                    self.search_errors.popitem(last=False)
        self.found[key] = found
        while len(self.found) > HELD_SEARCHES:
            self.found.popitem(last=False)
        return found

    def enumerate(self, p: float) -> Sequence[tuple[str, np.ndarray]]:
        """Every stationary point, named by its position and stability."""
        found = self.search(p)
        names = _names([stable for _, stable in found])
        return [(name, x) for name, (x, _) in zip(names, found, strict=True)]

    def starts(self, p: float) -> dict[str, np.ndarray]:
        """NNGP (Q̄ = 1) always; for the nested recursion also the vanilla solution, its natural guess."""
        out = {"nngp": np.zeros(self.model.dim)}
        if self.model.variant == "nested" and self.usable(p):
            try:
                with np.errstate(**IGNORE):
                    roots = self.model.scalar_action(self.settings(p)).stationary_points()
            except (*NUMERICAL, ValueError) as exc:
                if not is_numerical(exc):
                    raise
                roots = []
            if roots:
                out["vanilla"] = np.full(self.model.depth, roots[0])
        return out

    def label(self, x: np.ndarray, p: float, start: str) -> str:
        """The name :meth:`enumerate` gives the stationary point at ``x`` (searched at ``p`` if needed)."""
        if self.model.variant == "nested":
            return UNIQUE_NAME
        found = self.search(p)
        names = _names([stable for _, stable in found])
        for name, (y, _) in zip(names, found, strict=True):
            if np.all(np.abs(np.asarray(x) - y) <= 1e-6 * np.maximum(1.0, np.abs(y))):
                return name
        return start

    def project(self, x: np.ndarray) -> np.ndarray:
        return np.clip(x, -LOG_BOX, LOG_BOX)

    # ---- what is reported ------------------------------------------------------------------------
    def report(self, x: np.ndarray, p: float) -> Report:
        return self.reporter.report(np.asarray(x, dtype=float), p)

    def report_many(self, points: Sequence[tuple[np.ndarray, float]]) -> list[Report]:
        return self.reporter.report_many(points)

    def notes(self, cat: Catalogue) -> Notes:
        """What the exhaustive search saw: how many stationary points, and anything a user must know."""
        p = cat.parameter
        model, pt = self.model, self.point(p)
        notes: list[str] = []
        found = self.found.get(float(p))
        if pt.failure:
            notes.append(f"no kernel for these data: {pt.failure}")
        if float(p) in self.search_errors:
            notes.append(f"the exhaustive search failed: {self.search_errors[float(p)]}")
        if pt.singular_at_zero_temperature:
            notes.append(
                "T = 0 needs an invertible kernel (P ≤ rank K) and this kernel is singular: no closed form; use T > 0."
            )
        if found is not None and len(found) > 1:
            notes.append(
                f"S has {len(found)} stationary points ({sum(s for _, s in found)} stable); every one is a branch."
            )
        if model.variant == "nested":
            notes.append("nested recursion: no exhaustive search; solved from the NNGP and vanilla starts.")
        diagnostics: dict[str, Any] = {
            "action_form": model.description,
            "stationary_points": None if found is None else len(found),
            "notes": notes,
        }
        return Notes(diagnostics=diagnostics)

    def build(self) -> Problem:
        variant = self.model.variant
        names = [f"log_Qbar_{k + 1}" for k in range(self.model.depth)] if variant != "mean_corrected" else None
        return Problem(
            residual=self.residual,
            dim=self.model.dim,
            starts=self.starts,
            jacobian=None if variant == "nested" else self.jacobian,
            free_entropy=self.free_entropy,
            stability=self.stability,
            kind="saddle" if variant == "mean_corrected" else "gradient",
            label=self.label,
            enumerate=None if variant == "nested" else self.enumerate,
            # The scan brackets every sign change of the reduced 1-D residual of the scalar action.
            exhaustive=variant == "scalar",
            project=self.project,
            names=names or ["log_Qbar", "log_1_plus_Q"],
            report=self.report,
            report_many=self.report_many if self.reports_together else None,
            notes=self.notes,
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
