"""Residuals that report an invalid point as non-finite instead of raising.

Continuation and line searches probe points outside the physical domain (a negative variance
during a predictor step, a parameter just past the end of a sweep). There the closed forms raise
(math domain errors, singular matrices) or overflow; the engine treats a non-finite residual as a
rejected step, so every callback handed to it returns NaNs in those cases.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

FAILURES = (ValueError, ZeroDivisionError, OverflowError, FloatingPointError, np.linalg.LinAlgError)


def guarded(fn: Callable[..., Any], shape: tuple[int, ...]) -> Callable[..., np.ndarray]:
    """``fn`` with failures and overflow warnings turned into an all-NaN array of ``shape``."""

    def wrapper(*args: Any) -> np.ndarray:
        try:
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                return np.asarray(fn(*args), dtype=float)
        except FAILURES:
            return np.full(shape, np.nan)

    return wrapper


def guarded_scalar(fn: Callable[..., float]) -> Callable[..., float]:
    def wrapper(*args: Any) -> float:
        try:
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                return float(fn(*args))
        except FAILURES:
            return float("nan")

    return wrapper
