"""The install commands SaddleLab prints when an optional package is missing.

Each names an extra that both installs define (the server's ``pyproject.toml`` and the client's
``clients/pyproject.toml``), in a form that works from a clone of the repository: ``pip install -e ".[arrays]"``
for the server's install, ``pip install "./clients[arrays]"`` for the client alone. (The client is not on a package
index: ``pip install "saddlelab-client[arrays]"`` finds nothing.)
"""

from __future__ import annotations

import importlib
from typing import Any

#: What each extra adds, as a hint says it.
EXTRAS = {"arrays": "xarray, h5netcdf and h5py", "plot": "matplotlib"}


def install_commands(extra: str) -> tuple[str, str]:
    """(the server's install, the client alone), both run in the root of the clone."""
    if extra not in EXTRAS:
        raise KeyError(f"no install hint for the extra {extra!r}")
    return f'pip install -e ".[{extra}]"', f'pip install "./clients[{extra}]"'


def imported(module: str, what: str, extra: str) -> Any:
    """``module``, imported; where it is missing, an ImportError that says how to install the ``extra`` that
    ``what`` needs."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(install_hint(what, extra)) from exc


def install_hint(what: str, extra: str) -> str:
    server, client = install_commands(extra)
    return (f"{what} needs {EXTRAS[extra]}: in the SaddleLab clone, {server} (with the server) or {client} (the "
            f"client alone)")
