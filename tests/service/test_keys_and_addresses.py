"""API keys and client addresses: never written in plain text, failed authentications limited per address, proxy
headers trusted only from configured proxies.

Regressions: ``saddlelab:rate:key-of-alice:…`` held the API key in plain text; 700 requests with a wrong key got
700 × 401 and never a 429; an open instance trusted X-Forwarded-For from any local process, so one client with a
new forged address per request was never rate-limited (and left one Redis key per forged address).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import redis
from fastapi.testclient import TestClient

from service.app import create_app
from tests.redis_server import RedisServer, free_port
from tests.service.conftest import POTENTIAL, settings

ROOT = Path(__file__).resolve().parents[2]
ALICE, BOB = "key-of-alice", "key-of-bob"


def dump(r: redis.Redis) -> bytes:
    """Every key and every value Redis holds, as one blob of bytes."""
    out = []
    for key in r.scan_iter("*"):
        out.append(key)
        kind = r.type(key).decode()
        if kind == "string":
            out.append(r.get(key) or b"")
        elif kind == "hash":
            out += [x for kv in r.hgetall(key).items() for x in kv]
        elif kind == "list":
            out += r.lrange(key, 0, -1)
        elif kind == "set":
            out += list(r.smembers(key))
        elif kind == "zset":
            out += [m for m, _ in r.zrange(key, 0, -1, withscores=True)]
        elif kind == "stream":
            out += [repr(e).encode() for e in r.xrange(key)]
    return b"\n".join(out)


@pytest.mark.redis
def test_nothing_in_redis_names_a_key_or_a_client_address(fresh_redis: RedisServer) -> None:
    s = settings(redis_url=fresh_redis.url, api_keys=(ALICE, BOB), rate_limit_per_minute=100,
                 auth_failures_per_minute=3)
    with TestClient(create_app(s), client=("203.0.113.7", 4242)) as c:
        for key in (ALICE, BOB):
            h = {"X-API-Key": key}
            assert c.post("/v1/solve", json={"model": POTENTIAL}, headers=h).status_code == 200
            job = c.post("/v1/sweeps", json={"model": POTENTIAL, "parameter": "u", "values": [25.0, 30.0]},
                         headers=h).json()
            assert c.get(job["status_url"], headers=h).status_code == 200
            assert c.delete(job["status_url"], headers=h).status_code == 200
        for _ in range(5):
            c.get("/v1/theories", headers={"X-API-Key": "key-of-mallory"})
    blob = dump(fresh_redis.client())
    assert b"saddlelab:rate:" in blob and b"saddlelab:authfail:" in blob and b"saddlelab:handle:" in blob
    for secret in (ALICE, BOB, "key-of-mallory", "alice", "mallory", "203.0.113.7"):
        assert secret.encode() not in blob, secret


@pytest.mark.parametrize("backend", ["memory", pytest.param("redis", marks=pytest.mark.redis)])
def test_failed_authentications_are_limited_per_client_address(backend: str, request: pytest.FixtureRequest) -> None:
    url = request.getfixturevalue("fresh_redis").url if backend == "redis" else None
    s = settings(redis_url=url, api_keys=(ALICE,), auth_failures_per_minute=5)
    app = create_app(s)
    with TestClient(app, client=("198.51.100.1", 1)) as attacker, TestClient(app, client=("198.51.100.2", 1)) as other:
        codes = [attacker.get("/v1/theories", headers={"X-API-Key": f"guess-{i}"}).status_code for i in range(8)]
        assert codes == [401] * 5 + [429] * 3
        blocked = attacker.get("/v1/theories", headers={"X-API-Key": ALICE})
        assert blocked.status_code == 429 and 1 <= int(blocked.headers["retry-after"]) <= 61  # whatever key it tries
        assert "auth_failures_per_minute" in blocked.json()["detail"]
        assert other.get("/v1/theories", headers={"X-API-Key": ALICE}).status_code == 200  # other addresses are not
        assert attacker.get("/healthz").status_code == 200


def _serve(command: list[str], env_extra: dict[str, str], log: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "FORWARDED_ALLOW_IPS")}
    env.update({"SADDLELAB_RATE_LIMIT_PER_MINUTE": "5", "PYTHONWARNINGS": "ignore", "SADDLELAB_PORT": str(port),
                **env_extra})
    args = [a.replace("{port}", str(port)) for a in command]
    with open(log, "w") as out:
        proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        assert proc.poll() is None, log.read_text()[-2000:]
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            pass
        assert time.monotonic() < deadline
        time.sleep(0.1)


@pytest.fixture()
def served(tmp_path: Path) -> Iterator:
    procs: list[subprocess.Popen] = []

    def start(command: list[str], env: dict[str, str]) -> str:
        proc, url = _serve(command, env, tmp_path / f"server-{len(procs)}.log")
        procs.append(proc)
        return url

    yield start
    for p in procs:
        os.killpg(p.pid, 9)
        p.wait(10)


def forged(url: str, n: int) -> list[int]:
    with httpx.Client(base_url=url, timeout=10) as c:
        return [c.get("/v1/theories", headers={"X-Forwarded-For": f"10.0.{i // 250}.{i % 250 + 1}"}).status_code
                for i in range(n)]


UVICORN_AS_IN_COMPOSE = [sys.executable, "-m", "uvicorn", "service.app:app", "--host", "127.0.0.1", "--port", "{port}"]


@pytest.mark.slow
@pytest.mark.parametrize("command", [[sys.executable, "-m", "service"], UVICORN_AS_IN_COMPOSE],
                         ids=["python -m service", "uvicorn CLI as in docker-compose.yml"])
def test_forged_forwarded_for_headers_do_not_escape_the_rate_limit(served, command: list[str]) -> None:
    # docker-compose.yml hands the uvicorn CLI SADDLELAB_TRUSTED_PROXIES as FORWARDED_ALLOW_IPS (empty by default).
    env = {"SADDLELAB_TRUSTED_PROXIES": "", "FORWARDED_ALLOW_IPS": ""}
    codes = forged(served(command, env), 12)
    assert codes[:5] == [200] * 5 and set(codes[5:]) == {429}


@pytest.mark.slow
def test_a_configured_proxy_is_trusted(served) -> None:
    url = served([sys.executable, "-m", "service"], {"SADDLELAB_TRUSTED_PROXIES": "127.0.0.1"})
    # Behind a trusted proxy each forwarded client has its own quota.
    assert forged(url, 12) == [200] * 12
