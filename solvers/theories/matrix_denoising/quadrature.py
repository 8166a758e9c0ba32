"""Integration of ∫ρ³ (and of the low moments of ρ) for a density known through its Stieltjes transform.

ρ has square-root edges, where a polynomial rule converges slowly. The edges are therefore located
first, from a coarse scan: between two neighbouring scan points where ρ switches between zero and
positive, the edge is the critical point G_e of the inverse z(G) (z'(G_e) = 0, G_e real) on the physical
branch, found by regula falsi between the real G of the outer point (z' < 0 there) and a point past the
edge (z' > 0); the edge sits at x_e = z(G_e). Should that fail, the edge is bracketed by bisection on
"ρ(x) > 0". A panel that ends at an edge is integrated after the substitution x = x_e ± h t², which
turns ρ ∝ √|x − x_e| into a smooth function of t, so 16-point Gauss–Legendre converges fast. Panels are
bisected where the rule has not converged (steep but smooth regions). If the result does not integrate
to one (a component narrower than the scan spacing was missed) the scan is refined and the whole
integration repeated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

NODES, WEIGHTS = np.polynomial.legendre.leggauss(16)
SCAN_POINTS = 256
COARSE_PANELS = 8
MAX_ROUNDS = 40
MAX_ACTIVE_PANELS = 2000
MASS_TOL = 1e-10
REGULAR, LEFT_EDGE, RIGHT_EDGE = 0, 1, 2


class Spectrum(Protocol):
    """What the quadrature needs (see :class:`~.stieltjes.ObservationSpectrum`); ``lam`` may be per point."""

    lam: float | np.ndarray

    def stieltjes(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]: ...

    def polish(self, guess: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]: ...

    def inverse(self, G: np.ndarray) -> tuple[np.ndarray, np.ndarray]: ...

    def at(self, index: np.ndarray) -> Spectrum: ...

    def bounds(self) -> tuple[np.ndarray, np.ndarray]: ...


@dataclass
class PowerIntegrals:
    """∫ρ³, ∫ρ, ∫xρ, ∫x²ρ and how they were obtained."""

    cube: float
    mass: float
    first: float
    second: float
    error_estimate: float
    panels: int
    evaluations: int
    edges: int
    converged: bool


def _rho(G: np.ndarray) -> np.ndarray:
    return np.maximum(-G.imag, 0.0) / np.pi


def _nodes(a: np.ndarray, b: np.ndarray, kind: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Quadrature nodes x (n_panels, 16) and weights (dx included) for each panel kind."""
    t = 0.5 * (NODES + 1.0)  # on [0, 1]
    w = 0.5 * WEIGHTS
    h = (b - a)[:, None]
    x = a[:, None] + h * t[None, :]
    wx = h * w[None, :] * np.ones_like(x)
    left = kind == LEFT_EDGE
    if left.any():  # x = a + h t², dx = 2 h t dt
        x[left] = a[left, None] + h[left] * t[None, :] ** 2
        wx[left] = h[left] * (2.0 * t * w)[None, :]
    right = kind == RIGHT_EDGE
    if right.any():  # x = b − h t²
        x[right] = b[right, None] - h[right] * t[None, :] ** 2
        wx[right] = h[right] * (2.0 * t * w)[None, :]
    return x, wx


def _legendre_vandermonde(t: np.ndarray) -> np.ndarray:
    return np.polynomial.legendre.legvander(2.0 * t - 1.0, NODES.size - 1)


def _child_parameters(kind: int, side: int) -> np.ndarray:
    """Positions (in the parent's own variable t ∈ [0, 1]) of the nodes of the left (0) or right (1) child."""
    t = 0.5 * (NODES + 1.0)
    if kind == REGULAR:
        return 0.5 * t if side == 0 else 0.5 + 0.5 * t
    if kind == LEFT_EDGE:  # parent x = a + h t²; children: [a, m] (left edge), [m, b] (regular)
        return t / np.sqrt(2.0) if side == 0 else np.sqrt(0.5 + 0.5 * t)
    # RIGHT_EDGE: parent x = b − h t²; children: [a, m] (regular), [m, b] (right edge)
    return np.sqrt(1.0 - 0.5 * t) if side == 0 else t / np.sqrt(2.0)


#: Interpolation from a parent's 16 node values to each child's nodes, per (parent kind, side).
_PARENT_INVERSE = np.linalg.inv(_legendre_vandermonde(0.5 * (NODES + 1.0)))
INTERPOLATE = {
    (k, side): _legendre_vandermonde(_child_parameters(k, side)) @ _PARENT_INVERSE
    for k in (REGULAR, LEFT_EDGE, RIGHT_EDGE)
    for side in (0, 1)
}


def _stieltjes_at(spec: Spectrum, x: np.ndarray, guess: np.ndarray | None) -> np.ndarray:
    """G at the nodes: Newton from interpolated guesses where they are trustworthy, the full homotopy elsewhere."""
    if guess is None:
        return spec.stieltjes(x)[0]
    G, res = spec.polish(guess, x)
    scale = 1.0 + np.abs(x)
    # Accept a polished value only if it converged and stayed within a fraction of the distance to the
    # conjugate root (≈ 2|Im G|), so that it cannot have switched branches.
    trusted = (
        np.isfinite(G)
        & (res <= 1e-11 * scale)
        & (np.abs(G - guess) <= 0.25 * np.abs(guess.imag) + 1e-9 * np.abs(guess))
    )
    if not trusted.all():
        bad = np.flatnonzero(~trusted)
        G[bad] = spec.at(bad).stieltjes(x[bad])[0]
    return G


def _panel_values(
    family: Spectrum,
    row: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    kind: np.ndarray,
    guess: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Per panel: [∫ρ³, ∫ρ, ∫xρ, ∫x²ρ], and G at the nodes (n_panels, 16). ``row`` indexes λ."""
    x, wx = _nodes(a, b, kind)
    spec = family.at(np.repeat(row, NODES.size))
    G = _stieltjes_at(spec, x.ravel(), None if guess is None else guess.ravel()).reshape(x.shape)
    rho = _rho(G)
    vals = np.stack(
        [(wx * rho**3).sum(1), (wx * rho).sum(1), (wx * x * rho).sum(1), (wx * x * x * rho).sum(1)], axis=1
    )
    return vals, G


def _child_guesses(G: np.ndarray, kind: np.ndarray, side: int) -> np.ndarray:
    out = np.empty_like(G)
    for k in (REGULAR, LEFT_EDGE, RIGHT_EDGE):
        sel = kind == k
        if sel.any():
            out[sel] = G[sel] @ INTERPOLATE[(k, side)].T
    return out


def _critical_points(spec: Spectrum, g_out: np.ndarray, g_past: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Real roots of z'(G) between g_out (z' < 0) and a point beyond it; returns (G_e, found)."""
    with np.errstate(all="ignore"):

        def dz(g: np.ndarray) -> np.ndarray:
            d = spec.inverse(g + 0j)[1]
            return np.where(np.abs(d.imag) <= 1e-9 * (1 + np.abs(d.real)), d.real, np.nan)

        fa = dz(g_out)
        b = g_past.copy()
        fb = dz(b)
        # Push the far end out until z' turns positive (at most 2^6 times the initial distance).
        for _ in range(6):
            need = ~(fb > 0)
            if not need.any():
                break
            b = np.where(need, g_out + 2.0 * (b - g_out), b)
            fb = np.where(need, dz(b), fb)
        found = (fa < 0) & (fb > 0)
        a = g_out.copy()
        side = np.zeros(a.shape, dtype=int)
        for _ in range(100):  # Illinois regula falsi
            c = np.where(found, (a * fb - b * fa) / (fb - fa), a)
            fc = dz(c)
            bad = ~np.isfinite(fc)
            c = np.where(bad, 0.5 * (a + b), c)
            fc = np.where(bad, dz(c), fc)
            left = fc < 0
            a, fa = np.where(left, c, a), np.where(left, fc, fa)
            b, fb = np.where(left, b, c), np.where(left, fb, fc)
            fb = np.where(left & (side == 1), 0.5 * fb, fb)
            fa = np.where(~left & (side == -1), 0.5 * fa, fa)
            side = np.where(left, 1, -1)
            if np.all(~found | (np.abs(b - a) <= 1e-15 * np.abs(a) + 1e-300)):
                break
        return 0.5 * (a + b), found & np.isfinite(a) & np.isfinite(b)


def _bisect_edges(spec: Spectrum, x_out: np.ndarray, x_in: np.ndarray, steps: int = 30) -> np.ndarray:
    """Fallback: bisection on 'ρ(x) > 0' between a point outside and a point inside the support."""
    for _ in range(steps):
        mid = 0.5 * (x_out + x_in)
        G, _ = spec.stieltjes(mid)
        inside = _rho(G) > 0
        x_in = np.where(inside, mid, x_in)
        x_out = np.where(inside, x_out, mid)
    return 0.5 * (x_out + x_in)


def locate_edges(family: Spectrum, x: np.ndarray, G: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Edges between consecutive scan points where ρ switches on or off; ``x``, ``G`` are (n_λ, n_scan).

    Returns (row index, edge position) of every edge found.
    """
    rho = _rho(G)
    positive = rho > 1e-13 * np.maximum(rho.max(axis=1, keepdims=True), 1e-300)
    rows, cols = np.nonzero(positive[:, 1:] != positive[:, :-1])
    if rows.size == 0:
        return rows, np.zeros(0)
    pos = positive[rows, cols]
    outside = np.where(pos, cols + 1, cols)
    inside = np.where(pos, cols, cols + 1)
    g_out = G[rows, outside].real
    # G decreases with x off the support, so past the edge lies on the side of Re G at the inner point.
    g_past = g_out + 1.5 * (G[rows, inside].real - g_out)
    spec = family.at(rows)
    g_e, found = _critical_points(spec, g_out, g_past)
    with np.errstate(all="ignore"):
        xe = spec.inverse(g_e + 0j)[0].real
    x_out, x_in = x[rows, outside], x[rows, inside]
    ok = found & np.isfinite(xe) & (xe >= np.minimum(x_out, x_in)) & (xe <= np.maximum(x_out, x_in))
    if not ok.all():
        miss = ~ok
        xe = xe.copy()
        xe[miss] = _bisect_edges(family.at(rows[miss]), x_out[miss], x_in[miss])
    return rows, xe


def _initial_panels(lo: float, hi: float, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Coarse breaks plus edges; a panel touching an edge gets the t² substitution at that end."""
    pts = np.unique(np.concatenate([np.linspace(lo, hi, COARSE_PANELS + 1), edges]))
    a, b = pts[:-1], pts[1:]
    at_a = np.isin(a, edges)
    at_b = np.isin(b, edges)
    # A panel with an edge at each end (one component, or a gap) is split so that each half has one.
    both = at_a & at_b
    mid = 0.5 * (a + b)
    a = np.concatenate([a[~both], a[both], mid[both]])
    b = np.concatenate([b[~both], mid[both], b[both]])
    ka = np.concatenate([at_a[~both], np.ones(both.sum(), bool), np.zeros(both.sum(), bool)])
    kb = np.concatenate([at_b[~both], np.zeros(both.sum(), bool), np.ones(both.sum(), bool)])
    return a, b, np.where(ka, LEFT_EDGE, np.where(kb, RIGHT_EDGE, REGULAR))


def _integrate_batch(family: Spectrum, rel_tol: float, scan: int) -> list[PowerIntegrals]:
    """All λ of ``family`` (an array) at once: scan, edges, panels, adaptive rounds."""
    lams = np.atleast_1d(np.asarray(family.lam, dtype=float))
    n = lams.size
    lo, hi = (np.atleast_1d(v) for v in family.bounds())
    xs = lo[:, None] + (hi - lo)[:, None] * np.linspace(0.0, 1.0, scan)[None, :]
    rows_all = np.repeat(np.arange(n), scan)
    G, _ = family.at(rows_all).stieltjes(xs.ravel())
    G = G.reshape(xs.shape)
    evaluations = np.full(n, scan)
    # For the Gaussian readout the support is the whole line, but the density falls off so fast that it has
    # numerically sharp "edges" (ρ below 1e-13 of its maximum beyond them); treating them as edges works.
    edge_rows, edge_x = locate_edges(family, xs, G)
    edge_count = np.bincount(edge_rows, minlength=n)

    parts = [_initial_panels(lo[i], hi[i], np.sort(edge_x[edge_rows == i])) for i in range(n)]
    row = np.concatenate([np.full(p[0].size, i) for i, p in enumerate(parts)])
    a = np.concatenate([p[0] for p in parts])
    b = np.concatenate([p[1] for p in parts])
    kind = np.concatenate([p[2] for p in parts])

    vals, Gp = _panel_values(family, row, a, b, kind)
    np.add.at(evaluations, row, NODES.size)
    width = hi - lo
    accepted = np.zeros((n, 4))
    err_total = np.zeros(n)
    panels = np.zeros(n, dtype=int)
    converged = np.ones(n, dtype=bool)
    floor = 64 * np.finfo(float).eps
    for round_ in range(MAX_ROUNDS):
        if a.size == 0:
            break
        pending = np.zeros(n)
        np.add.at(pending, row, vals[:, 0])
        total_cube = np.maximum(accepted[:, 0] + pending, 1e-300)
        m = 0.5 * (a + b)
        # Children keep the edge on their own side: [a, m] inherits a left edge, [m, b] a right edge.
        kind_l = np.where(kind == LEFT_EDGE, LEFT_EDGE, REGULAR)
        kind_r = np.where(kind == RIGHT_EDGE, RIGHT_EDGE, REGULAR)
        guesses = np.concatenate([_child_guesses(Gp, kind, 0), _child_guesses(Gp, kind, 1)])
        both_vals, both_G = _panel_values(
            family,
            np.concatenate([row, row]),
            np.concatenate([a, m]),
            np.concatenate([m, b]),
            np.concatenate([kind_l, kind_r]),
            guesses,
        )
        np.add.at(evaluations, row, 2 * NODES.size)
        k = a.size
        left, right = both_vals[:k], both_vals[k:]
        children = left + right
        err = np.abs(children[:, 0] - vals[:, 0])
        err_mass = np.abs(children[:, 1] - vals[:, 1])
        share = (b - a) / width[row]
        # Each panel may also err by rel_tol of its own value (these add up to at most rel_tol of the total):
        # this keeps round-off-level steps in ρ (e.g. where an evaluation switches formula) from being
        # refined forever.
        ok = (err <= rel_tol * (total_cube[row] * share + np.abs(children[:, 0])) + 1e-300) & (
            err_mass <= 0.1 * MASS_TOL * share + floor * np.abs(children[:, 1]) + 1e-16
        )
        # Stop refining a λ whose panels keep multiplying (a feature the rule cannot resolve): report it.
        crowded = np.bincount(row[~ok], minlength=n) > MAX_ACTIVE_PANELS
        if round_ == MAX_ROUNDS - 1 or crowded.any():
            give_up = (round_ == MAX_ROUNDS - 1) | crowded[row]
            converged[np.unique(row[~ok & give_up])] = False
            ok |= give_up
        np.add.at(accepted, row[ok], children[ok])
        np.add.at(err_total, row[ok], err[ok])
        np.add.at(panels, row[ok], 2)
        keep = ~ok
        row = np.concatenate([row[keep], row[keep]])
        a, b = np.concatenate([a[keep], m[keep]]), np.concatenate([m[keep], b[keep]])
        kind = np.concatenate([kind_l[keep], kind_r[keep]])
        vals = np.concatenate([left[keep], right[keep]])
        Gp = np.concatenate([both_G[:k][keep], both_G[k:][keep]])
    return [
        PowerIntegrals(
            cube=float(accepted[i, 0]),
            mass=float(accepted[i, 1]),
            first=float(accepted[i, 2]),
            second=float(accepted[i, 3]),
            error_estimate=float(err_total[i]),
            panels=int(panels[i]),
            evaluations=int(evaluations[i]),
            edges=int(edge_count[i]),
            converged=bool(converged[i]),
        )
        for i in range(n)
    ]


def integrate_powers_many(family: Spectrum, rel_tol: float = 1e-12) -> list[PowerIntegrals]:
    """∫ρ³ (to ``rel_tol`` relative) and the moments of ρ for every λ of ``family`` (a float or an array).

    λ whose density does not integrate to one (a component narrower than the scan spacing was missed)
    are redone with a four times finer scan, twice at most.
    """
    lams = np.atleast_1d(np.asarray(family.lam, dtype=float))
    results: list[PowerIntegrals | None] = [None] * lams.size
    todo = np.arange(lams.size)
    scan = SCAN_POINTS
    spent = np.zeros(lams.size, dtype=int)
    for attempt in range(3):
        batch = _integrate_batch(family.at(todo), rel_tol, scan)
        retry = []
        for i, res in zip(todo, batch, strict=True):
            spent[i] += res.evaluations
            res.evaluations = int(spent[i])
            results[i] = res
            if abs(res.mass - 1.0) > MASS_TOL and attempt < 2:
                retry.append(i)
        if not retry:
            break
        todo = np.array(retry)
        scan *= 4
    return results  # type: ignore[return-value]


def integrate_powers(spec: Spectrum, rel_tol: float = 1e-12) -> PowerIntegrals:
    """Single-λ version of :func:`integrate_powers_many`."""
    return integrate_powers_many(spec.at(np.zeros(1, dtype=int)), rel_tol)[0]
