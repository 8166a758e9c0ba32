"""Imported once by the fork server of :mod:`service.isolation`: every child then starts with the engine,
every theory and the modules whose functions it runs already loaded (an import costs a second; a fork 10 ms)."""

from __future__ import annotations

import importlib

from solvers.theories import registry

#: Where the children's entry points live (a solve's answer, a job line of the embedded backend).
for module in ("service.solving", "service.jobs.local"):
    importlib.import_module(module)
registry()
