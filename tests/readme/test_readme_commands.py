"""Every command of the README runs, as written, against a live server, and gives what the README says next to it.

The README's fenced blocks are read afresh at each run, so a command added there is run here without touching this
file: each ``curl …`` and ``saddlelab …`` command of a ``bash`` block and each ``python`` block is one test, named
by its line in the README. The ``python`` blocks read as one session, as in a notebook: each runs after the blocks
before it (a later block uses the ``result`` of an earlier one). The README addresses http://127.0.0.1:8000 (or
localhost:8000); here that is the live server's address. ``spec.json`` is the Quickstart's model.

What a command's output must show is in :data:`EXPECTED` (matched by a piece of the command), the same numbers and
fields the README states beside it; a README command that states nothing only has to succeed. What cannot run here
is listed in :data:`NOT_HERE` with the reason and the test that covers it instead.
"""

from __future__ import annotations

import csv
import json
import math
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.live_server import ROOT, live_server

README = ROOT / "README.md"
#: Command prefixes that are not run here, with the reason.
NOT_HERE = {
    "make ": "installs and runs the whole project (serve: tests/service/test_serve_command.py)",
    "docker ": "needs docker (the compose file: tests/service/test_compose_file.py)",
    "echo ": "writes the compose file's .env",
    "saddlelab serve": "starts a server (tests/service/test_serve_command.py serves the same app)",
    "saddlelab worker": "an RQ worker on Redis (tests/integration)",
    "lab.experiment(": "samples a network for minutes (tests/integration/test_rq_experiments.py)",
    "python3 -m venv": "installs the client into a new virtualenv (tests/clients/test_client_package.py)",
    "pip install": "installs the client from a repository (tests/clients/test_client_package.py)",
}
ADDRESS = re.compile(r"(?:http://)?(?:127\.0\.0\.1|localhost):8000")

U_FOLD, U_FIRST_ORDER, U_PITCHFORK = 28.322495, 75 * math.pi / 8, math.pi * (1 + 2 * 0.5) / (4 * 0.5 * 0.3**2)


@dataclass(frozen=True)
class Command:
    line: int
    kind: str  # "shell" or "python"
    text: str

    @property
    def id(self) -> str:
        return f"README:{self.line}"


def _shell_commands(block: list[str], first: int) -> Iterator[Command]:
    """Commands of a bash block: a line starting a command, with the lines it continues onto (open quotes)."""
    i = 0
    while i < len(block):
        text = block[i]
        start = i
        while text.count("'") % 2 and i + 1 < len(block):  # a single-quoted argument spans lines
            i += 1
            text += "\n" + block[i]
        i += 1
        if text.strip() and not text.lstrip().startswith("#"):
            yield Command(first + start, "shell", text)


def readme_commands() -> list[Command]:
    lines = README.read_text().splitlines()
    out: list[Command] = []
    i = 0
    while i < len(lines):
        fence = re.match(r"^```(\w*)", lines[i])
        if not fence:
            i += 1
            continue
        lang, first, block = fence.group(1), i + 2, []
        i += 1
        while i < len(lines) and not lines[i].startswith("```"):
            block.append(lines[i])
            i += 1
        i += 1
        if lang == "bash":
            out.extend(_shell_commands(block, first))
        elif lang == "python":
            out.append(Command(first, "python", "\n".join(block)))
    return out


def _reason(cmd: Command) -> str | None:
    return next((why for prefix, why in NOT_HERE.items() if prefix in cmd.text.split("\n")[0] or
                 (cmd.kind == "python" and prefix in cmd.text)), None)


COMMANDS = readme_commands()


def session(cmd: Command) -> str:
    """A python block with the blocks before it that run here: the README's python reads as one session."""
    earlier = [c.text for c in COMMANDS if c.kind == "python" and c.line < cmd.line and _reason(c) is None]
    return "\n".join([*earlier, cmd.text])


# ---------------------------------------------------------------------------------------------
# what the README says each command gives


@dataclass
class Ran:
    cmd: Command
    proc: subprocess.CompletedProcess[str]
    server: str
    workdir: Path

    def json(self) -> Any:
        return json.loads(self.proc.stdout)


def _wells_as_stated(body: dict[str, Any]) -> None:
    """The Quickstart: the centre at ρ = 0 and the aligned well at |ρ| = 1/√2 (0.7069 at u = 29.45), nearly as deep."""
    wells = {w["kind"]: w for w in body["observables"]["potential_wells"]}
    assert wells["center"]["rho"] == 0.0
    assert wells["aligned"]["rho"] == pytest.approx(1 / math.sqrt(2), abs=5e-4)
    assert wells["aligned"]["rho"] == pytest.approx(0.7069, abs=1e-4)
    assert wells["aligned"]["depth"] == pytest.approx(-4e-5, abs=5e-6)
    assert {"rho_star", "R", "b", "c"} <= set(body["order_parameters"]) and body["observables"]["phase"] == "GFL"
    assert {"branches", "equilibrium", "diagnostics", "provenance"} <= set(body)


def _quickstart(ran: Ran) -> None:
    first = ran.json()
    _wells_as_stated(first)
    again = subprocess.run(["bash", "-euo", "pipefail", "-c", ADDRESS.sub(ran.server, ran.cmd.text)],
                           capture_output=True, text=True, timeout=120)
    assert json.loads(again.stdout)["cached"] is True  # "The same request a second time comes back cached"


def _transitions_as_stated(transitions: list[dict[str, Any]]) -> None:
    """The sweep's transitions: spinodal u ≈ 28.32, first order 75π/8, stability loss π(1 + 2σ²)/(4b²σ²)."""
    found = [(t["kind"], t["parameter"]) for t in transitions]
    assert [k for k, _ in found] == ["spinodal", "first_order", "spinodal"]
    assert [p for _, p in found] == [pytest.approx(U_FOLD, abs=1e-6), pytest.approx(U_FIRST_ORDER, abs=1e-9),
                                     pytest.approx(U_PITCHFORK, abs=1e-9)]


def _sweep_job(ran: Ran) -> None:
    accepted = ran.json()
    assert set(accepted) >= {"job_id", "status_url"}
    deadline = time.monotonic() + 120
    while (status := httpx.get(ran.server + accepted["status_url"], timeout=30).json())["status"] != "finished":
        assert status["status"] in ("queued", "running") and time.monotonic() < deadline, status
        time.sleep(0.2)
    result = status["result"]
    _transitions_as_stated(result["transitions"])
    assert len(result["curves"]) == 2 and result["provenance"]["source"]
    (s_curve,) = [c for c in result["curves"] if {"aligned", "barrier"} <= set(c["branch"])]
    turn = min(range(len(s_curve["parameter"])), key=s_curve["parameter"].__getitem__)
    assert s_curve["parameter"][turn] == pytest.approx(U_FOLD, abs=1e-6)  # "turns at the spinodal u = 28.322495"
    at_fold = {b for b, p in zip(s_curve["branch"], s_curve["parameter"], strict=True) if abs(p - U_FOLD) < 1e-6}
    assert at_fold == {"aligned", "barrier"}  # a row of both branches


def _python_sweep(ran: Ran) -> None:
    assert ran.proc.stdout.split() == ["28.32", "29.45", "34.91"]


def _python_arrays(ran: Ran) -> None:
    assert ran.proc.stdout.split() == ["28.32", "29.45", "34.91"]
    assert (ran.workdir / "potential.nc").stat().st_size > 0


def _python_figures(ran: Ran) -> None:
    assert ran.proc.stdout.split() == [r"$\rho$", r"$\tilde", "U(\\rho)", "-", r"\tilde", "U(0)$"]
    assert (ran.workdir / "branches.png").read_bytes()[:4] == b"\x89PNG"
    assert (ran.workdir / "potential.pdf").read_bytes()[:4] == b"%PDF"


def _cli_solve(ran: Ran) -> None:
    _wells_as_stated(ran.json())


def _stderr_transitions(ran: Ran) -> None:
    for line in ("# spinodal at 28.32249531 (aligned/barrier)", "# first_order at 29.45243113 (aligned/center)",
                 "# spinodal at 34.90658504 (center/barrier)"):
        assert line in ran.proc.stderr


def _cli_csv(ran: Ran) -> None:
    _stderr_transitions(ran)
    with (ran.workdir / "u.csv").open() as fh:
        rows = list(csv.DictReader(line for line in fh if not line.startswith("#")))  # units and symbols first
    assert [float(r["u"]) for r in rows] == [20 + 0.5 * k for k in range(41)]


def _cli_netcdf(ran: Ran) -> None:
    _stderr_transitions(ran)
    import xarray

    tree = xarray.open_datatree(ran.workdir / "u.nc", engine="h5netcdf")
    assert [round(float(p), 2) for p in tree["special_points"]["parameter"].values] == [28.32, 29.45, 34.91]


def _cli_phase_diagram(ran: Ran) -> None:
    result = ran.json()
    assert result["parameters"] == ["b", "u"] and len(result["points"]) == 2 * 81
    (first_order,) = [line for line in result["lines"] if line["kind"] == "first_order"]
    assert [(q["b"], round(q["u"], 4)) for q in first_order["points"]] == [(0.25, 38.2373), (0.3, 29.4524)]


def _cli_boundary(ran: Ran) -> None:
    lines = {line["kind"]: line for line in ran.json()["lines"]}
    assert set(lines) == {"spinodal", "first_order", "stability_loss"}
    ends = {round(b, 6): u for b, u in (lines["stability_loss"]["points"][k] for k in (0, -1))}
    assert ends == {0.25: pytest.approx(math.pi / 0.25**2, abs=1e-6), 0.4: pytest.approx(math.pi / 0.4**2, abs=1e-6)}


#: (a piece of the command, check of what it gave); the first match applies. Python blocks print what is checked.
EXPECTED: list[tuple[str, Callable[[Ran], None]]] = [
    ("/v1/solve", _quickstart),
    ("/v1/sweeps", _sweep_job),
    ("tree.to_netcdf(", _python_arrays),
    ("plot.save(", _python_figures),
    ("lab.sweep(", _python_sweep),
    ("saddlelab solve", _cli_solve),
    ("--format csv", _cli_csv),
    ("--format netcdf", _cli_netcdf),
    ("--method boundary", _cli_boundary),
    ("--parameter b --values", _cli_phase_diagram),
]
#: What a python block prints for its check (appended to the session; the README's own lines are unchanged).
PRINTED = {
    "lab.sweep(": 'print(*[f"{t[\'parameter\']:.2f}" for t in result["transitions"]])',
    "tree.to_netcdf(": 'print(*[f"{p:.2f}" for p in tree["special_points"]["parameter"].values])',
    "plot.save(": "print(ax.get_xlabel(), ax.get_ylabel())",
}


def _expected(cmd: Command) -> tuple[str, Callable[[Ran], None]] | None:
    last = cmd.text.strip().splitlines()[-1] if cmd.kind == "python" else cmd.text
    for piece, check in EXPECTED:
        if piece in (last if piece in PRINTED else cmd.text):
            return piece, check
    return None


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with live_server({"SADDLELAB_SOLVE_PROCESSES": "0"}) as url:
        yield url


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One directory for the whole README, as a reader's: the files one command writes, the next one reads."""
    path = tmp_path_factory.mktemp("readme")
    quickstart = next(c for c in COMMANDS if "/v1/solve" in c.text and c.text.startswith("curl"))
    model = json.loads(quickstart.text.split("-d '", 1)[1].rsplit("'", 1)[0])["model"]
    (path / "spec.json").write_text(json.dumps(model))
    return path


def test_the_readme_has_commands() -> None:
    kinds = {c.text.split()[0] for c in COMMANDS if c.kind == "shell"}
    assert {"curl", "saddlelab"} <= kinds and any(c.kind == "python" for c in COMMANDS)


def test_what_the_readme_states_is_checked() -> None:
    # every check finds its command: a README edit that drops or rewrites one is seen here
    for piece, _ in EXPECTED:
        assert any(_expected(c) == next(e for e in EXPECTED if e[0] == piece) for c in COMMANDS), piece


@pytest.mark.parametrize("cmd", COMMANDS, ids=lambda c: c.id)
def test_readme_command_gives_what_the_readme_says(cmd: Command, server: str, workdir: Path) -> None:
    reason = _reason(cmd)
    if reason:
        pytest.skip(f"not run here: {reason}")
    env = {**os.environ, "SADDLELAB_URL": server, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    expected = _expected(cmd)
    if cmd.kind == "python":
        text = ADDRESS.sub(server, session(cmd))
        if expected is not None and expected[0] in PRINTED:
            text += "\n" + PRINTED[expected[0]]
        proc = subprocess.run([sys.executable, "-c", text], cwd=workdir, env={**env, "PYTHONPATH": str(ROOT)},
                              capture_output=True, text=True, timeout=600)
    else:
        proc = subprocess.run(["bash", "-euo", "pipefail", "-c", ADDRESS.sub(server, cmd.text)], cwd=workdir,
                              env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{cmd.id}: {cmd.text}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    if cmd.text.startswith("curl"):
        assert "detail" not in json.loads(proc.stdout), proc.stdout[:2000]
    if expected is not None:
        expected[1](Ran(cmd, proc, server, workdir))
