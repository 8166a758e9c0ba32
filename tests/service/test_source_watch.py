"""A module that a line imports lazily, edited on disk while the line runs, stops the line before its next point:
nothing its new code computes is stored under the fingerprint of the old (the line's start alone would not see it).
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from service import provenance
from service.jobs.lines import run_line
from service.schemas import SweepRequest
from service.settings import Settings
from service.sweep_plan import plan

SWEEP = {"model": {"theory": "rubin_cavity", "mode": "potential", "sigma_w2": 0.5, "b": 0.3, "c": -0.3, "u": 29.45},
         "parameter": "u", "values": {"start": 20, "stop": 40, "num": 6}, "method": "grid"}
PROBE = "saddlelab_lazily_imported_probe"


@pytest.fixture
def lazy_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A covered source file that nothing has imported yet."""
    path = tmp_path / f"{PROBE}.py"
    path.write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(provenance, "SOURCE_STATES",
                        [*provenance.SOURCE_STATES, *provenance.file_states([(f"{PROBE}.py", path)])])
    yield path
    sys.modules.pop(PROBE, None)


@pytest.mark.parametrize("imported", [True, False])
def test_an_edited_module_imported_mid_line_stops_it_before_its_next_point(lazy_module: Path, imported: bool) -> None:
    payload = plan(SweepRequest.model_validate(SWEEP), Settings(redis_url=None))
    stored: list[int] = []

    def on_point(index: int, point: dict) -> None:
        stored.append(index)
        if len(stored) == 2:
            lazy_module.write_text("VALUE = 2  # edited while the line runs\n")
            if imported:
                importlib.import_module(PROBE)  # what a solve's lazy import does

    if not imported:  # edited but never imported: the code in memory is still the fingerprinted one
        assert len(run_line(payload, on_point=on_point)["points"]) == 6 and len(stored) == 6
        return
    with pytest.raises(provenance.SourceChanged, match=f"{PROBE}.py"):
        run_line(payload, on_point=on_point)
    assert stored == [0, 1]
