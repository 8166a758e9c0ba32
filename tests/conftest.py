"""Shared fixtures: a real redis-server, and apps built on either cache backend."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.redis_server import RedisServer, start_redis


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    server = start_redis()
    yield server
    server.stop()


@pytest.fixture()
def fresh_redis(redis_server: RedisServer) -> RedisServer:
    redis_server.client().flushall()
    return redis_server


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    from tests.file_order import order_by_cost

    order_by_cost(items)
