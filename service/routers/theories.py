from __future__ import annotations

from fastapi import APIRouter
from pydantic import TypeAdapter

from service.schemas import TheoryInfo
from solvers.theories import registry

router = APIRouter(prefix="/v1", tags=["theories"])


@router.get("/theories", response_model=list[TheoryInfo], summary="Installed theories and their spec schemas")
def theories() -> list[TheoryInfo]:
    out = []
    for name, theory in registry().items():
        out.append(
            TheoryInfo(
                name=name,
                summary=theory.summary,
                schema=TypeAdapter(theory.spec_model).json_schema(),
                sweepable=sorted(theory.sweepable),
            )
        )
    return out
