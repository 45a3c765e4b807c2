"""Apprise plugins that open connections of their own (IRC, APRS, SMPP...)
would go around the filtering proxy every Apprise send is made through, so
they are refused by scheme when a channel is saved and again at every send."""

from __future__ import annotations

import inspect
import re
import socket
from pathlib import Path

import pytest

from checks.notify import kinds
from checks.notify.kinds import DeliveryError, apprise

# What a plugin that does not send through `requests` imports to reach its
# service (or this machine) another way.
RAW_TRANSPORT = re.compile(
    r"^\s*(import (socket|smtplib|paho|subprocess|slixmpp|gntp|smpplib|ssl)\b"
    r"|from \.+utils(\.socket)? import (socket\b|AppriseSocket)"
    r"|from (socket|smtplib|paho|slixmpp|gntp|smpplib)\b)",
    re.MULTILINE,
)


def _sources_of(plugin: type) -> str:
    """The plugin's module, or every module of its package (irc/, email/...)."""
    path = Path(inspect.getfile(plugin))
    files = path.parent.glob("*.py") if path.parent.name != "plugins" else [path]
    return "\n".join(f.read_text() for f in files)


def _raw_transport_schemes() -> set[str]:
    from apprise.manager_plugins import NotificationManager

    manager = NotificationManager()
    manager.load_modules()
    return {
        scheme
        for scheme, plugin in manager._schema_map.items()
        if RAW_TRANSPORT.search(_sources_of(plugin))
    }


def test_every_installed_apprise_plugin_with_a_transport_of_its_own_is_refused():
    found = _raw_transport_schemes()

    assert {"irc", "mailto", "mqtt"} <= found  # the scan sees what it looks for
    assert sorted(found - apprise.NOT_OVER_HTTP) == []


@pytest.mark.parametrize(
    "url",
    [
        "irc://pagewatch@irc.example.net/#alerts",
        "ircs://pagewatch:secret@irc.example.net:6697/#alerts",
        "aprs://N0CALL:12345@N0CALL-1",
        "gio://",
        "smpp://user:secret@sms.example.net:2775/15551234567/15557654321",
    ],
)
def test_an_apprise_url_that_would_not_go_through_the_proxy_is_not_saved(url):
    with pytest.raises(kinds.SettingsError) as raised:
        kinds.kind_for("apprise").clean({"url": url})

    assert "does not send over HTTP" in raised.value.errors["url"]


def test_an_irc_channel_saved_before_is_refused_at_send_and_connects_nowhere(settings):
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = False
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(1)
    port = listener.getsockname()[1]
    try:
        with pytest.raises(DeliveryError) as raised:
            apprise.send_url(f"irc://pagewatch@127.0.0.1:{port}/#alerts", "T", "B")
        with pytest.raises(TimeoutError):
            listener.accept()[0].close()
    finally:
        listener.close()

    assert raised.value.permanent
    assert "does not send over HTTP" in raised.value.message


def test_every_plugin_that_reads_a_pasted_web_address_sends_over_http():
    # A webhook address pasted as the service shows it (https://…) is read by
    # the plugin that parses such addresses: none may be one that goes around
    # the proxy, whatever the address's own scheme says.
    from apprise.manager_plugins import NotificationManager
    from apprise.plugins.base import NotifyBase

    manager = NotificationManager()
    manager.load_modules()
    readers = {
        plugin
        for plugin in manager._schema_map.values()
        if plugin.parse_native_url is not NotifyBase.parse_native_url
    }

    assert len(readers) > 10  # Discord, Slack, Workflows, Google Chat, ntfy...
    assert (
        sorted(
            scheme
            for plugin in readers
            for scheme in apprise.schemes_of(plugin) & apprise.NOT_OVER_HTTP
        )
        == []
    )
