"""Branch catalogue: every solution reachable from the named starts, classified and ranked.

Solve from every start (and every root of the theory's exhaustive search, when it has one),
merge duplicates, decide stability, and pick the equilibrium as the stable branch with the
largest free entropy. All branches are reported, so a first-order transition is never hidden
by a lucky start. The catalogue records how every start ended, so that one cut short by the time
limit is known to be incomplete.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from solvers.core.deflation import deflated_search
from solvers.core.options import SolverOptions
from solvers.core.problem import Problem
from solvers.core.results import Attempt, Branch, Catalogue, Origin, Search, SolveResult, is_stable
from solvers.core.solve import remaining, solve_at
from solvers.core.status import Status

DUPLICATE_TOL = 1e-6


def same_solution(problem: Problem, a: np.ndarray, b: np.ndarray, tol: float = DUPLICATE_TOL) -> bool:
    """Equal up to ``tol`` (relative to the theory's scale) after mapping both to their symmetry class."""
    if problem.canonical is not None:
        a, b = np.asarray(problem.canonical(a)), np.asarray(problem.canonical(b))
    scale = problem.scale if problem.scale is not None else np.maximum(1.0, np.maximum(np.abs(a), np.abs(b)))
    return bool(np.all(np.abs(a - b) <= tol * scale))


def same_degenerate_root(problem: Problem, p: float, x: np.ndarray, residual: float, res: SolveResult) -> bool:
    """Two nearby points of one degenerate (flat) root, which Newton reaches only to ~tol^(1/k).

    They are the same solution when the residual stays at the solve tolerance all the way
    between them; two genuinely distinct roots have a residual barrier in between.
    """
    if not same_solution(problem, x, res.x, tol=1e-2):
        return False
    level = 10 * max(residual, res.residual) + 1e-14
    for w in (0.25, 0.5, 0.75):
        mid = (1 - w) * x + w * res.x
        if float(np.max(np.abs(problem.F(mid, p)))) > level:
            return False
    return True


def classify(problem: Problem, p: float, name: str, result: SolveResult, start: str) -> Branch:
    if problem.canonical is not None:
        result = result.replace(x=np.asarray(problem.canonical(result.x), dtype=float))
    x = result.x
    margin = problem.margin(x, p) if result.converged else None
    fe = float(problem.free_entropy(x, p)) if (problem.free_entropy is not None and result.converged) else None
    return Branch(
        name=name,
        x=x,
        result=result,
        stable=is_stable(margin),
        stability_margin=margin,
        free_entropy=fe,
        starts=(start,),
    )


def pick_equilibrium(branches: Sequence[Branch]) -> str | None:
    ok = [b for b in branches if b.converged and b.stable is not False]
    if not ok:
        return None
    # +inf is a free entropy that diverges upwards (e.g. noiseless perfect recovery): it beats every finite one.
    with_fe = [b for b in ok if b.free_entropy is not None and not np.isnan(b.free_entropy)
               and b.free_entropy != -np.inf]
    if with_fe:
        return max(with_fe, key=lambda b: b.free_entropy).name  # type: ignore[arg-type, return-value]
    return ok[0].name


def unique_name(name: str, taken: set[str]) -> str:
    if name not in taken:
        return name
    k = 2
    while f"{name}_{k}" in taken:
        k += 1
    return f"{name}_{k}"


def build_catalogue(
    problem: Problem,
    p: float,
    candidates: Sequence[tuple[str, SolveResult]],
    seconds: float,
    *,
    complete: bool = True,
    report: bool = False,
    origins: Sequence[Origin] | None = None,
    search: Search | None = None,
) -> Catalogue:
    """Merge duplicate solutions and rank them; non-converged attempts are kept only if nothing converged.

    ``report``: attach the theory's report to every branch and its notes to the catalogue. ``origins``: how
    each candidate was found (one per candidate); a branch's origin is that of the first candidate to reach it.
    """
    branches: list[Branch] = []
    for i, (start, res) in enumerate(candidates):
        if not res.converged:
            continue
        k = next(
            (
                i
                for i, b in enumerate(branches)
                if same_solution(problem, b.x, res.x) or same_degenerate_root(problem, p, b.x, b.result.residual, res)
            ),
            None,
        )
        if k is not None:
            branches[k] = branches[k].replace(starts=(*branches[k].starts, start))
            continue
        name = problem.name_of(res.x, p, start)
        branch = classify(problem, p, name, res, start)
        if origins is not None:
            branch = branch.replace(origin=origins[i])
        if branch.stable is not True and problem.on_edge(res.x, p):
            continue  # round-off along a branch that runs into a singular limit, not a solution of its own
        taken = {b.name for b in branches}
        if name in taken and branch.stable is False:
            name = f"{name}:unstable"
        name = unique_name(name, taken)
        branches.append(branch if name == branch.name else branch.replace(name=name))
    if not branches and candidates:
        # Honest failure: report the best attempt with its residual.
        start, res = min(candidates, key=lambda c: c[1].residual)
        branches.append(classify(problem, p, start, res, start))
    attempts = tuple(Attempt(s, r.status, r.residual, r.iterations) for s, r in candidates)
    # An attempt cut short by the time limit did not finish: the catalogue may be missing its branch.
    complete = complete and not any(a.status is Status.TIME_LIMIT for a in attempts)
    cat = Catalogue(
        parameter=float(p),
        branches=tuple(branches),
        equilibrium=pick_equilibrium(branches),
        attempts=attempts,
        seconds=seconds,
        complete=complete,
        search=search,
    )
    return with_reports(problem, cat) if report else cat


def with_reports(problem: Problem, cat: Catalogue) -> Catalogue:
    """The catalogue with the theory's report on every branch and its notes on the whole."""
    if problem.report is not None:
        cat = cat.replace(branches=tuple(b.replace(report=problem.report(b.x, cat.parameter)) for b in cat.branches))
    if problem.notes is not None:
        cat = cat.replace(notes=problem.notes(cat))
    return cat


def solve_catalogue(
    problem: Problem,
    p: float,
    options: SolverOptions,
    extra_starts: Mapping[str, np.ndarray] | None = None,
    *,
    report: bool = False,
) -> Catalogue:
    """Solve from every named start (plus the theory's exhaustive search) at parameter ``p``.

    ``extra_starts`` (e.g. the previous point of a sweep) go first, so a branch keeps its name
    along a sweep when it is reached from several starts. ``options.search`` may restrict the named
    starts (which leaves out the root scan) and ask for deflation after them (:mod:`solvers.core.deflation`).
    The time limit is one budget for the whole catalogue; the starts it leaves unsolved make the catalogue
    incomplete.
    """
    t0 = time.perf_counter()
    search = options.search
    candidates: list[tuple[str, SolveResult]] = []
    origins: list[Origin] = []
    named = dict(problem.starts(p))
    unknown = tuple(n for n in search.starts or () if n not in named)
    if search.starts is not None:
        named = {k: v for k, v in named.items() if k in search.starts}
    roots = list(problem.enumerate(p)) if problem.enumerate is not None and search.starts is None else []
    exhaustive = bool(roots) and problem.exhaustive
    starts: list[tuple[str, np.ndarray, Origin]]
    if exhaustive:
        # every solution is among the roots: other starts could only find them again
        starts = [(n, x, Origin("root_scan", n)) for n, x in roots]
    else:
        starts = [*((n, x, Origin("warm", n)) for n, x in (extra_starts or {}).items()),
                  *((n, x, Origin("root_scan", n)) for n, x in roots),
                  *((n, x, Origin("start", n)) for n, x in named.items())]
    complete = True
    for name, x0, origin in starts:
        x0 = np.asarray(x0, dtype=float)
        # A start that already sits on a solution found from another start needs no solve of its own.
        known = next((r for _, r in candidates if r.converged and same_solution(problem, r.x, x0, tol=1e-10)), None)
        if options.time_limit is not None and known is None and time.perf_counter() - t0 >= options.time_limit:
            complete = False
            break
        candidates.append((name, known if known is not None else solve_at(problem, p, x0, remaining(options, t0))))
        origins.append(origin)
    used = tuple(n for n, _, o in starts if o.method == "start")
    found = Search("exhaustive" if exhaustive else "starts-only", starts=used, root_scan=bool(roots),
                   unknown_starts=unknown)
    if search.method == "deflation" and not exhaustive and complete:
        guesses = [np.asarray(x, dtype=float) for _, x, o in starts if o.method != "root_scan"]
        found_so_far = [r for _, r in candidates]
        tally = deflated_search(problem, p, remaining(options, t0), guesses,
                                [r.x for r in found_so_far if r.converged], novelty(problem, p, found_so_far))
        candidates += tally.results
        origins += [Origin("deflation")] * len(tally.results)
        complete = tally.stopped != "time_limit"
        found = Search("deflated", used, bool(roots), search.budget, tally.solves, tally.fruitless, tally.found,
                       tally.stopped, unknown)
    return build_catalogue(problem, p, candidates, time.perf_counter() - t0, complete=complete, report=report,
                           origins=origins, search=found)


def novelty(problem: Problem, p: float, known: Sequence[SolveResult]) -> Callable[[SolveResult], bool]:
    """Whether a converged result is a solution not among the converged ``known`` nor among those it has already
    accepted (the catalogue's own notion of "the same solution"); a solution on a singular edge is never new."""
    seen = [r for r in known if r.converged]

    def is_new(res: SolveResult) -> bool:
        if problem.on_edge(res.x, p):
            return False
        for r in seen:
            if same_solution(problem, r.x, res.x) or same_degenerate_root(problem, p, r.x, r.residual, res):
                return False
        seen.append(res)
        return True

    return is_new
