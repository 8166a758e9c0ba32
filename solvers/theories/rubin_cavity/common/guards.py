"""Residuals that report an invalid point as non-finite instead of raising.

Continuation and line searches probe points outside the physical domain (a negative variance
during a predictor step, a parameter just past the end of a sweep). There the closed forms raise
(math domain errors, singular matrices) or overflow; the engine treats a non-finite residual as a
rejected step, so every callback handed to it returns NaNs in those cases. Only numerical
failures (:func:`solvers.core.errors.is_numerical`) are turned into NaNs; anything else is a bug
and propagates.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from solvers.core.errors import NUMERICAL, is_numerical

#: What a closed form may raise at an invalid iterate; a ValueError counts only when it is a math domain error
#: (``is_numerical`` decides), so the handlers re-raise everything else.
CANDIDATES = (*NUMERICAL, ValueError)


def guarded(fn: Callable[..., Any], shape: tuple[int, ...]) -> Callable[..., np.ndarray]:
    """``fn`` with numerical failures and overflow warnings turned into an all-NaN array of ``shape``."""

    def wrapper(*args: Any) -> np.ndarray:
        try:
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                return np.asarray(fn(*args), dtype=float)
        except CANDIDATES as exc:
            if not is_numerical(exc):
                raise
            return np.full(shape, np.nan)

    return wrapper


def guarded_scalar(fn: Callable[..., float]) -> Callable[..., float]:
    def wrapper(*args: Any) -> float:
        try:
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                return float(fn(*args))
        except CANDIDATES as exc:
            if not is_numerical(exc):
                raise
            return float("nan")

    return wrapper
