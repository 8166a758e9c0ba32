"""App fixtures on the embedded (in-process) backend and on a real Redis."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from service.app import create_app
from service.settings import Settings
from tests.redis_server import RedisServer

POTENTIAL: dict[str, Any] = {"theory": "rubin_cavity", "mode": "potential", "sigma_w2": 0.5, "b": 0.3, "c": -0.3,
                             "u": 29.45}


def settings(**kw: Any) -> Settings:
    base = {"redis_url": None, "api_keys": (), "rate_limit_per_minute": 0}
    base.update(kw)
    return Settings(**base)


@pytest.fixture()
def client() -> Iterator[TestClient]:
    with TestClient(create_app(settings())) as c:
        yield c


@pytest.fixture()
def redis_client(fresh_redis: RedisServer) -> Iterator[TestClient]:
    with TestClient(create_app(settings(redis_url=fresh_redis.url))) as c:
        yield c
