"""Result types shared by every solver (scipy's ``OptimizeResult`` vocabulary, typed)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: One table of status messages, so every method words the same outcome the same way.
STATUS_MESSAGES = {
    "converged": "Residual below tolerance.",
    "max_iterations": "Iteration cap reached before the residual met the tolerance.",
    "nan": "Non-finite value encountered; the last finite iterate is returned.",
    "line_search": "Line search could not reduce the residual.",
    "singular": "Jacobian is singular at the iterate.",
    "time_limit": "Time limit reached before convergence.",
    "diverged": "Residual grew beyond recovery.",
}


@dataclass
class SolveResult:
    """Outcome of one fixed-point / root solve."""

    x: np.ndarray
    converged: bool
    residual: float
    iterations: int
    method: str
    seconds: float
    status: str = "converged"
    nfev: int = 0
    history: list[float] = field(default_factory=list)

    @property
    def message(self) -> str:
        return STATUS_MESSAGES.get(self.status, self.status)

    def diagnostics(self) -> dict[str, Any]:
        return {
            "residual": self.residual,
            "iterations": self.iterations,
            "method": self.method,
            "seconds": self.seconds,
            "status": self.status,
            "message": self.message,
            "nfev": self.nfev,
        }
