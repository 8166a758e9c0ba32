"""The client installs alone: its wheel (built from ``clients/pyproject.toml``) holds the ``clients`` package and
nothing else, requires httpx alone (xarray, matplotlib, tqdm as extras), and the installed package works in a
process that cannot import any of the server's packages.

This is the cheap, faithful form of "a fresh virtualenv with only the client" (which the README gives as a
command, run by hand): the wheel is the artefact pip would install, and the child process sees it and the extras'
libraries, while every server package (FastAPI, pydantic, SciPy, JAX, RQ, Redis, the service and the solvers) is
refused at import.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from service.app import create_app
from service.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
SERVER_PACKAGES = ("service", "solvers", "fastapi", "starlette", "uvicorn", "pydantic", "scipy", "jax", "jaxlib",
                   "blackjax", "rq", "redis", "sklearn", "rfc8785", "arviz_stats", "threadpoolctl")
POTENTIAL = {"theory": "rubin_cavity", "mode": "potential", "sigma_w2": 0.5, "b": 0.3, "c": -0.3, "u": 29.45}

CHILD = r'''
import importlib.abc, json, sys
BLOCKED = set(sys.argv[2].split(","))

class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"{name} is a server package, not available to the client")
        return None

sys.meta_path.insert(0, Refuse())
import httpx
from clients import Client, series, to_csv, UnknownQuantity
from clients import arrays, experiments, plot, tables
assert clients_dir in __import__("clients").__file__, __import__("clients").__file__

canned = json.load(open(sys.argv[1]))
def answer(request):
    body = canned["theories"] if request.url.path == "/v1/theories" else canned["solve"]
    return httpx.Response(200, json=body)

lab = Client("http://lab", transport=httpx.MockTransport(answer))
solve = lab.solve({"theory": "rubin_cavity", "mode": "potential"})
ds = lab.to_xarray(solve)
assert ds["rho_star"].attrs["symbol"] == "$\\rho^*$", ds["rho_star"].attrs
arrays.to_netcdf(ds, sys.argv[3])
back = arrays.open_netcdf(sys.argv[3])
assert float(back["free_entropy"].sel(branch="aligned")) == float(ds["free_entropy"].sel(branch="aligned"))
import matplotlib
matplotlib.use("Agg")
plot.potential(solve)
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)))
'''


def _build_wheel(tmp: Path) -> Path:
    """The client's wheel, built from a copy of clients/ (no build files left in the repository)."""
    source = tmp / "source"
    shutil.copytree(ROOT / "clients", source, ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet",
                    str(source), "-w", str(tmp / "dist")], check=True, capture_output=True)
    (wheel,) = (tmp / "dist").glob("saddlelab_client-*.whl")
    return wheel


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _build_wheel(tmp_path_factory.mktemp("client-wheel"))


def test_the_wheel_holds_the_client_alone_and_requires_httpx_alone(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        metadata = z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    modules = sorted(n for n in names if not n.startswith("saddlelab_client-"))
    assert modules == sorted(f"clients/{p.name}" for p in (ROOT / "clients").glob("*.py"))
    requires = [line.split(":", 1)[1].strip() for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    assert [r for r in requires if "extra ==" not in r] == ["httpx>=0.27"]
    extras = {line.split(":", 1)[1].strip() for line in metadata.splitlines() if line.startswith("Provides-Extra:")}
    assert extras == {"arrays", "plot", "progress", "all"}
    for library in ("xarray", "h5netcdf", "h5py", "arviz-base"):  # h5netcdf needs h5py and does not require it
        assert any(r.startswith(library + ">") and 'extra == "arrays"' in r for r in requires), library
    # one version for the server and its client
    server = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    client = tomllib.loads((ROOT / "clients" / "pyproject.toml").read_text())["project"]
    assert client["version"] == server["version"] and f"Version: {server['version']}" in metadata
    assert {"xarray>=2024.10", "h5netcdf>=1.3", "h5py>=3.8", "arviz-base>=0.8"} <= set(
        server["optional-dependencies"]["test"])


def test_the_installed_client_works_without_any_server_package(wheel: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as z:
        z.extractall(site)
    with TestClient(create_app(Settings(redis_url=None, rate_limit_per_minute=0))) as api:
        canned = {"theories": api.get("/v1/theories").json(),
                  "solve": api.post("/v1/solve", json={"model": {**POTENTIAL, "potential_samples": 51}}).json()}
    (tmp_path / "canned.json").write_text(json.dumps(canned))
    code = f"clients_dir = {str(site)!r}\n" + CHILD
    run = subprocess.run([sys.executable, "-c", code, str(tmp_path / "canned.json"), ",".join(SERVER_PACKAGES),
                          str(tmp_path / "solve.nc")], cwd=tmp_path, env={"PYTHONPATH": str(site), "PATH": ""},
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert json.loads(run.stdout.strip().splitlines()[-1]) == []
