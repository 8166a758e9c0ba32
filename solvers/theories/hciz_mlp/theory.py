"""The ``hciz_mlp`` theory: order parameters and observables of the shallow and reduced deep models."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from pydantic import BaseModel

from solvers.core.options import SolverOptions
from solvers.core.problem import Problem
from solvers.theories.base import Theory
from solvers.theories.hciz_mlp.models import MAX_ATOMS, cached_model, readout_atom_count
from solvers.theories.hciz_mlp.problems import deep_problem, shallow_problem, two_layer_problem
from solvers.theories.hciz_mlp.shallow import UNIVERSAL_TOL
from solvers.theories.hciz_mlp.spec import MAX_DEPTH, MAX_HERMITE, HCIZSpec

#: A layer counts as specialised when its overlap exceeds this.
SPECIALISED_TOL = 1e-6


def _per_atom(values: np.ndarray) -> float | list[float]:
    """One number for a one-atom readout law, a list over the atoms otherwise."""
    values = np.asarray(values, dtype=float)
    return float(values[0]) if values.size == 1 else [float(v) for v in values]


def _finite_or_none(value: float) -> float | None:
    return None if np.isnan(value) else float(value)


class HCIZTheory(Theory):
    name: ClassVar[str] = "hciz_mlp"
    summary: ClassVar[str] = (
        "Bayes-optimal learning curves of MLPs with width ∝ d and n ∝ d² samples (Barbier, Camilli, Nguyen, "
        "Pastore, Skerk 2025): replica-symmetric theory with a functional overlap Q(v), moment-matched HCIZ "
        "matrix-denoising term, universal and specialised branches, spinodal and first-order transition; "
        "two hidden layers with a linear component (overlaps Q_1(v2), Q_2(v, v2), product overlap Q_2:1(v) through "
        "a rectangular denoising channel); reduced deep model for L hidden layers."
    )
    spec_model: ClassVar[Any] = HCIZSpec
    sweepable: ClassVar[tuple[str, ...]] = ("alpha", "Delta", "gamma")
    size_limits: ClassVar[dict[str, float]] = {"hciz_depth": MAX_DEPTH, "hciz_hermite_terms": MAX_HERMITE}

    def sizes(self, spec: BaseModel) -> dict[str, tuple[tuple[str | int, ...], float]]:
        """Depth (one order parameter per layer) and the length of a Hermite list set the cost."""
        depth = spec.depth  # type: ignore[attr-defined]
        out: dict[str, tuple[tuple[str | int, ...], float]] = {"hciz_depth": (("depth",), depth)}
        act = spec.activation  # type: ignore[attr-defined]
        for i, a in enumerate(act if isinstance(act, list) else [act]):
            hermite = getattr(a, "hermite", None)
            if hermite is not None and len(hermite) > out.get("hciz_hermite_terms", ((), 0))[1]:
                loc = ("activation", i, "hermite") if isinstance(act, list) else ("activation", "hermite")
                out["hciz_hermite_terms"] = (loc, len(hermite))
        return out

    def sweepable_for(self, spec: BaseModel) -> tuple[str, ...]:
        """γ can be swept only when one width ratio describes the network (it then sets every layer)."""
        gamma = spec.gamma  # type: ignore[attr-defined]
        if spec.two_layer:  # type: ignore[attr-defined]
            return ("alpha", "Delta")  # one rectangular table per γ: not swept
        if isinstance(gamma, list) and len(set(gamma)) > 1:
            return ("alpha", "Delta")
        return self.sweepable

    # ---- the saddle point -----------------------------------------------------------------
    def problem(self, spec: BaseModel, parameter: str | None, options: SolverOptions) -> Problem:
        assert isinstance(spec, HCIZSpec)
        if parameter not in (None, *self.sweepable):
            raise ValueError(f"{parameter!r} is not sweepable")
        if spec.two_layer:
            return two_layer_problem(spec, parameter, options.quadrature_order)
        build = deep_problem if spec.depth >= 2 else shallow_problem
        return build(spec, parameter, options.quadrature_order)

    def _model(self, spec: HCIZSpec, n_atoms: int = 16) -> Any:
        return cached_model(spec, n_atoms)

    def _atoms(self, spec: HCIZSpec, x: np.ndarray) -> int:
        """Atom count of the solution vector (it fixes the discretisation the solve used)."""
        size = len(np.asarray(x))
        if spec.two_layer:
            default = readout_atom_count(None)
            for n in (default, *range(1, MAX_ATOMS + 1)):
                if cached_model(spec, n).dim == size:
                    return n
            raise ValueError(f"no discretisation of this spec has {size} unknowns")
        if spec.depth >= 2:
            return size - (spec.depth - 1)
        probe = cached_model(spec, 2)
        return 1 if probe.pinned else size - 1 - int(probe.has_tau)

    def _model_for(self, spec: HCIZSpec, x: np.ndarray) -> Any:
        n = self._atoms(spec, x)
        if spec.two_layer:
            return self._model(spec, n)
        n_cont = n if spec.readout in ("gaussian", "uniform") else readout_atom_count(None)
        return self._model(spec, n_cont)

    # ---- reporting -------------------------------------------------------------------------
    def order_parameters(self, spec: BaseModel, x: np.ndarray, p: float) -> dict[str, Any]:
        assert isinstance(spec, HCIZSpec)
        model = self._model_for(spec, x)
        if spec.two_layer:
            return self._two_layer_order_parameters(model, x, spec.alpha)
        if spec.depth >= 2:
            st = model.state(x, spec.alpha)
            Q = [float(q) for q in st.Q_inner] + [_per_atom(st.Q_last)]
            Q_hat = [float(q) for q in st.Q_hat_inner] + [_per_atom(st.Q_hat_last)]
            out: dict[str, Any] = {"Q": Q, "Q_hat": Q_hat, "R2": None, "R2_hat": None, "tau": None}
        else:
            st = model.state(x, spec.alpha)
            out = {
                "Q": _per_atom(st.Q),
                "R2": float(st.R2),
                "Q_hat": _per_atom(st.Q_hat),
                "R2_hat": float(st.R2_hat),
                "tau": _finite_or_none(st.tau),
            }
        if model.readout.size > 1:
            out["v"] = [float(v) for v in model.readout.v]
            out["v_probability"] = [float(q) for q in model.readout.p]
        return out

    def observables(self, spec: BaseModel, x: np.ndarray, p: float) -> dict[str, Any]:
        assert isinstance(spec, HCIZSpec)
        model = self._model_for(spec, x)
        alpha = spec.alpha
        if spec.two_layer:
            return self._two_layer_observables(model, x, alpha)
        st = model.state(x, alpha)
        out: dict[str, Any] = {
            "generalization_error": float(max(st.eps, 0.0)) if spec.depth >= 2 else float(max(st.eps_new, 0.0)),
            "free_entropy": float(model.free_entropy(x, alpha)),
            "mutual_information": float(model.mutual_information(x, alpha)),
            "K_d": float(model.K_d),
        }
        if spec.depth >= 2:
            Q_layers = [*list(st.Q_inner), float(np.max(st.Q_last))]
            out["K_star"] = float(st.K_star)
            out["specialized_layers"] = [l + 1 for l, q in enumerate(Q_layers) if q > SPECIALISED_TOL]
            out["phase"] = "specialized" if out["specialized_layers"] else "universal"
        else:
            out["K_star"] = float(model.K_d - st.eps_new)
            out["R_d"] = float(model.R_d)
            specialised = (not model.pinned) and float(np.max(np.abs(st.Q))) > UNIVERSAL_TOL
            out["phase"] = "specialized" if specialised else "universal"
            out["specialized_layers"] = [1] if specialised else []
            out["hciz_margin"] = self._hciz_margin(model, st)
        return out

    @staticmethod
    def _two_layer_order_parameters(model: Any, x: np.ndarray, alpha: float) -> dict[str, Any]:
        """Q₁ per effective readout |v₂|, Q₂ per (v, v₂) (rows: readout atoms), Q₂:₁ and τ per readout atom;
        ``Q`` holds the layer averages E_{v₂}Q₁ and E_{v,v₂}Q₂."""
        st = model.state(x, alpha)
        ps, pv = model.hidden.p, model.readout.p
        out: dict[str, Any] = {
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
        return out

    @staticmethod
    def _two_layer_observables(model: Any, x: np.ndarray, alpha: float) -> dict[str, Any]:
        st = model.state(x, alpha)
        Q1, Q2 = st.Q1, st.Q2
        layers = [l + 1 for l, q in enumerate([0.0 if model.quench else float(np.max(Q1)), float(np.max(Q2))])
                  if q > SPECIALISED_TOL]
        product = float(np.max(st.Q21)) > SPECIALISED_TOL
        return {
            "generalization_error": float(max(st.eps, 0.0)),
            "free_entropy": float(model.free_entropy(x, alpha)),
            "mutual_information": float(model.mutual_information(x, alpha)),
            "K_d": float(model.K_d),
            "K_star": float(st.K_star),
            "specialized_layers": layers,
            "product_overlap": float(np.dot(model.readout.p, st.Q21)),
            "phase": "specialized" if layers else ("product_overlap" if product else "universal"),
            "prefactors": model.prefactors,
        }

    @staticmethod
    def _hciz_margin(model: Any, st: Any) -> float:
        """1 − v_max² m_S(R̂_2)/γ: below 0 the HCIZ term alone makes Q = 0 linearly unstable (see docs)."""
        if model.pinned or st.R2_hat == 0.0:
            return 1.0
        m = 1.0 if np.isinf(st.R2_hat) else float(model.denoiser.m(st.R2_hat))
        return float(1.0 - float(np.max(model.readout.v2)) * m / model.gamma)
