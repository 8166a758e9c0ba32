"""``python -m tests.integration.slow_unsubscribe_worker``: ``python -m service.worker`` with the bad moment of a
stop injected.

A worker's stop unsubscribes from its command channel, then stops redis-py's pubsub thread. That thread loops on
``get_message(timeout=60)``: when it reads the unsubscribe reply before the stop reaches it, it goes back to wait
up to 60 s for a subscription, and a stop that joins it waits as long. Here ``PubSub.unsubscribe`` pauses after
sending the command, so the thread always reads the reply first.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from redis.client import PubSub

#: Long enough for the pubsub thread to read the reply and wait again, on a loaded machine.
PAUSE_SECONDS = 1.0

_unsubscribe = PubSub.unsubscribe


def _slow_unsubscribe(self: PubSub, *args: Any) -> Any:
    out = _unsubscribe(self, *args)
    time.sleep(PAUSE_SECONDS)
    return out


PubSub.unsubscribe = _slow_unsubscribe  # type: ignore[method-assign]

if __name__ == "__main__":
    from service.worker import main

    sys.exit(main())
