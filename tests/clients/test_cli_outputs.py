"""What the ``saddlelab`` command writes, run as a real process: every output path is checked before anything is
submitted (a usage error, exit 2, and no request reaches the server); on a terminal a job's result goes to a file
with a summary of a screen at most, and ``--json`` prints it whole; ``--log`` spaces a range on a log scale."""

from __future__ import annotations

import json
import os
import pty
import select
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from service.cli import SCREEN_LINES
from service.local_server import LocalServer
from tests.live_server import ROOT

POTENTIAL = {"theory": "rubin_cavity", "mode": "potential", "sigma_w2": 0.5, "b": 0.3, "c": -0.3, "u": 29.45}
PHASE_DIAGRAM = ["--parameter", "b", "--values", "0.25,0.3,0.35", "--parameter", "u", "--start", "20", "--stop",
                 "40", "--num", "81"]


def _cli(args: list[str], cwd: Path, tty: bool = False, timeout: float = 300) -> tuple[int, str]:
    """(exit status, stdout and stderr) of ``python -m service.cli ARGS``; stdout a terminal with ``tty``."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONWARNINGS": "ignore", "COLUMNS": "100"}
    cmd = [sys.executable, "-m", "service.cli", *args]
    if not tty:
        out = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
        return out.returncode, out.stdout + out.stderr
    master, slave = pty.openpty()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave)
    os.close(slave)
    chunks = []
    while True:
        ready, _, _ = select.select([master], [], [], timeout)
        if not ready:
            proc.kill()
            raise AssertionError("the command printed nothing for a long time:\n" + b"".join(chunks).decode())
        try:
            data = os.read(master, 65536)
        except OSError:  # the terminal closed: the command ended
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    return proc.wait(60), b"".join(chunks).decode().replace("\r\n", "\n")


@pytest.mark.parametrize("command, output", [
    ("sweep --format netcdf", "missing/x.nc"),
    ("sweep --format csv", "missing/x.csv"),
    ("sweep", "a_directory"),
    ("solve --format netcdf", "a_directory"),
    ("experiment", "missing/run.json"),
])
def test_an_unwritable_output_is_a_usage_error_before_anything_is_submitted(tmp_path: Path, command: str,
                                                                             output: str) -> None:
    (tmp_path / "a_directory").mkdir()
    (tmp_path / "spec.json").write_text(json.dumps(POTENTIAL))
    listener = socket.create_server(("127.0.0.1", 0))
    try:
        url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        name, *flags = command.split()
        axes = ["--parameter", "u", "--start", "20", "--stop", "40", "--num", "5"] if name != "solve" else []
        code, text = _cli([name, "spec.json", *flags, *axes, "-o", output, "--url", url, "--timeout", "5"], tmp_path)
        assert code == 2, text
        assert output in text and ("does not exist" in text or "is a directory" in text), text
        listener.setblocking(False)
        with pytest.raises(BlockingIOError):  # nobody connected: nothing was submitted
            listener.accept()
    finally:
        listener.close()


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with LocalServer() as s:
        yield s.url


@pytest.mark.slow
def test_a_phase_diagram_on_a_terminal_is_a_summary_and_a_file(server: str, tmp_path: Path) -> None:
    (tmp_path / "spec.json").write_text(json.dumps(POTENTIAL))
    code, text = _cli(["sweep", "spec.json", *PHASE_DIAGRAM, "--no-progress", "--url", server], tmp_path, tty=True)
    assert code == 0, text
    lines = text.strip().splitlines()
    assert len(lines) <= SCREEN_LINES + 1, text
    assert lines[0].startswith("phase diagram of rubin_cavity over b (3 values) × u (81 values)"), text
    [written] = list(tmp_path.glob("sweep-*.json"))
    assert f"written to {written.name}" in lines[-1]
    result = json.loads(written.read_text())
    assert len(result["points"]) == 3 * 81
    # --json prints the same result whole, even on a terminal
    code, text = _cli(["sweep", "spec.json", *PHASE_DIAGRAM, "--no-progress", "--json", "--url", server], tmp_path,
                      tty=True)
    assert code == 0 and json.loads(text)["points"] == result["points"]


@pytest.mark.slow
def test_a_log_range_from_the_command_line(server: str, tmp_path: Path) -> None:
    (tmp_path / "spec.json").write_text(json.dumps(POTENTIAL))
    code, text = _cli(["sweep", "spec.json", "--parameter", "u", "--start", "1", "--stop", "100", "--num", "5",
                       "--log", "--method", "grid", "--no-progress", "--url", server], tmp_path)
    assert code == 0, text
    points = json.loads(text)["points"]  # stdout is a pipe: the whole JSON
    np.testing.assert_allclose([p["parameter"] for p in points], [1, 10**0.5, 10, 10**1.5, 100], rtol=1e-12)
