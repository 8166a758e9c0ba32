"""brentq on a bracket, with a residual that is not a number at some point reported as a numerical failure.

scipy's brentq raises a plain ValueError when the function returns NaN; here that is a
:class:`~solvers.core.errors.DomainError` (the equations cannot be evaluated there), so that it
becomes a diagnostic, while a ValueError from a programming error still propagates.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.optimize import brentq

from solvers.core.errors import DomainError


def bracketed_root(
    f: Callable[[float], float], a: float, b: float, known: dict[float, float] | None = None, **options: float
) -> float:
    """The root of ``f`` in [a, b] (f(a), f(b) of opposite signs) by brentq; ``known``: values already computed."""
    known = dict(known or {})

    def checked(x: float) -> float:
        v = known.pop(x) if x in known else float(f(x))
        if np.isnan(v):
            raise DomainError(f"the residual is not a number at {x!r}")
        return v

    return float(brentq(checked, a, b, **options))
