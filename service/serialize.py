"""The codec: the engine's typed results become the contract's result models, and those models give the JSON
(and a stored point becomes a catalogue again, for resuming).

The result's shape is written once, as the response models of :mod:`service.result_schemas`; every response,
stored sweep point and job result is built here as one of them from the typed objects of :mod:`solvers.core`
(catalogues, branches, special points, sweeps, traced lines) and of :mod:`solvers.experiments`, and its JSON is
the model's dump (:func:`wire`): a field the engine gives the wrong type is an error where the result is made,
never a malformed answer. The output never carries NaN or Infinity (:func:`service.jsonsafe.json_safe`). Each
branch also carries its ``state`` (the solution vector), so that a stored point can be turned back into a
catalogue and a sweep resumed from it without solving it again.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any, TypeVar

import numpy as np
import orjson
from pydantic import BaseModel

from service.jsonsafe import json_safe, json_safe_at, result_diagnostics
from service.result_schemas import (
    BifurcationOut,
    BoundaryDiagnostics,
    BoundaryJobResult,
    BranchEndOut,
    BranchOut,
    ComparisonOut,
    CriticalPointOut,
    CurveCount,
    CurveOut,
    Curves,
    CurveSpecialOut,
    DrawsSeriesOut,
    EstimateOut,
    ExperimentPointOut,
    LineEndOut,
    LineOut,
    OriginOut,
    PointOut,
    SampledOut,
    SolveBody,
    SolveDiagnostics,
    SweepDiagnostics,
    SweepSummary,
    TransitionOut,
    UnexplainedOut,
)
from solvers.core.curve import Curve, End
from solvers.core.curve_results import CurveTable, Sweep
from solvers.core.lines.results import BoundaryResult, Unexplained
from solvers.core.results import Attempt, Branch, Catalogue, Notes, Origin, Report, Search, SolveResult
from solvers.core.special_points import BOUNDARY_OF, BifurcationPoint, SpecialPoint
from solvers.core.status import Status
from solvers.experiments.draws import Draws
from solvers.experiments.results import Estimate, ExperimentResult, SamplerDiagnostics


def wire(model: BaseModel) -> dict[str, Any]:
    """A result model's JSON object: the fields the codec set, in the model's order (an optional field it left
    unset, such as a branch end's ``partner`` on a domain end, is not written)."""
    return model.model_dump(exclude_unset=True)


def dumps(obj: Any) -> str:
    """Compact JSON text of an already JSON-safe object (what is stored and sent); NaN/Infinity are refused."""
    return json.dumps(obj, allow_nan=False, separators=(",", ":"))


def point_text(point: Mapping[str, Any]) -> str:
    """JSON text of a sweep point made by :func:`point_json` (already JSON-safe: finite floats, plain lists), as it
    is stored and sent. Points are the bulk of a sweep's result (a kernel sweep writes 500 floats a point), so they
    are written by orjson, twenty times faster than :func:`dumps`: the same numbers, each in its shortest
    round-trip form (orjson writes 1e-05 as 0.00001). A value orjson refuses (an integer beyond 64 bits) takes
    :func:`dumps`."""
    try:
        return orjson.dumps(point).decode()
    except TypeError:
        return dumps(point)


#: Keys of a sweep point, in the contract's order.
POINT_KEYS = ("parameter", "converged", "equilibrium", "branches", "order_parameters", "observables")


def origin_out(o: Origin | None) -> OriginOut | None:
    return None if o is None else OriginOut(method=o.method, start=o.start)


def search_json(s: Search | None) -> dict[str, Any] | None:
    """How a catalogue looked for its branches (docs/search.md)."""
    return None if s is None else dataclasses.asdict(s) | {"starts": list(s.starts),
                                                           "unknown_starts": list(s.unknown_starts)}


M = TypeVar("M", bound=BaseModel)


def build(model: type[M], path: str, bad: list[str], source: Any = None, **fields: Any) -> M:
    """``model`` from the engine's values made JSON-safe on the way in (:func:`json_safe_at`: arrays as lists, a
    solve's record as its diagnostics, a non-finite number as null with its path in ``bad``), so that its dump is
    the JSON as it is (a free-form table field would otherwise dump an engine dataclass by its own fields).

    ``source``: an engine record whose attributes of the model's field names are taken as they are, so that only
    the fields whose name or form differ are written out (``fields`` override them)."""
    if source is not None:
        fields = {**{name: getattr(source, name) for name in model.model_fields
                     if name not in fields and hasattr(source, name)}, **fields}
    return model(**json_safe_at(fields, path, bad))


def branch_json(b: Branch, path: str, bad: list[str]) -> dict[str, Any]:
    """A branch with its complete tables, JSON-safe (its non-finite values listed in ``bad`` under ``path``)."""
    report = b.report or Report()
    diagnostics = {**result_diagnostics(b.result), "starts": list(b.starts), "stability_margin": b.stability_margin}
    return wire(build(
        BranchOut, path, bad,
        name=b.name,
        origin=origin_out(b.origin),
        converged=b.converged,
        stable=b.stable,
        free_entropy=b.free_entropy,
        order_parameters=dict(report.order_parameters),
        observables=dict(report.observables),
        diagnostics=diagnostics,
        state=b.x,
    ))


def noted(fields: dict[str, Any], notes: Mapping[str, Any] | None) -> dict[str, Any]:
    """``fields`` with a theory's notes (its own diagnostics or fields) laid over them: a note of the same name wins."""
    return {**fields, **(notes or {})}


def catalogue_diagnostics(cat: Catalogue, bad: list[str]) -> SolveDiagnostics:
    ref = cat.reference
    computed = dict(
        residual=ref.result.residual if ref else None,
        iterations=cat.iterations,
        method=ref.result.method if ref else None,
        seconds=cat.seconds,
        status=cat.status.value,
        message=cat.message,
        complete=cat.complete,
    )
    return build(SolveDiagnostics, "diagnostics", bad, **noted(computed, cat.notes and cat.notes.diagnostics))


def catalogue_tables(cat: Catalogue, bad: list[str]) -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, Any]]:
    """(branches, order_parameters, observables) of a catalogue, JSON-safe: every branch complete, and the
    catalogue's tables (the equilibrium's, its observables with the notes'), its non-finite values listed under
    both names, as converting the whole body at once would.

    Each branch is converted once and the tables are the equilibrium's converted ones, so that a sweep's largest
    values (the predictor at every test point) are checked and copied once per point, not twice."""
    branches = [branch_json(b, f"branches[{i}]", bad) for i, b in enumerate(cat.branches)]
    k = next((i for i, b in enumerate(branches) if b["name"] == cat.equilibrium), None)
    order = branches[k]["order_parameters"] if k is not None else {}
    observables = dict(branches[k]["observables"]) if k is not None else {}
    noted = json_safe_at(dict(cat.notes.observables), "observables", bad) if cat.notes is not None else {}
    if k is not None:
        own = f"branches[{k}]."
        bad += [path[len(own):] for path in list(bad) if path.startswith(own) and _point_path(path[len(own):], noted)]
    observables.update(noted)
    return branches, order, observables


def _non_finite(bad: list[str]) -> dict[str, Any]:
    return {"non_finite": sorted(set(bad))} if bad else {}


def solution_json(theory: str, cat: Catalogue) -> dict[str, Any]:
    """A single solve's response body (without ``spec_hash``, ``cached`` and what :func:`service.solving.stamped`
    adds)."""
    bad: list[str] = []
    branches, order, observables = catalogue_tables(cat, bad)
    fields = json_safe_at(dict(cat.notes.fields) if cat.notes is not None else {}, "", bad)
    body = SolveBody(**noted(dict(theory=theory, converged=cat.converged, order_parameters=order,
                                  observables=observables, branches=branches, equilibrium=cat.equilibrium,
                                  search=search_json(cat.search), diagnostics=catalogue_diagnostics(cat, bad)),
                             fields))
    return wire(body) | _non_finite(bad)


def differences(own: Mapping[str, Any], point: Mapping[str, Any]) -> dict[str, Any]:
    """A branch's table as the compact point writes it: the entries whose value differs from the point's, and
    null for an entry the point has and the branch has not."""
    out = {k: v for k, v in own.items() if k not in point or (point[k] is not v and point[k] != v)}
    out.update({k: None for k in point if k not in own})
    return out


def compact_branch(b: dict[str, Any], point: Mapping[str, Any]) -> dict[str, Any]:
    """A complete branch as a compact point holds it: its tables' differences from the point's, and its status's
    standard message left out."""
    out = {**b, "order_parameters": differences(b["order_parameters"], point["order_parameters"]),
           "observables": differences(b["observables"], point["observables"])}
    diag = b["diagnostics"]
    status = diag.get("status")
    if status is not None and diag.get("message") == Status(status).message:
        out["diagnostics"] = {k: v for k, v in diag.items() if k != "message"}
    return out


def point_json(value: float, cat: Catalogue) -> dict[str, Any]:
    """One point of a sweep: the catalogue at ``parameter = value``, compact (``docs/architecture.md``): the
    point's tables are the equilibrium's, each branch's hold what differs from them."""
    bad: list[str] = []
    branches, order, observables = catalogue_tables(cat, bad)
    tables = {"order_parameters": order, "observables": observables}
    point = PointOut(
        parameter=json_safe_at(float(value), "parameter", bad),
        converged=bool(cat.converged),
        equilibrium=cat.equilibrium,
        branches=[compact_branch(b, tables) for b in branches],
        **tables,
        **_non_finite(bad),
    )
    return wire(point)


def _point_path(path: str, noted: Mapping[str, Any]) -> bool:
    """A path inside the equilibrium branch that is also one of the point's own tables (not replaced by a note)."""
    if path.startswith("order_parameters."):
        return True
    if path.startswith("observables."):
        name = path[len("observables."):].split(".", 1)[0].split("[", 1)[0]
        return name not in noted
    return False


def branch_tables(point: Mapping[str, Any], branch: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A branch's complete (order_parameters, observables) from a compact point (or a complete one): the point's
    entries, overridden by the branch's own; an entry the branch lists as null where the point has a value is
    one the branch does not have."""
    out = []
    for group in ("order_parameters", "observables"):
        base, own = point.get(group) or {}, branch.get(group) or {}
        merged = {**base, **own}
        out.append({k: v for k, v in merged.items() if not (v is None and k in own and base.get(k) is not None)})
    return out[0], out[1]


def bifurcation_out(bp: BifurcationPoint) -> BifurcationOut:
    nf = bp.coefficients
    return BifurcationOut(type=bp.type, criticality=bp.criticality, parameter=bp.parameter,
                          coefficients=dataclasses.asdict(nf), kernel=bp.kernel[0])


def special_point_out(sp: SpecialPoint, path: str, bad: list[str]) -> TransitionOut:
    """A special point of a sweep; ``event``, ``bifurcation`` and ``state`` only where it has them (the theory's
    ``state`` made JSON-safe on the way in, under ``path``)."""
    state = json_safe_at(dict(sp.state), f"{path}.state", bad) if sp.state else None
    optional = {"event": sp.event, "bifurcation": sp.bifurcation and bifurcation_out(sp.bifurcation), "state": state}
    return TransitionOut(kind=sp.transition, type=sp.kind.value, parameter=sp.parameter, branches=list(sp.branches),
                         detail=sp.detail, refined=sp.refined, uncertainty=sp.uncertainty,
                         **{k: v for k, v in optional.items() if v is not None})


def special_point_json(sp: SpecialPoint) -> dict[str, Any]:
    return json_safe(wire(special_point_out(sp, "", [])))


#: Longest numeric list (or array) a curve column carries at each point (``Qbar`` per layer); longer stay in points.
CURVE_LIST_MAX = 16
NUMBER_TYPES = (int, float, np.integer, np.floating)
SCALAR_TYPES = (*NUMBER_TYPES, bool, str, np.bool_)


def curve_entries(values: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """The entries of a report table a curve carries at each point, by the names a point's entries are read by
    (one rule, the client's ``clients.names.flatten``: nested ones by dotted name, ``class_distance.D2``; a vector
    whole): scalars, and numeric vectors of at most CURVE_LIST_MAX numbers (``Qbar`` per layer of a deep network).
    Longer lists, lists of tables and missing (null) values are left out."""
    out: dict[str, Any] = {}
    for k, v in values.items():
        name = f"{prefix}{k}"
        if type(v) is float or isinstance(v, SCALAR_TYPES):  # most entries; the Mapping (ABC) check is slow
            out[name] = v
        elif isinstance(v, (list, tuple, np.ndarray)):
            if not 0 < (v.size if isinstance(v, np.ndarray) else len(v)) <= CURVE_LIST_MAX:
                continue  # a long list (a predictor at every test point) stays in the points
            flat = v.ravel().tolist() if isinstance(v, np.ndarray) else list(v)
            if all(isinstance(e, NUMBER_TYPES) and not isinstance(e, bool) for e in flat):
                out[name] = v.tolist() if isinstance(v, np.ndarray) else flat
        elif isinstance(v, Mapping):
            out.update(curve_entries(v, f"{name}."))
    return out


def _columns(tables: list[dict[str, Any]]) -> dict[str, list[Any]]:
    names = list(dict.fromkeys(n for t in tables for n in t))
    return {n: [t.get(n) for t in tables] for n in names}


def curve_json(table: CurveTable, special_points: tuple[SpecialPoint, ...]) -> dict[str, Any]:
    """One traced curve in columns (``docs/architecture.md``, "curves")."""
    rows = table.rows
    reports = [r.report or Report() for r in rows]
    special = []
    for i, r in enumerate(rows):
        if r.special is not None and (i == 0 or rows[i - 1].special != r.special):
            sp = special_points[r.special]
            special.append(CurveSpecialOut(index=i, kind=sp.transition, type=sp.kind.value, parameter=sp.parameter,
                                           branches=list(sp.branches)))
    # the numbers made JSON-safe at once (a curve's non_finite names its columns); names and flags have nothing
    # for json_safe to replace
    numbers = json_safe({
        "parameter": [r.p for r in rows],
        "arclength": [r.arclength for r in rows],
        "free_entropy": [r.free_entropy for r in rows],
        "order_parameters": _columns([curve_entries(rep.order_parameters) for rep in reports]),
        "observables": _columns([curve_entries(rep.observables) for rep in reports]),
        "special": [wire(s) for s in special],
    })
    return wire(CurveOut(
        name=table.name,
        branches=list(table.branches),
        traced=table.traced,
        message=table.message,
        ends=[branch_end_json(e) for e in table.ends],
        branch=[r.branch for r in rows],
        stable=[None if r.stable is None else bool(r.stable) for r in rows],
        **numbers,
    ))


#: The fields a branch end of each kind has beyond branch, kind, parameter and detail.
END_FIELDS = {"fold": ("partner",), "domain": ("quantity",), "solver": ("method", "residual")}
#: A curve's end kinds as the contract names them for a sweep's curves (a line's ends keep the engine's names).
CURVE_END_KIND = {"closed": "loop", "max_points": "step_cap"}


def branch_end_json(end: End) -> dict[str, Any]:
    """How a branch on a curve ends (``docs/architecture.md``, "curves"): only the fields its kind has."""
    own = {name: getattr(end, name) for name in END_FIELDS.get(end.kind, ())}
    kind = CURVE_END_KIND.get(end.kind, end.kind)
    return json_safe(wire(BranchEndOut(branch=end.branch, kind=kind, parameter=end.parameter, detail=end.detail,
                                       **own)))


def curves_json(sweep: Sweep) -> list[dict[str, Any]] | None:
    """The sweep's traced curves as tables; None for a grid sweep (it traces none)."""
    if sweep.tables is None:
        return None
    return [curve_json(t, sweep.special_points) for t in sweep.tables]


def no_curves_reason(sweep: Sweep, method: str) -> str:
    """Why a sweep has no curves (``method``: the one requested)."""
    if method == "grid":
        return "a grid sweep solves each value on its own and traces no curves; use method continuation"
    if len(set(sweep.values)) <= 1:
        return "a single value: there is no curve to trace"
    return "this theory sweeps this spec on a grid (one branch, or a solve too costly to trace): no curves"


def sweep_diagnostics(sweep: Sweep, bad: list[str]) -> SweepDiagnostics:
    resumed = {"reused": len(sweep.reused), "computed": len(sweep.values) - len(sweep.reused)}
    computed = dict(curves=[CurveCount(name=c.name, points=len(c.points), message=c.message) for c in sweep.curves],
                    **({"resumed": resumed} if sweep.reused else {}))
    # converged, complete, residual, … read from the sweep by their names
    notes = sweep.notes and sweep.notes.diagnostics
    return build(SweepDiagnostics, "diagnostics", bad, sweep, **noted(computed, notes))


def sweep_summary(theory: str, parameter: str, sweep: Sweep) -> dict[str, Any]:
    """Everything of a sweep's result but its points and curves."""
    bad: list[str] = []
    fields = json_safe_at(dict(sweep.notes.fields) if sweep.notes is not None else {}, "", bad)
    summary = SweepSummary(**noted(dict(theory=theory, parameter=parameter, method=sweep.method,
                                        transitions=[special_point_out(sp, f"transitions[{i}]", bad)
                                                     for i, sp in enumerate(sweep.special_points)],
                                        diagnostics=sweep_diagnostics(sweep, bad)), fields))
    return json_safe(wire(summary) | _non_finite(bad))  # the typed numbers (a transition's parameter) checked here


def sweep_json(theory: str, parameter: str, sweep: Sweep, points: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A whole sweep, curves included; ``points`` are the already-serialised points where the caller has them."""
    if points is None:
        points = [point_json(v, c) for v, c in zip(sweep.values, sweep.catalogues, strict=True)]
    return {**sweep_summary(theory, parameter, sweep), **curves_fields(sweep), "points": points}


def curves_fields(sweep: Sweep, method: str | None = None) -> dict[str, Any]:
    """``{"curves": [...]}``, or ``{"curves": null, "curves_reason": ...}`` for a sweep that traced none."""
    curves = curves_json(sweep)
    if curves is None:
        return wire(Curves(curves=None, curves_reason=no_curves_reason(sweep, method or sweep.method)))
    return {"curves": curves}  # already the models' dumps: not validated twice


# ---------------------------------------------------------------------------------------------
# boundary jobs: traced lines of a two-parameter problem
# ---------------------------------------------------------------------------------------------


def line_out(line: Curve) -> LineOut:
    """One traced line: its contract ``kind``, the engine's ``type``, and its points as [p1, p2] pairs; ``event``
    and ``bifurcation`` only where it has them. Its ends (as the critical points) are read by the model from the
    engine's record, whose field names they share."""
    optional = {"event": line.name or None, "bifurcation": line.bifurcation and bifurcation_out(line.bifurcation)}
    return LineOut(kind=BOUNDARY_OF[line.kind], type=line.kind.value, branches=list(line.branches),
                   points=[list(p) for p in line.coordinates], states=list(line.states),
                   ends=[LineEndOut.model_validate(e, from_attributes=True) for e in line.traced_ends],
                   formulation=line.formulation, message=line.message,
                   **{k: v for k, v in optional.items() if v is not None})


def unexplained_out(u: Unexplained) -> UnexplainedOut:
    return UnexplainedOut(kind=BOUNDARY_OF[u.kind], type=u.kind.value, point=list(u.point),
                          branches=list(u.branches), scan=u.scan, detail=u.detail)


def boundary_json(
    theory: str, parameters: tuple[str, str], box: tuple[tuple[float, float], tuple[float, float]],
    result: BoundaryResult, seconds: float, regions: list[dict[str, Any]] | None = None,
    continued_as_real: tuple[str, ...] = (),
) -> dict[str, Any]:
    """A boundary job's result: every traced line, the critical points where lines end, why none were found, the
    crossings no line explains, the integer fields continued as real numbers, and the equilibrium's phase at
    probes on either side of each line (``service.jobs.boundary_regions``)."""
    p1, p2 = parameters
    return json_safe(wire(BoundaryJobResult(
        theory=theory,
        parameters=[p1, p2],
        method="boundary",
        box={p1: list(box[0]), p2: list(box[1])},
        lines=[line_out(line) for line in result.lines],
        critical_points=[CriticalPointOut.model_validate(cp, from_attributes=True) for cp in result.critical_points],
        reason=result.reason,
        unexplained=[unexplained_out(u) for u in result.unexplained],
        warnings=list(result.warnings),
        continued_as_real=list(continued_as_real),
        regions=regions or [],
        diagnostics=BoundaryDiagnostics(seconds=seconds, scans={p1: list(result.scans), p2: list(result.edges)},
                                        points=sum(len(line.points) for line in result.lines)),
    )))


# ---------------------------------------------------------------------------------------------
# back from JSON: a stored point as the engine's catalogue (to resume a sweep from it)
# ---------------------------------------------------------------------------------------------


def _float_or_none(v: Any) -> float | None:
    return None if v is None else float(v)


def branch_from_json(d: Mapping[str, Any], point: Mapping[str, Any] | None = None) -> Branch:
    """A branch of a stored point (``point``: the compact point it belongs to, whose tables complete it)."""
    diag = d.get("diagnostics") or {}
    status = Status(diag.get("status", Status.CONVERGED.value if d.get("converged") else Status.MAX_ITERATIONS.value))
    x = np.asarray(d["state"], dtype=float)
    residual = diag.get("residual")
    result = SolveResult(
        x=x,
        status=status,
        residual=float("inf") if residual is None else float(residual),
        iterations=int(diag.get("iterations") or 0),
        method=str(diag.get("method") or "stored"),
        seconds=float(diag.get("seconds") or 0.0),
        nfev=int(diag.get("nfev") or 0),
    )
    return Branch(
        name=str(d["name"]),
        x=x,
        result=result,
        stable=d.get("stable"),
        stability_margin=_float_or_none(diag.get("stability_margin")),
        free_entropy=_float_or_none(d.get("free_entropy")),
        starts=tuple(diag.get("starts") or ()),
        report=Report(*branch_tables(point or {}, d)),
        origin=Origin(**d["origin"]) if d.get("origin") else None,
    )


def catalogue_from_json(point: Mapping[str, Any], *, compact: bool = True) -> Catalogue:
    """A stored sweep point as a catalogue (``compact``: its branches hold differences from the point's tables,
    as :func:`point_json` writes them; else they are complete, as in a solve); raises KeyError/ValueError when
    the point carries no states."""
    branches = tuple(branch_from_json(b, point if compact else None) for b in point.get("branches", []))
    return Catalogue(
        parameter=float(point["parameter"] if not isinstance(point["parameter"], list) else point["parameter"][-1]),
        branches=branches,
        equilibrium=point.get("equilibrium"),
        attempts=tuple(Attempt(s, b.result.status, b.result.residual, b.result.iterations)
                       for b in branches for s in (b.starts or (b.name,))),
    )


def catalogue_from_solution(body: Mapping[str, Any]) -> Catalogue:
    """A single solve's response body (a cache hit) as the catalogue it was made from, notes included.

    The notes' observables are the top-level observables that are not the equilibrium branch's own (that is
    how :func:`solution_json` merged them); values come back as plain JSON (lists, not arrays).
    """
    cat = catalogue_from_json({**body, "parameter": 0.0}, compact=False)
    if body.get("search"):
        s = body["search"]
        cat = cat.replace(search=Search(**{**s, "starts": tuple(s["starts"]),
                                           "unknown_starts": tuple(s.get("unknown_starts", ()))}))
    eq = cat.equilibrium_branch
    own = eq.report.observables if eq is not None and eq.report is not None else {}
    noted = {k: v for k, v in (body.get("observables") or {}).items() if k not in own}
    return cat.replace(notes=Notes(observables=noted)) if noted else cat


# ---------------------------------------------------------------------------------------------
# experiments: the sampled finite network beside the theory
# ---------------------------------------------------------------------------------------------


def estimate_out(est: Estimate) -> EstimateOut:
    """One observable's figures: mean, Monte-Carlo error, bulk ESS (``ess``), tail ESS and split R-hat."""
    return EstimateOut(mean=est.mean, stderr=est.stderr, ess=est.ess_bulk, ess_tail=est.ess_tail, rhat=est.rhat)


def comparison_json(predictions: Mapping[str, Mapping[str, Any]], estimates: Mapping[str, Estimate]) -> dict[str, Any]:
    """Per branch, per observable both sides report: theory, experiment, stderr and z = (experiment − theory)/stderr.

    Vector observables compare component by component (lists). z is null where the Monte-Carlo error is zero
    or undefined.
    """
    out: dict[str, Any] = {}
    for branch, predicted in predictions.items():
        rows: dict[str, Any] = {}
        for name, value in predicted.items():
            est = estimates.get(name)
            if est is None:
                continue
            theory, mean = np.asarray(value, dtype=float), np.asarray(est.mean, dtype=float)
            if theory.shape != mean.shape:
                continue
            stderr = np.asarray(est.stderr, dtype=float)
            with np.errstate(divide="ignore", invalid="ignore"):
                z = np.where(stderr > 0, (mean - theory) / np.where(stderr > 0, stderr, 1.0), np.nan)
            rows[name] = wire(ComparisonOut(theory=theory, experiment=mean, stderr=stderr, z=z))
        out[branch] = rows
    return out


def _sampler_json(d: SamplerDiagnostics) -> dict[str, Any]:
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in dataclasses.asdict(d).items()}


def experiment_point_json(
    parameter: float | None,
    result: ExperimentResult,
    network: Mapping[str, Any],
    solve: Mapping[str, Any],
    comparison: Mapping[str, Any],
) -> dict[str, Any]:
    """One experiment (one parameter value): the estimates with their diagnostics, the sampler's diagnostics, and
    ``theory``: the solve of the same spec (every branch) with its ``comparison`` to the estimates."""
    bad: list[str] = []
    point = build(  # converged, message, draws, chains, seconds, device, … by their names
        ExperimentPointOut, "", bad, result,
        parameter=parameter,
        status=result.status.value,
        observables={name: estimate_out(est) for name, est in result.estimates.items()},
        sampler=_sampler_json(result.sampler),
        sampled=[SampledOut(name=name, size=size) for name, size in result.sampled],
        network=dict(network),
        theory={**solve, "comparison": comparison},
    )
    return json_safe(wire(point) | _non_finite(bad))  # the estimates' arrays made JSON-safe here


def draws_series_json(
    point: int, parameter: float | None, draws: Draws, max_draws: int, max_components: int
) -> dict[str, Any]:
    """The per-draw series of one experiment, bounded: every ``thin``-th kept draw (at most ``max_draws`` per chain)
    of every estimator (the first ``max_components`` components of a vector one), and the sampler's statistics.

    ``components`` gives each estimator's full shape; ``draw`` the indices (kept draws after warmup) of the
    series. Non-finite values are null (and listed under ``non_finite``).
    """
    stride = max(1, -(-draws.n // max(1, max_draws)))
    take = np.arange(0, draws.n, stride)

    def bounded(a: np.ndarray) -> np.ndarray:
        a = a[:, take]
        if a.ndim > 2:
            a = a.reshape(a.shape[0], a.shape[1], int(np.prod(a.shape[2:])))[:, :, :max_components]
        return a

    stats: dict[str, Any] = {
        "lp": draws.logdensity[:, take],
        "diverging": (draws.divergences[:, take] > 0),
        "n_steps": draws.gradient_evaluations[:, take],
        "nonfinite": draws.nonfinite[:, take],
    }
    if not np.all(np.isnan(draws.acceptance)):
        stats["acceptance_rate"] = draws.acceptance[:, take]
    return json_safe(wire(DrawsSeriesOut(
        point=point,
        parameter=parameter,
        chains=draws.chains,
        draws=draws.n,
        thin=int(stride),
        draw=take,
        components={name: list(a.shape[2:]) for name, a in draws.estimates.items()},
        posterior={name: bounded(a) for name, a in draws.estimates.items()},
        sample_stats=stats,
    )))
