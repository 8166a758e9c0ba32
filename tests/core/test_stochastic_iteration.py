"""The noisy fixed-point driver on maps whose fixed point is known in closed form."""

from __future__ import annotations

import numpy as np
import pytest

from solvers.core.stochastic_iteration import Estimate, StochasticSettings, iterate_noisy

#: G(x) = A x + b with A a contraction: x* = (I − A)⁻¹ b.
A = np.array([[0.5, 0.2, 0.0], [0.1, 0.3, 0.1], [0.0, -0.2, 0.6]])
B = np.array([1.0, -2.0, 0.5])
X_STAR = np.linalg.solve(np.eye(3) - A, B)
SIGMA = 0.05  # standard error of one estimate of G, per component


class LinearNoisy:
    """G(x) = A x + b plus Gaussian noise of standard deviation SIGMA (reported as the estimate's error); a second
    block y with its own fixed point y* = 2 moved by the map: y ← y + gain (2 − y)."""

    def __init__(self, seed: int, second: bool = False, fail_at: int | None = None):
        self.rng = np.random.default_rng(seed)
        self.second = second
        self.fail_at = fail_at
        self.y = 0.0
        self.gains: list[float] = []

    def estimate(self, x: np.ndarray, step: int) -> Estimate | None:
        if self.fail_at is not None and step >= self.fail_at:
            return None
        R = A @ x + B + SIGMA * self.rng.standard_normal(3) - x
        se = np.full(3, SIGMA)
        if not self.second:
            return Estimate((R,), (se,))
        r_y = np.array([2.0 - self.y + SIGMA * self.rng.standard_normal()])
        return Estimate((R, r_y), (se, np.array([SIGMA])))

    def precondition(self, residual: np.ndarray) -> np.ndarray:
        return residual

    def move(self, gain: float) -> None:
        self.gains.append(gain)
        if self.second:
            self.y += gain * (2.0 - self.y)


def _settings(**kw: object) -> StochasticSettings:
    base: dict = {"tolerances": (1e-3,), "windows": (4,), "max_iterations": 2000, "anderson_memory": 3}
    return StochasticSettings(**{**base, **kw})


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_converges_to_the_closed_form_fixed_point_within_its_monte_carlo_error(seed: int) -> None:
    noisy = LinearNoisy(seed)
    out = iterate_noisy(noisy, np.zeros(3), _settings())
    assert out.status == "converged" and out.converged
    # the judged residual is within the tolerance plus three of its own standard errors
    assert out.residuals[0] <= 1e-3 + 3 * out.errors[0]
    # against the closed form: the noise-free residual (I − A)(x − x*) at the last iterate is within that band plus
    # three errors of the window's own noise (its mean over 4 steps has error SIGMA / 2 per component)
    assert out.errors[0] == pytest.approx(SIGMA / 2)
    true = float(np.sqrt(np.mean(((np.eye(3) - A) @ (out.x - X_STAR)) ** 2)))
    assert true <= 1e-3 + 6 * out.errors[0]
    assert true < 0.1 * float(np.sqrt(np.mean(B**2)))  # from x = 0, whose residual is b: a tenth of it
    # the Anderson phase took the iterate into the noise band, then Robbins–Monro gains decrease as t^−0.6
    rm = [g for g in noisy.gains if g < 1.0]
    assert noisy.gains[0] == 1.0 and rm
    assert rm[:3] == pytest.approx([2**-0.6, 3**-0.6, 4**-0.6])
    assert len(out.history) == out.iterations


def test_every_block_is_judged_and_the_map_moves_its_own_blocks() -> None:
    noisy = LinearNoisy(3, second=True)
    out = iterate_noisy(noisy, np.zeros(3), _settings(tolerances=(1e-3, 1e-3), windows=(4, 16)))
    assert out.converged and len(out.residuals) == 2
    assert out.iterations >= 16  # the longer window is full before convergence is declared
    assert noisy.y == pytest.approx(2.0, abs=3 * SIGMA)


def test_ends_without_an_exception() -> None:
    assert iterate_noisy(LinearNoisy(0, fail_at=3), np.zeros(3), _settings()).status == "nan"
    out = iterate_noisy(LinearNoisy(0), np.zeros(3), _settings(max_iterations=5))
    assert out.status == "max_iterations" and out.iterations == 5
    assert iterate_noisy(LinearNoisy(0), np.zeros(3), _settings(time_limit=0.0)).status == "time_limit"
