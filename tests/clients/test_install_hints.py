"""Every install command SaddleLab prints works from a clone: the server's install and the client alone both
define the extra it names, pip accepts it (a dry run, offline, against this environment), and no other
``pip install`` text is printed anywhere in the code. ``make serve`` and ``make test`` install the extras the
README and the notebooks use."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from clients.install_hints import EXTRAS, install_commands, install_hint

ROOT = Path(__file__).resolve().parents[2]


def _extras(pyproject: Path) -> dict[str, list[str]]:
    return tomllib.loads(pyproject.read_text())["project"]["optional-dependencies"]


def _names(requirements: list[str]) -> set[str]:
    return {re.split(r"[\[<>=!~ ;]", r, maxsplit=1)[0].lower() for r in requirements}


@pytest.mark.parametrize("extra", sorted(EXTRAS))
def test_both_installs_define_the_extra_with_what_the_hint_names(extra: str) -> None:
    named = {n.strip().lower() for n in re.split(r",| and ", EXTRAS[extra]) if n.strip()}
    for pyproject in (ROOT / "pyproject.toml", ROOT / "clients" / "pyproject.toml"):
        assert named <= _names(_extras(pyproject)[extra]), (pyproject, extra)


@pytest.mark.slow
@pytest.mark.parametrize("extra", sorted(EXTRAS))
def test_pip_accepts_each_printed_command(extra: str) -> None:
    for command in install_commands(extra):
        args = shlex.split(command)
        assert args[:2] == ["pip", "install"]
        out = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--no-build-isolation",
                              "--no-index", *args[2:]], cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
        assert "does not provide the extra" not in out.stdout + out.stderr, command
        assert command in install_hint("x", extra)


def test_no_other_install_text_is_printed() -> None:
    hints = ROOT / "clients" / "install_hints.py"
    offenders = [f"{p.relative_to(ROOT)}:{i}" for folder in ("clients", "service", "solvers")
                 for p in (ROOT / folder).rglob("*.py") if p != hints
                 for i, line in enumerate(p.read_text().splitlines(), 1)
                 if "pip install" in line and not line.lstrip().startswith("#")]
    assert offenders == []


def test_make_serve_and_make_test_install_the_arrays_and_plot_extras() -> None:
    for script, base in (("serve.sh", "client"), ("test.sh", "test")):
        lines = [ln for ln in (ROOT / "scripts" / script).read_text().splitlines() if "setup.sh" in ln]
        assert lines == [f"./scripts/setup.sh {base},arrays,plot"], (script, lines)
