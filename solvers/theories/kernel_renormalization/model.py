"""A validated spec turned into numbers: data arrays, cached spectra and the action at given priors.

``Settings`` holds the four continuous parameters a sweep may vary; ``Model`` maps settings to
the right action (one-variable / vanilla deep, nested deep, or mean-corrected ReLU) built on
the cached spectrum, so a sweep in T, N1 or λ1 (and λ0 for relu/linear) never re-diagonalises.
A model is built once per solve or sweep and holds the spectra it uses (and the eigendecompositions
of nested kernels at its solutions), so it never depends on what the shared cache still holds.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Literal

import numpy as np

from solvers.theories.kernel_renormalization.datasets import Dataset, materialize
from solvers.theories.kernel_renormalization.kernels import input_covariance
from solvers.theories.kernel_renormalization.mean_action import MeanCorrectedAction
from solvers.theories.kernel_renormalization.nested_action import NestedAction
from solvers.theories.kernel_renormalization.scalar_action import ScalarAction, ScanTable
from solvers.theories.kernel_renormalization.spec import KernelRenormalizationSpec
from solvers.theories.kernel_renormalization.spectrum import (
    KernelFailure,
    Spectrum,
    cached_spectrum,
    feature_scale,
    kernel_priors,
    readout_scale,
    spectrum_key,
    spectrum_of,
)

Variant = Literal["scalar", "nested", "mean_corrected"]
SWEEPABLE = ("T", "N1", "lambda0", "lambda1")
#: Spectra a model holds (a λ0 sweep of erf data visits one per value).
HELD_SPECTRA = 4
#: Eigendecompositions of nested kernels a model holds (one per solution).
HELD_NESTED = 4


@dataclass(frozen=True)
class Settings:
    T: float
    N1: float
    lambda0: float
    lambda1: float

    @classmethod
    def of(cls, spec: KernelRenormalizationSpec) -> Settings:
        return cls(float(spec.T), float(spec.N1), float(spec.lambda0), float(spec.lambda1))

    def at(self, parameter: str | None, value: float) -> Settings:
        if parameter is None:
            return self
        if parameter not in SWEEPABLE:
            raise ValueError(f"{parameter!r} is not sweepable; choose one of {SWEEPABLE}")
        # built directly: dataclasses.replace costs several times as much, and a sweep asks at every corrector step
        values = {"T": self.T, "N1": self.N1, "lambda0": self.lambda0, "lambda1": self.lambda1, parameter: float(value)}
        return Settings(**values)

    @property
    def valid(self) -> bool:
        return self.T >= 0 and self.N1 > 0 and self.lambda0 > 0 and self.lambda1 > 0


class Model:
    def __init__(self, spec: KernelRenormalizationSpec) -> None:
        self.spec = spec
        self.activation = spec.activation
        self.depth = int(spec.depth)
        self.dataset: Dataset = materialize(spec.data)
        homogeneous_deep = spec.activation != "erf"
        if spec.relu_mean_correction:
            self.variant: Variant = "mean_corrected"
        elif self.depth > 1 and spec.deep_kernel == "nested" and not homogeneous_deep:
            self.variant = "nested"
        else:
            # depth 1, vanilla deep, or nested with a homogeneous σ (identical to vanilla)
            self.variant = "scalar"
        self.settings = Settings.of(spec)
        self._spectra: OrderedDict[tuple, Spectrum | KernelFailure] = OrderedDict()
        self._nested: OrderedDict[tuple, Spectrum] = OrderedDict()
        self._tables: OrderedDict[tuple, ScanTable] = OrderedDict()

    @property
    def description(self) -> str:
        if self.variant == "mean_corrected":
            return "one hidden layer, ReLU with the two-order-parameter mean-corrected action S(Q̄, Q)"
        if self.variant == "nested":
            return f"{self.depth} hidden layers, nested recursion K^(l) = (Q̄_l/λ1) F(K^(l-1)), dense evaluation"
        if self.depth > 1 and self.spec.deep_kernel == "nested":
            return (f"{self.depth} hidden layers, nested recursion; for {self.activation} it equals the vanilla "
                    "one, K_R = (Π Q̄_l) K^(L)")
        if self.depth > 1:
            return f"{self.depth} hidden layers, vanilla recursion K_R = (Π Q̄_l) K^(L)"
        return "one hidden layer, one-variable action S(Q̄)"

    @property
    def dim(self) -> int:
        return 2 if self.variant == "mean_corrected" else self.depth

    # ---- spectra -------------------------------------------------------------------------------
    def spectrum(self, st: Settings, *, mean_mode: bool | None = None) -> Spectrum:
        mm = (self.variant == "mean_corrected") if mean_mode is None else mean_mode
        key = spectrum_key(self.dataset, self.activation, self.depth, st.lambda0, st.lambda1, mm)
        held = self._spectra.get(key)
        if held is None:
            try:
                held = cached_spectrum(self.dataset, self.activation, self.depth, st.lambda0, st.lambda1, mm)
            except KernelFailure as exc:
                held = exc
            self._spectra[key] = held
            while len(self._spectra) > HELD_SPECTRA:
                self._spectra.popitem(last=False)
        else:
            self._spectra.move_to_end(key)
        if isinstance(held, KernelFailure):
            raise KernelFailure(str(held))
        return held

    def one_spectrum(self, parameter: str) -> bool:
        """Whether every value of ``parameter`` has one spectrum: the priors the kernel is built at
        (:func:`kernel_priors`) do not depend on it (T and N1 never enter the kernel)."""
        st = self.settings
        other = st.at(parameter, 2.0 * getattr(st, parameter) + 1.0)
        return (kernel_priors(self.activation, self.depth, st.lambda0, st.lambda1)
                == kernel_priors(self.activation, self.depth, other.lambda0, other.lambda1))

    def readout_scale(self, st: Settings) -> float:
        return readout_scale(self.activation, self.depth, st.lambda0, st.lambda1)

    def feature_scale(self, st: Settings) -> float:
        return feature_scale(self.activation, st.lambda0)

    # ---- actions ------------------------------------------------------------------------------
    def scalar_action(self, st: Settings, *, scan_table: bool = False) -> ScalarAction:
        """The one-variable (or vanilla deep) action; ``scan_table``: its search reads the spectrum's scan
        table, which pays when many points of a sweep scan the same spectrum."""
        sp = self.spectrum(st, mean_mode=False)
        scale = self.readout_scale(st)
        if not scan_table:
            return ScalarAction(sp.kappa * scale, sp.y_t**2, st.T, st.N1, self.depth, None, scale)
        table = self._scan_table(st, sp)  # its σκ and ỹ², shared by the sweep's actions
        return ScalarAction(table.scaled_kappa(scale), table.y2, st.T, st.N1, self.depth, table, scale)

    def _scan_table(self, st: Settings, sp: Spectrum) -> ScanTable:
        """The scan table of the spectrum (one per spectrum, shared by every point of a sweep on it)."""
        key = spectrum_key(self.dataset, self.activation, self.depth, st.lambda0, st.lambda1, False)
        table = self._tables.get(key)
        if table is None:
            table = self._tables[key] = ScanTable(sp.kappa, sp.y_t**2)
            while len(self._tables) > HELD_SPECTRA:
                self._tables.popitem(last=False)
        return table

    def mean_action(self, st: Settings) -> MeanCorrectedAction:
        sp = self.spectrum(st, mean_mode=True)
        assert sp.m_t is not None
        return MeanCorrectedAction(sp.kappa, sp.m_t, sp.y_t, self.readout_scale(st), st.T, st.N1)

    def nested_action(self, st: Settings) -> NestedAction:
        c = input_covariance(self.dataset.X, self.dataset.X[:0], st.lambda0).train
        return NestedAction(c, self.dataset.y, self.activation, st.lambda1, st.T, st.N1, self.depth)

    def action(self, st: Settings, *, scan_table: bool = False) -> ScalarAction | MeanCorrectedAction | NestedAction:
        if self.variant == "mean_corrected":
            return self.mean_action(st)
        if self.variant == "nested":
            return self.nested_action(st)
        return self.scalar_action(st, scan_table=scan_table)

    def failure(self, st: Settings) -> str | None:
        """Why these data admit no kernel at these priors (overflow, failed eigendecomposition), or None."""
        try:
            self.spectrum(st)
            if self.variant == "nested":
                self.spectrum(st, mean_mode=False)  # its vanilla solution is the nested start
        except KernelFailure as exc:
            return str(exc)
        return None

    def singular_at_zero_temperature(self, st: Settings) -> bool:
        """T = 0 needs an invertible kernel (P ≤ rank K); the closed form does not exist otherwise."""
        if st.T > 0 or self.variant == "nested":
            return False
        return self.spectrum(st).singular

    # ---- the renormalised kernel at a solution ---------------------------------------------------
    def posterior_kernel(self, st: Settings, x: np.ndarray) -> tuple[Spectrum, float, float]:
        """(spectrum, a, b) with K_R = a·diag(κ) + b m̃m̃ᵀ in that spectrum's eigenbasis."""
        if self.variant == "mean_corrected":
            sp = self.spectrum(st)
            scale = self.readout_scale(st)
            return sp, float(np.exp(x[0])) * scale, scale * float(np.exp(-x[1]))
        if self.variant == "nested":
            return self.nested_spectrum(st, tuple(float(v) for v in x)), 1.0, 0.0
        return self.spectrum(st), float(np.exp(np.sum(x))) * self.readout_scale(st), 0.0

    def nested_spectrum(self, st: Settings, s: tuple[float, ...]) -> Spectrum:
        """Eigendecomposition of the nested K_R at one solution (held for the last few solutions)."""
        key = (st.lambda0, st.lambda1, s)
        hit = self._nested.get(key)
        if hit is not None:
            return hit
        action = self.nested_action(st)
        blocks = action.readout_blocks(
            input_covariance(self.dataset.X, self.dataset.X_test, st.lambda0), np.asarray(s, dtype=float)
        )
        sp = spectrum_of(blocks, self.dataset.y, self.dataset.y_test)
        self._nested[key] = sp
        while len(self._nested) > HELD_NESTED:
            self._nested.popitem(last=False)
        return sp
