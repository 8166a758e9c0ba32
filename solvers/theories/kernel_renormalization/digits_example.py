"""Worked example: Q̄(T) and the class-manifold distance D²(T) on scikit-learn's digits 3 vs 8.

    python -m solvers.theories.kernel_renormalization.digits_example

Prints a markdown table (the numbers quoted in the documentation). The figure of both curves for two widths plus a
shuffled-label control is drawn from the served sweeps by ``python -m benchmarks.figure_digits``.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from solvers.core.options import SolverOptions
from solvers.theories.kernel_renormalization import THEORY
from solvers.theories.kernel_renormalization.datasets import materialize
from solvers.theories.kernel_renormalization.spec import KernelRenormalizationSpec

CLASSES = [3, 8]
P, P_TEST, SEED = 250, 100, 0
WIDTHS = (50, 200)
TABLE_TEMPERATURES = (1e-4, 1e-3, 1e-2, 3e-2, 0.1, 0.3, 1.0, 3.0, 10.0, 100.0)


def digits_spec(N1: int, **fields: Any) -> KernelRenormalizationSpec:
    return KernelRenormalizationSpec.model_validate(
        {"theory": "kernel_renormalization", "activation": "erf", "N1": N1, "T": 0.1, "lambda0": 1.0, "lambda1": 1.0,
         "data": {"kind": "digits", "classes": CLASSES, "P": P, "P_test": P_TEST, "seed": SEED}, **fields}
    )


def shuffled_spec(N1: int, seed: int = 1) -> KernelRenormalizationSpec:
    """Randomised-label control: the same images with the training labels permuted."""
    ds = materialize(digits_spec(N1).data)
    y = np.random.default_rng(seed).permutation(ds.y)
    data = {"kind": "arrays", "X": ds.X.tolist(), "y": y.tolist(), "X_test": ds.X_test.tolist(),
            "y_test": ds.y_test.tolist()}
    return digits_spec(N1).model_copy(update={"data": KernelRenormalizationSpec.model_validate(
        {"theory": "kernel_renormalization", "N1": N1, "T": 0.1, "data": data}).data})


def curves(spec: KernelRenormalizationSpec, temperatures: np.ndarray) -> dict[str, np.ndarray]:
    out = THEORY.sweep(spec, "T", [float(t) for t in temperatures], "grid", SolverOptions())
    reports = []
    for cat in out.catalogues:
        eq = cat.equilibrium_branch
        assert eq is not None and eq.report is not None, f"no equilibrium at T = {cat.parameter}"
        reports.append(eq.report)
    return {
        "T": np.array(out.values),
        "Qbar": np.array([r.order_parameters["Qbar"] for r in reports]),
        "D2": np.array([r.observables["class_distance"]["D2"] for r in reports]),
        "D2_nngp": np.array([r.observables["class_distance"]["D2_nngp"] for r in reports]),
        "eps": np.array([r.observables["generalization_error"] for r in reports]),
        "eps_nngp": np.array([r.observables["generalization_error_nngp"] for r in reports]),
    }


def table(N1: int) -> str:
    c = curves(digits_spec(N1), np.array(TABLE_TEMPERATURES))
    lines = [
        f"digits {CLASSES[0]} vs {CLASSES[1]}, P = {P}, N1 = {N1} (α = {P / N1:g}), erf, λ0 = λ1 = 1; "
        f"D²_NNGP = {c['D2_nngp'][0]:.4f}",
        "",
        "| T | Q̄ | D² | ε_g | ε_g (NNGP) |",
        "|---|---|---|---|---|",
    ]
    for i, T in enumerate(c["T"]):
        lines.append(f"| {T:g} | {c['Qbar'][i]:.4f} | {c['D2'][i]:.4f} | {c['eps'][i]:.4f} | {c['eps_nngp'][i]:.4f} |")
    return "\n".join(lines)


def main() -> None:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    for N1 in WIDTHS:
        print(table(N1))
        print()


if __name__ == "__main__":
    main()
