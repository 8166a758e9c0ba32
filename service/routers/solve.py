from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends

from service.deps import get_state
from service.limits import check_sizes
from service.schemas import SolveRequest, SolveResponse
from service.state import AppState

router = APIRouter(prefix="/v1", tags=["solve"])


@router.post(
    "/solve",
    response_model=SolveResponse,
    summary="Solve one spec: every branch, the equilibrium, diagnostics (cached)",
    responses={422: {"description": "Invalid spec; the error names the field."}},
)
def solve(req: SolveRequest, state: AppState = Depends(get_state)) -> Any:
    check_sizes(req.model, state.settings)
    return state.solver.solve(req.model, req.solver)
