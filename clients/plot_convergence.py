"""The convergence rule as figures show it: an experiment's estimate that fails it (R-hat above RHAT_MAX or bulk
ESS below ESS_MIN) is drawn hollow, and the caption names each such point with the diagnostics that fail."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

#: An estimate is drawn as converged when its R-hat is at most RHAT_MAX and its bulk ESS at least ESS_MIN (the
#: experiments' convergence rule); otherwise hollow, and named in the caption.
RHAT_MAX, ESS_MIN = 1.01, 400.0
UNCONVERGED = "not converged (hollow)"


#: A point that did not converge: (parameter value, its R-hat, its bulk ESS).
Unconverged = tuple[float, float | None, float | None]


def passes(rhat: float | None, ess: float | None) -> bool:
    """Whether an estimate with this R-hat and bulk ESS passes the convergence rule (a missing one is not judged)."""
    return not ((rhat is not None and rhat > RHAT_MAX) or (ess is not None and ess < ESS_MIN))


def diagnostics(rows: Sequence[Unconverged]) -> str:
    """The diagnostics that fail the rule: R-hat (the worst of several points) where it exceeds :data:`RHAT_MAX`,
    ESS (the least) where it falls below :data:`ESS_MIN`."""
    rhats = [r for _, r, _ in rows if r is not None and r > RHAT_MAX]
    esses = [e for _, _, e in rows if e is not None and e < ESS_MIN]
    several = len(rows) > 1
    words = (f"R-hat {'up to ' if several else ''}{max(rhats):.3f}" if rhats else "",
             f"ESS {'from ' if several else ''}{min(esses):.0f}" if esses else "")
    return ", ".join(w for w in words if w)


#: The head of the caption's line that names the hollow points.
HOLLOW = f"hollow: not converged (R-hat > {RHAT_MAX:g} or ESS < {ESS_MIN:g}): "


def unconverged_note(points: Mapping[str, Sequence[Unconverged]], parameter: str, head: bool = True) -> str:
    """The caption's line naming the hollow points: each run at its parameter values, with the diagnostics that
    fail (``head``: after :data:`HOLLOW`)."""
    parts = [f"{label} at {parameter} = {', '.join(f'{x:g}' for x, _, _ in rows)} ({diagnostics(rows)})"
             for label, rows in points.items()]
    return (HOLLOW if head else "") + "; ".join(parts)
