"""``python -m tests.integration.idle_racing_worker``: the racing worker of :mod:`.slow_unsubscribe_worker` (the
unsubscribe always read by the pubsub thread first) without its preload of every theory. A worker that is only
started and stopped needs none; the preload is most of a worker's start (about ten seconds of a loaded machine's
time each), so a test can start and stop many of these at once.
"""

from __future__ import annotations

import sys

import service.worker
import tests.integration.slow_unsubscribe_worker  # noqa: F401 -- installs the racing unsubscribe


def _no_preload() -> None:
    return None


service.worker.preload = _no_preload

if __name__ == "__main__":
    sys.exit(service.worker.main())
