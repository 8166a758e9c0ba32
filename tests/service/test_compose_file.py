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


def dockerfile() -> list[tuple[str, str]]:
    """The Dockerfile's instructions in order, as (INSTRUCTION, arguments), continuation lines joined."""
    text = re.sub(r"\\\n", " ", (ROOT / "Dockerfile").read_text())
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            op, _, args = line.partition(" ")
            out.append((op.upper(), " ".join(args.split())))
    return out


def _index(steps: list[tuple[str, str]], op: str, pattern: str) -> int:
    found = [i for i, (o, a) in enumerate(steps) if o == op and re.search(pattern, a)]
    assert len(found) == 1, f"expected one {op} matching {pattern!r}, found {len(found)}"
    return found[0]


def test_dockerfile_installs_the_packages_the_services_run() -> None:
    steps = dockerfile()
    assert steps[0][0] == "FROM" and re.match(r"python:3\.11\.\d+", steps[0][1]), "pin the Python image"
    for pkg in ("solvers", "service", "clients"):
        _index(steps, "COPY", rf"^{pkg} \./{pkg}$")
    assert ("WORKDIR", "/app") in steps
    env = " ".join(a for o, a in steps if o == "ENV")
    assert re.search(r"\bPYTHONPATH=/app\b", env), "the code runs from /app, where it was copied"
    assert any(o == "USER" and a not in ("root", "0") for o, a in steps)
    ignored = {ln.strip() for ln in (ROOT / ".dockerignore").read_text().splitlines() if not ln.startswith("#")}
    assert {".venv", ".git", "tests", "*.egg-info", "build"} <= ignored
    assert "requirements.lock" not in ignored


def test_dependencies_are_a_layer_of_their_own_below_the_code() -> None:
    """A code edit must not invalidate the dependency layer: only the lock file is copied before the install,
    the install takes exactly the lock's versions, and the code comes after it."""
    steps = dockerfile()
    lock = _index(steps, "COPY", r"^requirements\.lock ")
    install = _index(steps, "RUN", r"pip install")
    assert lock < install
    assert re.search(r"pip install --no-deps -r requirements\.lock\b", steps[install][1]), steps[install][1]
    code = [i for i, (o, a) in enumerate(steps) if o in ("COPY", "ADD") and i != lock]
    assert code and min(code) > install, "the code is copied after the dependencies are installed"
    # The project itself is never pip-installed: its code exists once, in /app (no copy in site-packages,
    # no build/ or *.egg-info left in the image).
    for o, a in steps:
        if o == "RUN" and "pip install" in a:
            assert not re.search(r"pip install[^&|;]*(\s\.(\s|\[|$)|\s-e\s)", a), a


def test_the_lock_pins_every_dependency_the_image_needs() -> None:
    import tomllib

    from packaging.requirements import Requirement

    lines = [ln for ln in (ROOT / "requirements.lock").read_text().splitlines() if ln and not ln.startswith("#")]
    pins: dict[str, str] = {}
    for line in lines:
        m = re.fullmatch(r"([A-Za-z0-9_.-]+)==(\S+)", line)
        assert m, f"requirements.lock: not an exact pin: {line!r}"
        pins[re.sub(r"[-_.]+", "-", m.group(1).lower())] = m.group(2)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for text in [*project["dependencies"], *project["optional-dependencies"]["client"]]:
        req = Requirement(text)
        name = re.sub(r"[-_.]+", "-", req.name.lower())
        assert name in pins, f"{req.name} is a dependency but not in requirements.lock: run scripts/lock.sh"
        assert req.specifier.contains(pins[name], prereleases=True), (
            f"requirements.lock pins {req.name}=={pins[name]}, outside {req.specifier}: run scripts/lock.sh")
    assert "saddlelab" not in pins
    lock_script = ROOT / "scripts" / "lock.sh"
    assert lock_script.stat().st_mode & 0o111 and "requirements.lock" in lock_script.read_text()


def test_one_image_is_built_once_for_the_api_and_the_workers(compose) -> None:
    services = compose["services"]
    builders = [name for name, svc in services.items() if "build" in svc]
    assert builders == ["api"], "exactly one service builds the image (two builds export two images)"
    assert services["worker"]["image"] == services["api"]["image"]
    # The image exists on no registry: a worker must never try to pull it.
    assert services["worker"]["pull_policy"] == "never"


def test_the_jax_compilation_cache_is_on_a_shared_volume(compose) -> None:
    env = dict(a.split("=", 1) for o, args in dockerfile() if o == "ENV" for a in args.split())
    cache = Path(env["SADDLELAB_JAX_CACHE_DIR"])
    assert any(o == "RUN" and f"mkdir -p {cache}" in a for o, a in dockerfile()), "the image creates the cache"
    mounts = {}
    for name in ("api", "worker"):
        assert "SADDLELAB_JAX_CACHE_DIR" not in compose["services"][name]["environment"], "one source: the image"
        for volume in compose["services"][name]["volumes"]:
            source, target = volume.split(":")[:2]
            if cache == Path(target) or Path(target) in cache.parents:
                mounts[name] = source
    assert mounts.get("api") and mounts.get("api") == mounts.get("worker"), mounts
    assert mounts["api"] in compose["volumes"], "a named volume, kept when containers are recreated"
