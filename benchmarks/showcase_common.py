"""What the two experiment showcases share: run a request in-process, keep its JSON, format estimates."""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any


def run(request: dict[str, Any], label: str, workers: int = 2) -> dict[str, Any]:
    """One experiment request through the service's own planning and in-process executor, with progress on stderr."""
    from service.experiments.in_process import run_experiment

    t0 = time.perf_counter()
    last = [-1]

    def report(status: dict[str, Any]) -> None:
        done, total = status["progress"]["done"], status["progress"]["total"]
        percent = int(100 * done / max(total, 1))
        if percent // 10 != last[0] // 10:
            last[0] = percent
            print(f"  {label}: {done}/{total} draws, {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)

    result = run_experiment(request, workers=workers, on_status=report, poll=2.0)
    print(f"  {label}: finished in {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    return result


def add_run_arguments(parser: argparse.ArgumentParser, *, warmup: int, draws: int, data: str, figure: str) -> None:
    """The options every showcase has: its sampler's length and seed, where its data and figure go, --replot."""
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=warmup)
    parser.add_argument("--draws", type=int, default=draws)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data", default=data)
    parser.add_argument("--figure", default=figure)
    parser.add_argument("--replot", action="store_true", help="redraw the figure and table from --data")


def save(path: str | Path, body: dict[str, Any]) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(body, indent=1))


def load(path: str | Path) -> dict[str, Any]:
    return json.loads(Path(path).read_text())


def points(result: dict[str, Any]) -> list[dict[str, Any]]:
    return list(result["points"]) if "points" in result else [result]


def estimate(point: dict[str, Any], name: str) -> tuple[float, float, float, float]:
    """(mean, stderr, R-hat, bulk ESS) of a scalar observable of one experiment point (NaN where undefined)."""
    est = point["observables"][name]

    def num(v: Any) -> float:
        return float("nan") if v is None else float(v)

    return num(est["mean"]), num(est["stderr"]), num(est["rhat"]), num(est["ess"])


def theory_value(point: dict[str, Any], branch: str, name: str) -> float | None:
    row = (point["theory"]["comparison"].get(branch) or {}).get(name)
    return None if row is None or row["theory"] is None else float(row["theory"])


def fmt(mean: float, stderr: float, digits: int = 4) -> str:
    if math.isnan(mean):
        return "—"
    return f"{mean:.{digits}f} ± {stderr:.{digits}f}"
