"""The fork server freezes its preloaded objects out of the garbage collector, so that a child's collections do
not walk (and copy the pages of) the engine's and every theory's imported objects."""

from __future__ import annotations

import subprocess
import sys


def test_the_preloaded_objects_are_frozen() -> None:
    code = "import gc, service.warm; print(gc.get_freeze_count(), len(gc.get_objects()))"
    frozen, tracked = map(int, subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                              check=True, timeout=120).stdout.split())
    assert frozen > 10_000 and tracked < frozen // 10
