"""The instance secret and keyed hashes: API keys and client addresses are never written in plain text.

Everything SaddleLab stores about a key or an address (rate-limit counters, job owners) is named
by an HMAC-SHA256 tag under the instance secret, so a reader of Redis learns neither the keys nor
who used the instance. The secret is ``SADDLELAB_SECRET`` when set; otherwise one is created in
Redis on first use (``SET NX``, so every API process and worker on that Redis shares it), or, without
Redis, drawn at random for the process.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets as _random
import threading

from service.redis_link import RedisLink

log = logging.getLogger("saddlelab.secrets")

SECRET_KEY = "saddlelab:secret"


class InstanceSecret:
    def __init__(self, configured: str | None, link: RedisLink | None):
        self._configured = configured
        self._link = link
        self._value: bytes | None = configured.encode() if configured else None
        self._lock = threading.Lock()

    def value(self) -> bytes:
        if self._value is not None:
            return self._value
        with self._lock:
            if self._value is not None:
                return self._value
            fresh = _random.token_hex(32)
            shared = None
            if self._link is not None:

                def get_or_create(r):  # type: ignore[no-untyped-def]
                    r.set(SECRET_KEY, fresh, nx=True)
                    return r.get(SECRET_KEY)

                shared = self._link.call(get_or_create, None)
            if shared is None:
                if self._link is not None:
                    # Redis is down: a process-local secret now, the shared one once Redis is back.
                    log.warning("instance secret: Redis unreachable, using a process-local secret for now")
                    return fresh.encode()
                shared = fresh
            self._value = shared if isinstance(shared, bytes) else str(shared).encode()
            return self._value

    def tag(self, text: str, length: int = 32) -> str:
        """HMAC-SHA256 of ``text`` under the secret, hex, ``length`` characters."""
        return hmac.new(self.value(), text.encode("utf-8", "backslashreplace"), hashlib.sha256).hexdigest()[:length]
