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
        # While Redis cannot be read, one process-local secret (stable: the same key gets the same tag).
        self._local = _random.token_hex(32).encode()
        self._lock = threading.Lock()
        self._warned = False

    def value(self) -> bytes:
        if self._value is not None:
            return self._value
        with self._lock:
            if self._value is not None:
                return self._value
            if self._link is None:
                self._value = self._local
                return self._value

            def get_or_create(r):  # type: ignore[no-untyped-def]
                # Read first: an existing secret is found even when Redis is full and refuses the write.
                found = r.get(SECRET_KEY)
                if found is None:
                    r.set(SECRET_KEY, self._local, nx=True)
                    found = r.get(SECRET_KEY)
                return found

            shared = self._link.call(get_or_create, None)
            if shared is None:
                if not self._warned:
                    log.warning("instance secret: Redis unusable, using a process-local secret until it is back")
                    self._warned = True
                return self._local
            self._value = shared if isinstance(shared, bytes) else str(shared).encode()
            return self._value

    def tag(self, text: str, length: int = 32) -> str:
        """HMAC-SHA256 of ``text`` under the secret, hex, ``length`` characters."""
        return hmac.new(self.value(), text.encode("utf-8", "backslashreplace"), hashlib.sha256).hexdigest()[:length]
