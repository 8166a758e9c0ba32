from __future__ import annotations

from fastapi import APIRouter
from pydantic import TypeAdapter

from service.schemas import QuantityInfo, TheoryInfo
from solvers.theories import registry
from solvers.theories.quantities import annotate_schema

router = APIRouter(prefix="/v1", tags=["theories"])


@router.get("/theories", response_model=list[TheoryInfo],
            summary="Installed theories: spec schemas, sweepable fields, and the table of quantities with symbols")
def theories() -> list[TheoryInfo]:
    out = []
    for name, theory in registry().items():
        out.append(
            TheoryInfo(
                name=name,
                summary=theory.summary,
                schema=annotate_schema(TypeAdapter(theory.spec_model).json_schema(), theory.quantities),
                sweepable=sorted(theory.sweepable),
                real_integers=sorted(theory.real_integers),
                quantities=[QuantityInfo(**q) for q in theory.quantities.to_json()],
            )
        )
    return out
