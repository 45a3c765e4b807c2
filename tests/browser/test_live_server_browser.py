"""The browser tests' database connection on in-memory SQLite (`make test`)."""

from __future__ import annotations

import pytest
from django.db import connection, connections

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_test_thread_keeps_the_live_servers_connection_once_the_browser_runs(
    chromium, live_server
):
    # A second connection to the shared in-memory database fails at once with
    # "database table is locked" whenever it touches a table a request uses.
    if connection.vendor != "sqlite" or not connection.is_in_memory_db():
        pytest.skip("only in-memory SQLite shares one connection")
    assert connections["default"] is live_server.thread.connections_override["default"]
