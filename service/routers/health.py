from __future__ import annotations

from fastapi import APIRouter, Depends

from service.deps import get_state
from service.provenance import SOURCE_FINGERPRINT
from service.schemas import Health
from service.state import AppState
from solvers import SOLVER_VERSION

router = APIRouter(tags=["health"])


@router.get("/healthz", response_model=Health, summary="Liveness, cache backend and Redis status")
async def healthz(state: AppState = Depends(get_state)) -> Health:
    # Async and non-blocking: answered on the event loop within a second whatever the load or Redis does.
    return Health(
        status="ok",
        cache="redis" if state.link else "memory",
        redis=await state.health.status() if state.health else None,
        version=SOLVER_VERSION,
        source=SOURCE_FINGERPRINT,
        auth="api_key" if state.settings.api_keys else "open",
    )
