"""Where a boundary job probes the phases its lines separate (service.jobs.boundary_regions), by geometry alone."""

from __future__ import annotations

import pytest

from service.jobs.boundary_regions import MIN_OFFSET, REACH, probe_points

BOX = ((0.0, 2.0), (10.0, 30.0))  # p1 in [0, 2], p2 in [10, 30]


def test_a_lone_line_is_probed_half_way_to_the_box_edge_on_either_side() -> None:
    # the line p2 = 15 across the whole box: scaled, the vertical line x₂ = 0.25
    line = [[p1, 15.0] for p1 in (0.0, 0.5, 1.0, 1.5, 2.0)]
    probes = sorted(probe_points([line], BOX), key=lambda p: p[1])
    assert len(probes) == 2
    (a1, a2), (b1, b2) = probes
    assert a1 == pytest.approx(1.0) and b1 == pytest.approx(1.0)  # level with the middle of the line
    # half of the free run to the edge (0.25 and 0.75 of the box, less a step and the reach)
    assert a2 == pytest.approx(10.0 + 20.0 * 0.125, abs=20.0 * (REACH + 0.01))
    assert b2 == pytest.approx(15.0 + 20.0 * 0.375, abs=20.0 * (REACH + 0.01))


def test_between_two_lines_the_probe_lies_half_way_and_never_across() -> None:
    left = [[p1, 15.0] for p1 in (0.0, 1.0, 2.0)]
    right = [[p1, 17.0] for p1 in (0.0, 1.0, 2.0)]
    probes = probe_points([left, right], BOX)
    assert len(probes) == 4
    between = [p2 for _, p2 in probes if 15.0 < p2 < 17.0]
    assert len(between) == 2 and all(abs(p2 - 16.0) <= 20.0 * REACH for p2 in between)
    assert all(abs(p2 - 15.0) >= 20.0 * MIN_OFFSET - 1e-9 and abs(p2 - 17.0) >= 20.0 * MIN_OFFSET - 1e-9
               for _, p2 in probes)


def test_no_line_probes_the_centre_of_the_box() -> None:
    assert probe_points([], BOX) == [(1.0, 20.0)]
