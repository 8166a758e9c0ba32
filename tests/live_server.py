"""A live SaddleLab server for tests that talk to it as a person would (a browser, the CLI, curl)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from service.local_server import ROOT, LocalServer

__all__ = ["ROOT", "live_server"]


@contextmanager
def live_server(env: Mapping[str, str] | None = None, startup: float = 120.0) -> Iterator[str]:
    """``python -m service`` on a free loopback port with the embedded defaults (no Redis); yields its base URL."""
    with LocalServer(env, startup) as server:
        yield server.url
