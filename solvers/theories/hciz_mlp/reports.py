"""Order parameters and observables of a solution, from the model the solve used at that control value."""

from __future__ import annotations

from typing import Any

import numpy as np

from solvers.core.results import Report
from solvers.theories.hciz_mlp.deep import DeepModel
from solvers.theories.hciz_mlp.shallow import UNIVERSAL_TOL, ShallowModel, ShallowState
from solvers.theories.hciz_mlp.two_layer import TwoLayerModel

#: A layer counts as specialised when its overlap exceeds this.
SPECIALISED_TOL = 1e-6


def _per_atom(values: np.ndarray) -> float | list[float]:
    """One number for a one-atom readout law, a list over the atoms otherwise."""
    values = np.asarray(values, dtype=float)
    return float(values[0]) if values.size == 1 else [float(v) for v in values]


def _finite_or_none(value: float) -> float | None:
    return None if np.isnan(value) else float(value)


def _readout(model: ShallowModel | DeepModel | TwoLayerModel) -> dict[str, Any]:
    if model.readout.size <= 1:
        return {}
    return {"v": [float(v) for v in model.readout.v], "v_probability": [float(q) for q in model.readout.p]}


def hciz_margin(model: ShallowModel, st: ShallowState) -> float:
    """1 − v_max² m_S(R̂_2)/γ: below 0 the HCIZ term alone makes Q = 0 linearly unstable (see docs)."""
    if model.pinned or st.R2_hat == 0.0:
        return 1.0
    m = 1.0 if np.isinf(st.R2_hat) else float(model.denoiser.m(st.R2_hat))
    return float(1.0 - float(np.max(model.readout.v2)) * m / model.gamma)


def shallow_report(model: ShallowModel, alpha: float, x: np.ndarray) -> Report:
    st = model.state(x, alpha)
    order = {
        "Q": _per_atom(st.Q),
        "R2": float(st.R2),
        "Q_hat": _per_atom(st.Q_hat),
        "R2_hat": float(st.R2_hat),
        "tau": _finite_or_none(st.tau),
        **_readout(model),
    }
    specialised = (not model.pinned) and float(np.max(np.abs(st.Q))) > UNIVERSAL_TOL
    observables: dict[str, Any] = {
        "generalization_error": float(max(st.eps_new, 0.0)),
        "free_entropy": float(model.free_entropy(x, alpha)),
        "mutual_information": float(model.mutual_information(x, alpha)),
        "K_d": float(model.K_d),
        "K_star": float(model.K_d - st.eps_new),
        "R_d": float(model.R_d),
        "phase": "specialized" if specialised else "universal",
        "specialized_layers": [1] if specialised else [],
        "hciz_margin": hciz_margin(model, st),
    }
    return Report(order, observables)


def deep_report(model: DeepModel, alpha: float, x: np.ndarray) -> Report:
    st = model.state(x, alpha)
    order = {
        "Q": [float(q) for q in st.Q_inner] + [_per_atom(st.Q_last)],
        "Q_hat": [float(q) for q in st.Q_hat_inner] + [_per_atom(st.Q_hat_last)],
        "R2": None,
        "R2_hat": None,
        "tau": None,
        **_readout(model),
    }
    Q_layers = [*list(st.Q_inner), float(np.max(st.Q_last))]
    layers = [layer + 1 for layer, q in enumerate(Q_layers) if q > SPECIALISED_TOL]
    observables: dict[str, Any] = {
        "generalization_error": float(max(st.eps, 0.0)),
        "free_entropy": float(model.free_entropy(x, alpha)),
        "mutual_information": float(model.mutual_information(x, alpha)),
        "K_d": float(model.K_d),
        "K_star": float(st.K_star),
        "specialized_layers": layers,
        "phase": "specialized" if layers else "universal",
    }
    return Report(order, observables)


def two_layer_report(model: TwoLayerModel, alpha: float, x: np.ndarray) -> Report:
    """Q₁ per effective readout |v₂|, Q₂ per (v, v₂) (rows: readout atoms), Q₂:₁ and τ per readout atom (the
    per-neuron specialisation maps); ``Q`` holds the layer averages E_{v₂}Q₁ and E_{v,v₂}Q₂."""
    st = model.state(x, alpha)
    ps, pv = model.hidden.p, model.readout.p
    order: dict[str, Any] = {
        "Q": [float(np.dot(ps, st.Q1)), float(pv @ st.Q2 @ ps)],
        "Q_hat": [None if model.quench else float(np.dot(ps, st.Q_hat1)), float(pv @ st.Q_hat2 @ ps)],
        "R2": None,
        "R2_hat": None,
        "Q1": [float(q) for q in st.Q1],
        "Q2": [[float(q) for q in row] for row in st.Q2],
        "Q21": _per_atom(st.Q21),
        "Q_hat1": None if model.quench else [float(q) for q in st.Q_hat1],
        "Q_hat2": [[float(q) for q in row] for row in st.Q_hat2],
        "Q_hat21": _per_atom(st.Q_hat21),
        "tau": _per_atom(st.tau) if model.has_product else None,
        "v2": [float(v) for v in model.hidden.v],
        "v2_probability": [float(p) for p in ps],
        "v": [float(v) for v in model.readout.v],
        "v_probability": [float(p) for p in pv],
    }
    maxima = [0.0 if model.quench else float(np.max(st.Q1)), float(np.max(st.Q2))]
    layers = [layer + 1 for layer, q in enumerate(maxima) if q > SPECIALISED_TOL]
    product = float(np.max(st.Q21)) > SPECIALISED_TOL
    observables: dict[str, Any] = {
        "generalization_error": float(max(st.eps, 0.0)),
        "free_entropy": float(model.free_entropy(x, alpha)),
        "mutual_information": float(model.mutual_information(x, alpha)),
        "K_d": float(model.K_d),
        "K_star": float(st.K_star),
        "specialized_layers": layers,
        "product_overlap": float(np.dot(pv, st.Q21)),
        "phase": "specialized" if layers else ("product_overlap" if product else "universal"),
        "prefactors": model.prefactors,
    }
    return Report(order, observables)
