"""Every library that could open a connection of its own, handed a URL by a
user, goes through checks.fetch's door and address policy or gets no network.

Each test points a library at an address the policy always blocks (0.0.0.0,
"this network", which Linux answers on the local host) where a listener
records every connection, and asserts that none arrived. Private targets stay
off, as in a default install."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from checks.ai.client import schema_error
from monitors import rules


@dataclass
class Listener:
    """A TCP server on 0.0.0.0 that only counts who connected."""

    port: int
    connections: list[tuple[str, int]] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://0.0.0.0:{self.port}/"


@pytest.fixture
def forbidden() -> Iterator[Listener]:
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("0.0.0.0", 0))
    server.listen(16)
    server.settimeout(0.1)
    listener = Listener(port=server.getsockname()[1])
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, peer = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            listener.connections.append(peer)
            conn.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield listener
    stop.set()
    thread.join(timeout=2)
    server.close()


@pytest.fixture(autouse=True)
def private_targets_off(settings) -> None:
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = False


def test_the_listener_would_see_a_connection(forbidden):
    """The listener is reachable, so an empty record below means no try."""
    with socket.create_connection(("0.0.0.0", forbidden.port), timeout=2):
        pass
    for _ in range(50):
        if forbidden.connections:
            break
        threading.Event().wait(0.02)
    assert forbidden.connections


# --- jsonschema ----------------------------------------------------------------


def _scrape(schema: dict) -> dict:
    return {
        "name": "Plans",
        "schedule": {"text": "every 30 minutes"},
        "targets": [
            {
                "type": "scrape",
                "urls": ["https://example.com/"],
                "scrapeOptions": {"formats": [{"type": "json", "schema": schema}]},
            }
        ],
    }


@pytest.mark.parametrize(
    ("schema", "field"),
    [
        ({"$ref": "URL"}, "schema.$ref"),
        ({"$schema": "URL"}, "schema.$schema"),
        (
            {"type": "object", "properties": {"price": {"$ref": "URL#/x"}}},
            "schema.properties.price.$ref",
        ),
        ({"allOf": [{"$dynamicRef": "URL"}]}, "schema.allOf[0].$dynamicRef"),
    ],
)
def test_a_schema_pointing_at_another_document_is_refused_when_saved(
    api, forbidden, schema, field
):
    schema = _replace(schema, "URL", forbidden.url)
    response = api.post("/v2/monitor", _scrape(schema), format="json")

    assert response.status_code == 400
    assert field in response.json()["error"]
    assert forbidden.connections == []


def test_a_schema_with_local_definitions_is_accepted(api):
    schema = {
        "type": "object",
        "$defs": {"price": {"type": "number"}},
        "properties": {"price": {"$ref": "#/$defs/price"}},
        "$schema": "https://json-schema.org/draft/2020-12/schema",
    }
    response = api.post("/v2/monitor", _scrape(schema), format="json")

    assert response.status_code == 200, response.json()


def test_validating_an_answer_never_fetches_a_remote_reference(forbidden):
    """A schema saved before the rule above still cannot make the validator
    fetch: it has an empty registry, so the reference is an error."""
    schema = {"type": "object", "properties": {"a": {"$ref": forbidden.url}}}

    error = schema_error({"a": 1}, schema)

    assert error is not None and "not inside it" in error
    assert forbidden.connections == []


def test_validating_an_answer_follows_local_references():
    schema = {
        "type": "object",
        "$defs": {"price": {"type": "number"}},
        "properties": {"price": {"$ref": "#/$defs/price"}},
    }

    assert schema_error({"price": 3}, schema) is None
    assert "price" in (schema_error({"price": "three"}, schema) or "")


def test_the_rule_names_the_first_remote_reference():
    assert rules.schema_reference_error({"$ref": "#/$defs/a"}) is None
    assert "schema.$ref" in (rules.schema_reference_error({"$ref": "x.json"}) or "")


def _replace(value, old: str, new: str):
    if isinstance(value, dict):
        return {k: _replace(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace(v, old, new) for v in value]
    return value.replace(old, new) if isinstance(value, str) else value
