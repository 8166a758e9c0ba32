"""Imported once by the fork server of :mod:`service.isolation`: every child then starts with the engine,
every theory and the modules whose functions it runs already loaded (an import costs a second; a fork 10 ms).

The objects of these imports are then frozen out of the garbage collector (``gc.freeze``): they live as long
as the fork server, and a child that allocates enough containers (a sweep line serialising its points) would
otherwise run full collections over all of them — about 0.1 s of CPU per 200-point kernel sweep, a tenth of
it, spent mostly copying the pages that the collection writes to.
"""

from __future__ import annotations

import gc
import importlib

from solvers.theories import registry

#: Where the children's entry points live (a solve's answer, a job line of the embedded backend).
for module in ("service.solving", "service.jobs.local_kind"):
    importlib.import_module(module)
registry()
gc.freeze()
