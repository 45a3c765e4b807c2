"""The embedded Valkey (config/valkey.py) that `make run` starts without
REDIS_URL: queued messages and the cache survive a restart of it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import redis
from kombu import Connection

from config import valkey
from tests.valkey import embedded_valkey

ROOT = Path(__file__).resolve().parents[1]


def test_queued_messages_and_the_cache_survive_a_restart(tmp_path):
    with embedded_valkey(tmp_path) as url:
        with Connection(valkey.broker_url(url)) as connection:
            connection.SimpleQueue("checks").put({"check": "abc"})
        redis.Redis.from_url(url).set("pagewatch:1:throttle", b"7")

    with embedded_valkey(tmp_path) as url:
        with Connection(valkey.broker_url(url)) as connection:
            queue = connection.SimpleQueue("checks")
            message = queue.get(timeout=5)
            message.ack()
            queue.close()
        assert redis.Redis.from_url(url).get("pagewatch:1:throttle") == b"7"

    assert message.payload == {"check": "abc"}
    assert (tmp_path / "valkey" / "appendonlydir").is_dir()


def test_the_server_listens_on_no_tcp_port_and_only_its_user_may_connect(tmp_path):
    with embedded_valkey(tmp_path) as url:
        config = redis.Redis.from_url(url).config_get("*")

    assert config["port"] == "0"
    assert config["unixsocketperm"] == "700"
    assert config["appendonly"] == "yes"


def test_a_var_dir_too_deep_for_a_unix_socket_is_refused_with_what_to_do(tmp_path):
    deep = tmp_path / ("d" * 100)
    done = subprocess.run(
        [sys.executable, "-m", "config.valkey"],
        cwd=ROOT,
        env=os.environ | {"PAGEWATCH_VAR_DIR": str(deep)},
        capture_output=True,
        text=True,
        timeout=30,
    )

    assert done.returncode == 1
    assert "too long for a unix socket" in done.stderr
    assert "PAGEWATCH_VAR_DIR" in done.stderr
