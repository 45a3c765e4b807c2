"""The embedded Valkey for tests: started as `make run` starts it
(config/valkey.py), in a var/ a test chooses."""

from __future__ import annotations

import contextlib
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from config import valkey


@contextlib.contextmanager
def embedded_valkey(var: Path) -> Iterator[str]:
    """A Valkey on var/valkey.sock, the processes' default address when
    PAGEWATCH_VAR_DIR is `var` and REDIS_URL unset; yields its URL."""
    server = valkey.find_server()
    if server is None:
        pytest.fail(valkey.NOT_FOUND)
    process = subprocess.Popen(  # noqa: S603 - the embedded server
        valkey.command(server, var), stdout=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 10
        while not valkey.answers(var):
            assert process.poll() is None, "the embedded Valkey exited"
            assert time.monotonic() < deadline, "the embedded Valkey never answered"
            time.sleep(0.02)
        yield valkey.url(var)
    finally:
        process.terminate()
        process.wait(timeout=10)
