"""Deflation: find solutions of F(x) = 0 that no start reaches (Farrell, Beentjes & Birkisson 2016).

Once roots r₁ … r_k are known, Newton is run on the deflated residual

    G(x) = M(x) F(x),      M(x) = ∏ᵢ (1 / ‖x − rᵢ‖^p + σ),

whose zeros are those of F except the known roots: near rᵢ, ‖G‖ grows like ‖x − rᵢ‖^(1−p) (p > 1), so Newton is
repelled from them and converges to another root or fails. The shift σ > 0 keeps M ≥ σ^k far from every known
root, so G does not vanish at infinity (the unshifted operator lets Newton "converge" to ‖x‖ → ∞). Distances are
measured in the theory's scale. The Jacobian of G is M J_F + F ∇Mᵀ with J_F the theory's own where it gives one
(finite differences of G otherwise), so the engine's Newton, line search included, is used unchanged.

A search repeats deflated solves from the same guesses (the named starts, then points near known roots), each
success adding a pole, until ``budget`` solves in a row find nothing new.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from solvers.core.errors import MAYBE_NUMERICAL, is_numerical
from solvers.core.newton import newton
from solvers.core.options import SolverOptions
from solvers.core.problem import Problem
from solvers.core.results import SolveResult
from solvers.core.solve import remaining
from solvers.core.status import Status

#: Relative size (in the theory's scale) of the nudges that move a guess off a known root, and of the
#: perturbations around known roots tried once the starts are spent.
NUDGE = 1e-3
SPREADS = (0.1, 0.3, 1.0)
#: Iteration cap of one deflated solve: an uncapped Newton eventually creeps past a pole onto a known root's
#: neighbourhood (and costs a full solve's worth of Jacobians for nothing).
DEFLATED_ITERATIONS = 50


@dataclass(frozen=True)
class Deflation:
    """The shifted deflation operator M(x) = ∏ᵢ (1/‖x − rᵢ‖^p + σ) of known roots rᵢ; ‖·‖ is the root-mean-square
    of the components in the theory's scale, so that the operator means the same for 2 unknowns as for 400 (a
    discretised function's norm does not grow with its grid)."""

    roots: tuple[np.ndarray, ...]
    power: float = 2.0
    shift: float = 1.0
    scale: np.ndarray | float = 1.0

    def factors(self, x: np.ndarray) -> list[tuple[float, np.ndarray]]:
        """Per root, (factor, gradient of its logarithm) at ``x``."""
        out = []
        s2 = np.asarray(self.scale, dtype=float) ** 2 * x.size
        for r in self.roots:
            d = (x - r) / s2  # gradient of ½‖x − r‖² (the root-mean-square norm in the scale)
            dist = float(np.sqrt(np.sum((x - r) ** 2 / s2)))
            if dist == 0.0:
                return [(float("inf"), np.full_like(x, np.nan))]
            inv = dist ** (-self.power)
            m = inv + self.shift
            out.append((m, -self.power * inv / dist**2 * d / m))
        return out

    def value(self, x: np.ndarray) -> float:
        return float(np.prod([m for m, _ in self.factors(x)]))

    def residual(self, F: Callable[[np.ndarray], np.ndarray]) -> Callable[[np.ndarray], np.ndarray]:
        """G = M F."""
        return lambda x: self.value(x) * np.asarray(F(x), dtype=float)

    def jacobian(
        self, F: Callable[[np.ndarray], np.ndarray], J: Callable[[np.ndarray], np.ndarray]
    ) -> Callable[[np.ndarray], np.ndarray]:
        """J_G = M J_F + F ∇Mᵀ, ∇M = M Σᵢ ∇ log mᵢ."""

        def jac(x: np.ndarray) -> np.ndarray:
            fac = self.factors(x)
            m = float(np.prod([f for f, _ in fac]))
            grad = m * np.sum([g for _, g in fac], axis=0) if fac else np.zeros_like(x)
            f = np.asarray(F(x), dtype=float)
            return m * np.asarray(J(x), dtype=float) + np.outer(f, grad)

        return jac


@dataclass
class Tally:
    """What a deflated search did (filled in as it runs)."""

    solves: int = 0
    fruitless: int = 0
    found: int = 0
    stopped: str = "budget"
    results: list[tuple[str, SolveResult]] = field(default_factory=list)


def deflated_solve(
    problem: Problem, p: float, x0: np.ndarray, roots: Sequence[np.ndarray], options: SolverOptions
) -> SolveResult:
    """Newton on the deflated residual from ``x0``, then polished by Newton on F itself (so the solution is
    converged to the same tolerance as any other); a numerical failure is a status, never an exception."""
    search = options.search
    scale = problem.scale if problem.scale is not None else np.maximum(1.0, np.abs(np.asarray(x0, dtype=float)))
    op = Deflation(tuple(np.asarray(r, dtype=float) for r in roots), search.power, search.shift, scale)

    def F(x: np.ndarray) -> np.ndarray:
        return problem.F(x, p)

    jac = None
    if problem.jacobian is not None:
        jac = op.jacobian(F, lambda x: problem.jacobian(x, p))  # type: ignore[misc]
    t0 = time.perf_counter()
    try:
        first = newton(op.residual(F), x0, options, jacobian=jac, project=problem.project,
                       max_iterations=DEFLATED_ITERATIONS)
        if not first.converged:
            return first.replace(method="deflated-newton")
        polished = newton(F, first.x, remaining(options, t0),
                          jacobian=(lambda x: problem.jacobian(x, p)) if problem.jacobian is not None else None,
                          project=problem.project)
    except MAYBE_NUMERICAL as exc:
        if not is_numerical(exc):
            raise
        return SolveResult(np.asarray(x0, dtype=float), Status.NUMERICAL_ERROR, float("inf"), 0, "deflated-newton",
                           time.perf_counter() - t0, detail=f"{type(exc).__name__}: {exc}")
    return polished.replace(method="deflated-newton", iterations=first.iterations + polished.iterations,
                            nfev=first.nfev + polished.nfev, seconds=time.perf_counter() - t0)


def guesses(
    problem: Problem, starts: Sequence[np.ndarray], roots: list[np.ndarray], seed: int = 0
) -> Iterator[np.ndarray]:
    """Initial guesses of deflated solves: every start, then without end points around the known roots (the starts
    while none is known) at spreads cycling through ``SPREADS`` (deterministic: a seeded generator); ``roots`` is
    read afresh at each draw, so a root found on the way is perturbed too."""
    yield from starts
    rng = np.random.default_rng(seed)
    for i in itertools.count():
        base = roots or list(starts)
        if not base:
            return
        r = base[i % len(base)]
        spread = SPREADS[(i // len(base)) % len(SPREADS)]
        scale = problem.scale if problem.scale is not None else np.maximum(1.0, np.abs(r))
        x = r + spread * scale * rng.standard_normal(r.size)
        yield problem.project(x) if problem.project is not None else x


def deflated_search(
    problem: Problem,
    p: float,
    options: SolverOptions,
    starts: Sequence[np.ndarray],
    known: Sequence[np.ndarray],
    is_new: Callable[[SolveResult], bool],
) -> Tally:
    """Deflated solves at ``p`` until ``options.search.budget`` in a row find nothing new.

    ``known``: the solutions found so far (the poles); ``is_new`` says whether a converged result is a solution
    not yet known (the caller's notion of "the same solution", symmetry included). Each success is deflated in
    turn and the same guess is tried again (Farrell et al.'s loop); a guess that sits on a known root is nudged
    off it. The time limit of ``options`` is one budget for the whole search.
    """
    search = options.search
    t0 = time.perf_counter()
    roots = [np.asarray(r, dtype=float) for r in known]
    tally = Tally()
    run = 0  # fruitless solves in a row
    for g in guesses(problem, [np.asarray(s, dtype=float) for s in starts], roots):
        while True:
            if options.time_limit is not None and time.perf_counter() - t0 >= options.time_limit:
                tally.stopped = "time_limit"
                return tally
            if tally.found >= search.max_solutions:
                tally.stopped = "max_solutions"
                return tally
            x0 = _off_roots(problem, g, roots)
            res = deflated_solve(problem, p, x0, roots, remaining(options, t0))
            tally.solves += 1
            if res.converged and is_new(res):
                tally.found += 1
                tally.results.append(("deflation", res))
                roots.append(np.asarray(res.x, dtype=float))
                run = 0
                continue  # the same guess again, with the new root deflated too
            tally.fruitless += 1
            run += 1
            break
        if run >= search.budget:
            return tally
    tally.stopped = "no_guesses"
    return tally


def _off_roots(problem: Problem, x: np.ndarray, roots: Sequence[np.ndarray]) -> np.ndarray:
    """``x``, moved a little off any known root it sits on (the deflated residual has a pole there)."""
    scale = problem.scale if problem.scale is not None else np.maximum(1.0, np.abs(x))
    for r in roots:
        if np.all(np.abs(x - r) <= NUDGE * scale):
            step = NUDGE * scale * np.where(np.arange(x.size) % 2 == 0, 1.0, -1.0)
            x = x + 10 * step
            return problem.project(x) if problem.project is not None else x
    return x
