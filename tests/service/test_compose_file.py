"""docker-compose.yml and the Dockerfile, checked by parsing (no Docker engine here): services, commands that
name real modules, environment the code actually reads, healthchecks, Redis settings, grace period."""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

from service.settings import Settings
from service.worker import WorkerSettings

ROOT = Path(__file__).resolve().parents[2]
VAR = re.compile(r"\$\{(\w+)(?::?-([^}]*))?\}")


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def default(value: Any) -> str:
    """A compose value with every ``${VAR:-default}`` replaced by its default."""
    return VAR.sub(lambda m: m.group(2) or "", str(value))


def seconds(duration: str) -> float:
    units = {"h": 3600, "m": 60, "s": 1, "ms": 1e-3, "us": 1e-6}
    parts = re.findall(r"(\d+(?:\.\d+)?)(h|ms|us|m|s)", duration)
    assert parts and "".join(a + b for a, b in parts) == duration, duration
    return sum(float(a) * units[b] for a, b in parts)


def command(service: dict[str, Any]) -> list[str]:
    cmd = service["command"]
    return shlex.split(cmd) if isinstance(cmd, str) else [str(c) for c in cmd]


def test_the_three_services_exist_and_the_workers_scale(compose) -> None:
    services = compose["services"]
    assert {"redis", "api", "worker"} <= set(services)
    worker = services["worker"]
    # `--scale worker=N` needs replicas without fixed names or host ports.
    assert "container_name" not in worker and "ports" not in worker
    for name in ("api", "worker"):
        assert services[name]["depends_on"]["redis"]["condition"] == "service_healthy"


def test_redis_is_pinned_persistent_and_never_evicts(compose) -> None:
    redis = compose["services"]["redis"]
    image, _, tag = redis["image"].partition(":")
    assert image == "redis" and re.match(r"^\d+\.\d+\.\d+", tag), "pin an exact Redis version"
    args = [default(a) for a in command(redis)]
    assert args[0] == "redis-server"
    opts = dict(zip(args[1::2], args[2::2], strict=False))
    assert opts["--appendonly"] == "yes"
    assert opts["--maxmemory-policy"] == "noeviction"
    assert any(v.split(":")[-1] == "/data" for v in redis["volumes"])
    assert redis["healthcheck"]["test"][-2:] == ["redis-cli", "ping"]


def test_commands_name_real_modules(compose) -> None:
    api = command(compose["services"]["api"])
    assert api[0] == "uvicorn"
    module, _, attr = api[1].partition(":")
    assert hasattr(importlib.import_module(module), attr)
    assert api[api.index("--port") + 1] == "8000"
    worker = command(compose["services"]["worker"])
    assert worker[:2] == ["python", "-m"]
    assert importlib.util.find_spec(worker[2]) is not None
    assert callable(importlib.import_module(worker[2]).main)
    # The worker's healthcheck runs the same module with a flag the module accepts.
    check = compose["services"]["worker"]["healthcheck"]["test"]
    assert check[1:4] == ["python", "-m", worker[2]]
    with pytest.raises(SystemExit) as help_exit:
        importlib.import_module(worker[2]).main(["--help"])
    assert help_exit.value.code == 0


def test_healthchecks_probe_the_services(compose) -> None:
    api_check = " ".join(compose["services"]["api"]["healthcheck"]["test"])
    assert "/healthz" in api_check and "8000" in api_check
    for name in ("redis", "api", "worker"):
        hc = compose["services"][name]["healthcheck"]
        assert hc["test"][0] in ("CMD", "CMD-SHELL")
        assert seconds(hc["interval"]) > 0 and seconds(hc["timeout"]) > 0 and hc["retries"] >= 1


def _env_names() -> dict[str, str]:
    """Environment variable -> Settings field, read off the code: setting the variable changes the field."""
    names = {"REDIS_URL": "redis_url", "SADDLELAB_API_KEYS": "api_keys"}
    for f in dataclasses.fields(Settings):
        names.setdefault(f"SADDLELAB_{f.name.upper()}", f.name)
    return names


#: Variables of the compose file read by the programs the containers run rather than by SaddleLab's settings.
UVICORN_VARS = {"FORWARDED_ALLOW_IPS"}


def _probe(kind: str, name: str, value: Any) -> tuple[str, Any]:
    """(environment text, the setting it must produce): a value unlike any default, of the setting's own type."""
    if kind == "int":
        n = int(float(default(value) or 0)) + 7
        return str(n), n
    if kind == "float":
        x = float(default(value) or 0) + 7.25
        return repr(x), x
    if kind.startswith("tuple"):
        return " p-one, p-two ", ("p-one", "p-two")
    text = f"probe-{name.lower()}"
    return text, text


def _kinds() -> dict[str, str]:
    """Settings field -> its type, as written in the dataclass (int, float, tuple[str, ...], str | None, ...)."""
    return {f.name: str(f.type) for f in dataclasses.fields(Settings)}


@pytest.mark.parametrize("service", ["api", "worker"])
def test_environment_is_what_the_code_reads(compose, service: str, monkeypatch) -> None:
    env = compose["services"][service]["environment"]
    assert env["REDIS_URL"] == "redis://redis:6379/0"  # the redis service, by name
    for required in ("SADDLELAB_API_KEYS", "SADDLELAB_MAX_JOBS_PER_KEY", "SADDLELAB_RATE_LIMIT_PER_MINUTE",
                     "SADDLELAB_JOB_TIMEOUT", "SADDLELAB_RESULT_TTL", "SADDLELAB_SOLVE_TIME_LIMIT",
                     "SADDLELAB_TRUSTED_PROXIES", "SADDLELAB_SECRET", "SADDLELAB_MAX_SOLVE_MEMORY_BYTES"):
        assert required in env, required
    settings_vars = _env_names()
    worker_vars = {f"SADDLELAB_WORKER_{f.name.upper()}": f.name for f in dataclasses.fields(WorkerSettings)}
    kinds = _kinds()
    probes: dict[str, Any] = {}
    for name, value in env.items():
        if name in UVICORN_VARS:
            continue
        assert name in settings_vars or name in worker_vars, f"{name} is not read by SaddleLab"
        if name == "REDIS_URL":
            text, probe = default(value), default(value)
        else:
            kind = kinds[settings_vars[name]] if name in settings_vars else "int"
            text, probe = _probe(kind, name, value)
        monkeypatch.setenv(name, text)
        probes[name] = probe
    s, w = Settings(), WorkerSettings()
    for name, probe in probes.items():
        got = getattr(s, settings_vars[name]) if name in settings_vars else getattr(w, worker_vars[name])
        assert got == probe, name


def test_uvicorn_trusts_exactly_the_proxies_saddlelab_trusts(compose, monkeypatch) -> None:
    import uvicorn

    api = compose["services"]["api"]["environment"]
    assert api["FORWARDED_ALLOW_IPS"] == "${SADDLELAB_TRUSTED_PROXIES:-}"  # the same value, empty by default
    assert api["SADDLELAB_TRUSTED_PROXIES"] == "${SADDLELAB_TRUSTED_PROXIES:-}"
    assert "FORWARDED_ALLOW_IPS" not in compose["services"]["worker"]["environment"]
    assert "--forwarded-allow-ips" not in command(compose["services"]["api"])  # nothing overrides the variable
    for value in ("", "10.0.0.5,10.0.0.6"):
        monkeypatch.setenv("FORWARDED_ALLOW_IPS", value)
        assert uvicorn.Config("service.app:app").forwarded_allow_ips == value
    monkeypatch.setenv("SADDLELAB_TRUSTED_PROXIES", "10.0.0.5,10.0.0.6")
    assert Settings().trusted_proxies == ("10.0.0.5", "10.0.0.6")


def test_api_keys_and_limits_are_passed_from_the_host(compose) -> None:
    env = compose["services"]["api"]["environment"]
    for name in ("SADDLELAB_API_KEYS", "SADDLELAB_MAX_JOBS_PER_KEY", "SADDLELAB_RATE_LIMIT_PER_MINUTE"):
        assert VAR.fullmatch(str(env[name])) and VAR.fullmatch(str(env[name])).group(1) == name


def test_grace_period_outlasts_one_sweep_point(compose) -> None:
    worker = compose["services"]["worker"]
    limit = float(default(worker["environment"]["SADDLELAB_SOLVE_TIME_LIMIT"]))
    # One sweep point is at most one capped solve; the worker finishes it, hands the sweep back, exits.
    assert seconds(worker["stop_grace_period"]) > limit
    assert seconds(compose["services"]["api"]["stop_grace_period"]) > 0


def test_dockerfile_installs_the_packages_the_services_run() -> None:
    text = (ROOT / "Dockerfile").read_text()
    base = re.search(r"^FROM\s+(\S+)", text, re.M)
    assert base and re.match(r"python:3\.11\.\d+", base.group(1)), "pin the Python image"
    for pkg in ("solvers", "service", "clients"):
        assert re.search(rf"^COPY\s+{pkg}\s", text, re.M), pkg
    assert "pip install" in text and re.search(r"^USER\s+(?!root)", text, re.M)
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert {".venv", ".git", "tests"} <= set(ignored)
