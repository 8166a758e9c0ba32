"""Request and response models of the v1 HTTP contract."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union, get_args

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, model_validator

from service.result_schemas import JobResult, QuantityEntry
from solvers.core.options import LineOptions, SolverOptions
from solvers.theories import registry
from solvers.theories.quantities import GROUPS


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
    num: int = Field(ge=1, description="Number of values, evenly spaced (on a log scale with scale log).")
    scale: Literal["linear", "log"] = Field(
        "linear", description="linear: evenly spaced values; log: evenly spaced logarithms (a geometric sequence, "
        "as on a learning curve's log axis), start and stop both > 0.")

    @model_validator(mode="after")
    def _positive_on_a_log_scale(self) -> Range:
        if self.scale == "log" and not (self.start > 0 and self.stop > 0):
            raise ValueError(f"scale log needs start > 0 and stop > 0 (got start {self.start:g}, stop {self.stop:g})")
        return self


Values = list[float] | Range


class SweepRequest(_Strict):
    model: ModelSpec = Field(description="The theory and its parameters at which the sweep is anchored.")  # type: ignore[valid-type]
    parameter: str | list[str] = Field(
        description="Field to sweep, or two fields [p1, p2] for a phase diagram (grid/continuation: one line per "
        "value of p1; boundary: the transition lines traced in the (p1, p2) plane)."
    )
    values: Values | list[Values] = Field(
        description="Values of the parameter: a list or {start, stop, num[, scale: log]}; for a phase diagram one "
        "per parameter. "
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


class JobStatus(BaseModel):
    model_config = ConfigDict(extra="allow")
    job_id: str
    status: Literal["queued", "running", "finished", "failed", "cancelled"]
    progress: Progress
    result: JobResult | None = Field(
        None, description="When finished: a sweep's, a phase diagram's or a boundary job's result (one page of its "
        "points and curves).")
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


class QuantityInfo(QuantityEntry):
    """One quantity of a theory's table: the name used everywhere (results, tables, arrays, plots), and the entry a
    result carries about it."""

    name: str = Field(description="Dotted name (`class_distance.D2`; a record table's column: `potential_wells.rho`).")
    description: str = Field(description="What the quantity is, in one line.")
    groups: list[Literal[GROUPS]] = Field(  # type: ignore[valid-type]
        description="Where it appears: a spec field (`parameters`), an order parameter, an observable.")
    dims: list[str] = Field(description="Dimension names of an array-valued quantity (empty for a scalar).")


class TheoryInfo(BaseModel):
    name: str
    summary: str
    schema_: dict[str, Any] = Field(alias="schema", serialization_alias="schema")
    sweepable: list[str] = []
    real_integers: list[str] = Field(
        default=[], description="The integer fields whose equations the theory holds at real values too (a width N): "
        "a boundary job may take them as either parameter, or both, and its lines pass through real values of them.")
    quantities: list[QuantityInfo] = Field(
        default=[], description="Every quantity the theory reports and every field it is swept in, with its symbol.")

    model_config = ConfigDict(populate_by_name=True)
