"""How a solve ended: one enum for every method, with one message per member.

Two questions are asked of a status everywhere: did the solve succeed (``converged``), and is
the outcome a property of the equations (cacheable) or of the circumstances — a time limit, a
cancelled job, an evaluation that failed numerically — which a later attempt may not repeat.
"""

from __future__ import annotations

from enum import StrEnum


class Status(StrEnum):
    CONVERGED = "converged"
    MAX_ITERATIONS = "max_iterations"
    LINE_SEARCH = "line_search"
    SINGULAR = "singular"
    DIVERGED = "diverged"
    TIME_LIMIT = "time_limit"
    NUMERICAL_ERROR = "numerical_error"
    NO_SOLUTION = "no_solution"

    @property
    def message(self) -> str:
        return _MESSAGES[self]

    @property
    def converged(self) -> bool:
        return self is Status.CONVERGED

    @property
    def interrupted(self) -> bool:
        """The attempt did not run to a verdict of its own (a time limit, a failed evaluation): never cached."""
        return self in (Status.TIME_LIMIT, Status.NUMERICAL_ERROR)


_MESSAGES = {
    Status.CONVERGED: "Residual below tolerance.",
    Status.MAX_ITERATIONS: "Iteration cap reached before the residual met the tolerance.",
    Status.LINE_SEARCH: "Line search could not reduce the residual.",
    Status.SINGULAR: "Jacobian is singular at the iterate.",
    Status.DIVERGED: "The iteration left the domain of the equations (non-finite iterate); the last finite "
    "iterate is returned.",
    Status.TIME_LIMIT: "Time limit reached before convergence.",
    Status.NUMERICAL_ERROR: "The equations could not be evaluated at an iterate (floating-point or linear-algebra "
    "failure).",
    Status.NO_SOLUTION: "No start produced a solution.",
}
