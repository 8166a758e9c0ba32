"""Which exceptions are numerical failures of the equations, and which are bugs.

Only a numerical failure — floating-point trouble, a singular or indefinite matrix, a math domain
error at an iterate outside the equations' domain — becomes a status. Everything else is a
programming error and propagates, so that tests and fuzzing see it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import numpy as np

T = TypeVar("T")


class DomainError(ArithmeticError):
    """Raised by a theory when an iterate lies outside the domain of its equations."""


#: Exception types that always mean a numerical failure.
NUMERICAL = (ArithmeticError, np.linalg.LinAlgError)

#: Every exception type :func:`is_numerical` can accept: what a guard catches before asking it (anything else is a
#: bug and is never caught).
MAYBE_NUMERICAL = (*NUMERICAL, ValueError)


def is_numerical(exc: BaseException) -> bool:
    """True for a numerical failure; a ``math domain error`` (math.sqrt/log of an invalid iterate) counts."""
    if isinstance(exc, NUMERICAL):
        return True
    return type(exc) is ValueError and "math domain error" in str(exc)


def or_none(fn: Callable[..., T], *args: object) -> T | None:
    """``fn(*args)``, or None where it fails numerically (anything else is a bug, and is raised)."""
    try:
        return fn(*args)
    except MAYBE_NUMERICAL as exc:
        if not is_numerical(exc):
            raise
        return None
