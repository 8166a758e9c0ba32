from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, HTTPException
from fastapi.concurrency import run_in_threadpool

from service.deps import get_state
from service.errors import field_error
from service.limits import check_sizes
from service.result_schemas import SolveResponse
from service.schemas import SolveRequest
from service.search_starts import check_starts
from service.solving import SolveRefused
from service.state import AppState

router = APIRouter(prefix="/v1", tags=["solve"])


@router.post(
    "/solve",
    response_model=SolveResponse,
    summary="Solve one spec: every branch, the equilibrium, diagnostics (cached)",
    responses={
        422: {"description": "Invalid spec, or larger (sizes, memory) than this instance allows; the error names "
                             "the field and the limit."},
        503: {"description": "The solve's process died; try again."},
    },
)
async def solve(req: SolveRequest, state: AppState = Depends(get_state)) -> Any:
    # Async: waiting for a solve slot holds no thread, so cached answers and /healthz never queue behind
    # cold solves. Everything that blocks (hashing, the cache, the computation) runs off the event loop.
    await run_in_threadpool(check_sizes, req.model, state.settings)
    check_starts(req.model, req.solver)
    try:
        return await state.solver.solve(req.model, req.solver)
    except SolveRefused as exc:
        if exc.status == 422:
            raise field_error(list(exc.loc), str(exc)) from None
        raise HTTPException(exc.status, detail=str(exc)) from None
