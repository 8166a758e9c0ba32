"""What produced a result: SaddleLab's version, a fingerprint of the source that computes, library versions, seeds.

The fingerprint is the sha256 of the relative path and bytes of every file under ``solvers/`` (everything
that computes a number) and of the service modules that decide what is computed and shape the stored JSON
(:data:`RESULT_MODULES`), in sorted order. The rest of ``service/`` moves and keeps that JSON unchanged
(routing, authentication, limits, cache and job stores, the queue): changing it cannot change an answer, so
it is left out and does not throw away a lab's cache. The fingerprint is computed once, at import (a few
milliseconds), so that processes forked later (solve and line processes, RQ work horses) inherit it, and
it enters every cache and job key (:mod:`service.keys`).

Every file under ``solvers/`` is read at that moment, including the modules a solve imports only when it needs
them (experiments, rectangular matrix denoising, annealing, ...): the fingerprint names the code a later import
will load only while the files stay as they were. So the size and modification time of every covered file are
noted with the fingerprint, and :func:`ensure_source_unchanged` (a ``stat`` per file, about a millisecond)
refuses to go on once any of them differs: an API answers 503 (restart it), a worker's line fails with that
reason before it computes, so that no number computed by other code is served or stored under this fingerprint.
"""

from __future__ import annotations

import hashlib
import platform
import sys
from collections.abc import Iterable, Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

import solvers
from solvers import SOLVER_VERSION

#: Service modules through which a computed number or its JSON passes before it is cached or stored.
RESULT_MODULES = (
    "service/describe.py",
    "service/experiments/plan.py",
    "service/experiments/runner.py",
    "service/jobs/boundary.py",
    "service/jobs/boundary_regions.py",
    "service/jobs/lines.py",
    "service/jsonsafe.py",
    "service/keys.py",
    "service/provenance.py",
    "service/result_schemas.py",
    "service/serialize.py",
    "service/solving.py",
    "service/sweep_plan.py",
)
#: Libraries whose installed versions a result reports (null when absent).
LIBRARIES = ("numpy", "scipy", "jax", "jaxlib", "blackjax", "arviz-base", "arviz-stats", "scikit-learn")


def covered_files(solvers_dir: Path, service_dir: Path) -> list[tuple[str, Path]]:
    """(name in the fingerprint, path) of every covered file, sorted by name; compiled files left out."""
    out = [
        ("solvers/" + p.relative_to(solvers_dir).as_posix(), p)
        for p in solvers_dir.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".pyc", ".pyo")
    ]
    out.extend((name, service_dir / name.removeprefix("service/")) for name in RESULT_MODULES)
    return sorted(out)


#: (name, path, st_mtime_ns, st_size) of a covered file as it was when the fingerprint read it.
FileState = tuple[str, Path, int, int]


def file_states(files: Iterable[tuple[str, Path]]) -> list[FileState]:
    out = []
    for name, path in files:
        st = path.stat()
        out.append((name, path, st.st_mtime_ns, st.st_size))
    return out


def changed_files(states: Iterable[FileState]) -> list[str]:
    """Names of the covered files whose size or modification time differs from ``states`` (or that are gone)."""
    changed = []
    for name, path, mtime, size in states:
        try:
            st = path.stat()
        except OSError:
            changed.append(name)
            continue
        if (st.st_mtime_ns, st.st_size) != (mtime, size):
            changed.append(name)
    return changed


def fingerprint(files: Iterable[tuple[str, Path]]) -> str:
    """sha256 over each file's name and bytes (lengths included, so no two layouts hash alike)."""
    h = hashlib.sha256()
    for name, path in files:
        data = path.read_bytes()
        encoded = name.encode()
        h.update(len(encoded).to_bytes(8, "big") + encoded + len(data).to_bytes(8, "big"))
        h.update(data)
    return h.hexdigest()


_COVERED = covered_files(Path(solvers.__file__).resolve().parent, Path(__file__).resolve().parent)
#: Noted before the bytes are read: a file changed while they are read then counts as changed.
SOURCE_STATES = file_states(_COVERED)
SOURCE_FINGERPRINT = fingerprint(_COVERED)


class SourceChanged(RuntimeError):
    """Files of the fingerprinted source changed on disk since this process started: it must be restarted."""

    def __init__(self, names: list[str]):
        self.names = names
        shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
        super().__init__(
            f"the SaddleLab source changed on disk since this process started ({shown}): it no longer computes "
            f"what its fingerprint {SOURCE_FINGERPRINT[:16]}… names; restart it"
        )


def ensure_source_unchanged(states: Iterable[FileState] = SOURCE_STATES) -> None:
    """Raise :class:`SourceChanged` when a covered file differs from the one the fingerprint read."""
    names = changed_files(states)
    if names:
        raise SourceChanged(names)


class SourceWatch:
    """:func:`ensure_source_unchanged` within a long computation, at a cost of O(1) per call while nothing new is
    imported: the code in memory is what the fingerprint read, except a module imported since start, so the files
    are looked at again only when ``sys.modules`` has grown since the last look (a solve imported a module lazily).
    A line or a chain calls it before storing each point or block: what a module edited after the line started
    computed is never stored under the old fingerprint."""

    def __init__(self) -> None:
        self._seen = -1

    def __call__(self) -> None:
        modules = len(sys.modules)
        if modules != self._seen:
            ensure_source_unchanged(SOURCE_STATES)
            self._seen = modules


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


LIBRARY_VERSIONS: dict[str, str | None] = {"python": platform.python_version(), **{n: _version(n) for n in LIBRARIES}}


def seeds_in(obj: Any, prefix: str) -> dict[str, Any]:
    """Every field named ``seed`` or ``*_seed`` in a JSON-like spec, by dotted name (``model.data.seed``)."""
    out: dict[str, Any] = {}
    if isinstance(obj, Mapping):
        for k, v in obj.items():
            name = f"{prefix}.{k}" if prefix else str(k)
            if (k == "seed" or str(k).endswith("_seed")) and (v is None or isinstance(v, int)):
                out[name] = v
            else:
                out.update(seeds_in(v, name))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out.update(seeds_in(v, f"{prefix}.{i}"))
    return out


def provenance(spec_hash: str, seeds: Mapping[str, Any]) -> dict[str, Any]:
    """The ``provenance`` block of a result computed by this process."""
    return {
        "saddlelab": SOLVER_VERSION,
        "source": SOURCE_FINGERPRINT,
        "libraries": dict(LIBRARY_VERSIONS),
        "spec_hash": spec_hash,
        "seeds": dict(seeds),
    }


class SourceMismatch(RuntimeError):
    """A job submitted under other source than this process runs (an API and workers of different code)."""

    def __init__(self, wanted: str | None):
        self.wanted = wanted
        super().__init__(
            f"this worker runs SaddleLab source {SOURCE_FINGERPRINT[:16]}…, but the job was submitted by an API "
            f"running {str(wanted)[:16]}…; run the API and the workers from the same code"
        )


def check_source(payload: Mapping[str, Any]) -> None:
    """Refuse to compute a job whose payload names other source than this process's (its key would then hold
    another code's numbers)."""
    wanted = payload.get("source")
    if wanted != SOURCE_FINGERPRINT:
        raise SourceMismatch(wanted)
    ensure_source_unchanged()
