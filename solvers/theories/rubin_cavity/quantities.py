"""The quantities of ``rubin_cavity`` (every mode), in the cavity derivation's symbols (the paper's in brackets)."""

from __future__ import annotations

from solvers.theories.quantities import Quantity, nested, records, table

P, OP, OBS = ("parameters",), ("order_parameters",), ("observables",)

STATIONARY = (
    Quantity("rho", r"$\rho$", "position of the stationary point"),
    Quantity("f_minus_f0", r"$\tilde U(\rho) - \tilde U(0)$", "value of the potential per D relative to ρ = 0"),
    Quantity("curvature", r"$\tilde U''(\rho)$", "curvature of the potential per D there"),
)
WELL_COLUMNS = (
    *STATIONARY,
    Quantity("depth", r"$\tilde U(0) - \tilde U(\rho)$", "how far the well lies below ρ = 0 (potential per D)"),
    Quantity("kind", r"$\mathrm{kind}$", "center or aligned"),
    Quantity("weight", r"$p_{\mathrm{well}}$", "probability of the basin under the finite-D law (with D)"),
    Quantity("mean_rho2", r"$\langle\rho^2\rangle_{\mathrm{well}}$", "E[ρ²] within the basin (with D)"),
)
WELLS = records("potential_wells", "well", WELL_COLUMNS, "one record per well of the potential")
BARRIER_COLUMNS = (
    *STATIONARY,
    Quantity("height", r"$\tilde U(\rho) - \tilde U(0)$", "how far the barrier rises above ρ = 0 (potential per D)"),
)
BARRIERS = records("barriers", "barrier", BARRIER_COLUMNS, "one record per barrier between wells")

#: What the tree-level treatment reports beyond the cavity's (self_consistent and finite_sample).
TREE_LEVEL = (
    Quantity("tree_level.kappa", r"$\kappa$", "κ = η/N, the weight of the tree level's variance term"),
    Quantity("tree_level.learnability.H1", r"$\ell_{11}$", "how much of the H1 mode the kernel has learned"),
    Quantity("tree_level.learnability.H3", r"$\ell_{33}$", "how much of the H3 mode the kernel has learned"),
    Quantity("tree_level.learnability.H1_H3", r"$\ell_{13}$", "the kernel's learned coupling of H1 and H3"),
    Quantity("tree_level.learnability.perpendicular", r"$\ell_\perp$",
             "how much of each linear mode perpendicular to the teacher the kernel has learned"),
    Quantity("tree_level.expansion_parameter.center", r"$\lambda V(0)$",
             "size of what the tree level drops, at the centre well"),
    Quantity("tree_level.expansion_parameter.aligned", r"$\lambda V(\rho^{*2})$",
             "size of what the tree level drops, at the populated aligned well (null without one)"),
)

#: What the finite-D solution of the self-consistent mode reports again under ``finite_D``.
FINITE_D_SAME = (
    Quantity("b", "$b$", "residual coefficient on H1 (1 = the linear part unlearned)"),
    Quantity("c", "$c$", "residual coefficient on H3 (ε = the cubic part unlearned)"),
    Quantity("R", r"$R = \langle\rho^2\rangle$", "mean squared overlap E[ρ²] under the law p(ρ)"),
    Quantity("converged", r"$\mathrm{converged}$", "whether the finite-D equations converged"),
    Quantity("learned_fraction_linear", "$1 - b$", "learned fraction of the linear target mode"),
    Quantity("learned_fraction_cubic", r"$1 - c/\varepsilon$", "learned fraction of the cubic target mode"),
    Quantity("test_mse", r"$\varepsilon_g = b^2 + 6c^2$", "test mean squared error of the posterior mean"),
    Quantity("phase", r"$\mathrm{phase}$", "GFL, GMFL-I or GMFL-II (by well weight, 1 % threshold)"),
    Quantity("weight_covariance.parallel", r"$\langle w_\parallel^2\rangle$",
             "posterior second moment of the weights along the teacher direction (= R)"),
    Quantity("weight_covariance.perpendicular", r"$\langle w_\perp^2\rangle$",
             "posterior second moment per direction orthogonal to the teacher, σ_w²/(D − 1)"),
    *WELLS,
    *TREE_LEVEL,
    Quantity("diagnostics.residual", r"$\|F\|$", "residual of the finite-D equations"),
    Quantity("diagnostics.iterations", r"$n_{\mathrm{it}}$", "iterations of the finite-D solve"),
    Quantity("diagnostics.nfev", r"$n_{\mathrm{eval}}$", "residual evaluations of the finite-D solve"),
    Quantity("diagnostics.seconds", r"$t$", "seconds spent in the finite-D solve", units="s"),
    Quantity("diagnostics.method", r"$\mathrm{method}$", "method of the finite-D solve"),
    Quantity("diagnostics.status", r"$\mathrm{status}$", "how the finite-D solve ended"),
    Quantity("diagnostics.message", r"$\mathrm{message}$", "the finite-D solve's message"),
)

QUANTITIES = table(
    # spec fields that a sweep varies (u and T are also reported as observables)
    Quantity("u", "$u$", "interaction strength u = P² s_a2/(T² D) (paper: n² σ_a²/(σ⁴ d N))", P + OBS),
    Quantity("b", "$b$", "residual coefficient on H1 (1 = the linear part unlearned)", P + OP),
    Quantity("c", "$c$", "residual coefficient on H3 (ε = the cubic part unlearned)", P + OP),
    Quantity("sigma_w2", r"$\sigma_w^2$", "hidden-weight prior variance, w ~ N(0, σ_w²/D)", P),
    Quantity("D", "$D$", "input dimension (paper: d)", P),
    Quantity("T", "$T$", "likelihood variance T = σ² (the paper's σ²)", P + OBS),
    Quantity("P", "$P$", "number of training samples (paper: n)", P + OBS),
    Quantity("N", "$N$", "hidden width", P),
    Quantity("epsilon", r"$\varepsilon$", "cubic strength of the teacher H1 + ε H3", P),
    Quantity("s_a2", r"$s_{\mathrm{a}}^2$", "per-weight readout prior variance (paper: σ_a² = N s_a2)", P),
    # order parameters
    Quantity("rho", r"$\rho$", "overlap of this branch's stationary point with the teacher direction", OP),
    Quantity("rho_star", r"$\rho^*$", "overlap of the global minimiser of the potential (the deepest well)", OP),
    Quantity("R", r"$R = \langle\rho^2\rangle$", "mean squared overlap E[ρ²] under the law p(ρ)", OP),
    Quantity("aligned_weight", r"$\omega$", "probability mass of the aligned wells", OP),
    # observables
    Quantity("eta", r"$\eta$", "η = P N s_a2/(T D) = n σ_a²/(σ² d), the kernel's factor in the closure"),
    Quantity("phase", r"$\mathrm{phase}$", "GFL, GMFL-I or GMFL-II"),
    *WELLS,
    *BARRIERS,
    Quantity("potential_curve.rho", r"$\rho$", "overlap at which the potential is sampled (ρ of both signs)",
             dims=("sample",)),
    Quantity("potential_curve.value", r"$\tilde U(\rho) - \tilde U(0)$",
             "the potential per D relative to ρ = 0, at potential_curve.rho", dims=("sample",)),
    Quantity("test_mse", r"$\varepsilon_g$", "test mean squared error of the posterior mean, b² + 6c²"),
    Quantity("center_curvature", r"$\tilde U''(0)$", "curvature of the potential per D at ρ = 0"),
    Quantity("depth_gap", r"$\Delta\tilde U$",
             "depth of the deepest aligned well relative to ρ = 0 (negative: below the centre)"),
    Quantity("branch_depth", r"$\tilde U(0) - \tilde U(\rho)$",
             "how far this branch's well lies below ρ = 0 (null for a barrier)"),
    Quantity("branch_height", r"$\tilde U(\rho) - \tilde U(0)$",
             "how far this branch's barrier rises above ρ = 0 (null for a well)"),
    Quantity("branch_f_minus_f0", r"$\tilde U(\rho) - \tilde U(0)$",
             "the potential per D at this branch's stationary point relative to ρ = 0"),
    Quantity("branch_curvature", r"$\tilde U''(\rho)$", "curvature of the potential at this branch's point"),
    Quantity("aligned_weight_scaled", r"$\omega\eta D$", "aligned mass times η D (finite as D → ∞)"),
    Quantity("learned_fraction_linear", "$1 - b$", "learned fraction of the linear target mode"),
    Quantity("learned_fraction_cubic", r"$1 - c/\varepsilon$", "learned fraction of the cubic target mode"),
    Quantity("kernel_eigenvalues.adapted.H1", r"$\tilde Q_{11}$", "adapted kernel on the H1 mode, M T/P"),
    Quantity("kernel_eigenvalues.adapted.H3", r"$\tilde Q_{33}$", "adapted kernel on the H3 mode, M T/P"),
    Quantity("kernel_eigenvalues.adapted.H1_H3", r"$\tilde Q_{13}$", "adapted kernel between H1 and H3, M T/P"),
    Quantity("kernel_eigenvalues.nngp.H1", r"$\lambda_1$", "NNGP kernel eigenvalue of the H1 mode"),
    Quantity("kernel_eigenvalues.nngp.H3", r"$\lambda_3$", "NNGP kernel eigenvalue of the H3 mode"),
    Quantity("nngp.eigenvalues.H1", r"$\lambda_1$", "NNGP kernel eigenvalue of the H1 mode"),
    Quantity("nngp.eigenvalues.H3", r"$\lambda_3$", "NNGP kernel eigenvalue of the H3 mode"),
    Quantity("nngp.learned_fraction_linear", r"$\frac{(P/T)\lambda_1}{1 + (P/T)\lambda_1}$",
             "what the fixed NNGP kernel learns of the linear mode at this P"),
    Quantity("nngp.learned_fraction_cubic", r"$\frac{(P/T)\lambda_3}{1 + (P/T)\lambda_3}$",
             "what the fixed NNGP kernel learns of the cubic mode at this P"),
    Quantity("nngp.P_cubic_learnable", r"$T/\lambda_3$", "samples the NNGP kernel needs to learn the cubic mode"),
    Quantity("weight_covariance.parallel", r"$\langle w_\parallel^2\rangle$",
             "posterior second moment of the weights along the teacher direction (= R)"),
    Quantity("weight_covariance.perpendicular", r"$\langle w_\perp^2\rangle$",
             "posterior second moment per direction orthogonal to the teacher, σ_w²/(D − 1)"),
    *TREE_LEVEL,
    nested("finite_D", FINITE_D_SAME, "(D)", "solved at the spec's finite D"),
    Quantity("train_mse", r"$\varepsilon_t$", "mean squared training residual of the posterior mean"),
    Quantity("test_mse_measured", r"$\hat\varepsilon_g$",
             "test MSE of the posterior-mean predictor on P_test fresh inputs against the noise-free teacher"),
    Quantity("b_test", r"$b_{\mathrm{test}}$",
             "projection of the posterior mean's discrepancy on H1, fitted on the P_test fresh inputs"),
    Quantity("c_test", r"$c_{\mathrm{test}}$",
             "projection of the posterior mean's discrepancy on H3, fitted on the P_test fresh inputs"),
    # the unreduced tree level (particles): what it adds, and the Monte-Carlo errors of its estimates
    Quantity("aligned_fraction", r"$\Pr(|\rho| > 1/2)$",
             "fraction of neurons whose overlap with the teacher exceeds 1/2"),
    Quantity("learned_fraction_cubic_test", r"$1 - c_{\mathrm{test}}/\varepsilon$",
             "learned fraction of the cubic target mode on the P_test fresh inputs"),
    *(Quantity(f"{name}_stderr", rf"$\delta {sym}$", f"Monte-Carlo standard error of {name} (particles)")
      for name, sym in (("R", "R"), ("b", "b"), ("c", "c"), ("b_test", r"b_{\mathrm{test}}"),
                        ("c_test", r"c_{\mathrm{test}}"),
                        ("learned_fraction_cubic_test", r"(1 - c_{\mathrm{test}}/\varepsilon)"),
                        ("aligned_fraction", r"\Pr(|\rho| > 1/2)"))),
    Quantity("monte_carlo.ess_fraction", r"$n_{\mathrm{eff}}/n$",
             "fraction of each ρ node's particles that the reweighting to this solution keeps (Kish, mass-weighted)"),
    Quantity("monte_carlo.edge_mass", r"$p(\rho_{\max})$", "mass of the last ρ node (negligible when ρ_max suffices)"),
    Quantity("monte_carlo.particles", r"$n$", "particles the closure is solved on"),
    Quantity("monte_carlo.groups", r"$n_{\mathrm{groups}}$", "disjoint groups of chains behind the standard errors"),
    Quantity("monte_carlo.groups_refit", r"$n_{\mathrm{refit}}$",
             "groups whose own fixed point converged (the others are taken at the full solution's exponents)"),
    Quantity("monte_carlo.min_acceptance", r"$a_{\min}$", "smallest MALA acceptance rate over the ρ nodes"),
    Quantity("monte_carlo.pilot_T", r"$T_{\mathrm{pilot}}$",
             "likelihood variance of the law the particles were drawn at"),
    Quantity("monte_carlo.pilot_converged", r"$\mathrm{converged}_{\mathrm{pilot}}$",
             "whether every sample-then-solve stage of the pilot converged"),
    Quantity("monte_carlo.note", r"$\mathrm{note}$", "what the standard errors include"),
    Quantity("kernel_series_order", r"$n_{\mathrm{series}}$", "order at which the kernel's Hermite series is cut"),
    Quantity("kernel_series_tail_bound", r"$\delta_{\mathrm{series}}$", "bound on the cut series' remainder"),
    headline="test_mse",
)
