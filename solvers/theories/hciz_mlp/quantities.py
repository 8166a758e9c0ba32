"""The quantities of ``hciz_mlp`` (Barbier, Camilli, Nguyen, Pastore, Skerk 2025), in the papers' symbols."""

from __future__ import annotations

from solvers.theories.quantities import Quantity, table

P, OP = ("parameters",), ("order_parameters",)

QUANTITIES = table(
    Quantity("alpha", r"$\alpha$", "sampling ratio α = n/d²", P),
    Quantity("Delta", r"$\Delta$", "label-noise variance of y = f(x) + √Δ z", P),
    Quantity("gamma", r"$\gamma$", "width ratio γ = k/d of the hidden layer(s)", P),
    Quantity("Q", "$Q$", "overlap of the student's hidden weights with the teacher's (per layer for deep nets)", OP),
    Quantity("Q_hat", r"$\hat Q$", "conjugate of Q", OP),
    Quantity("R2", "$R_2$", "overlap of the second-order (quadratic) part of the network's function", OP),
    Quantity("R2_hat", r"$\hat R_2$", "conjugate of R₂", OP),
    Quantity("tau", r"$\tau$", "tilt of the matrix-denoising channel (null without one)", OP),
    Quantity("Q1", "$Q_1$", "first-layer overlap per atom |v₂| of the effective readout", OP, dims=("v2_atom",)),
    Quantity("Q2", "$Q_2$", "second-layer overlap per readout atom |v| and effective-readout atom |v₂|", OP,
             dims=("v_atom", "v2_atom")),
    Quantity("Q21", r"$Q_{2:1}$", "product overlap of the two layers", OP),
    Quantity("Q_hat1", r"$\hat Q_1$", "conjugate of Q₁", OP, dims=("v2_atom",)),
    Quantity("Q_hat2", r"$\hat Q_2$", "conjugate of Q₂", OP, dims=("v_atom", "v2_atom")),
    Quantity("Q_hat21", r"$\hat Q_{2:1}$", "conjugate of Q₂:₁", OP),
    Quantity("v", "$v$", "atoms of the readout law P_v", OP, dims=("v_atom",)),
    Quantity("v_probability", "$P_v(v)$", "probability of each readout atom", OP, dims=("v_atom",)),
    Quantity("v2", r"$|v_2|$", "atoms of the effective second-layer readout |v₂|", OP, dims=("v2_atom",)),
    Quantity("v2_probability", r"$P(|v_2|)$", "probability of each |v₂| atom", OP, dims=("v2_atom",)),
    Quantity("generalization_error", r"$\varepsilon^*$",
             "Bayes-optimal generalisation error ε* = K_d − K* (Δ not included)"),
    Quantity("free_entropy", "$f$", "replica-symmetric free entropy of the branch"),
    Quantity("mutual_information", r"$I/(kd)$", "mutual information per first-layer weight"),
    Quantity("K_d", "$K_d$", "prior variance of the output, E f²"),
    Quantity("K_star", "$K^*$", "overlap of the student's output with the teacher's"),
    Quantity("R_d", "$R_d$", "R_d = 1 + γ v̄², the second-order prior moment"),
    Quantity("phase", r"$\mathrm{phase}$", "universal, specialized (or product_overlap for two layers)"),
    Quantity("specialized_layers", r"$\ell_{\mathrm{spec}}$", "indices of the layers that have specialised",
             dims=("specialized_layer",)),
    Quantity("hciz_margin", r"$m_{\mathrm{HCIZ}}$", "margin of the HCIZ approximation's validity condition"),
    Quantity("product_overlap", r"$\mathbb{E}_v Q_{2:1}$", "product overlap averaged over the readout atoms"),
    Quantity("prefactors", r"$\mathrm{prefactors}$", "the form of the two-layer equations' prefactors"),
    headline="generalization_error",
)
