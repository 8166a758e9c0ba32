"""FastAPI dependencies: the shared state of the running instance."""

from __future__ import annotations

from fastapi import Request

from service.state import AppState


async def get_state(request: Request) -> AppState:
    # Async on purpose: a sync dependency would be run on the thread pool, which async routes (/healthz)
    # must never wait for.
    return request.app.state.saddlelab
