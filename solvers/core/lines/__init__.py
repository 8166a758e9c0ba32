"""Phase boundaries traced, not gridded: continuation of special points in two parameters.

Entry points:

* ``trace_boundaries(problem, lam1_range, lam2_bracket, options)``: every transition line in a box.
* ``trace_fold_line``, ``trace_first_order_line``, ``trace_branch_point_line``,
  ``trace_stability_line``, ``trace_event_line``: one line from a known special point.
* ``resample_line``: exact points of a traced line at requested λ1 (or λ2) values.
* ``find_bifurcations`` / ``classify_branch_point`` / ``branch_off``: branch switching at simple
  branch points of a one-parameter problem; ``trace_branch`` continues a branch.

Problems are the engine's one :class:`~solvers.core.problem.Problem`, in two parameters for lines (in one for
branches; ``Problem.restrict``/``swapped`` relate the two); options ``LineOptions``; results
``BoundaryResult``, ``CriticalPoint``, ``BifurcationPoint``, ``BranchStart``; a traced line and a
branch (``trace_branch``) are the engine's one record of a curve, ``Curve`` with its ``End`` s.
See docs/phase_boundaries.md for the augmented systems and stopping rules.
"""

from solvers.core.curve import Curve, End
from solvers.core.lines.boundaries import trace_boundaries
from solvers.core.lines.branch_point_line import trace_branch_point_line
from solvers.core.lines.branch_switching import (
    BranchSwitch,
    branch_off,
    classify_branch_point,
    find_bifurcations,
    locate_branch_point,
)
from solvers.core.lines.coexistence import trace_first_order_line
from solvers.core.lines.curves import trace_branch
from solvers.core.lines.fold import trace_fold_line
from solvers.core.lines.resample import resample_line
from solvers.core.lines.results import BoundaryResult, BranchStart, CriticalPoint
from solvers.core.lines.scan import Scan, ScanPoint, scan_special_points
from solvers.core.lines.zero_lines import trace_event_line, trace_stability_line
from solvers.core.options import LineOptions
from solvers.core.special_points import BifurcationPoint, NormalForm

__all__ = [
    "BifurcationPoint",
    "BoundaryResult",
    "BranchStart",
    "BranchSwitch",
    "CriticalPoint",
    "Curve",
    "End",
    "LineOptions",
    "NormalForm",
    "Scan",
    "ScanPoint",
    "branch_off",
    "classify_branch_point",
    "find_bifurcations",
    "locate_branch_point",
    "resample_line",
    "scan_special_points",
    "trace_boundaries",
    "trace_branch",
    "trace_branch_point_line",
    "trace_event_line",
    "trace_first_order_line",
    "trace_fold_line",
    "trace_stability_line",
]
