"""Fixed point of a map known only through noisy (Monte-Carlo) evaluations: x = G(x), G estimated with an error.

The unknowns come in blocks. Block 0 is x, which this driver moves; further blocks (e.g. hyperparameters that
follow the same samples) are moved by the map itself, given the gain of the step. Each step

1. asks the map for an :class:`Estimate` at x: every block's undamped residual (G(x) − x for block 0) and its
   Monte-Carlo standard error, or None when the evaluation was not finite (the iteration ends, status "nan");
2. while far from the fixed point (the rms residual of block 0 above ``switch`` times its tolerance plus
   ``sigmas`` standard errors), moves x by a type-II Anderson step on the preconditioned residual; from the first
   step within that band on, by Robbins–Monro steps R̃ / t^exponent, which average the noise out;
3. in the Robbins–Monro phase, judges each block on the mean residual of its last ``windows[k]`` steps (whose
   noises are independent) against its own Monte-Carlo error: converged when every block is within its
   tolerance plus ``sigmas`` errors and every window is full.

Convergence is never judged on the step, which the decreasing gains make small long before the fixed point.
Non-convergence within the budget or the time limit is a status, never an exception.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Literal, Protocol

import numpy as np

Status = Literal["converged", "max_iterations", "time_limit", "nan"]


@dataclass(frozen=True)
class Estimate:
    """One noisy evaluation at the current iterate: each block's undamped residual and its standard error."""

    residuals: tuple[np.ndarray, ...]
    errors: tuple[np.ndarray, ...]


class NoisyMap(Protocol):
    """What the driver needs of a map: its estimate at x on step ``step`` (1, 2, …; None when not finite),
    a preconditioner for block 0's residual (the identity where there is none), and the move of its other
    blocks with the step's gain (1 in the Anderson phase)."""

    def estimate(self, x: np.ndarray, step: int) -> Estimate | None: ...

    def precondition(self, residual: np.ndarray) -> np.ndarray: ...

    def move(self, gain: float) -> None: ...


@dataclass(frozen=True)
class StochasticSettings:
    """Tolerances and windows per block; the step budget; Anderson's memory; the Robbins–Monro schedule."""

    tolerances: tuple[float, ...]
    windows: tuple[int, ...]
    max_iterations: int
    anderson_memory: int
    time_limit: float | None = None
    sigmas: float = 3.0
    switch: float = 10.0
    exponent: float = 0.6


@dataclass(frozen=True)
class StochasticResult:
    """The last iterate, how the iteration ended, each block's judged residual (rms) and Monte-Carlo error, the
    steps taken, and block 0's (residual, error) at every step."""

    x: np.ndarray
    status: Status
    residuals: tuple[float, ...]
    errors: tuple[float, ...]
    iterations: int
    history: list[tuple[float, float]] = field(default_factory=list)

    @property
    def converged(self) -> bool:
        return self.status == "converged"


def rms(v: np.ndarray) -> float:
    return float(np.sqrt(np.mean(v * v))) if v.size else 0.0


def anderson_step(history: list[tuple[np.ndarray, np.ndarray]], x: np.ndarray, R: np.ndarray, memory: int,
                  mixing: float = 1.0) -> np.ndarray:
    """Type-II Anderson step on the (preconditioned) residual R, from (iterate, residual) pairs of earlier steps
    (Tikhonov-regularised least squares, the weight relative to the Gram matrix's trace)."""
    if memory == 0 or len(history) < 1:
        return x + mixing * R
    hist = history[-memory:]
    dX = np.stack([x - h[0] for h in hist], axis=1)
    dR = np.stack([R - h[1] for h in hist], axis=1)
    G = dR.T @ dR
    reg = 1e-8 * np.trace(G) / max(G.shape[0], 1) + 1e-300
    try:
        g = np.linalg.solve(G + reg * np.eye(G.shape[0]), dR.T @ R)
    except np.linalg.LinAlgError:
        return x + mixing * R
    return x + mixing * R - (dX + mixing * dR) @ g


def iterate_noisy(noisy: NoisyMap, x0: np.ndarray, settings: StochasticSettings) -> StochasticResult:
    """Solve x = G(x) from x0 for a map known by noisy estimates (see the module's description)."""
    start = time.perf_counter()
    deadline = start + settings.time_limit if settings.time_limit is not None else math.inf
    blocks = len(settings.tolerances)
    longest = max(settings.windows)
    x = np.array(x0, dtype=float)
    history: list[tuple[np.ndarray, np.ndarray]] = []
    record: list[tuple[float, float]] = []
    window: list[Estimate] = []
    status: Status = "max_iterations"
    res = [math.inf] + [0.0] * (blocks - 1)
    err = [math.inf] + [0.0] * (blocks - 1)
    rm_count = 0
    it = 0
    for it in range(1, settings.max_iterations + 1):
        if time.perf_counter() > deadline:
            status = "time_limit"
            break
        est = noisy.estimate(x, it)
        if est is None:
            status = "nan"
            break
        R = est.residuals[0]
        step_res, step_err = rms(R), rms(est.errors[0])
        in_rm = rm_count > 0 or step_res <= settings.switch * (settings.tolerances[0] + settings.sigmas * step_err)
        if in_rm:
            # the mean undamped residual of the last steps against its own Monte-Carlo error (the steps' noises
            # are independent)
            window = [*window[-(longest - 1):], est]
            for k in range(blocks):
                last = window[-settings.windows[k]:]
                res[k] = rms(np.mean([w.residuals[k] for w in last], axis=0))
                err[k] = rms(np.sqrt(np.mean([w.errors[k] ** 2 for w in last], axis=0) / len(last)))
        else:
            res = [rms(r) for r in est.residuals]
            err = [rms(e) for e in est.errors]
        record.append((res[0], err[0]))
        done = all(res[k] <= settings.tolerances[k] + settings.sigmas * err[k] for k in range(blocks))
        if in_rm and len(window) >= longest and done:
            status = "converged"
            break
        Rt = noisy.precondition(R)
        if not in_rm:
            x = anderson_step(history, x, Rt, settings.anderson_memory)
            history.append((x.copy(), Rt.copy()))
            gain = 1.0
        else:
            rm_count += 1
            x = x + Rt / rm_count**settings.exponent
            gain = 1.0 / rm_count**settings.exponent
        noisy.move(gain)
    return StochasticResult(x, status, tuple(res), tuple(err), it, record)
