"""Any Apprise URL (Microsoft Teams, Discord, Mattermost, Telegram, ntfy, …).

Apprise opens its own connections (with `requests`), so they are made to go
through the address policy: a drain starts the browser's filtering proxy
(checks.browser.proxy.GuardProxy) on 127.0.0.1 for its Apprise sends and
points `requests` at it while they run (in the drain's thread pool). The proxy
resolves and judges every host itself, so a URL aimed at a private or metadata
address is refused like any other fetch.
Plugins that do not speak HTTP (mail, XMPP, MQTT, IRC, APRS, SMPP, desktop
and syslog ones) would go around the proxy and are refused when the channel is saved.
So is a URL whose host is written as a forbidden address (json://10.0.0.5/…),
in the words a monitor's URL is refused with; host names are not looked up
then, as many Apprise URLs hold an id where a host would be.

Proxies are set in the process environment, so within a process only the sends
of one drain run at a time (a Celery prefork child runs one task at a time
anyway).

Apprise itself is imported where a URL is checked or sent, not at the top:
the registry of kinds is loaded by every web and worker process, and most
of them never touch an Apprise channel, so they need not carry its modules."""

from __future__ import annotations

import ipaddress
import os
import re
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from django.utils.html import escape, format_html
from django.utils.safestring import SafeString

from checks.fetch.policy import ip_literal
from checks.notify import messages
from checks.notify.kinds.base import ChannelKind, DeliveryError, Sent, SettingsError
from checks.notify.kinds.outbound import Attempt, Outbound, run_one
from checks.notify.kinds.webhook import WebhookKind
from checks.notify.texts import linked
from checks.targets.options import address_refusal

if TYPE_CHECKING:
    from checks.browser.proxy import GuardProxy
    from checks.notify.models import Delivery

# Plugins that reach their service without HTTP, or act on this machine.
# IRC, APRS and SMPP open sockets of their own to a host the URL names:
# tests/test_apprise_doors.py scans the installed plugins for such transports,
# so a new one in an Apprise upgrade fails a test instead of opening a door.
NOT_OVER_HTTP = frozenset(
    {
        "mailto", "mailtos", "xmpp", "xmpps", "mqtt", "mqtts", "syslog",
        "rsyslog", "growl", "dbus", "kde", "qt", "glib", "gio", "gnome",
        "windows", "macosx", "blink1", "sns", "ses", "smtp", "smtps",
        "rocket+ws", "matrix+ws", "irc", "ircs", "aprs", "smpp", "smpps",
    }
)  # fmt: skip
SEND_TIMEOUT_SECONDS = 30.0
MAX_BYTES = 1024 * 1024
_PROXY_VARIABLES = ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY")
_NO_PROXY_VARIABLES = ("no_proxy", "NO_PROXY", "all_proxy", "ALL_PROXY")


def scheme_of(url: str) -> str:
    return url.split("://", 1)[0].lower() if "://" in url else url[:20]


def schemes_of(plugin: Any) -> frozenset[str]:
    """The schemes of the plugin Apprise picked: a webhook address pasted as
    the service shows it (https://discord.com/api/webhooks/…, a "native URL"
    in Apprise's words) is read as that service's own URL (discord://…), so
    its scheme says nothing of the service."""
    names: set[str] = set()
    for attribute in ("protocol", "secure_protocol"):
        value = getattr(plugin, attribute, None) or ()
        names.update([value] if isinstance(value, str) else value)
    return frozenset(name.lower() for name in names)


def url_problem(url: str) -> str | None:
    scheme = scheme_of(url)
    if "://" not in url:
        return "Not an Apprise URL: it should look like service://…"
    if scheme in NOT_OVER_HTTP:
        return _not_over_http(scheme)
    import apprise as apprise_lib  # here, not at the top: see the docstring

    plugin = apprise_lib.Apprise.instantiate(url, suppress_exceptions=True)
    if plugin is None:
        if scheme in ("http", "https"):
            return unrecognised_address(url)
        return (
            f"Apprise does not know the URL scheme {scheme}:// "
            "(or the URL is incomplete)."
        )
    if over_other := sorted(schemes_of(plugin) & NOT_OVER_HTTP):
        return _not_over_http(over_other[0])
    return None


def _not_over_http(scheme: str) -> str:
    return (
        f"Apprise's {scheme}:// does not work here: it does not send over "
        "HTTP, so it cannot pass Pagewatch's address policy."
    )


def unrecognised_address(url: str) -> str:
    """What to do with a web address Apprise cannot read as any service's,
    for staff who pasted what their chat tool showed them. Never repeats the
    address's path or query: they may hold its token."""
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
    except ValueError:
        parts, host = None, ""
    said = "This address isn't one Apprise recognises."
    if host.endswith(("webhook.office.com", "outlook.office.com")):
        said += (
            " For Microsoft Teams, make a Workflows webhook instead: Microsoft "
            "retired these older Teams webhooks. In the Teams channel, open "
            "Workflows, pick the one that posts to a channel when a webhook "
            "request is received, and paste the address it gives (it has "
            "/workflows/ in it)."
        )
    elif parts is not None and host and _HOOK_PATH.fullmatch(parts.path):
        # Mattermost's own address; Apprise reads it as one only on a host
        # named mattermost.…
        said += (
            " For a Mattermost server, write it as "
            f"mmosts://{host}/ followed by the part after /hooks/."
        )
    else:
        said += (
            " Paste the webhook address your chat tool gives (Discord, Slack, "
            "Microsoft Teams Workflows, Google Chat, ntfy.sh) or the service's "
            f"Apprise URL; or make a “{WebhookKind.label}” channel to post JSON "
            "to any address."
        )
    return said


# A Mattermost (or Rocket.Chat) incoming webhook's path: /hooks/<token>.
_HOOK_PATH = re.compile(r"/hooks/[A-Za-z0-9_-]+/?")


def address_problem(url: str) -> str | None:
    """Why the host a valid Apprise URL names can never be reached, judged
    without DNS: an address written out (or localhost). Any other host is
    judged by the proxy at every send, at the address it resolves to then.
    The host is read from the URL itself: Apprise cuts a bracketed IPv6
    address short (json://[fe80::1]/ has the host "[fe80::]"), so its
    plugin's host serves only when the URL has none that urlsplit sees."""
    try:
        bare = urlsplit(url).hostname or ""
    except ValueError:  # an unclosed "[": Apprise may still read a host
        bare = ""
    if not bare:
        import apprise as apprise_lib  # here, not at the top: see the docstring

        plugin = apprise_lib.Apprise.instantiate(url, suppress_exceptions=True)
        host = str(getattr(plugin, "host", None) or "")
        bare = host.removeprefix("[").removesuffix("]")
    if not bare or _number_form(bare):
        return None
    return address_refusal(bare, bare)


def _number_form(host: str) -> bool:
    """A host a resolver would read as an IPv4 address in one of inet_aton's
    number forms (`1234567`, `127.1`): in Apprise URLs that is an id (a
    Telegram bot's, a Discord webhook's), not an address, so it is left to
    the proxy."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return ip_literal(host) is not None
    return False


def service_name(url: str) -> str:
    """The service an Apprise URL reaches ("Telegram"), to name a channel
    by without showing the URL's secrets; the scheme when Apprise cannot
    tell."""
    import apprise as apprise_lib  # here, not at the top: see the docstring

    plugin = apprise_lib.Apprise.instantiate(url, suppress_exceptions=True)
    return str(getattr(plugin, "service_name", "") or f"{scheme_of(url)}://")


class _ProxyEnvironment:
    """The process's proxy variables, which `requests` reads: set while any
    Apprise send runs, to the proxy of the drain that sends it. Sends of one
    drain share its proxy and run side by side; a send through another proxy
    (another drain in a threads pool) waits until they are done."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._url: str | None = None
        self._users = 0
        self._saved: dict[str, str | None] = {}

    @contextmanager
    def through(self, proxy_url: str, timeout: float) -> Iterator[None]:
        with self._changed:
            free = self._changed.wait_for(
                lambda: self._users == 0 or self._url == proxy_url, timeout
            )
            if not free:
                raise TimeoutError
            if self._users == 0:
                self._set(proxy_url)
            self._users += 1
        try:
            yield
        finally:
            with self._changed:
                self._users -= 1
                if self._users == 0:
                    self._restore()
                    self._changed.notify_all()

    def _set(self, proxy_url: str) -> None:
        keys = _PROXY_VARIABLES + _NO_PROXY_VARIABLES
        self._saved = {k: os.environ.get(k) for k in keys}
        self._url = proxy_url
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
        self._url = None


_environment = _ProxyEnvironment()


# After every "@" of a message: Apprise's Discord-style plugins read
# "@everyone", "@here" and "<@id>" in a body as pings to send, and the body
# holds page text. The team's own pings (the URL's `ping=`) are unaffected.
NO_MENTION = "\u200b"

# Services that show a message's text as Markdown although Apprise sends them
# plain text by default: told Markdown, Apprise escapes the message for them.
SHOWS_MARKDOWN = frozenset(
    {"discord", "guilded", "fluxer", "fluxers", "mmost", "mmosts", "zulip"}
)


# Services that send a message as Markdown but show its title as plain text
# (Slack's attachment title and header block, a Reddit post's title):
# escaped, the title would show its backslashes.
TITLE_AS_TEXT = frozenset({"slack", "reddit"})


def _defused(body: str) -> str:
    body = body.replace("@", "@" + NO_MENTION)
    # Markdown's "[words](address)", for a service that shows Markdown without
    # saying so to Apprise: the words must not become a link to an address the
    # reader does not see. Broken the same way, invisibly; so is Discord's
    # "||words||", shown hidden until clicked, which Apprise does not escape.
    body = body.replace("](", "]" + NO_MENTION + "(")
    return body.replace("||", "|" + NO_MENTION + "|")


def _sends_markdown(plugin: Any) -> bool:
    import apprise as apprise_lib  # here, not at the top: see the docstring

    return bool(plugin.notify_format == apprise_lib.NotifyFormat.MARKDOWN)


def _plugin(url: str) -> Any:
    """Apprise's plugin for `url`, told the format its service shows."""
    import apprise as apprise_lib  # here, not at the top: see the docstring

    plugin = apprise_lib.Apprise.instantiate(url, suppress_exceptions=True)
    if plugin is not None and schemes_of(plugin) & SHOWS_MARKDOWN:
        plugin.notify_format = apprise_lib.NotifyFormat.MARKDOWN
    return plugin


def as_html(text: str, links: Iterable[str] = ()) -> str:
    """The plain message as HTML, the one format Apprise converts to every
    service's own: HTML services get it as it is, plain-text ones its words,
    Markdown ones its words escaped. So a monitor's name, a page's address, a
    judge's reason or a quote shows as written, never as formatting or a
    link; only the message's own `links` are links, found in the text as
    written and left whole, their "@" broken whatever the format (see
    _safe_anchor)."""
    lines = []
    for line in text.split("\n"):
        bare = line.lstrip(" ")
        indent = len(line) - len(bare)
        # Leading spaces, which HTML would collapse, keep their indent.
        lines.append("&nbsp;" * indent + linked(bare, links, _defused, _safe_anchor))
    return "<br>".join(lines)


def _safe_anchor(href: str) -> SafeString:
    """A link that pings no one, for every service: Discord-style plugins
    read "@name" anywhere in a Markdown body, a link's address included, as a
    ping to send (a page at /@everyone would ping the server), and Matrix,
    Signal or ntfy readers get the link's words as plain text, where "@room"
    pings the room. Its words get the zero-width space, its address %40,
    which web servers read as "@"."""
    return format_html('<a href="{}">{}</a>', href.replace("@", "%40"), _defused(href))


def _title_for(plugin: Any, title: str) -> str:
    """A service without a title of its own gets it in its body, converted
    from HTML like the body, so it is escaped for HTML. One with a title of
    its own gets it as text, escaped for Markdown when the service shows
    Markdown (Teams Workflows' cards, Discord's embeds), as it is when it
    shows its title as plain text."""
    import apprise as apprise_lib  # here, not at the top: see the docstring
    from apprise.conversion import convert_between

    if plugin.title_maxlen <= 0:
        return str(escape(title))
    if _sends_markdown(plugin) and not schemes_of(plugin) & TITLE_AS_TEXT:
        return convert_between(
            apprise_lib.NotifyFormat.HTML,
            apprise_lib.NotifyFormat.MARKDOWN,
            str(escape(title)),
        )
    return title


def _sent_length(plugin: Any, body: str, links: Iterable[str]) -> int:
    """How long the body is once Apprise has converted it for the service."""
    import apprise as apprise_lib  # here, not at the top: see the docstring
    from apprise.conversion import convert_between

    html = as_html(body, links)
    return len(
        convert_between(apprise_lib.NotifyFormat.HTML, plugin.notify_format, html)
    )


def body_limit(url: str, title: str) -> int | None:
    """How many characters of body the URL's service takes with this title
    (Discord 2000, Telegram 4096, ...), or None when Apprise cannot tell.
    Apprise passes a longer body on by default and the service refuses it."""
    plugin = _plugin(url)
    if plugin is None:
        return None
    limit = int(plugin.body_maxlen)
    # A service without a title of its own gets it as the body's first line
    # (a Markdown one as a heading, escaped); Discord-like ones count their
    # title in the body's limit.
    if plugin.title_maxlen <= 0 or plugin.overflow_amalgamate_title:
        limit -= 2 * len(title) + 4  # the title, its escapes and its line break
    return max(limit, 0)


def _notify(
    url: str, title: str, body: str, links: tuple[str, ...], proxy_url: str
) -> tuple[bool, str]:
    import apprise as apprise_lib  # here, not at the top: see the docstring

    plugin = _plugin(url)
    with _environment.through(proxy_url, SEND_TIMEOUT_SECONDS):
        notifier = apprise_lib.Apprise()
        notifier.add(plugin)
        # Only the message: the default format starts each line with a time
        # stamp and a level, which the channel page would show to people.
        with apprise_lib.LogCapture(
            level=apprise_lib.logging.WARNING, fmt="%(message)s"
        ) as log:
            ok = notifier.notify(
                title=_title_for(plugin, title),
                body=as_html(body, links),
                body_format=apprise_lib.NotifyFormat.HTML,
            )
            said = log.getvalue().strip()
    return bool(ok), said


@dataclass
class AppriseSend(Attempt):
    url: str
    title: str
    body: str
    links: tuple[str, ...] = ()

    async def run(self, outbound: Outbound) -> Sent:
        proxy = await outbound.proxy(MAX_BYTES)
        try:
            ok, said = await outbound.blocking(
                lambda: _notify(self.url, self.title, self.body, self.links, proxy.url),
                SEND_TIMEOUT_SECONDS,
            )
        except TimeoutError as exc:
            raise DeliveryError(
                f"The service did not answer within {SEND_TIMEOUT_SECONDS:.0f} seconds."
            ) from exc
        if not ok:
            refused = _refusals_of(self.url, proxy, alone=outbound.proxy_users == 1)
            if refused:
                raise DeliveryError("Refused: " + "; ".join(refused), permanent=True)
            last = said.splitlines()[-1] if said else "no reason given"
            raise DeliveryError(f"Apprise could not send: {last}"[:500])
        return Sent(None, "")


def _refusals_of(url: str, proxy: GuardProxy, *, alone: bool) -> list[str]:
    """The proxy's refusals that answer this send's failure. The drain's other
    Apprise sends share the proxy, so only a refusal of this URL's own host is
    surely this send's; any refusal is, when no other send used the proxy (a
    redirect elsewhere). Another send's refusal must not make this one's own
    failure permanent: it is retried as any failure is."""
    if alone:
        return proxy.refused
    host = (urlsplit(url).hostname or "").lower()
    return [
        error.message
        for key, error in proxy.refusals.items()
        if host and key.rpartition(":")[0] == host
    ]


def send_url(url: str, title: str, body: str, links: Iterable[str] = ()) -> Sent:
    """One Apprise send now, through a proxy of its own. `body` is plain
    text; of the addresses in it, only `links` are made links."""
    return run_one(prepare_url(url, title, body, links))


def prepare_url(
    url: str, title: str, body: str, links: Iterable[str] = ()
) -> AppriseSend:
    problem = url_problem(url)
    if problem:
        raise DeliveryError(problem, permanent=True)
    return AppriseSend(url, title, body, tuple(links))


class AppriseKind(ChannelKind):
    name = "apprise"
    label = "Chat and push (Apprise)"
    help = (
        "Microsoft Teams, Discord, Mattermost, Rocket.Chat, Google Chat, "
        "Telegram, Matrix, ntfy, Gotify, Pushover and more: paste the webhook "
        "address your chat tool gives, or the service's Apprise URL (see the "
        "Apprise wiki for each service's form)."
    )
    fields = {
        "url": (
            "Service address (Apprise URL)",
            "The webhook address as your chat tool shows it (Discord, Slack, "
            "Microsoft Teams Workflows, Google Chat, ntfy.sh), or the address "
            "Apprise uses to reach the service, for example "
            "discord://webhook_id/webhook_token for Discord or "
            "tgram://bot_token/chat_id for Telegram.",
        )
    }
    secrets = ("url",)

    def clean(self, settings: dict[str, Any]) -> dict[str, Any]:
        cleaned = super().clean(settings)
        problem = url_problem(cleaned["url"]) or address_problem(cleaned["url"])
        if problem:
            raise SettingsError({"url": problem})
        return cleaned

    def prepare(self, delivery: Delivery) -> Attempt:
        channel = delivery.channel
        assert channel is not None
        message = self.message(delivery)
        url = channel.settings["url"]
        title = messages.title(message)
        links = tuple(messages.links(message))
        limit = body_limit(url, title)
        plugin = _plugin(url)
        body = messages.text(
            message,
            fits=None
            if limit is None
            else lambda text: _sent_length(plugin, text, links) <= limit,
        )
        # Services without titles of their own (Telegram) get the title as
        # the body's first line, and showed it twice.
        return prepare_url(url, title, messages.without_title(body, title), links)
