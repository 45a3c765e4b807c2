"""The tests' cache: production's Redis cache under a key prefix of this
pytest-xdist worker's own, whose clear() deletes only that prefix's keys.

Django's RedisCache.clear() is FLUSHDB: with REDIS_URL set, every xdist
worker shares one Redis database, so one test's cache.clear() (run around
every test) emptied the other worker's rate-limit counters and locks in the
middle of its test, and the broker queues its real Celery workers read."""

from __future__ import annotations

from typing import Any

import redis
from django.core.cache.backends.redis import RedisCache


class WorkerCache(RedisCache):
    def __init__(self, server: str, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self.location = server

    def clear(self) -> bool:
        client = redis.Redis.from_url(self.location)
        try:
            keys = list(client.scan_iter(match=f"{self.key_prefix}:*", count=1000))
            if keys:
                client.delete(*keys)
        finally:
            client.close()
        return True
