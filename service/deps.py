"""FastAPI dependencies: the shared state of the running instance."""

from __future__ import annotations

from fastapi import Request

from service.state import AppState


def get_state(request: Request) -> AppState:
    return request.app.state.saddlelab
