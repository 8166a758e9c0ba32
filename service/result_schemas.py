"""The results of the v1 HTTP contract, as response models: a solve, a sweep, a phase diagram, a boundary job and an
experiment, each with the table entries of its quantities (``quantities``).

Every route's response is validated against these models (``/v1/solve`` and ``/v1/experiments/{id}`` by FastAPI,
``/v1/jobs/{id}``, whose stored result pages are spliced in as text, by :func:`check_job_status`), and
``/openapi.json`` shows them. The models allow fields beyond those listed (a theory may add its own), but every
listed field must be there with its type.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag

from solvers.theories.quantities import ROLES

#: How a sweep or a phase diagram's rows were computed (a boundary job is a result of its own).
SweepMethod = Literal["continuation", "grid", "deflated", "diagram"]
#: The model descriptions repeat this: a result's fixed parameters.
MODEL_DESCRIPTION = (
    "The validated spec that was solved, every default filled in (the request's model for a sweep or phase "
    "diagram, where a swept field keeps the request's value): the fixed parameters of a figure's caption."
)


class QuantityEntry(BaseModel):
    """What a result says about one of its quantities: the entry of the theory's table (``GET /v1/theories``)."""

    model_config = ConfigDict(extra="allow")
    symbol: str = Field(description="The papers' symbol, as matplotlib mathtext (`$\\rho$`).")
    long_name: str = Field(description="What the quantity is, in one line (the CF `long_name`).")
    units: str = Field(description="CF-style units; `1` when dimensionless.")
    role: Literal[ROLES] = Field(  # type: ignore[valid-type]
        description="headline (the theory's one headline quantity), order_parameter, observable, parameter or "
        "diagnostic.")
    dims: list[str] | None = Field(None, description="Dimension names of an array-valued quantity.")


#: ``quantities`` of every result.
Quantities = dict[str, QuantityEntry]


def _quantities() -> Any:
    return Field(None, description="The table entries (symbol, long name, units, role) of every quantity the result "
                 "holds, by dotted name, once per result: its order parameters and observables, the swept parameters, "
                 "the model's fields, and every branch's free_entropy, stable and converged. Figures, arrays and "
                 "tables are labelled from it.")

class Diagnostics(BaseModel):
    """How one solve went (a branch's, or the equilibrium's for a whole solve)."""

    model_config = ConfigDict(extra="allow")
    residual: float | None = None
    iterations: int | None = None
    method: str | None = None
    seconds: float | None = None
    status: str | None = Field(None, description="converged, max_iterations, …: the solver's status.")
    message: str | None = Field(None, description="The status in words (a sweep point's branch leaves out the "
                                "status's standard message).")


class SolveDiagnostics(Diagnostics):
    """How a whole solve went: the equilibrium's solve, and whether the catalogue is complete (a theory adds its own
    entries)."""

    complete: bool | None = Field(None, description="False: a time limit stopped the search; not cached.")


class BranchDiagnostics(Diagnostics):
    nfev: int | None = Field(None, description="Function evaluations.")
    starts: list[str] = Field(default_factory=list, description="The starts that converged to this branch.")
    stability_margin: float | None = Field(None, description="Signed distance from instability (null: unknown).")


class OriginOut(BaseModel):
    """How a branch was first found."""

    model_config = ConfigDict(extra="allow")
    method: str = Field(description="start | warm | root_scan | deflation | continuation.")
    start: str | None = Field(None, description="The start's name, or null.")


class BranchOut(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str
    origin: OriginOut | None = Field(None, description="How the branch was first found.")
    converged: bool
    stable: bool | None
    free_entropy: float | None
    order_parameters: dict[str, Any]
    observables: dict[str, Any]
    diagnostics: BranchDiagnostics | None = None
    state: list[float | None] | None = Field(
        None, description="The solution vector: a stored sweep point is resumed from it without solving again.")


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


class Described(BaseModel):
    """What the service adds to every computed result: the spec, the quantities' table entries, the provenance."""

    model_config = ConfigDict(extra="allow")
    model: dict[str, Any] | None = Field(None, description=MODEL_DESCRIPTION)
    quantities: Quantities | None = _quantities()
    provenance: Provenance | None = None


class SolveBody(BaseModel):
    """A single solve as computed (``SolveResponse`` without what the service adds)."""

    model_config = ConfigDict(extra="allow")
    theory: str
    converged: bool
    order_parameters: dict[str, Any]
    observables: dict[str, Any]
    branches: list[BranchOut]
    equilibrium: str | None
    search: dict[str, Any] | None = Field(
        None, description="How the branches were looked for: {method: exhaustive | deflated | starts-only, starts, "
        "root_scan, budget, deflated_solves, fruitless, found, stopped} (docs/search.md)."
    )
    diagnostics: SolveDiagnostics


class SolveResponse(Described, SolveBody):
    spec_hash: str
    cached: bool


class BifurcationOut(BaseModel):
    """A branch point's type and normal form: g(ξ, μ) = a ξ²/2 + b11 ξ μ + b20 μ²/2 + c ξ³/6."""

    model_config = ConfigDict(extra="allow")
    type: str = Field(description="pitchfork or transcritical.")
    criticality: str | None = Field(description="supercritical or subcritical (pitchforks; null: unknown).")
    parameter: float | None
    coefficients: dict[str, float | None] = Field(description="{a, b11, b20, c} of the normal form.")
    kernel: list[float | None] = Field(description="The unit right null vector.")


#: How a special point was found; an event the theory classifies as first-order is first_order.
SpecialType = Literal["fold", "first_order", "stability_loss", "bifurcation", "event"]


class TransitionOut(BaseModel):
    model_config = ConfigDict(extra="allow")
    kind: Literal["first_order", "spinodal"]
    type: SpecialType | None = Field(
        None, description="How the point was found; an event the theory classifies as first-order is first_order.")
    parameter: float | None
    branches: list[str]
    detail: str = Field("", description="In words.")
    refined: bool | None = Field(None, description="Located by a root finder, not only bracketed by sweep values.")
    uncertainty: float | None = Field(
        None, description="Bound on the distance to the true point in the parameter: the root finder's final "
        "bracket when refined, else half the bracket between computed values.")
    event: str | None = Field(None, description="The theory's name for a point located by an event indicator.")
    bifurcation: BifurcationOut | None = None
    state: dict[str, Any] | None = Field(None, description="What the theory reports about the state at the point.")


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
    non_finite: list[str] | None = Field(
        None, description="Paths of the values that were not finite numbers (written as null).")


class CurveSpecialOut(BaseModel):
    model_config = ConfigDict(extra="allow")
    index: int = Field(description="Index of the special point in the curve's columns (the first of two rows where "
                                   "the curve changes branch there).")
    kind: Literal["first_order", "spinodal"]
    type: SpecialType
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
    message: str | None = Field(None, description="How the continuation ended, in words.")
    ends: list[BranchEndOut] = Field(
        default_factory=list, description="Every branch of the curve that ends within the range, and how."
    )
    branch: list[str] = Field(description="Branch of each point.")
    parameter: list[float | None] = Field(description="Swept value at each point.")
    arclength: list[float | None] = Field(
        description="Length along the curve from its first point, in the continuation's coordinates "
        "(x, (p - p_lo)/(p_hi - p_lo)); never decreases."
    )
    stable: list[bool | None] = Field(description="Sign of the stability margin (null: unknown).")
    free_entropy: list[float | None] = Field(description="Free entropy (null where the theory has none).")
    order_parameters: dict[str, list[Any]] = Field(
        description="Order parameters by name, as a point names them: scalars, and short numeric vectors whole (Qbar "
        "per layer of a deep network: one list per point)."
    )
    observables: dict[str, list[Any]] = Field(
        description="Observables by dotted name (class_distance.D2), as a point names them; long lists and tables "
        "stay in points."
    )
    special: list[CurveSpecialOut] = Field(description="The sweep's special points on this curve.")
    at: dict[str, float] | None = Field(None, description="On a phase diagram: the curve's row, {p1: value}.")
    non_finite: list[str] | None = Field(
        None, description="Paths of the values that were not finite numbers (written as null).")


class CurveCount(BaseModel):
    name: str
    points: int
    message: str | None = None


class SweepDiagnostics(BaseModel):
    """How a sweep went (a theory adds its own entries)."""

    model_config = ConfigDict(extra="allow")
    converged: bool | None = None
    complete: bool | None = Field(None, description="False: a time limit stopped a solve; not cached.")
    residual: float | None = None
    iterations: int | None = None
    method: str | None = None
    seconds: float | None = None
    curves: list[CurveCount] = Field(default_factory=list, description="Each traced curve: its name and points.")
    resumed: dict[str, int] | None = Field(
        None, description="A resumed line: {reused: points stored before, computed: points computed now}.")


class SweepSummary(BaseModel):
    """Everything of a sweep's result but its points and curves."""

    model_config = ConfigDict(extra="allow")
    theory: str
    parameter: str = Field(description="The swept field.")
    method: SweepMethod
    transitions: list[TransitionOut]
    diagnostics: SweepDiagnostics = Field(default_factory=SweepDiagnostics, description="The sweep's diagnostics.")


class Curves(BaseModel):
    """A continuation's traced curves, or why there are none."""

    model_config = ConfigDict(extra="allow")
    curves: list[CurveOut] | None = Field(
        None, description="Continuation: the traced curves (one page, see curve_page; on a phase diagram each with "
        "its row `at`); grid: null, with curves_reason."
    )
    curves_reason: str | None = Field(None, description="Why a sweep has no curves (a grid), when it has none.")


class SweepResult(Described, Curves, SweepSummary):
    """A one-parameter sweep's result (a page of its points and curves)."""

    points: list[PointOut]


#: Where a boundary job places a point: [p1, p2].
PlanePoint = list[float | None]
#: The contract's kinds of line (the engine's kind of special point is the line's ``type``).
LineKindOut = Literal["first_order", "spinodal", "stability_loss", "event"]


class LineEndOut(BaseModel):
    model_config = ConfigDict(extra="allow")
    kind: Literal["domain", "critical", "spinodal", "lost", "max_points", "closed"]
    point: PlanePoint
    detail: str = ""
    precision: float | None = 0.0


class LineOut(BaseModel):
    model_config = ConfigDict(extra="allow")
    kind: LineKindOut
    type: SpecialType
    branches: list[str]
    points: list[PlanePoint] = Field(description="[p1, p2] pairs in order along the line, from ends[0] to ends[1] "
                                     "(a closed line: round once, its last point back on its first).")
    states: list[Any] = Field(default_factory=list, description="The state(s) at each point: one row, two for the "
                              "coexisting states of a first-order line.")
    ends: list[LineEndOut] = Field(description="How it ends at its first point and at its last; a closed line has "
                                   "one end, `closed`, at its last point (its first is where it was seeded).")
    formulation: str | None = Field(None, description="The augmented system that traced it: fold, coexistence, "
                                    "branch_point or zero.")
    message: str = ""
    event: str | None = Field(None, description="An event line: the event's name.")
    bifurcation: BifurcationOut | None = Field(None, description="The branch point the line was seeded at.")


class CriticalPointOut(BaseModel):
    model_config = ConfigDict(extra="allow")
    point: PlanePoint
    state: list[float | None] | None = None
    lines: list[int] = Field(description="Indices (into lines) of the lines that end here.")
    precision: float | None = 0.0


class UnexplainedOut(BaseModel):
    model_config = ConfigDict(extra="allow")
    kind: LineKindOut
    type: SpecialType | None = None
    point: PlanePoint = Field(description="[p1, p2] where a scan saw the special point.")
    branches: list[str] = Field(default_factory=list)
    scan: str = Field(description="Which scan saw it: an interior row or an edge of the box.")
    detail: str = Field(description="Why no traced line passes through it.")


class RegionProbeOut(BaseModel):
    model_config = ConfigDict(extra="allow")
    point: list[float] = Field(description="[p1, p2]: a little to one side of the middle of a traced line (the box's "
                               "centre when there is no line).")
    phase: str | None = Field(description="The equilibrium's phase there: the theory's phase observable where it "
                              "reports one, else the equilibrium branch's name; null without an equilibrium.")


class BoundaryDiagnostics(BaseModel):
    model_config = ConfigDict(extra="allow")
    seconds: float | None = None
    scans: dict[str, list[Any]] = Field(default_factory=dict, description="The values each parameter was scanned at.")
    points: int | None = Field(None, description="Points traced, over every line.")


class BoundaryJobResult(Described):
    """A boundary job's result: the transition lines traced in the (p1, p2) box."""

    theory: str
    parameters: list[str]
    method: Literal["boundary"]
    box: dict[str, list[float]] = Field(description="The box: p1's range, p2's bracket.")
    lines: list[LineOut]
    critical_points: list[CriticalPointOut]
    reason: str = Field("", description="Why lines is empty, when it is; and any special point found that could not "
                        "be continued into a line.")
    unexplained: list[UnexplainedOut] = Field(
        default_factory=list, description="Special points the scans of the box's edges and rows saw that no traced "
        "line passes through, even after tracing from them (a figure marks them).")
    warnings: list[str] = Field(
        default_factory=list, description="What may be missing, in words: the unexplained points, scans that failed, "
        "lines that stop inside the box.")
    continued_as_real: list[str] = Field(
        default_factory=list, description="The integer fields among the parameters (a width N, a sample count P), "
        "which the theory declares defined at real values: the lines pass through real values of them, where the "
        "theory's equations are evaluated as they are along a continuation sweep.")
    regions: list[RegionProbeOut] = Field(
        default_factory=list, description="The phases the lines separate: the equilibrium solved on either side of "
        "the middle of each line (two single solves per line of two points or more, in the order of the lines).")
    diagnostics: BoundaryDiagnostics = Field(default_factory=BoundaryDiagnostics,
                                             description="Seconds, scans and points traced.")
    points: list[Any] = Field(default_factory=list, description="Empty: a boundary job's result is its lines (the "
                              "jobs route pages every job's points).")
    non_finite: list[str] | None = None


class GridLinePointOut(BaseModel):
    """Where one row of a grid phase diagram located the line: ``{p1: value, p2: value, refined, uncertainty}``."""

    model_config = ConfigDict(extra="allow")
    refined: bool
    uncertainty: float | None


class GridLineOut(BaseModel):
    """A transition line of a grid phase diagram: the transitions of one kind between the same branches, row by row
    (increasing p1)."""

    model_config = ConfigDict(extra="allow")
    name: str = Field(description="`kind:branch/branch`.")
    kind: Literal["first_order", "spinodal"]
    points: list[GridLinePointOut]


class DiagramTransitionOut(TransitionOut):
    at: dict[str, float] = Field(description="The row: {p1: value}.")
    line_parameter: str = Field(description="The parameter the transition was located in along its row (p2).")


class PhaseDiagramResult(Described, Curves):
    """A grid or continuation phase diagram: one sweep in p2 per value of p1 (a page of its points and curves)."""

    theory: str
    parameters: list[str] = Field(description="[p1, p2].")
    axes: dict[str, list[float]] = Field(description="The values of p1 and of p2.")
    method: SweepMethod
    points: list[PointOut]
    transitions: list[DiagramTransitionOut]
    lines: list[GridLineOut]


def _job_result_kind(value: Any) -> str:
    get = value.get if isinstance(value, dict) else (lambda k: getattr(value, k, None))
    if get("method") == "boundary":
        return "boundary"
    return "phase_diagram" if get("parameters") is not None else "sweep"


#: The result of ``GET /v1/jobs/{id}``: a sweep, a phase diagram or a boundary job.
JobResult = Annotated[
    Union[  # noqa: UP007
        Annotated[SweepResult, Tag("sweep")],
        Annotated[PhaseDiagramResult, Tag("phase_diagram")],
        Annotated[BoundaryJobResult, Tag("boundary")],
    ],
    Discriminator(_job_result_kind),
]


class EstimateOut(BaseModel):
    """One observable of an experiment: its Monte-Carlo estimate (a number, or a list for a vector observable)."""

    model_config = ConfigDict(extra="allow")
    mean: Any
    stderr: Any = Field(description="Monte-Carlo standard error of the mean.")
    ess: Any = Field(description="Bulk effective sample size.")
    ess_tail: Any = None
    rhat: Any = Field(description="Split R-hat.")


class ComparisonOut(BaseModel):
    """One observable, theory beside experiment: z = (experiment − theory)/stderr (null where the Monte-Carlo error
    is zero or undefined); vector observables component by component (lists)."""

    model_config = ConfigDict(extra="allow")
    theory: Any
    experiment: Any
    stderr: Any
    z: Any


class SampledOut(BaseModel):
    name: str = Field(description="A sampled variable of the network.")
    size: int = Field(description="Its number of components.")


class ExperimentPointOut(BaseModel):
    """One experiment (one parameter value): the estimates, the sampler's diagnostics, and ``theory``: the solve of
    the same spec with its ``comparison`` to the estimates."""

    model_config = ConfigDict(extra="allow")
    parameter: float | None
    converged: bool
    status: str
    message: str | None = None
    observables: dict[str, EstimateOut]
    sampler: dict[str, Any] = Field(description="The sampler's diagnostics (step size, divergences, worst R-hat, …).")
    draws: int
    chains: int
    gradient_evaluations: int | None = None
    seconds: float
    device: str | None = None
    init: Any = None
    sampled: list[SampledOut] = Field(default_factory=list, description="The variables the chains sampled.")
    integrated_out: list[str] = Field(default_factory=list, description="The variables integrated out exactly.")
    network: dict[str, Any] = Field(default_factory=dict, description="The finite network that was sampled.")
    theory: dict[str, Any] = Field(description="The theory's solve of the same spec, with its `comparison`: per "
                                   "branch, per observable, a ComparisonOut.")
    non_finite: list[str] | None = None


class DrawsSeriesOut(BaseModel):
    """The per-draw series of one experiment, bounded: every ``thin``-th kept draw (at most the requested number per
    chain) of every estimator (its first components, for a vector one), and the sampler's statistics."""

    model_config = ConfigDict(extra="allow")
    point: int
    parameter: float | None
    chains: int
    draws: int = Field(description="Kept draws per chain, after warmup.")
    thin: int = Field(description="Every thin-th kept draw is in the series.")
    draw: list[int] = Field(description="The indices (kept draws after warmup) of the series.")
    components: dict[str, list[int]] = Field(description="Each estimator's full shape.")
    posterior: dict[str, Any] = Field(description="Per estimator: [chain][draw](component).")
    sample_stats: dict[str, Any] = Field(description="lp, diverging, n_steps, nonfinite (and acceptance_rate).")
    non_finite: list[str] | None = None


class _ExperimentSummary(Described):
    theory_name: str
    experiment_hash: str
    parameter: str | None
    values: list[float] | None
    converged: bool
    complete: bool = Field(description="Every requested draw of every chain (false: a time limit cut them short).")
    status: str
    gradient_evaluations: int
    seconds: float
    wall_seconds: float | None
    device: str


class ExperimentResult(_ExperimentSummary, ExperimentPointOut):
    """An experiment at one spec: its one point's fields and the summary."""

    kind: Literal["experiment"]


class LearningCurveResult(_ExperimentSummary):
    """A learning curve of experiments: the summary and one point per parameter value."""

    kind: Literal["learning_curve"]
    points: list[ExperimentPointOut]


#: The result of ``GET /v1/experiments/{id}``.
ExperimentResultOut = Annotated[ExperimentResult | LearningCurveResult, Discriminator("kind")]
