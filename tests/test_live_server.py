"""The live server of tests/conftest.py, on in-memory SQLite (`make test`)."""

from __future__ import annotations

import pytest
from django.db import connection, connections


def test_the_live_server_shares_the_test_threads_in_memory_connection(live_server):
    # Its request threads must use this thread's connection (one at a time):
    # a second connection to the shared in-memory database fails at once with
    # "database table is locked" whenever the two touch one table together.
    if connection.vendor != "sqlite" or not connection.is_in_memory_db():
        pytest.skip("only in-memory SQLite shares one connection")
    shared = {"default": connections["default"]}
    assert live_server.thread.connections_override == shared
    assert live_server.thread.httpd.connections_override == shared
