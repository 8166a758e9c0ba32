"""A continuation sweep of a theory with an exhaustive search polishes each traced guess from the search's root
it points at (Newton converges at once), and from the guess itself where two roots are close; read-only vectors
pass through the typed results without copies."""

from __future__ import annotations

import dataclasses

import numpy as np

from solvers.core.options import SolverOptions
from solvers.core.results import frozen_vector
from solvers.core.sweep import _root_near, run_sweep
from tests.core.problems import tilted_double_well


def _with_search(lambda0: float = 0.1):
    """The tilted double well with its exhaustive search: every real root of x³ − x + (λ − λ0) = 0."""
    base = tilted_double_well(lambda0)

    def enumerate_roots(lam: float):
        roots = np.roots([1.0, 0.0, -1.0, lam - lambda0])
        real = sorted(float(r.real) for r in roots if abs(r.imag) < 1e-9)
        return [(base.name_of(np.array([r]), lam, "root"), np.array([r])) for r in real]

    return dataclasses.replace(base, enumerate=enumerate_roots, exhaustive=True)


def test_a_guess_is_polished_from_the_root_it_unambiguously_points_at() -> None:
    problem = tilted_double_well()
    roots = [np.array([-1.0]), np.array([1.0])]
    assert _root_near(problem, roots, np.array([0.95])) is roots[1]
    assert _root_near(problem, roots, np.array([-1.04])) is roots[0]
    for guess in (np.array([0.0]), np.array([0.5])):  # halfway, or too far from every root
        assert _root_near(problem, roots, guess) is guess
    close = [np.array([0.98]), np.array([1.02])]  # near a fold: the guess decides
    assert _root_near(problem, close, np.array([1.0])) is not close[0]
    assert _root_near(problem, [], np.array([1.0]))[0] == 1.0


def test_a_continuation_with_an_exhaustive_search_finds_the_same_solutions_and_folds() -> None:
    values = np.linspace(-1.0, 1.0, 41)
    options = SolverOptions(tol_abs=1e-13, tol_rel=1e-13)  # Newton from a guess to 1e-13, the roots to rounding
    plain = run_sweep(tilted_double_well(0.1), values, options)
    searched = run_sweep(_with_search(0.1), values, options)
    for a, b in zip(plain.catalogues, searched.catalogues, strict=True):
        assert sorted(br.name for br in a.branches) == sorted(br.name for br in b.branches)
        for br in a.branches:
            assert np.allclose(br.x, b.get(br.name).x, rtol=0, atol=1e-12)
    folds = lambda s: sorted(sp.parameter for sp in s.special_points if sp.kind.value == "fold")  # noqa: E731
    assert np.allclose(folds(plain), folds(searched), atol=1e-9)
    # away from the folds every branch came from a root of the search: no Newton step was needed
    far = [c for c in searched.catalogues if min(abs(c.parameter - 0.1 - f) for f in (-0.385, 0.385)) > 0.1]
    assert far and all(br.result.iterations == 0 for c in far for br in c.branches)


def test_a_read_only_vector_passes_through_and_anything_else_is_copied() -> None:
    frozen = frozen_vector([1.0, 2.0])
    assert frozen_vector(frozen) is frozen and not frozen.flags.writeable
    view = frozen[:1]
    assert frozen_vector(view) is not view  # a view may change with its base: copied
    writable = np.array([1.0, 2.0])
    copy = frozen_vector(writable)
    writable[0] = 5.0
    assert copy[0] == 1.0
    assert frozen_vector(np.array([[1.0, 2.0], [3.0, 4.0]])).tolist() == [1.0, 2.0, 3.0, 4.0]
