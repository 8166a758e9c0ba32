"""The client's progress bar shows what the job did while it was watched, in units that mean something."""

from __future__ import annotations

import functools
import io
import re

import pytest

from clients.client import _ProgressBar

tqdm = pytest.importorskip("tqdm").tqdm


def _bar(buf: io.StringIO, unit: str = "pt") -> _ProgressBar:
    bar = _ProgressBar("0123456789abcdef", unit)
    bar._tqdm = functools.partial(tqdm, file=buf, mininterval=0)
    return bar


def test_a_job_found_finished_reports_no_rate() -> None:
    buf = io.StringIO()
    bar = _bar(buf)
    bar.update({"status": "finished", "kind": "sweep", "progress": {"done": 41, "total": 41}})
    bar.close()
    text = buf.getvalue()
    assert "41/41" in text
    rates = [float(r) for r in re.findall(r"([0-9.]+)pt/s", text)]
    assert rates == [], text  # no rate measured: nothing was computed while watching


def test_a_boundary_job_shows_no_point_count() -> None:
    buf = io.StringIO()
    bar = _bar(buf)
    bar.update({"status": "started", "kind": "boundary", "progress": {"done": 0, "total": 1}})
    bar.update({"status": "finished", "kind": "boundary", "progress": {"done": 1, "total": 1}})
    bar.close()
    text = buf.getvalue()
    assert "tracing lines" in text and "finished" in text
    assert "0/1" not in text and "pt" not in text
