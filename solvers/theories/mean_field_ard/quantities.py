"""The quantities of ``mean_field_ard`` (Göring, Mingard, Nam, Louis 2025), in the paper's symbols."""

from __future__ import annotations

from solvers.theories.quantities import Quantity, table

P, OP = ("parameters",), ("order_parameters",)

QUANTITIES = table(
    Quantity("kappa", r"$\kappa$", "noise scale of the likelihood exp[−mean (y − f)²/(2κ²)]", P),
    Quantity("P", "$P$", "training-set size (null: the population limit)", P),
    Quantity("N", "$N$", "width (number of hidden units)", P),
    Quantity("sigma_a2", r"$\sigma_a^2$", "readout prior variance", P),
    Quantity("sigma_w2", r"$\sigma_w^2$", "input-weight prior variance scale, w ~ N(0, σ_w²/d)", P),
    Quantity("gamma", r"$\gamma$", "width exponent of f = N^(−γ) Σ a_i φ(w_iᵀx)", P),
    Quantity("m_S", "$m_S$", "overlap of the single-neuron law with the target's relevant feature", OP),
    Quantity("rho_relevant", r"$\rho_{\mathrm{rel}}$", "ARD precision of the relevant inputs (d/σ_w² in plain MF)",
             OP),
    Quantity("rho_irrelevant", r"$\rho_{\mathrm{irr}}$",
             "ARD precision of the irrelevant inputs (d/σ_w² in plain MF)", OP),
    Quantity("residual_coefficient", "$t$", "coefficient of the self-consistent residual on the target", OP),
    Quantity("test_mse", r"$\varepsilon_g$", "test mean squared error of the posterior-mean predictor"),
    Quantity("train_mse", r"$\varepsilon_t$", "training mean squared error"),
    Quantity("test_error01", r"$\varepsilon_{01}$", "0-1 test error of the posterior-mean predictor's sign"),
    Quantity("test_error01_gibbs", r"$\varepsilon_{01}^{\mathrm{Gibbs}}$",
             "0-1 test error of a posterior draw (Gaussian approximation)"),
    Quantity("chi_SS", r"$\chi_{SS}$", "susceptibility of the relevant feature"),
    Quantity("m_spurious_max", r"$\max_A m_A$", "largest rms overlap with a spurious (irrelevant) feature"),
    Quantity("rho_profile", r"$\rho_j$", "ARD precision of each input", dims=("input",)),
    Quantity("second_moment_relevant", r"$\langle w_{\mathrm{rel}}^2\rangle$",
             "second moment of the weights on relevant inputs"),
    Quantity("second_moment_irrelevant", r"$\langle w_{\mathrm{irr}}^2\rangle$",
             "second moment of the weights on irrelevant inputs"),
    Quantity("specialised_fraction", r"$f_{\mathrm{spec}}$",
             "fraction of units whose target correlation is at least half the best a single unit reaches"),
    Quantity("aligned_well_mass", r"$p_{\mathrm{aligned}}$", "mass of the aligned wells of the single-neuron law"),
    Quantity("kernel_target_eigenvalue", r"$\lambda_S/c_0$", "the kernel's eigenvalue on the target, over c₀"),
    Quantity("depth_gap", r"$\Delta\tilde U$",
             "deepest aligned well's Ũ minus the central well's (null without an aligned well)"),
    Quantity("parseval.walsh_sum", r"$\sum_A \hat f_A^2$", "Walsh power of the predictor (Parseval check)"),
    Quantity("parseval.mean_f2", r"$\langle f^2\rangle$", "mean square of the predictor (Parseval check)"),
    Quantity("parseval.note", r"$\mathrm{note}$", "what the Parseval check leaves unresolved"),
    Quantity("effective_ridge_ratio", r"$\kappa_{\mathrm{eff}}/c_0$", "effective ridge of the finite-P kernel over c₀"),
    Quantity("overfitting_factor", "$E_0$", "overfitting factor E₀ = P/(P − Σ L²) at finite P"),
    Quantity("free_entropy", r"$\phi$", "free entropy of the branch"),
    Quantity("phase", r"$\mathrm{phase}$", "the branch's phase label"),
    headline="test_mse",
)
