"""The tests' own cache (tests.caching.WorkerCache): with REDIS_URL, every
pytest-xdist worker shares one Redis database, so clearing the cache around a
test must leave the other worker's keys alone."""

from __future__ import annotations

import redis
from django.conf import settings
from django.core.cache import cache


def test_clearing_the_cache_leaves_another_workers_keys(redis_server):
    elsewhere = redis.Redis.from_url(redis_server)
    theirs = "pagewatch-test-elsewhere:1:throttle_api_key_abc"
    elsewhere.set(theirs, "3")
    cache.set("mine", 1)
    try:
        cache.clear()
        assert cache.get("mine") is None
        assert elsewhere.get(theirs) == b"3"
    finally:
        elsewhere.delete(theirs)
        elsewhere.close()


def test_each_worker_keeps_its_keys_under_a_prefix_of_its_own(worker_id):
    assert settings.CACHES["default"]["KEY_PREFIX"].endswith(f"-test-{worker_id}")
    cache.set("mine", 1)
    assert cache.make_key("mine").startswith(f"pagewatch-test-{worker_id}:")
