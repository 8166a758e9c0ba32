"""Provenance: what the source fingerprint covers, the seeds found in a spec, a solve's provenance (cached too), and
a worker that refuses a job submitted under other source."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

import service.provenance as provenance
from service.jobs.lines import joined_provenance, run_line
from service.provenance import RESULT_MODULES, SourceMismatch, covered_files, fingerprint, seeds_in
from service.schemas import SweepRequest
from service.settings import Settings
from service.sweep_plan import plan
from tests.service.conftest import POTENTIAL

ROOT = Path(__file__).resolve().parents[2]


def _fingerprint(tree: Path) -> str:
    return fingerprint(covered_files(tree / "solvers", tree / "service"))


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    for package in ("solvers", "service"):
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def test_the_fingerprint_is_this_trees_and_covers_what_computes(tree: Path) -> None:
    assert _fingerprint(ROOT) == provenance.SOURCE_FINGERPRINT == _fingerprint(tree)
    assert all((ROOT / name).is_file() for name in RESULT_MODULES)
    names = [name for name, _ in covered_files(tree / "solvers", tree / "service")]
    assert "solvers/core/sweep.py" in names and "service/serialize.py" in names
    assert not any("__pycache__" in n for n in names) and names == sorted(names)
    before = _fingerprint(tree)
    # Routing, limits and storage move the JSON unchanged: not covered.
    with open(tree / "service/ratelimit.py", "a") as f:
        f.write("\n# a change that cannot change an answer\n")
    assert _fingerprint(tree) == before
    # A theory and the module that writes results are.
    for name in ("solvers/theories/hciz_mlp/theory.py", "service/serialize.py"):
        with open(tree / name, "a") as f:
            f.write("\n# another version\n")
        changed = _fingerprint(tree)
        assert changed != before
        before = changed
    # A file moved (same bytes, another name) is another tree.
    (tree / "solvers/core/extra.py").write_text("")
    assert _fingerprint(tree) != before


def test_seeds_are_found_by_dotted_name() -> None:
    spec = {"theory": "kernel_renormalization", "data": {"kind": "teacher", "seed": 7}, "seed_asymmetry": 0.5,
            "items": [{"network_seed": 3}]}
    assert seeds_in(spec, "model") == {"model.data.seed": 7, "model.items.0.network_seed": 3}


def test_a_solve_carries_its_provenance_cached_or_not(client: TestClient) -> None:
    first = client.post("/v1/solve", json={"model": POTENTIAL}).json()
    again = client.post("/v1/solve", json={"model": POTENTIAL}).json()
    assert (first["cached"], again["cached"]) == (False, True)
    prov = first["provenance"]
    assert prov == again["provenance"]
    assert prov["source"] == provenance.SOURCE_FINGERPRINT and prov["spec_hash"] == first["spec_hash"]
    health = client.get("/healthz").json()
    assert prov["seeds"] == {} and (prov["saddlelab"], prov["source"]) == (health["version"], health["source"])


def test_a_line_of_other_source_is_refused() -> None:
    req = SweepRequest.model_validate({"model": POTENTIAL, "parameter": "u", "values": [25.0, 30.0]})
    payload = plan(req, Settings(redis_url=None))
    assert payload["source"] == provenance.SOURCE_FINGERPRINT
    for other in ({**payload, "source": "0" * 64}, {k: v for k, v in payload.items() if k != "source"}):
        with pytest.raises(SourceMismatch, match="same code"):
            run_line(other)


def test_a_diagram_whose_rows_ran_on_other_libraries_says_so() -> None:
    one = {"provenance": {"source": "s", "libraries": {"numpy": "2.1"}}}
    other = {"provenance": {"source": "s", "libraries": {"numpy": "2.2"}}}
    assert joined_provenance([one, one]) == one["provenance"]
    assert joined_provenance([one, other])["varies"] == [one["provenance"], other["provenance"]]
    assert joined_provenance([{}, {}]) is None
