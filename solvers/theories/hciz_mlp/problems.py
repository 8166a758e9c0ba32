"""The engine's view of the HCIZ theory: a fixed-point Problem in α, Δ or γ, with starts, labels and stability.

Stability margin: 1 − max Re λ(J) for J the Jacobian of the fixed-point map on the overlaps alone (for the
shallow model ε and τ are eliminated by a Schur complement; the eigenvalues do not depend on whether the
overlaps are written as Q or as y = ln(1 + Q̂)). A real eigenvalue above 1 makes a solution
repel damped iteration at every mixing — the middle branch between a spinodal and the first-order
point — and the margin changes sign exactly at a fold; complex or negative eigenvalues outside the unit
circle are cured by damping and are not instabilities of the saddle point.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from threading import Lock
from typing import Any

import numpy as np

from solvers.core.newton import fd_jacobian
from solvers.core.problem import Event, Problem
from solvers.core.results import Report
from solvers.theories.hciz_mlp.deep import DeepModel
from solvers.theories.hciz_mlp.models import deep_model, readout_atom_count, shallow_model, two_layer_model
from solvers.theories.hciz_mlp.reports import deep_report, shallow_report, two_layer_report
from solvers.theories.hciz_mlp.shallow import T_MAX, UNIVERSAL_TOL, ShallowModel
from solvers.theories.hciz_mlp.spec import HCIZSpec
from solvers.theories.hciz_mlp.two_layer import T_MAX as TWO_LAYER_T_MAX
from solvers.theories.hciz_mlp.two_layer import TwoLayerModel

#: Overlap from which a neuron (atom of the readout law) counts as specialised in branch names.
SPECIALIZED_Q = 0.5
#: Informative start: every overlap at perfect specialisation (clipped to just below 1 inside the map).
#: Starting lower (e.g. 0.99) lands Newton on the unstable middle branch of deep models near α_e.
INFORMATIVE_Q = 1.0
#: Largest log-SNR y = ln(1 + Q̂) of an iterate (Q = 1 − e^{−y} = 1 to machine precision beyond ~37).
MAX_LOG_SNR = 60.0
#: Branch name (and event name) of noiseless perfect recovery, Q ≡ 1 and ε = 0 (shallow model, Δ = 0).
PERFECT_RECOVERY = "perfect_recovery"
PERFECT_RECOVERY_DETAIL = (
    "noiseless perfect recovery threshold α = γ: Q ≡ 1, ε = 0 becomes stable and the unstable specialised branch "
    "joins it at Q̂ = ∞ (a singular point of the Δ = 0 equations); its free entropy is infinite, so beyond it "
    "perfect recovery is the equilibrium")
#: Sign-scan grid for one-atom shallow models (dense near Q = 1, where the specialised branch lives).
SCAN_GRID = np.unique(np.concatenate([[0.0], np.linspace(2e-3, 0.98, 160), 1.0 - np.geomspace(0.02, 1e-9, 50)]))


class ModelAt:
    """Maps a control value p to (model, α), caching models when γ or Δ is swept.

    One per problem: the solve, the special points and the reports of every point all read the
    models it holds (never rebuilt from the length of a solution vector).
    """

    def __init__(self, spec: HCIZSpec, parameter: str | None, n_atoms: int, build: Callable[..., Any]):
        self.spec = spec
        self.parameter = parameter
        self.n_atoms = n_atoms
        self.build = build
        self.cache: dict[float, Any] = {}
        self.fixed = build(spec, n_atoms) if parameter in (None, "alpha") else None

    def __call__(self, p: float) -> tuple[Any, float]:
        if self.fixed is not None:
            return self.fixed, float(p) if self.parameter == "alpha" else float(self.spec.alpha)
        key = float(p)
        model = self.cache.get(key)
        if model is None:
            kw = {"gamma": key} if self.parameter == "gamma" else {"Delta": key}
            model = self.build(self.spec, self.n_atoms, **kw)
            if len(self.cache) > 256:
                self.cache.clear()
            self.cache[key] = model
        return model, float(self.spec.alpha)

    def probe(self) -> Any:
        """The model at the spec's own value."""
        return self(self.spec.alpha if self.parameter in (None, "alpha") else getattr(self.spec, self.parameter))[0]


class ModelPlane:
    """Maps λ = (λ1, λ2), two of (α, Δ, γ), to (model, α): one bound object for a whole parameter plane.

    α enters the map as an argument; a model is built per (γ, Δ) and kept in a small LRU that
    belongs to this object (a line moves both parameters at every step, so only recent values pay).
    """

    MEMO = 32

    def __init__(self, spec: HCIZSpec, parameters: tuple[str, str], n_atoms: int, build: Callable[..., Any]):
        self.spec = spec
        self.parameters = parameters
        self.n_atoms = n_atoms
        self.build = build
        self._models: OrderedDict[tuple[float | None, float | None], Any] = OrderedDict()
        self._lock = Lock()

    def __call__(self, lam: Any) -> tuple[Any, float]:
        vals = dict(zip(self.parameters, (float(v) for v in lam), strict=True))
        key = (vals.get("gamma"), vals.get("Delta"))
        with self._lock:
            model = self._models.get(key)
            if model is not None:
                self._models.move_to_end(key)
        if model is None:
            model = self.build(self.spec, self.n_atoms, gamma=key[0], Delta=key[1])
            with self._lock:
                self._models[key] = model
                while len(self._models) > self.MEMO:
                    self._models.popitem(last=False)
        return model, vals.get("alpha", float(self.spec.alpha))

    def probe(self) -> Any:
        own = {"alpha": self.spec.alpha, "Delta": self.spec.Delta, "gamma": self.spec.gammas[0]}
        return self(np.array([own[p] for p in self.parameters]))[0]


def plane_problem(spec: HCIZSpec, parameters: tuple[str, str], quadrature_order: int | None) -> Problem:
    """The problem over a plane of two of (α, Δ, γ): its control value is λ itself (see ``ModelPlane``)."""
    n_atoms = readout_atom_count(quadrature_order)
    if spec.two_layer:
        if "gamma" in parameters:
            raise ValueError("the two-hidden-layer model is not sweepable in gamma")
        return two_layer_problem_at(spec, ModelPlane(spec, parameters, n_atoms, two_layer_model))
    deep = spec.depth >= 2
    at = ModelPlane(spec, parameters, n_atoms, deep_model if deep else shallow_model)
    return (deep_problem_at if deep else shallow_problem_at)(spec, at)


def branch_label(Q: np.ndarray, v: np.ndarray, margin: Callable[[], float]) -> str:
    """universal (Q ≡ 0); specialized when some overlap reaches 1/2, weakly_specialized below; suffix
    ``_unstable`` for a repelling solution; for a multi-atom readout law, ``[|v|>=a]`` names the smallest
    |v| whose neurons have specialised (neurons with large |v| specialise first)."""
    Q = np.asarray(Q, dtype=float)
    if float(np.max(np.abs(Q))) <= UNIVERSAL_TOL:
        return "universal"
    strong = Q >= SPECIALIZED_Q
    name = "specialized" if np.any(strong) else "weakly_specialized"
    if margin() <= 0:
        name += "_unstable"
    if np.any(strong) and Q.size > 1:
        name += f"[|v|>={float(np.min(np.asarray(v)[strong])):.3g}]"
    return name


def shallow_problem(spec: HCIZSpec, parameter: str | None, quadrature_order: int | None) -> Problem:
    return shallow_problem_at(spec, ModelAt(spec, parameter, readout_atom_count(quadrature_order), shallow_model))


def shallow_problem_at(spec: HCIZSpec, at: ModelAt | ModelPlane) -> Problem:
    """The shallow model's problem; its control value p is whatever ``at`` maps to (model, α)."""
    probe: ShallowModel = at.probe()
    dim = probe.dim

    def G(x: np.ndarray, p: float) -> np.ndarray:
        model, alpha = at(p)
        return model.fixed_point(x, alpha)

    def free_entropy(x: np.ndarray, p: float) -> float:
        model, alpha = at(p)
        return model.free_entropy(x, alpha)

    def jacobian(x: np.ndarray, p: float) -> np.ndarray:
        model, alpha = at(p)
        return model.jacobian(x, alpha) - np.eye(model.dim)

    def stability(x: np.ndarray, p: float) -> float:
        model, alpha = at(p)
        return model.stability(model.jacobian(x, alpha))

    def start(model: ShallowModel, q: float) -> np.ndarray:
        """Overlaps q on every atom, ε halfway in its range, τ from the GOE inverse T/(1 − T)."""
        a, ro = model.act, model.readout
        Q = np.full(ro.size, q)
        T = float(np.dot(ro.p, ro.v2 * Q**2))
        eps = float(a.g1 - ro.expect(ro.v2 * a.g(Q)) + 0.25 * a.mu2**2)
        return model.join(model.channel.log_snr_of_overlap(Q), eps, float(np.log1p(T / max(1.0 - T, 1e-12))))

    def starts(p: float) -> dict[str, np.ndarray]:
        model, _ = at(p)
        out = {"uninformative": start(model, 0.0)}
        if not model.pinned:
            out["informative"] = start(model, INFORMATIVE_Q)
        return out

    def enumerate_roots(p: float) -> list[tuple[str, np.ndarray]]:
        model, alpha = at(p)
        universal, roots = model.scan(alpha, SCAN_GRID)
        return [("uninformative", universal)] + [(f"scan_{i}", x) for i, x in enumerate(roots)]

    def label(x: np.ndarray, p: float, start: str) -> str:
        model, alpha = at(p)
        if model.pinned:
            return "universal"
        if model.perfect_recovery(x, alpha):
            return PERFECT_RECOVERY
        return branch_label(model.overlaps(x), model.readout.v, lambda: stability(x, p))

    def edge(x: np.ndarray, p: float) -> bool:
        model, alpha = at(p)
        return model.perfect_recovery(x, alpha)

    n_q = probe.n_q

    def project(x: np.ndarray) -> np.ndarray:
        y = np.array(x, dtype=float)
        y[:n_q] = np.clip(y[:n_q], 0.0, MAX_LOG_SNR)
        y[n_q:] = np.maximum(y[n_q:], 0.0)  # ε ≥ 0 and t = ln(1 + τ) ≥ 0
        if probe.has_tau:
            y[-1] = min(y[-1], T_MAX)
        return y

    def report(x: np.ndarray, p: float) -> Report:
        model, alpha = at(p)
        return shallow_report(model, alpha, np.asarray(x, dtype=float))

    names = [f"log1p_Qhat[{i}]" for i in range(n_q)] + ["epsilon"] + (["log1p_tau"] if probe.has_tau else [])
    return Problem(
        residual=None,
        dim=dim,
        starts=starts,
        fixed_point=G,
        jacobian=jacobian,
        free_entropy=free_entropy,
        stability=stability,
        kind="fixed_point",
        label=label,
        enumerate=enumerate_roots if (probe.readout.size == 1 and not probe.pinned) else None,
        project=project,
        scale=np.ones(dim),
        names=names,
        report=report,
        edge=edge if probe.Delta == 0.0 else None,
        events=perfect_recovery_events(at) if isinstance(at, ModelAt) and at.parameter != "Delta" else (),
    )


def perfect_recovery_events(at: ModelAt) -> tuple[Event, ...]:
    """The noiseless perfect-recovery threshold α_PR = γ as an event, where the theory knows it in closed form.

    The specialised branch that joins perfect recovery there does so at Q̂ = ∞ (the edge of the domain), where no
    fold or crossing can be located; the indicator α/α_PR − 1 changes sign at the limit itself.
    """
    if at.probe().perfect_recovery_threshold is None:
        return ()

    def indicator(x: np.ndarray, p: float) -> float:
        model, alpha = at(p)
        threshold = model.perfect_recovery_threshold
        return alpha / threshold - 1.0 if threshold else float("nan")

    return (Event(PERFECT_RECOVERY, indicator, transition="first_order", branches=(PERFECT_RECOVERY,),
                  detail=PERFECT_RECOVERY_DETAIL),)


def deep_problem(spec: HCIZSpec, parameter: str | None, quadrature_order: int | None) -> Problem:
    return deep_problem_at(spec, ModelAt(spec, parameter, readout_atom_count(quadrature_order), deep_model))


def deep_problem_at(spec: HCIZSpec, at: ModelAt | ModelPlane) -> Problem:
    """The reduced deep model's problem; its control value p is whatever ``at`` maps to (model, α)."""
    probe: DeepModel = at.probe()
    dim = probe.dim

    def G(x: np.ndarray, p: float) -> np.ndarray:
        model, alpha = at(p)
        return model.fixed_point(x, alpha)

    def free_entropy(x: np.ndarray, p: float) -> float:
        model, alpha = at(p)
        return model.free_entropy(x, alpha)

    def stability(x: np.ndarray, p: float) -> float:
        model, alpha = at(p)
        J = fd_jacobian(lambda y: model.fixed_point(y, alpha), np.asarray(x, dtype=float))
        return float(1.0 - np.max(np.linalg.eigvals(J).real))

    def starts(p: float) -> dict[str, np.ndarray]:
        y1 = float(probe.channel.log_snr_of_overlap(INFORMATIVE_Q))
        return {"uninformative": np.zeros(dim), "informative": np.full(dim, y1)}

    def label(x: np.ndarray, p: float, start: str) -> str:
        Q = probe.overlaps(x)
        return branch_label(Q[probe.depth - 1 :] if float(np.max(np.abs(Q))) > UNIVERSAL_TOL else Q,
                            probe.readout.v, lambda: stability(x, p))

    def report(x: np.ndarray, p: float) -> Report:
        model, alpha = at(p)
        return deep_report(model, alpha, np.asarray(x, dtype=float))

    return Problem(
        residual=None,
        dim=dim,
        starts=starts,
        fixed_point=G,
        free_entropy=free_entropy,
        stability=stability,
        kind="fixed_point",
        label=label,
        project=lambda x: np.clip(np.asarray(x, dtype=float), 0.0, MAX_LOG_SNR),
        scale=np.ones(dim),
        names=[f"log1p_Qhat{l + 1}" for l in range(probe.depth - 1)]
        + [f"log1p_Qhat{probe.depth}[{j}]" for j in range(probe.readout.size)],
        report=report,
    )


# ---- two hidden layers with a linear component --------------------------------------------------------
#: Data SNR of the product channel at the starts where W^(2:1) is known (Q_2:1 = 1 − mmse(τ + 1e3) ≈ 1).
PRODUCT_START_SNR = 1e3


def two_layer_label(model: TwoLayerModel, x: np.ndarray, alpha: float, margin: Callable[[], float]) -> str:
    """universal (every overlap 0); product_overlap (only Q_2:1 > 0); first_layer_specialized (some Q₁ ≥ 1/2,
    every Q₂ < 1/2); second_layer_specialized (the converse); specialized (both); weakly_specialized (some
    overlap of a layer above zero, none at 1/2); prefix ``quenched_`` for Q₁ pinned at 1; suffix ``_unstable``
    for a repelling solution; ``[|v2|>=a]`` the smallest effective readout |v₂| whose first-layer neurons have
    specialised when that is not all of them (neurons with large |v₂| specialise first)."""
    Q1, Q2, Q21 = model.overlaps(x, alpha)
    tol = UNIVERSAL_TOL
    layer1 = (not model.quench) and float(np.max(Q1)) > tol
    layer2 = float(np.max(Q2)) > tol
    strong1 = (not model.quench) and bool(np.any(Q1 >= SPECIALIZED_Q))
    strong2 = bool(np.any(Q2 >= SPECIALIZED_Q))
    if not layer1 and not layer2:
        name = "product_overlap" if float(np.max(Q21)) > tol else "universal"
    elif strong1 and strong2:
        name = "specialized"
    elif strong1:
        name = "first_layer_specialized"
    elif strong2:
        name = "second_layer_specialized"
    else:
        name = "weakly_specialized"
    if model.quench:
        name = "quenched_" + name
    if name not in ("universal", "quenched_universal") and margin() <= 0:
        name += "_unstable"
    if strong1 and not np.all(Q1 >= SPECIALIZED_Q):
        name += f"[|v2|>={float(np.min(model.hidden.v[Q1 >= SPECIALIZED_Q])):.3g}]"
    return name


def two_layer_problem(spec: HCIZSpec, parameter: str | None, quadrature_order: int | None) -> Problem:
    if parameter == "gamma":
        raise ValueError("the two-hidden-layer model is not sweepable in gamma")
    return two_layer_problem_at(spec, ModelAt(spec, parameter, readout_atom_count(quadrature_order), two_layer_model))


def two_layer_problem_at(spec: HCIZSpec, at: ModelAt | ModelPlane) -> Problem:
    """The two-hidden-layer model's problem; its control value p is whatever ``at`` maps to (model, α)."""
    probe: TwoLayerModel = at.probe()
    dim = probe.dim
    S, V = probe.S, probe.V
    big = float(probe.channel.log_snr_of_overlap(INFORMATIVE_Q))
    t_known = float(np.log1p(PRODUCT_START_SNR))

    def G(x: np.ndarray, p: float) -> np.ndarray:
        model, alpha = at(p)
        return model.fixed_point(x, alpha)

    def jacobian(x: np.ndarray, p: float) -> np.ndarray:
        model, alpha = at(p)
        return model.jacobian(x, alpha) - np.eye(model.dim)

    def free_entropy(x: np.ndarray, p: float) -> float:
        model, alpha = at(p)
        return model.free_entropy(x, alpha)

    def stability(x: np.ndarray, p: float) -> float:
        model, alpha = at(p)
        return model.margin(x, alpha)

    def start(q1: float, q2: float, known_product: bool) -> np.ndarray:
        y1 = np.full(S, big if q1 else 0.0)
        y2 = np.full((V, S), big if q2 else 0.0)
        return probe.join(y1, y2, np.full(V, t_known if known_product else 0.0))

    def starts(p: float) -> dict[str, np.ndarray]:
        out = {"uninformative": start(0, 0, False)}
        if probe.has_product:
            out["product_overlap"] = start(0, 0, True)
        if not probe.quench:
            # Q₂ = Q₂:₁ = 0 is invariant: from here the second layer learns only if that subspace is unstable.
            out["first_layer"] = start(1, 0, False)
            if probe.has_product:
                out["first_layer_product"] = start(1, 0, True)
        out["informative"] = start(1, 1, True)
        return out

    def label(x: np.ndarray, p: float, start_name: str) -> str:
        model, alpha = at(p)
        return two_layer_label(model, x, alpha, lambda: stability(x, p))

    n1, VS = probe.n1, V * S

    def project(x: np.ndarray) -> np.ndarray:
        y = np.array(x, dtype=float)
        y[: n1 + VS] = np.clip(y[: n1 + VS], 0.0, MAX_LOG_SNR)
        y[n1 + VS :] = np.clip(y[n1 + VS :], 0.0, TWO_LAYER_T_MAX)
        return y

    def report(x: np.ndarray, p: float) -> Report:
        model, alpha = at(p)
        return two_layer_report(model, alpha, np.asarray(x, dtype=float))

    names = ([f"log1p_Qhat1[{s}]" for s in range(probe.n1)]
             + [f"log1p_Qhat2[{v},{s}]" for v in range(V) for s in range(S)]
             + [f"log1p_Qhat21[{v}]" for v in range(probe.n21)])
    return Problem(
        residual=None,
        dim=dim,
        starts=starts,
        fixed_point=G,
        jacobian=jacobian,
        free_entropy=free_entropy,
        stability=stability,
        kind="fixed_point",
        label=label,
        project=project,
        scale=np.ones(dim),
        names=names,
        report=report,
    )
