"""The quantities of ``kernel_renormalization`` (Pacelli et al. 2023; Corti et al. 2025)."""

from __future__ import annotations

from solvers.theories.quantities import Quantity, table

P, OP = ("parameters",), ("order_parameters",)

QUANTITIES = table(
    Quantity("T", "$T$", "temperature T = 1/β of the Gibbs posterior (label-noise variance)", P),
    Quantity("N1", "$N_1$", "hidden width of every hidden layer", P),
    Quantity("lambda0", r"$\lambda_0$", "prior precision of the first-layer weights", P),
    Quantity("lambda1", r"$\lambda_1$", "prior precision of the later layers' weights and of the readout", P),
    Quantity("Qbar", r"$\bar Q$", "kernel renormalisation order parameter (one per hidden layer for deep nets)", OP,
             dims=("layer",)),
    Quantity("action", "$S$", "the effective action at the branch (free entropy −S)"),
    Quantity("alpha", r"$\alpha$", "load α = P/N1"),
    Quantity("generalization_error", r"$\varepsilon_g$",
             "mean over test points of the posterior ⟨(y0 − f(x0))²⟩ (bias² + variance)"),
    Quantity("generalization_bias2", r"$\varepsilon_g^{\mathrm{bias}}$", "squared bias part of ε_g"),
    Quantity("generalization_variance", r"$\varepsilon_g^{\mathrm{var}}$", "posterior-variance part of ε_g"),
    Quantity("generalization_error_nngp", r"$\varepsilon_g^{\mathrm{NNGP}}$", "ε_g of the NNGP (Q̄ = 1) posterior"),
    Quantity("train_error", r"$\varepsilon_t$", "posterior ⟨(y − f(x))²⟩ averaged over the training set"),
    Quantity("test_mean", r"$\langle f(x_0)\rangle$", "posterior mean of the output at each test input",
             dims=("test_point",)),
    Quantity("test_variance", r"$\mathrm{Var}\,f(x_0)$", "posterior variance of the output at each test input",
             dims=("test_point",)),
    Quantity("class_distance.D2", "$D^2$",
             "squared distance between the class means of the hidden representation, uᵀ⟨K̂⟩u"),
    Quantity("class_distance.D2_nngp", r"$D^2_{\mathrm{NNGP}}$", "D² of the NNGP kernel, uᵀKu"),
    Quantity("class_distance.delta1", r"$\delta_1$", "first 1/N1 correction of D² (≤ 0)"),
    Quantity("class_distance.delta2", r"$\delta_2$", "second 1/N1 correction of D² (≥ 0)"),
    Quantity("weight_correlations.trace_lambda1", r"$\mathrm{tr}\,\Lambda_1$",
             "trace of the prior-like part Λ1 of the first-layer weight correlation ⟨wwᵀ⟩"),
    Quantity("weight_correlations.trace_lambda2", r"$\mathrm{tr}\,\Lambda_2$",
             "trace of the data-driven part Λ2 of the first-layer weight correlation ⟨wwᵀ⟩"),
    Quantity("weight_correlations.max_eigenvalue", r"$\lambda_{\max}(\Lambda_1 + \Lambda_2)$",
             "largest eigenvalue of the weight correlation"),
    Quantity("weight_correlations.min_eigenvalue", r"$\lambda_{\min}(\Lambda_1 + \Lambda_2)$",
             "smallest eigenvalue of the weight correlation"),
    Quantity("weight_correlations.leading_eigenvalue", r"$\lambda_{\mathrm{lead}}(\Lambda_1 + \Lambda_2)$",
             "eigenvalue of the weight correlation largest in modulus"),
    headline="generalization_error",
)
