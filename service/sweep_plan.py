"""Validate a sweep request and turn it into a plain, hashable job payload."""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Annotated, Any

import numpy as np
from pydantic import BaseModel, TypeAdapter, ValidationError

from service.errors import field_error, relocate
from service.kernel import stored_bytes
from service.keys import spec_hash
from service.limits import check_sizes
from service.provenance import SOURCE_FINGERPRINT, ensure_source_unchanged
from service.schemas import Range, SweepRequest
from service.search_starts import check_starts
from service.settings import Settings
from solvers.core.options import LineOptions, SolverOptions
from solvers.theories import get as get_theory
from solvers.theories.two_parameter import integers_only


def expand(values: list[float] | Range) -> list[float]:
    if isinstance(values, Range):
        if values.scale == "linear":
            return [float(v) for v in np.linspace(values.start, values.stop, values.num)]
        out = [float(v) for v in np.geomspace(values.start, values.stop, values.num)]
        out[0] = float(values.start)  # the ends exactly as given (geomspace goes through exp and log)
        if values.num > 1:
            out[-1] = float(values.stop)
        return out
    return [float(v) for v in values]


@lru_cache(maxsize=256)
def _field_adapter(cls: type[BaseModel], name: str) -> TypeAdapter[Any]:
    """Validates one value against a spec field's own type and constraints."""
    info = cls.model_fields[name]
    return TypeAdapter(Annotated[info.annotation, info])  # type: ignore[name-defined]


def _check_values(
    model: BaseModel, parameter: str, values: list[float], loc: list[str | int], settings: Settings
) -> None:
    """Every value within the field's constraints, and the whole spec valid within the instance's size limits.

    The spec is validated once per end of the range (cross-field rules, sizes), not once per value: each
    value is checked against the field alone. The first bad value is named by its index.
    """
    cls = type(model)
    base = model.model_dump()
    if parameter in cls.model_fields:
        adapter = _field_adapter(cls, parameter)
        for i, v in enumerate(values):
            try:
                adapter.validate_python(v, strict=False)
            except ValidationError as exc:
                raise relocate(exc, [*loc, i]) from None
    else:
        # a derived parameter (rubin_cavity's u, which sets T): only the whole spec can judge a value
        for i, v in enumerate(values):
            try:
                cls.model_validate({**base, parameter: v}, strict=False)
            except ValidationError as exc:
                raise relocate(exc, [*loc, i]) from None
    for i in sorted({int(np.argmin(values)), int(np.argmax(values))}):
        try:
            at = cls.model_validate({**base, parameter: values[i]}, strict=False)
        except ValidationError as exc:
            raise relocate(exc, [*loc, i]) from None
        check_sizes(at, settings, prefix=(*loc, i))


def _check_stored_bytes(model: BaseModel, theory: Any, points: int, settings: Settings) -> None:
    """422 when the sweep's points, at their estimated size, would pass the instance's ``job_stored_bytes``
    (:mod:`service.kernel.stored_bytes`), at the field they grow with."""
    limit = settings.limit(stored_bytes.LIMIT_NAME, stored_bytes.DEFAULT_LIMIT)
    loc, numbers = theory.result_numbers(model)
    need = stored_bytes.estimate(points, numbers)
    if limit and need > limit:
        raise field_error(["model", *loc] if loc else ["values"],
                          f"the sweep would store about {need / 2**20:,.0f} MiB in Redis ({points} points of about "
                          f"{need / points / stored_bytes.REDIS_OVERHEAD / 1024:,.0f} kB of text, {numbers:g} numbers "
                          f"each beyond their scalars), more than the limit {stored_bytes.LIMIT_NAME}={limit:.0f} "
                          f"({limit / 2**20:,.0f} MiB) of this instance; "
                          f"ask for fewer points or smaller ones")


def plan(req: SweepRequest, settings: Settings) -> dict[str, Any]:
    """Validated payload: theory, spec, parameter(s), values, method, solver options, key, time limit.

    A boundary job (method ``boundary``, two parameters) keeps only the range of each axis, and its line options.
    """
    model = req.model
    check_sizes(model, settings)
    theory = get_theory(model.theory)
    allowed = theory.sweepable_for(model)
    params = req.parameter if isinstance(req.parameter, list) else [req.parameter]
    value_specs = req.values if isinstance(req.parameter, list) else [req.values]
    bad = [p for p in params if p not in allowed]
    if len(bad) > 1:
        raise field_error(["parameter"], f"{bad} cannot be swept for this spec; sweepable: {sorted(allowed)}",
                          value=bad)
    axes: list[list[float]] = []
    for k, (name, vs) in enumerate(zip(params, value_specs, strict=True)):
        loc: list[str | int] = ["parameter", k] if len(params) > 1 else ["parameter"]
        if name not in allowed:
            raise field_error(loc, f"'{name}' cannot be swept for this spec; sweepable: {sorted(allowed)}", value=name)
        vloc: list[str | int] = ["values", k] if len(params) > 1 else ["values"]
        if isinstance(vs, Range) and vs.num > settings.max_sweep_points:  # refuse before expanding
            raise field_error([*vloc, "num"], f"{vs.num} values exceed the limit "
                                              f"max_sweep_points={settings.max_sweep_points}", value=vs.num)
        vals = expand(vs)  # type: ignore[arg-type]
        if not vals:
            raise field_error(vloc, "at least one value is needed")
        if len(vals) > settings.max_sweep_points:
            raise field_error(vloc, f"{len(vals)} values exceed the limit max_sweep_points={settings.max_sweep_points}")
        _check_values(model, name, vals, vloc, settings)
        axes.append(vals)
    boundary = req.method == "boundary"
    refusal = theory.lines_refusal(model) if boundary else None
    if refusal is not None:
        raise field_error(["model", *refusal[0]], refusal[1])
    if boundary:
        for k, vals in enumerate(axes):
            if min(vals) == max(vals):
                raise field_error(["values", k], "a boundary job needs a range: give two different values")
        # A line passes through real values of both parameters: an integer field may be one only where the
        # theory's equations are defined between its integers (Theory.real_integers).
        whole = integers_only(model, params, theory.real_integers_for(model))
        if whole:
            name = whole[0]
            raise field_error(["parameter", params.index(name)],
                              f"'{name}' takes integer values only ({theory.name}'s equations are not defined "
                              "between them), and a boundary job continues lines through real values of both "
                              f"parameters; a phase diagram (method 'continuation', '{name}' first) locates the "
                              "transitions along the other parameter at each of its values", value=name)
    if not boundary and len(axes) == 2 and len(axes[0]) * len(axes[1]) > settings.max_grid_points:
        raise field_error(["values"], f"{len(axes[0]) * len(axes[1])} grid cells exceed the limit "
                                      f"max_grid_points={settings.max_grid_points}")
    if not boundary:
        _check_stored_bytes(model, theory, math.prod(len(a) for a in axes), settings)
    check_starts(model, req.solver)
    options = req.solver or SolverOptions()
    extra: dict[str, Any] = {}
    if boundary:
        # Only the ranges matter: the key (and the job) is that of the box and the line options.
        axes = [[min(vals), max(vals)] for vals in axes]
        extra["lines"] = (req.lines or LineOptions()).model_dump(mode="json")
    key = spec_hash(model, options, parameter=params, values=axes, method=req.method, **extra)
    ensure_source_unchanged()  # the key is made for this fingerprint: its code must still be on disk
    return {
        **extra,
        "key": key,
        "theory": theory.name,
        "model": model.model_dump(mode="json"),
        "parameters": params,
        "axes": axes,
        "method": req.method,
        "solver": options.model_dump(mode="json"),
        # The code the key was made for: a worker running other code refuses the job.
        "source": SOURCE_FINGERPRINT,
        # The instance's per-solve cap travels with the job to the workers; it is not part of the key.
        "solve_time_limit": settings.solve_time_limit,
        # So does its limit of stored bytes (service.kernel.stored_bytes).
        "stored_bytes_limit": settings.limit(stored_bytes.LIMIT_NAME, stored_bytes.DEFAULT_LIMIT),
    }
