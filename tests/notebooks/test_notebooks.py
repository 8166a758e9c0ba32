"""The notebooks of notebooks/ (one per seed paper) run from top to bottom, as a user would open them: each starts
its own server and reproduces its paper's headline figure at small sizes. They are stored without outputs."""

from __future__ import annotations

import time
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))
#: Seconds one cell may take (the slowest samples a network: well under a minute on two idle cores).
CELL_TIMEOUT = 600


def test_there_is_one_notebook_per_seed_paper() -> None:
    assert {p.stem for p in NOTEBOOKS} == {"rubin_grokking_transition", "corti_kernel_renormalization",
                                          "barbier_specialisation", "goring_mean_field_ard"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_stored_without_outputs(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, f"{path.name}: outputs not stripped"
    assert set(nb.metadata) <= {"kernelspec", "language_info"}, f"{path.name}: stray metadata {set(nb.metadata)}"


@pytest.mark.slow  # 40–70 s each on the shared 2-core machine with a cold JAX cache (3 min 46 s for the four)
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_top_to_bottom(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    start = time.monotonic()
    NotebookClient(nb, timeout=CELL_TIMEOUT, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()  # raises on a failing cell
    figures = sum("image/png" in out.get("data", {}) for cell in nb.cells for out in cell.get("outputs", []))
    assert figures >= 3, f"{path.name} drew {figures} figures"
    print(f"{path.name}: {time.monotonic() - start:.0f} s")
