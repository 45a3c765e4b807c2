"""Slack, two ways: a Slack app's bot token (SLACK_BOT_TOKEN, chat.postMessage
to a channel picked by id) and an incoming-webhook URL for teams without an app.
Both send the same Block Kit message."""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode, urlsplit

from django.conf import settings as django_settings
from django.core.cache import cache
from django.utils import timezone
from redis.exceptions import RedisError

from checks.errors import parse_retry_after
from checks.fetch import FetchResult
from checks.notify import messages
from checks.notify.kinds import http
from checks.notify.kinds.apprise import AppriseKind
from checks.notify.kinds.base import (
    ChannelKind,
    DeliveryError,
    Notice,
    Sent,
    SettingsError,
)
from checks.notify.kinds.outbound import Attempt
from checks.notify.kinds.webhook import WebhookKind
from checks.notify.reports import unimportant_words
from checks.notify.texts import http_href, one_line
from checks.notify.transports import NOT_SET, response_excerpt
from checks.targets.options import url_problem

if TYPE_CHECKING:
    from checks.notify.models import Delivery
    from monitors.models import Team

logger = logging.getLogger(__name__)

TOKEN_SETTING = "SLACK_BOT_TOKEN"  # noqa: S105 (a setting's name)
# Slack's answers that a retry cannot change: the token or the channel is wrong.
PERMANENT_ERRORS = frozenset(
    {
        "invalid_auth",
        "not_authed",
        "account_inactive",
        "token_revoked",
        "channel_not_found",
        "not_in_channel",
        "is_archived",
        "missing_scope",
        "invalid_blocks",
    }
)
SLACK_WORDS = {
    "invalid_auth": "Slack did not accept the bot token (invalid_auth).",
    "channel_not_found": (
        "Slack has no such channel, or the app cannot see it (channel_not_found)."
    ),
    "not_in_channel": (
        "The Slack app is not in this channel: invite it (not_in_channel)."
    ),
}
SECTION_CHARS = 2900  # Slack allows 3000 characters in a section's text.
MAX_BLOCKS = 50  # and 50 blocks in a message.
HEADER_CHARS = 150
LINK_CHARS = 3000  # the longest address Block Kit takes
# A message links up to ten pages: Slack would unfurl them into previews of
# each page (chosen by the page) under the message.
NO_PREVIEWS = {"unfurl_links": False, "unfurl_media": False}
PICKER_PAGES = 10  # of conversations.list: up to 2000 channels to pick from
PICKER_SECONDS = 300  # how long the picker's list is remembered
PICKER_CUT_SHORT_SECONDS = 60  # ... when Slack refused one of its pages


NOT_SLACK = (
    "This is not a Slack incoming-webhook address: those start with "
    "https://hooks.slack.com/services/. For Mattermost, Rocket.Chat, Microsoft "
    f"Teams or Discord, make a “{AppriseKind.label}” channel; to post JSON "
    f"to any other address, make a “{WebhookKind.label}” channel."
)


def token() -> str:
    return getattr(django_settings, "SLACK_BOT_TOKEN", "") or ""


def api_url(method: str) -> str:
    base = getattr(django_settings, "SLACK_API_URL", "") or "https://slack.com/api/"
    return base.rstrip("/") + "/" + method


def request(method: str, payload: dict[str, Any]) -> http.Request:
    """One Web API call with the bot token, as an attempt that ends with
    chat.postMessage's answer."""
    return http.post_json(
        api_url(method),
        payload,
        {"Authorization": f"Bearer {token()}"},
        answer=_posted,
    )


def call(method: str, fields: dict[str, Any]) -> dict[str, Any]:
    """One call of a reading method now (conversations.list), its arguments
    as form fields: Slack takes JSON bodies only for its writing methods and
    reads one here as no arguments at all. Slack's `ok: false` is a
    DeliveryError naming its error."""
    form = {k: str(v).lower() if isinstance(v, bool) else v for k, v in fields.items()}
    asked = http.Request(
        api_url(method),
        urlencode(form).encode(),
        {
            "Authorization": f"Bearer {token()}",
            "Content-Type": "application/x-www-form-urlencoded",
        },
    )
    return answer_of(http.fetch_now(asked))


def _posted(result: FetchResult) -> Sent:
    answer = answer_of(result)
    return Sent(200, json.dumps({"ok": True, "ts": answer.get("ts")}))


def answer_of(result: FetchResult) -> dict[str, Any]:
    """Slack's answer, or a DeliveryError naming its error."""
    if result.status_code == 429:
        raise DeliveryError(
            "Slack asked us to slow down (rate limited).",
            status_code=429,
            retry_after=parse_retry_after(
                result.headers.get("retry-after"), timezone.now()
            ),
        )
    try:
        answer = json.loads(result.content)
    except ValueError:
        answer = None
    if not isinstance(answer, Mapping):
        raise DeliveryError(
            f"Slack answered {result.status_code} without JSON.",
            status_code=result.status_code,
            response_body=response_excerpt(result.content),
        )
    if not answer.get("ok"):
        error = str(answer.get("error") or "unknown_error")
        raise DeliveryError(
            SLACK_WORDS.get(error, f"Slack answered: {error}."),
            permanent=error in PERMANENT_ERRORS,
            status_code=result.status_code,
            response_body=response_excerpt(result.content),
        )
    return dict(answer)


def list_channels(limit: int = 200) -> list[dict[str, str]]:
    """The workspace's channels the dashboard offers: [{id, name}]. Slack
    answers a page at a time; pages are followed up to PICKER_PAGES, so a
    big workspace's channels past the first page can be chosen too. A page
    after the first that fails (Slack rate-limits this method hard) ends the
    list there: the channels read are still worth offering."""
    return _read_channels(limit)[0]


def _read_channels(limit: int = 200) -> tuple[list[dict[str, str]], bool]:
    """list_channels, and whether Slack listed them all (no page refused)."""
    found: list[dict[str, str]] = []
    cursor = ""
    for _ in range(PICKER_PAGES):
        asked = {
            "limit": limit,
            "exclude_archived": True,
            "types": "public_channel,private_channel",
        }
        try:
            answer = call(
                "conversations.list", asked | ({"cursor": cursor} if cursor else {})
            )
        except DeliveryError:
            if not cursor:
                raise
            return found, False
        found.extend(
            {"id": str(c.get("id")), "name": str(c.get("name"))}
            for c in answer.get("channels") or []
            if isinstance(c, Mapping)
        )
        more = answer.get("response_metadata")
        cursor = str(more.get("next_cursor") or "") if isinstance(more, Mapping) else ""
        if not cursor:
            break
    return found, True


def picker_channels(*, refresh: bool = False) -> list[dict[str, str]]:
    """list_channels, remembered a few minutes in the shared cache for the
    workspace the bot token reaches: the form is drawn at every visit and
    every refused save, each up to PICKER_PAGES calls of a method Slack
    rate-limits hard. A list cut short by a refused page is remembered for
    less time, so its missing channels come back soon without asking Slack
    at every view; a list Slack refused outright is not remembered.
    `refresh` asks Slack again (a channel made in Slack since)."""
    key = _picker_key()
    if not refresh:
        try:
            remembered = cache.get(key)
        except (RedisError, OSError) as exc:
            logger.warning("Slack channel list not read from the cache: %s", exc)
            remembered = None
        if isinstance(remembered, list):
            return remembered
    found, complete = _read_channels()
    try:
        cache.set(key, found, PICKER_SECONDS if complete else PICKER_CUT_SHORT_SECONDS)
    except (RedisError, OSError) as exc:
        logger.warning("Slack channel list not kept in the cache: %s", exc)
    return found


def _picker_key() -> str:
    """The cache key of the workspace's list: the token and Slack's address
    name the workspace, hashed so the token is not written into the cache."""
    digest = hashlib.sha256(f"{api_url('')}\n{token()}".encode()).hexdigest()
    return f"slack-picker:{digest[:32]}"


def _mrkdwn(text: str) -> str:
    # Slack's mrkdwn control characters, escaped as its docs ask.
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def fallback(message: Mapping[str, Any]) -> str:
    """The message's `text`, which Slack shows in notifications: it reads
    "<…>" there as a link or a ping (a monitor named "<!channel>" would call
    everyone), so it is escaped as mrkdwn is."""
    return _mrkdwn(messages.title(message))


def _link(url: str, label: str) -> str:
    # Slack ends a link's target at its first "|": a page address holding one
    # would choose the words shown for the link. %7C is the same address.
    return f"<{_mrkdwn(url).replace('|', '%7C')}|{_mrkdwn(label)}>"


def _section(text: str) -> dict[str, Any]:
    """Our own words and links, in mrkdwn. Verbatim: Slack would otherwise
    turn bare addresses, #channels and @mentions into links and pings; our
    own <url|words> links are kept either way."""
    return {
        "type": "section",
        "text": {"type": "mrkdwn", "text": text[:SECTION_CHARS], "verbatim": True},
    }


# Words from pages, the judge and the team (titles, reasons, quotes, names)
# go in rich text, which Slack shows exactly as given: mrkdwn has no escape
# for "*", "_" and "~", so there they turned page words bold, italic or
# struck through and broke our own styling around them. Rich text also makes
# no links or mentions of its own.


def _words(text: str, **style: bool) -> dict[str, Any]:
    element: dict[str, Any] = {"type": "text", "text": text}
    if style:
        element["style"] = style
    return element


def _rich_link(url: str, words: str, **style: bool) -> dict[str, Any]:
    """A link, when `url` is an http(s) address (a failed search's "page" is
    named, not addressed) that Block Kit takes (a longer one gets the whole
    message refused); otherwise the words alone."""
    if not http_href(url) or len(url) > LINK_CHARS:
        return _words(words, **style)
    element = {"type": "link", "url": url, "text": words}
    if style:
        element["style"] = style
    return element


def _rich(elements: list[dict[str, Any]]) -> dict[str, Any]:
    # Slack refuses an empty text element.
    kept = [e for e in elements if e.get("text") or e["type"] != "text"]
    return {
        "type": "rich_text",
        "elements": [{"type": "rich_text_section", "elements": kept}],
    }


def _size(elements: list[dict[str, Any]]) -> int:
    return sum(len(e.get("text") or "") + len(e.get("url") or "") for e in elements)


def blocks(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Block Kit: a header, then the monitor's pages (reason, before → after,
    a link to the diff) and failed targets, cut with "and N more"."""
    title = messages.title(message)
    out: list[dict[str, Any]] = [
        {
            "type": "header",
            # Plain text is shown as given ("&" stays "&"); without emoji
            # a page's ":fire:" stays as typed too.
            "text": {"type": "plain_text", "text": _header(title), "emoji": False},
        }
    ]
    if message.get("type") == messages.CHANGE:
        entries = [_page_block(page) for page in message.get("pages") or []]
        entries.extend(
            # The reason says it failed ("The web search failed: …").
            _rich(
                [
                    _words(f"{failure['label']}:", bold=True),
                    _words(f" {failure['reason'] or ''}"),
                ]
            )
            for failure in message.get("failures") or []
        )
        # Room for the header and the link to the check, after the list.
        shown = _within(entries, MAX_BLOCKS - 2, int(message.get("more") or 0))
        out.extend(shown)
        if more := int(message.get("more") or 0) + len(entries) - len(shown):
            out.append(_section(f"…and {more} more."))
        out.append(_section(_link(message["link"], "Open the check in Pagewatch")))
    elif message.get("type") == messages.DIGEST:
        out.extend(_digest_blocks(message))
    else:
        out.extend(_said_blocks(message))
    return out


def _said_blocks(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A failing, recovered or test message: its text, and its link as a
    link (a bare address in verbatim text is not one)."""
    text = messages.text(message)
    link = message.get("link")
    if not link:
        return [_rich([_words(text)])]
    # The text's last line ("See the monitor: <address>") is the link below.
    head, _, last = text.rpartition("\n")
    text = head.rstrip() if last.endswith(link) else text
    return [
        _rich([_words(text)]),
        _section(_link(link, "Open the monitor in Pagewatch")),
    ]


def _header(title: str) -> str:
    # Slack takes 150 characters in a header; a cut title says it was cut.
    return one_line(title, HEADER_CHARS)


def _within(entries: list[Any], room: int, more: int = 0) -> list[Any]:
    """The first of `entries` that fit in `room` blocks, keeping one free for
    "…and N more" when some are left out (or `more` were already): Slack
    refuses a message of over 50 blocks whole, so it would never arrive."""
    if not more and len(entries) <= room:
        return entries
    return entries[: room - 1]


def _page_block(page: Mapping[str, Any]) -> dict[str, Any]:
    out = [
        _rich_link(page["url"], page["url"], bold=True),
        _words(f" — {page['label']}"),
    ]
    if page.get("reason"):
        out += [_words("\n"), _words(page["reason"], italic=True)]
    # Why the page could not be checked, in the dashboard's words; a
    # blocked page's label already says it.
    if page.get("error") and not page.get("blocked"):
        out.append(_words(f"\n{page['error']}"))
    if page.get("before") or page.get("after"):
        out += [
            _words("\n"),
            _words(page.get("before") or "", strike=True),
            _words(" → "),
            _words(page.get("after") or ""),
        ]
    # Only a changed page has a diff; the others open its result.
    words = "See the diff" if page.get("status") == "changed" else None
    out += [_words("\n"), _rich_link(page["link"], words or "Open in Pagewatch")]
    return _rich(out)


def _digest_blocks(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A block per monitor, each within Slack's size: one block for the
    whole digest was cut at its limit, mid-link, and the monitors after the
    first few pages were never shown."""
    entries = list(message.get("monitors") or [])
    # Room for the header and this intro.
    shown = _within(entries, MAX_BLOCKS - 2)
    out = [_section(_mrkdwn(messages.digest_intro(message)))]
    out.extend(_rich(_digest_entry(entry)) for entry in shown)
    if rest := len(entries) - len(shown):
        out.append(_section(f"…and {rest} more monitors with changes."))
    return out


def _digest_entry(entry: Mapping[str, Any]) -> list[dict[str, Any]]:
    monitor = entry["monitor"]
    out = [_rich_link(monitor["link"], monitor["name"], bold=True)]
    pages = list(entry.get("pages") or [])
    # What "…and N more." takes at most, kept free so it always fits.
    room = SECTION_CHARS - _size(out) - 40
    listed = 0
    for page in pages:
        line = [_words("\n• "), _rich_link(page["url"], page["url"])]
        changed = page.get("status") == "changed"
        if page.get("match"):
            line.append(_words(" (new match)"))
        elif page.get("status") == "removed":
            line.append(_words(" (removed)"))
        elif not changed:
            line.append(_words(" (new page)"))
        elif page.get("notJudged"):
            line.append(_words(" (not judged)"))
        elif page.get("unimportant"):
            said = page.get("unimportantWords") or unimportant_words(False)
            line.append(_words(f" ({said})"))
        if page.get("reason"):
            line.append(_words(f": {page['reason']}"))
        words = "see the diff" if changed else "open in Pagewatch"
        line += [_words(" ("), _rich_link(page["link"], words), _words(")")]
        if _size(line) > room:
            break
        out.extend(line)
        room -= _size(line)
        listed += 1
    if more := int(entry.get("more") or 0) + len(pages) - listed:
        out.append(_words(f"\n…and {more} more."))
    return out


class SlackKind(ChannelKind):
    name = "slack"
    label = "Slack (app)"
    help = "Posts to a Slack channel with the Slack app's bot token."
    fields = {
        "channelId": ("Channel", "The Slack channel's id, e.g. C0123456789."),
        "channelName": ("Channel name", "Shown in Pagewatch; optional."),
    }
    needs_setting = TOKEN_SETTING

    def sends_to(self, team: Team, settings: dict[str, Any]) -> list[str]:
        name = settings.get("channelName")
        return [f"#{name}" if name else str(settings.get("channelId") or "")]

    def unavailable(self) -> str | None:
        if not token():
            return (
                f"Set {TOKEN_SETTING} (a Slack app's bot token) to send to Slack "
                "this way."
            )
        return None

    def unavailable_notice(self) -> Notice | None:
        if not token():
            return Notice(
                f"{self.label} is not set up on this server yet, so this kind of "
                "channel cannot send; an administrator turns it on. Meanwhile a "
                f"“{SlackWebhookKind.label}” channel works without it.",
                f"set {TOKEN_SETTING} (a Slack app's bot token).",
            )
        return None

    def clean(self, settings: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(settings) - set(self.fields))
        if unknown:
            raise SettingsError({unknown[0]: "Not a setting of this kind."})
        channel_id = settings.get("channelId")
        if not isinstance(channel_id, str) or not channel_id.strip():
            raise SettingsError({"channelId": "Required."})
        name = settings.get("channelName") or ""
        if not isinstance(name, str):
            raise SettingsError({"channelName": "Must be a string."})
        return {"channelId": channel_id.strip(), "channelName": name.strip()}

    def prepare(self, delivery: Delivery) -> Attempt:
        if self.unavailable():
            raise DeliveryError(NOT_SET.format(setting=TOKEN_SETTING), permanent=True)
        channel = delivery.channel
        assert channel is not None
        message = self.message(delivery)
        return request(
            "chat.postMessage",
            {
                "channel": channel.settings["channelId"],
                "text": fallback(message),
                "blocks": blocks(message),
                **NO_PREVIEWS,
            },
        )


# Where Slack's incoming webhooks live (GovSlack's too).
SLACK_HOOK_HOSTS = frozenset({"hooks.slack.com", "hooks.slack-gov.com"})


class SlackWebhookKind(ChannelKind):
    name = "slack_webhook"
    label = "Slack (incoming webhook)"
    help = (
        "For a workspace without the Pagewatch app: paste an incoming-webhook "
        "URL from Slack (https://hooks.slack.com/services/…). For Mattermost, "
        f"Rocket.Chat or another tool, use a “{AppriseKind.label}” channel."
    )
    fields = {"url": ("Webhook URL", "Slack shows it once when you add the webhook.")}
    secrets = ("url",)

    def clean(self, settings: dict[str, Any]) -> dict[str, Any]:
        cleaned = self._within_policy(settings)
        # The message is Slack's Block Kit: tools that take Slack's shape
        # (Mattermost, Rocket.Chat) show only its fallback text, and Apprise
        # formats for each of them. A channel named Slack posts to Slack.
        try:
            parts = urlsplit(cleaned["url"])
            host = parts.hostname
        except ValueError:
            raise SettingsError({"url": NOT_SLACK}) from None
        if parts.scheme.lower() != "https" or host not in SLACK_HOOK_HOSTS:
            raise SettingsError({"url": NOT_SLACK})
        return cleaned

    def clean_change(
        self, team: Team, stored: dict[str, Any], settings: dict[str, Any]
    ) -> dict[str, Any]:
        # A channel saved with another tool's hook before only Slack's hosts
        # were taken posts there still: an edit that keeps its address (a
        # new name, other events) is not refused for it, while a new address
        # is held to the rule. The address policy holds for both.
        cleaned = self._within_policy(settings)
        if cleaned["url"] == stored.get("url"):
            return cleaned
        return self.clean(settings)

    def _within_policy(self, settings: dict[str, Any]) -> dict[str, Any]:
        cleaned = super().clean(settings)
        # The address policy too, as for the webhook kind (see there).
        if problem := url_problem(cleaned["url"]):
            raise SettingsError({"url": problem[1]})
        return cleaned

    def prepare(self, delivery: Delivery) -> Attempt:
        channel = delivery.channel
        assert channel is not None
        message = self.message(delivery)
        payload = {"text": fallback(message), "blocks": blocks(message), **NO_PREVIEWS}
        return http.post_json(channel.settings["url"], payload)
