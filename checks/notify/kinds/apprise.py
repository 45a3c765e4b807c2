"""Any Apprise URL (Microsoft Teams, Discord, Mattermost, Telegram, ntfy, …).

Apprise opens its own connections (with `requests`), so they are made to go
through the address policy: each send starts the browser's filtering proxy
(checks.browser.proxy.GuardProxy) on 127.0.0.1 and points `requests` at it for
the length of the send. The proxy resolves and judges every host itself, so a
URL aimed at a private or metadata address is refused like any other fetch.
Plugins that do not speak HTTP (mail, XMPP, MQTT, desktop and syslog ones)
would go around the proxy and are refused when the channel is saved.

Proxies are set in the process environment, so sends are serialised within a
process (a Celery prefork child runs one task at a time anyway)."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import apprise as apprise_lib

from checks.browser.proxy import GuardProxy
from checks.fetch import system_resolver
from checks.notify import messages
from checks.notify.kinds.base import ChannelKind, DeliveryError, Sent, SettingsError

if TYPE_CHECKING:
    from checks.notify.models import Delivery

# Plugins that reach their service without HTTP, or act on this machine.
NOT_OVER_HTTP = frozenset(
    {
        "mailto", "mailtos", "xmpp", "xmpps", "mqtt", "mqtts", "syslog",
        "rsyslog", "growl", "dbus", "kde", "qt", "glib", "gnome", "windows",
        "macosx", "sns", "ses", "smtp", "smtps", "rocket+ws", "matrix+ws",
    }
)  # fmt: skip
SEND_TIMEOUT_SECONDS = 30.0
MAX_BYTES = 1024 * 1024
_PROXY_VARIABLES = ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY")
_NO_PROXY_VARIABLES = ("no_proxy", "NO_PROXY", "all_proxy", "ALL_PROXY")
_environment_lock = threading.Lock()


def scheme_of(url: str) -> str:
    return url.split("://", 1)[0].lower() if "://" in url else url[:20]


def url_problem(url: str) -> str | None:
    scheme = scheme_of(url)
    if "://" not in url:
        return "Not an Apprise URL: it should look like service://…"
    if scheme in NOT_OVER_HTTP:
        return (
            f"Apprise's {scheme}:// does not work here: it does not send over "
            "HTTP, so it cannot pass Pagewatch's address policy."
        )
    if apprise_lib.Apprise.instantiate(url, suppress_exceptions=True) is None:
        return (
            f"Apprise does not know the URL scheme {scheme}:// "
            "(or the URL is incomplete)."
        )
    return None


@contextmanager
def _through(proxy_url: str) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in _PROXY_VARIABLES + _NO_PROXY_VARIABLES}
    try:
        for key in _PROXY_VARIABLES:
            os.environ[key] = proxy_url
        for key in _NO_PROXY_VARIABLES:
            os.environ.pop(key, None)
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _notify(url: str, title: str, body: str) -> tuple[bool, str]:
    notifier = apprise_lib.Apprise()
    notifier.add(url)
    with apprise_lib.LogCapture(level=apprise_lib.logging.WARNING) as log:
        ok = notifier.notify(title=title, body=body)
        said = log.getvalue().strip()
    return bool(ok), said


async def _send(url: str, title: str, body: str) -> tuple[bool, str, list[str]]:
    proxy = GuardProxy(system_resolver, max_bytes=MAX_BYTES)
    proxy_url = await proxy.start()
    try:
        with _through(proxy_url):
            ok, said = await asyncio.wait_for(
                asyncio.to_thread(_notify, url, title, body), SEND_TIMEOUT_SECONDS
            )
    finally:
        await proxy.close()
    return ok, said, proxy.refused


def send_url(url: str, title: str, body: str) -> Sent:
    problem = url_problem(url)
    if problem:
        raise DeliveryError(problem, permanent=True)
    with _environment_lock:
        try:
            ok, said, refused = asyncio.run(_send(url, title, body))
        except TimeoutError as exc:
            raise DeliveryError(
                f"The service did not answer within {SEND_TIMEOUT_SECONDS:.0f} seconds."
            ) from exc
    if refused:
        raise DeliveryError("Refused: " + "; ".join(refused), permanent=True)
    if not ok:
        last = said.splitlines()[-1] if said else "no reason given"
        raise DeliveryError(f"Apprise could not send: {last}"[:500])
    return Sent(None, "")


class AppriseKind(ChannelKind):
    name = "apprise"
    label = "Chat and push (Apprise)"
    help = (
        "Microsoft Teams, Discord, Mattermost, Rocket.Chat, Google Chat, "
        "Telegram, Matrix, ntfy, Gotify, Pushover and more: paste the service's "
        "Apprise URL (see the Apprise wiki for each service's form)."
    )
    fields = {"url": ("Apprise URL", "e.g. discord://webhook_id/webhook_token")}
    secrets = ("url",)

    def clean(self, settings: dict[str, Any]) -> dict[str, Any]:
        cleaned = super().clean(settings)
        problem = url_problem(cleaned["url"])
        if problem:
            raise SettingsError({"url": problem})
        return cleaned

    def send(self, delivery: Delivery) -> Sent:
        channel = delivery.channel
        assert channel is not None
        message = self.message(delivery)
        return send_url(
            channel.settings["url"], messages.title(message), messages.text(message)
        )
