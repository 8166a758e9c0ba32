"""Every command of the README runs, as written, against a live server.

The README's fenced blocks are read afresh at each run, so a command added there is tested here without
touching this file: each ``curl …`` and ``saddlelab …`` command of a ``bash`` block and each ``python`` block
is one test, named by its line in the README. The README addresses http://127.0.0.1:8000 (or localhost:8000);
here that is the live server's address. ``spec.json`` is the Quickstart's model. What cannot run here is
listed in NOT_HERE with the reason and the test that covers it instead.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

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
}
ADDRESS = re.compile(r"(?:http://)?(?:127\.0\.0\.1|localhost):8000")


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


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with live_server({"SADDLELAB_SOLVE_PROCESSES": "0"}) as url:
        yield url


@pytest.fixture()
def workdir(tmp_path: Path) -> Path:
    quickstart = next(c for c in COMMANDS if "/v1/solve" in c.text and c.text.startswith("curl"))
    model = json.loads(quickstart.text.split("-d '", 1)[1].rsplit("'", 1)[0])["model"]
    (tmp_path / "spec.json").write_text(json.dumps(model))
    return tmp_path


def test_the_readme_has_commands() -> None:
    kinds = {c.text.split()[0] for c in COMMANDS if c.kind == "shell"}
    assert {"curl", "saddlelab"} <= kinds and any(c.kind == "python" for c in COMMANDS)


@pytest.mark.parametrize("cmd", COMMANDS, ids=lambda c: c.id)
def test_readme_command_runs(cmd: Command, server: str, workdir: Path) -> None:
    reason = _reason(cmd)
    if reason:
        pytest.skip(f"not run here: {reason}")
    env = {**os.environ, "SADDLELAB_URL": server, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    text = ADDRESS.sub(server, cmd.text)
    if cmd.kind == "python":
        proc = subprocess.run([sys.executable, "-c", text], cwd=workdir, env={**env, "PYTHONPATH": str(ROOT)},
                              capture_output=True, text=True, timeout=600)
    else:
        proc = subprocess.run(["bash", "-euo", "pipefail", "-c", text], cwd=workdir, env=env, capture_output=True,
                              text=True, timeout=600)
    assert proc.returncode == 0, f"{cmd.id}: {cmd.text}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    if cmd.text.startswith("curl"):
        body = json.loads(proc.stdout)
        assert "detail" not in body, body
