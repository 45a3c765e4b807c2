"""Any Apprise URL (Microsoft Teams, Discord, Mattermost, Telegram, ntfy, …).

Apprise opens its own connections (with `requests`), so they are made to go
through the address policy: every Apprise send of a process goes through one
filtering proxy on 127.0.0.1 (checks.notify.kinds.outbound.send_proxy, the
browser's GuardProxy shared), which resolves and judges every host itself, so
a URL aimed at a private or metadata address is refused like any other fetch.
Plugins that do not speak HTTP (mail, XMPP, MQTT, desktop and syslog ones)
would go around the proxy and are refused when the channel is saved.

Each send opens a ledger on the proxy under a token of its own, and its
`requests` sessions are given `http://send:<token>@127.0.0.1:<port>` as their
proxy (`requests` sends it as Proxy-Authorization): the proxy files
that send's refusals and bytes under it, so a refusal is reported to the send
whose request was refused and to no other. The token rides in a context
variable of the send's thread, read by `requests.Session`'s environment
settings (`_install_proxy_choice`), since Apprise gives no way to pass proxies.
The process's proxy variables also point at the proxy, without a token, while
any send runs: a plugin that went around `requests.Session` would still reach
only the proxy, which answers a request without a known token with 407. They
are the same for every send, so sends of several drains run side by side.

Apprise itself is imported where a URL is checked or sent, not at the top:
the registry of kinds is loaded by every web and worker process, and most
of them never touch an Apprise channel, so they need not carry its modules."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from checks.notify import messages
from checks.notify.kinds.base import ChannelKind, DeliveryError, Sent, SettingsError
from checks.notify.kinds.outbound import Attempt, Outbound, run_one, send_proxy

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
    import apprise as apprise_lib  # here, not at the top: see the docstring

    if apprise_lib.Apprise.instantiate(url, suppress_exceptions=True) is None:
        return (
            f"Apprise does not know the URL scheme {scheme}:// "
            "(or the URL is incomplete)."
        )
    return None


class _ProxyEnvironment:
    """The process's proxy variables: set to the send proxy while any Apprise
    send runs, put back as they were when the last one ends."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._users = 0
        self._saved: dict[str, str | None] = {}

    @contextmanager
    def through(self, proxy_url: str) -> Iterator[None]:
        with self._lock:
            if self._users == 0:
                self._set(proxy_url)
            self._users += 1
        try:
            yield
        finally:
            with self._lock:
                self._users -= 1
                if self._users == 0:
                    self._restore()

    def _set(self, proxy_url: str) -> None:
        keys = _PROXY_VARIABLES + _NO_PROXY_VARIABLES
        self._saved = {k: os.environ.get(k) for k in keys}
        for key in _PROXY_VARIABLES:
            os.environ[key] = proxy_url
        for key in _NO_PROXY_VARIABLES:
            os.environ.pop(key, None)

    def _restore(self) -> None:
        for key, value in self._saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


_environment = _ProxyEnvironment()
# This send's proxy URL (with its token), in the thread that runs it.
_send_proxy_url: ContextVar[str | None] = ContextVar("send_proxy_url", default=None)
_proxy_choice_installed = threading.Lock()


def _install_proxy_choice() -> None:
    """Make `requests` sessions use the running send's own proxy URL, whatever
    the environment or the caller says (nothing changes outside a send)."""
    import requests

    with _proxy_choice_installed:
        if getattr(requests.Session.merge_environment_settings, "_send_proxy", False):
            return
        merge = requests.Session.merge_environment_settings

        def merge_environment_settings(
            self: requests.Session, url: Any, proxies: Any, *args: Any
        ) -> dict[str, Any]:
            settings = merge(self, url, proxies, *args)
            proxy_url = _send_proxy_url.get()
            if proxy_url is not None:
                settings["proxies"] = {"http": proxy_url, "https": proxy_url}
            return settings

        merge_environment_settings._send_proxy = True  # type: ignore[attr-defined]
        requests.Session.merge_environment_settings = merge_environment_settings  # type: ignore[method-assign]


@dataclass
class Outcome:
    ok: bool
    said: str
    refused: list[str]


def _notify(url: str, title: str, body: str) -> Outcome:
    import apprise as apprise_lib  # here, not at the top: see the docstring

    _install_proxy_choice()
    proxy = send_proxy()
    token, ledger = proxy.open_ledger(MAX_BYTES)
    chosen = _send_proxy_url.set(proxy.url_for(token))
    try:
        with _environment.through(proxy.url):
            notifier = apprise_lib.Apprise()
            notifier.add(url)
            with apprise_lib.LogCapture(level=apprise_lib.logging.WARNING) as log:
                ok = notifier.notify(title=title, body=body)
                said = log.getvalue().strip()
    finally:
        _send_proxy_url.reset(chosen)
        proxy.close_ledger(token)
    return Outcome(bool(ok), said, ledger.refused)


@dataclass
class AppriseSend(Attempt):
    url: str
    title: str
    body: str

    async def run(self, outbound: Outbound) -> Sent:
        try:
            outcome = await outbound.blocking(
                lambda: _notify(self.url, self.title, self.body),
                SEND_TIMEOUT_SECONDS,
            )
        except TimeoutError as exc:
            raise DeliveryError(
                f"The service did not answer within {SEND_TIMEOUT_SECONDS:.0f} seconds."
            ) from exc
        if not outcome.ok:
            if outcome.refused:  # this send's own refusals, no other's
                raise DeliveryError(
                    "Refused: " + "; ".join(outcome.refused), permanent=True
                )
            said = outcome.said
            last = said.splitlines()[-1] if said else "no reason given"
            raise DeliveryError(f"Apprise could not send: {last}"[:500])
        return Sent(None, "")


def send_url(url: str, title: str, body: str) -> Sent:
    """One Apprise send now (through the process's send proxy)."""
    return run_one(prepare_url(url, title, body))


def prepare_url(url: str, title: str, body: str) -> AppriseSend:
    problem = url_problem(url)
    if problem:
        raise DeliveryError(problem, permanent=True)
    return AppriseSend(url, title, body)


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

    def prepare(self, delivery: Delivery) -> Attempt:
        channel = delivery.channel
        assert channel is not None
        message = self.message(delivery)
        return prepare_url(
            channel.settings["url"], messages.title(message), messages.text(message)
        )
