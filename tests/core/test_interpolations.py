"""A curve's interpolated guesses at a parameter value: one per segment whose ends bracket it, on a curve that turns
(folds) as well as on a monotone one, checked against the segments enumerated by hand."""

from __future__ import annotations

import itertools

import numpy as np

from solvers.core.curve import CurvePoint, interpolations
from solvers.core.detect import Track


def _zigzag() -> tuple[CurvePoint, ...]:
    # p goes 0 → 2 → 1 → 3 (two folds), with a repeated p (a vertical segment) at p = 2; x = (p², −p)
    ps = [0.0, 1.0, 2.0, 2.0, 1.5, 1.0, 2.0, 3.0]
    return tuple(CurvePoint((p,), np.array([p * p + k, -p])) for k, p in enumerate(ps))


def _by_hand(points: tuple[CurvePoint, ...], p: float) -> list[np.ndarray]:
    out = []
    for a, b in itertools.pairwise(points):
        lo, hi = sorted((a.p, b.p))
        if lo <= p <= hi:
            w = 0.0 if a.p == b.p else (p - a.p) / (b.p - a.p)
            out.append((1 - w) * a.x + w * b.x)
    return out


def test_every_bracketing_segment_gives_its_interpolation() -> None:
    points = _zigzag()
    track = Track("zigzag", points)
    for p in (-0.5, 0.0, 0.25, 1.0, 1.2, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5):
        want = _by_hand(points, p)
        for got in (list(interpolations(points, p)), list(track.interpolations(p))):
            assert len(got) == len(want), p
            for g, w in zip(got, want, strict=True):
                assert np.array_equal(g, w)
    assert len(list(track.interpolations(1.2))) == 3  # once on each of the three sheets over p = 1.2
    assert track.guess(3.5) is None
    assert np.array_equal(track.guess(0.5), points[0].x + 0.5 * (points[1].x - points[0].x))


def test_a_single_point_track_guesses_only_at_its_own_value() -> None:
    track = Track("one", (CurvePoint((0.5,), np.array([2.0])),))
    assert list(track.interpolations(0.5)) == []
    assert np.array_equal(track.guess(0.5), np.array([2.0])) and track.guess(0.6) is None
