"""Request and response models of the v1 HTTP contract."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union, get_args

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, model_validator

from solvers.core.lines.options import LineOptions
from solvers.core.options import SolverOptions
from solvers.theories import registry


def _members(spec_model: Any) -> list[type[BaseModel]]:
    """The concrete spec classes of a theory (a theory with modes gives a union of them)."""
    if isinstance(spec_model, type) and issubclass(spec_model, BaseModel):
        return [spec_model]
    out: list[type[BaseModel]] = []
    for arg in get_args(spec_model):
        out.extend(_members(arg))
    return out


def _tag(cls: type[BaseModel]) -> str:
    theory = get_args(cls.model_fields["theory"].annotation)[0]
    mode = cls.model_fields.get("mode")
    return f"{theory}:{get_args(mode.annotation)[0]}" if mode is not None else theory


def _model_union() -> Any:
    """One flat tagged union over every spec class, keyed by ``theory`` (and ``mode`` where a theory has modes).

    A flat union with a callable discriminator keeps the OpenAPI document valid (nested
    discriminators are not expressible there) and gives one clear error for an unknown theory/mode.
    """
    members = [m for t in registry().values() for m in _members(t.spec_model)]
    if not members:
        raise RuntimeError("no theory is installed")
    tags = {_tag(m): m for m in members}
    theories = sorted({t.split(":")[0] for t in tags})
    modes = {th: sorted(t.split(":")[1] for t in tags if t.startswith(th + ":")) for th in theories}

    def pick(v: Any) -> str | None:
        get = v.get if isinstance(v, dict) else (lambda k: getattr(v, k, None))
        theory, mode = get("theory"), get("mode")
        if isinstance(theory, str) and isinstance(mode, str) and f"{theory}:{mode}" in tags:
            return f"{theory}:{mode}"
        return theory if isinstance(theory, str) and theory in tags else None

    with_modes = {th: m for th, m in modes.items() if m}
    message = f"'theory' must be one of {theories}" + (
        f"; these theories also need 'mode': {with_modes}" if with_modes else ""
    )
    union = Union[tuple(Annotated[m, Tag(t)] for t, m in tags.items())]  # noqa: UP007
    return Annotated[union, Discriminator(pick, custom_error_type="unknown_theory", custom_error_message=message)]


ModelSpec = _model_union()


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, strict=True)


class SolveRequest(_Strict):
    model: ModelSpec = Field(description="The theory and its parameters; `theory` selects the equations.")  # type: ignore[valid-type]
    solver: SolverOptions | None = Field(None, description="Solver options (part of the cache key).")


class Range(_Strict):
    start: float = Field(description="First value.")
    stop: float = Field(description="Last value (included).")
    num: int = Field(ge=1, description="Number of values, evenly spaced.")


Values = list[float] | Range


class SweepRequest(_Strict):
    model: ModelSpec = Field(description="The theory and its parameters at which the sweep is anchored.")  # type: ignore[valid-type]
    parameter: str | list[str] = Field(
        description="Field to sweep, or two fields [p1, p2] for a phase diagram (grid/continuation: one line per "
        "value of p1; boundary: the transition lines traced in the (p1, p2) plane)."
    )
    values: Values | list[Values] = Field(
        description="Values of the parameter: a list or {start, stop, num}; for a phase diagram one per parameter. "
        "With method boundary only their ranges count: p1's is the range the lines are traced over, p2's the "
        "bracket in which they are looked for."
    )
    method: Literal["continuation", "grid", "boundary", "deflated", "diagram"] = Field(
        "continuation",
        description="continuation: pseudo-arclength along every branch with refined spinodals, first-order "
        "points and branch switching at bifurcations; grid: independent warm-started solves at each value; "
        "boundary (two parameters): first-order, spinodal, stability-loss and event lines traced by "
        "two-parameter continuation, with the critical points where they end; deflated: continuation, then at "
        "every value a deflated search (solver.search.budget) for solutions on no traced curve, each traced in "
        "turn, so that branches no start reaches (isolas) appear; diagram: continuation with branch switching "
        "`depth` levels deep (docs/search.md).",
    )
    depth: int | None = Field(
        None, ge=0, le=8,
        description="Method diagram: levels of branch switching (the same as solver.search.depth; default 2).",
    )
    solver: SolverOptions | None = Field(None, description="Solver options (part of the job's key).")
    lines: LineOptions | None = Field(
        None, description="How lines are traced (method boundary only; part of the job's key)."
    )

    @model_validator(mode="after")
    def _shape(self) -> SweepRequest:
        two = isinstance(self.parameter, list)
        if two:
            if len(self.parameter) != 2 or len(set(self.parameter)) != 2:
                raise ValueError("parameter: a phase diagram takes exactly two distinct fields")
            if not (isinstance(self.values, list) and len(self.values) == 2
                    and all(isinstance(v, (list, Range)) for v in self.values)):
                raise ValueError("values: a phase diagram takes one value spec per parameter")
        elif isinstance(self.values, list) and any(not isinstance(v, (int, float)) for v in self.values):
            raise ValueError("values: a one-parameter sweep takes a list of numbers or {start, stop, num}")
        if self.method == "boundary" and not two:
            raise ValueError("method: boundary traces lines in a plane: give two parameters [p1, p2]")
        if self.lines is not None and self.method != "boundary":
            raise ValueError("lines: line options apply to method boundary only")
        if self.depth is not None:
            if self.method != "diagram":
                raise ValueError("depth: the depth of branch switching applies to method diagram only")
            solver = self.solver or SolverOptions()
            if "depth" in solver.search.model_fields_set and solver.search.depth != self.depth:
                raise ValueError("depth: differs from solver.search.depth; give one of them")
            self.solver = solver.model_copy(
                update={"search": solver.search.model_copy(update={"depth": self.depth})})
        return self


class Diagnostics(BaseModel):
    model_config = ConfigDict(extra="allow")
    residual: float | None = None
    iterations: int | None = None
    method: str | None = None
    seconds: float | None = None


class BranchOut(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str
    converged: bool
    stable: bool | None
    free_entropy: float | None
    order_parameters: dict[str, Any]
    observables: dict[str, Any]
    origin: dict[str, Any] | None = Field(
        None, description="How the branch was first found: {method: start | warm | root_scan | deflation, start: the "
        "start's name or null}."
    )


class Provenance(BaseModel):
    """What produced a result (a cached answer carries the provenance of the computation that made it)."""

    model_config = ConfigDict(extra="allow")
    saddlelab: str = Field(description="SaddleLab's human version (SOLVER_VERSION).")
    source: str = Field(
        description="sha256 fingerprint of the source that computed the result: every file of solvers/ and the "
        "service modules that decide what is computed and shape the JSON (docs/architecture.md). Part of every "
        "cache and job key."
    )
    libraries: dict[str, str | None] = Field(
        description="Versions installed where the result was computed: python, numpy, scipy, jax, jaxlib, "
        "blackjax, arviz, scikit-learn (null: not installed)."
    )
    spec_hash: str = Field(description="The key of the solve, sweep, phase diagram or experiment.")
    seeds: dict[str, Any] = Field(
        description="Every seed, by dotted name: the spec's (e.g. model.data.seed); for an experiment also "
        "network_seed, sampler.seed and sampler.chain_seeds."
    )


class SolveResponse(BaseModel):
    model_config = ConfigDict(extra="allow")
    theory: str
    spec_hash: str
    cached: bool
    converged: bool
    order_parameters: dict[str, Any]
    observables: dict[str, Any]
    branches: list[BranchOut]
    equilibrium: str | None
    search: dict[str, Any] | None = Field(
        None, description="How the branches were looked for: {method: exhaustive | deflated | starts-only, starts, "
        "root_scan, budget, deflated_solves, fruitless, found, stopped} (docs/search.md)."
    )
    diagnostics: Diagnostics
    model: dict[str, Any] | None = Field(
        None, description="The validated spec that was solved, every default filled in (the request's model for a "
        "sweep or phase diagram, where a swept field keeps the request's value): the fixed parameters of a "
        "figure's caption."
    )
    provenance: Provenance | None = None


class JobAccepted(BaseModel):
    job_id: str = Field(
        description="Your job's id: a keyed hash of your API key and the sweep. Only your key sees or cancels it."
    )
    status_url: str
    status: str = "queued"
    deduplicated: bool = Field(
        False, description="True when an identical sweep (yours or another key's) was already queued, running or "
        "finished: your job shares that computation, nothing new was started."
    )


class Progress(BaseModel):
    done: int = Field(description="Points stored so far.")
    total: int = Field(description="Points the job will produce.")


class Chunks(BaseModel):
    done: int = Field(description="Lines (a sweep, or one row of a phase diagram) completed.")
    total: int = Field(description="Lines of the job; each runs as one queue job.")


class PageOut(BaseModel):
    of: Literal["result.points", "partial.points", "result.curves"] = Field(
        description="Which list this page is of.")
    offset: int = Field(description="Index of the first point of the page.")
    limit: int = Field(description="Most points a page holds (at most the instance's result_page_size).")
    returned: int = Field(description="Points in this page.")
    total: int = Field(description="Points in the whole list.")
    next: int | None = Field(description="The offset of the next page; null on the last page.")


class TransitionOut(BaseModel):
    model_config = ConfigDict(extra="allow")
    kind: Literal["first_order", "spinodal"]
    parameter: float | None
    branches: list[str]
    type: Literal["fold", "first_order", "stability_loss", "bifurcation", "event"] | None = Field(
        None, description="How the point was found; an event the theory classifies as first-order is first_order.")
    event: str | None = Field(None, description="The theory's name for a point located by an event indicator.")
    refined: bool | None = Field(None, description="Located by a root finder, not only bracketed by sweep values.")
    uncertainty: float | None = Field(
        None, description="Bound on the distance to the true point in the parameter: the root finder's final "
        "bracket when refined, else half the bracket between computed values.")


class PointOut(BaseModel):
    """One requested value of a sweep. Compact: a quantity is written once per point. ``order_parameters`` and
    ``observables`` are the equilibrium's, complete; each branch lists only the entries whose value differs
    from the point's (null where the branch has no such entry). The value of a quantity on a branch is the
    branch's entry when it lists one, else the point's."""

    model_config = ConfigDict(extra="allow")
    parameter: float | list[float] | None = Field(description="The swept value; [p1, p2] on a phase diagram.")
    converged: bool
    equilibrium: str | None = Field(description="The equilibrium branch's name (null: none).")
    branches: list[BranchOut] = Field(
        description="Every branch at this value; its order_parameters / observables hold only what differs from "
        "the point's."
    )
    order_parameters: dict[str, Any] = Field(description="The equilibrium's order parameters (complete).")
    observables: dict[str, Any] = Field(
        description="The equilibrium's observables and what the theory reports about the whole catalogue (complete)."
    )


class CurveSpecialOut(BaseModel):
    model_config = ConfigDict(extra="allow")
    index: int = Field(description="Index of the special point in the curve's columns (the first of two rows where "
                                   "the curve changes branch there).")
    kind: Literal["first_order", "spinodal"]
    type: str = Field(description="fold, stability_loss, bifurcation, first_order or event.")
    parameter: float | None
    branches: list[str]


class BranchEndOut(BaseModel):
    """How a branch on a traced curve ends within the range (a branch that leaves the range does not end)."""

    model_config = ConfigDict(extra="allow")
    branch: str = Field(description="The branch that ends.")
    kind: Literal["fold", "domain", "solver", "loop", "step_cap"] = Field(
        description="fold: the curve turns back onto `partner`; domain: a quantity leaves its domain (`quantity`, "
        "null when the theory does not name it); solver: the corrector fails although the equations exist "
        "(`method`, last `residual`); loop: the curve closes on itself; step_cap: the step cap is reached."
    )
    parameter: float | None = Field(description="Swept value of the branch's last point (a fold: the refined fold).")
    partner: str | None = Field(None, description="fold: the branch the curve continues on, traced through the fold.")
    quantity: str | None = Field(None, description="domain: the quantity that left its domain.")
    method: str | None = Field(None, description="solver: the method that failed.")
    residual: float | None = Field(None, description="solver: its last residual (max norm).")
    detail: str = Field("", description="In words.")


class CurveOut(BaseModel):
    """One traced curve of a continuation, in columns (one entry per point, in order along the curve). At most 200
    points, every one a solution: special points, the points at the ends of the requested range, and traced
    points (all, or those nearest to equally spaced arclengths). Where the curve changes branch (fold, stability
    loss) the special point appears twice in a row, once per branch."""

    model_config = ConfigDict(extra="allow")
    name: str = Field(description="The curve: the branch it was started from.")
    branches: list[str] = Field(description="Branches the curve passes through, in order along it.")
    traced: int = Field(description="Points the continuation made (before clipping to the range and resampling).")
    branch: list[str] = Field(description="Branch of each point.")
    parameter: list[float | None] = Field(description="Swept value at each point.")
    arclength: list[float | None] = Field(
        description="Length along the curve from its first point, in the continuation's coordinates "
        "(x, (p - p_lo)/(p_hi - p_lo)); never decreases."
    )
    stable: list[bool | None] = Field(description="Sign of the stability margin (null: unknown).")
    free_entropy: list[float | None] = Field(description="Free entropy (null where the theory has none).")
    order_parameters: dict[str, list[Any]] = Field(
        description="Scalar order parameters by name (a short numeric list by indexed name, Qbar.0)."
    )
    observables: dict[str, list[Any]] = Field(
        description="Scalar observables by dotted name (class_distance.D2); long lists and tables stay in points."
    )
    special: list[CurveSpecialOut] = Field(description="The sweep's special points on this curve.")
    ends: list[BranchEndOut] = Field(
        default_factory=list, description="Every branch of the curve that ends within the range, and how."
    )


class SweepResult(BaseModel):
    model_config = ConfigDict(extra="allow")
    points: list[PointOut]
    transitions: list[TransitionOut]
    curves: list[CurveOut] | None = Field(
        None, description="Continuation: the traced curves (one page, see curve_page); grid: null, with "
        "curves_reason."
    )
    model: dict[str, Any] | None = Field(
        None, description="The validated spec that was solved, every default filled in (the request's model for a "
        "sweep or phase diagram, where a swept field keeps the request's value): the fixed parameters of a "
        "figure's caption."
    )
    provenance: Provenance | None = None


class LineEndOut(BaseModel):
    model_config = ConfigDict(extra="allow")
    kind: Literal["domain", "critical", "spinodal", "lost", "max_points", "closed"]
    point: list[float | None]
    detail: str = ""
    precision: float | None = 0.0


class LineOut(BaseModel):
    model_config = ConfigDict(extra="allow")
    kind: Literal["first_order", "spinodal", "stability_loss", "event"]
    type: Literal["fold", "first_order", "stability_loss", "bifurcation", "event"]
    branches: list[str]
    points: list[list[float | None]] = Field(description="[p1, p2] pairs, from ends[0] to ends[1].")
    ends: list[LineEndOut]


class CriticalPointOut(BaseModel):
    model_config = ConfigDict(extra="allow")
    point: list[float | None]
    lines: list[int] = Field(description="Indices (into lines) of the lines that end here.")
    precision: float | None = 0.0


class UnexplainedOut(BaseModel):
    model_config = ConfigDict(extra="allow")
    kind: Literal["first_order", "spinodal", "stability_loss", "event"]
    point: list[float | None] = Field(description="[p1, p2] where a scan saw the special point.")
    scan: str = Field(description="Which scan saw it: an interior row or an edge of the box.")
    detail: str = Field(description="Why no traced line passes through it.")


class RegionProbeOut(BaseModel):
    model_config = ConfigDict(extra="allow")
    point: list[float] = Field(description="[p1, p2]: a little to one side of the middle of a traced line (the box's "
                               "centre when there is no line).")
    phase: str | None = Field(description="The equilibrium's phase there: the theory's phase observable where it "
                              "reports one, else the equilibrium branch's name; null without an equilibrium.")


class BoundaryResult(BaseModel):
    model_config = ConfigDict(extra="allow")
    parameters: list[str]
    lines: list[LineOut]
    critical_points: list[CriticalPointOut]
    reason: str = Field("", description="Why lines is empty, when it is; and any special point found that could not "
                        "be continued into a line.")
    unexplained: list[UnexplainedOut] = Field(
        default_factory=list, description="Special points the scans of the box's edges and rows saw that no traced "
        "line passes through, even after tracing from them (a figure marks them).")
    continued_as_real: list[str] = Field(
        default_factory=list, description="The integer fields among the parameters (a width N, a sample count P): "
        "the lines pass through real values of them, where the theory's equations are evaluated as they are along "
        "a continuation sweep.")
    warnings: list[str] = Field(
        default_factory=list, description="What may be missing, in words: the unexplained points, scans that failed, "
        "lines that stop inside the box.")
    regions: list[RegionProbeOut] = Field(
        default_factory=list, description="The phases the lines separate: the equilibrium solved on either side of "
        "the middle of each line (two single solves per line of two points or more, in the order of the lines).")
    model: dict[str, Any] | None = Field(
        None, description="The validated spec that was solved, every default filled in (the request's model for a "
        "sweep or phase diagram, where a swept field keeps the request's value): the fixed parameters of a "
        "figure's caption."
    )
    provenance: Provenance | None = None


class JobStatus(BaseModel):
    model_config = ConfigDict(extra="allow")
    job_id: str
    status: Literal["queued", "running", "finished", "failed", "cancelled"]
    progress: Progress
    result: SweepResult | BoundaryResult | None = None
    error: str | None = None
    chunks: Chunks | None = None
    kind: Literal["sweep", "phase_diagram", "boundary"] | None = None
    backend: Literal["rq", "local"] | None = None
    queue_position: int | None = Field(
        None, description="Lines waiting to start before this job's next line (0: it starts next); null when none of "
        "its lines is waiting."
    )
    page: PageOut | None = Field(
        None, description="Which points `result.points` (or `partial.points`) holds: results come in pages "
        "(`?offset=&limit=`)."
    )
    curve_page: PageOut | None = Field(
        None, description="Which curves `result.curves` holds: a continuation's curves come in pages too "
        "(`?curve_offset=&curve_limit=`)."
    )
    partial: dict[str, Any] | None = Field(
        None, description="With ?detail=true: one page of the points computed so far."
    )
    executions: list[dict[str, Any]] | None = Field(
        None, description="With ?detail=true: one record per execution of a line (worker, points reused from an "
        "interrupted execution, points computed, outcome)."
    )


class Health(BaseModel):
    status: str
    cache: Literal["redis", "memory"]
    redis: Literal["ok", "full", "down"] | None = Field(
        description="ok; full: at maxmemory, Redis refuses writes (solves are answered uncached, sweeps get 503); "
        "down: unreachable; null without Redis."
    )
    version: str
    source: str = Field("", description="Fingerprint of the solver source this API runs (part of every key; its "
                                       "workers must run the same).")
    auth: Literal["api_key", "open"] = "open"


class QuantityInfo(BaseModel):
    """One quantity of a theory's table: the name used everywhere (results, tables, arrays, plots)."""

    name: str = Field(description="Dotted name (`class_distance.D2`; a record table's column: `potential_wells.rho`).")
    symbol: str = Field(description="The papers' symbol, as matplotlib mathtext (`$D^2$`).")
    description: str = Field(description="What the quantity is, in one line.")
    long_name: str = Field(description="The CF `long_name` of the quantity's arrays (its description).")
    units: str = Field(description="CF-style units; `1` when dimensionless.")
    role: Literal["headline", "order_parameter", "observable", "parameter", "diagnostic"] = Field(
        description="What the quantity is for: the theory's headline (one per theory: what a learning curve shows "
        "first), an order parameter, an observable, a spec field, or a diagnostic of the computation.")
    groups: list[Literal["parameters", "order_parameters", "observables", "branch"]] = Field(
        description="Where it appears: a spec field (`parameters`), an order parameter, an observable.")
    dims: list[str] = Field(description="Dimension names of an array-valued quantity (empty for a scalar).")


class TheoryInfo(BaseModel):
    name: str
    summary: str
    schema_: dict[str, Any] = Field(alias="schema", serialization_alias="schema")
    sweepable: list[str] = []
    quantities: list[QuantityInfo] = Field(
        default=[], description="Every quantity the theory reports and every field it is swept in, with its symbol.")

    model_config = ConfigDict(populate_by_name=True)
