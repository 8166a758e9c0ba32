"""How a catalogue looks for solutions at one parameter value: named starts only, or deflation after them."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class SearchOptions(BaseModel):
    """The search method of one solve (part of every cache key through :class:`SolverOptions`)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, strict=True)

    method: Literal["starts", "deflation"] = Field(
        "starts",
        description="starts: solve from the theory's named starts (and its exhaustive root scan, where it has one); "
        "deflation: then keep solving a deflated system (Farrell, Beentjes & Birkisson 2016) in which every "
        "solution found so far is a pole, until `budget` deflated solves in a row find nothing new.",
    )
    starts: list[str] | None = Field(
        None,
        min_length=1,
        description="Named starts to solve from (default: all of the theory's). Naming starts also leaves out the "
        "theory's root scan, so that the result shows what these starts, and deflation from them, find.",
    )
    budget: int = Field(
        8, ge=1, le=200,
        description="Deflated solves in a row that must find nothing new before the search stops (deflation only).",
    )
    power: float = Field(2.0, ge=1.0, le=8.0, description="Power p of the deflation operator 1/‖x − r‖^p + σ.")
    shift: float = Field(1.0, gt=0.0, le=100.0, description="Shift σ of the deflation operator 1/‖x − r‖^p + σ.")
    depth: int = Field(
        2, ge=0, le=8,
        description="Sweeps with method diagram: levels of branch switching (0: only the branches through the starts' "
        "solutions; d: also every branch that bifurcates from a branch of level d − 1).",
    )
    max_solutions: int = Field(
        64, ge=1, le=1000, description="Cap on the solutions deflation adds at one parameter value."
    )
