"""Slack, two ways: a Slack app's bot token (SLACK_BOT_TOKEN, chat.postMessage
to a channel picked by id) and an incoming-webhook URL for teams without an app.
Both send the same Block Kit message."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from django.conf import settings as django_settings
from django.utils import timezone

from checks.errors import parse_retry_after
from checks.fetch import FetchResult
from checks.notify import messages
from checks.notify.kinds import http
from checks.notify.kinds.base import (
    ChannelKind,
    DeliveryError,
    Notice,
    Sent,
    SettingsError,
)
from checks.notify.kinds.outbound import Attempt
from checks.notify.texts import one_line
from checks.notify.transports import NOT_SET, response_excerpt
from checks.targets.options import url_problem

if TYPE_CHECKING:
    from checks.notify.models import Delivery

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


def call(method: str, payload: dict[str, Any]) -> dict[str, Any]:
    """One Web API call now; Slack's `ok: false` is a DeliveryError naming
    its error."""
    return answer_of(http.fetch_now(request(method, payload)))


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
    """The workspace's channels the dashboard offers: [{id, name}]."""
    answer = call(
        "conversations.list",
        {
            "limit": limit,
            "exclude_archived": True,
            "types": "public_channel,private_channel",
        },
    )
    return [
        {"id": str(c.get("id")), "name": str(c.get("name"))}
        for c in answer.get("channels") or []
        if isinstance(c, Mapping)
    ]


def _mrkdwn(text: str) -> str:
    # Slack's mrkdwn control characters, escaped as its docs ask.
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _link(url: str, label: str) -> str:
    # Slack ends a link's target at its first "|": a page address holding one
    # would choose the words shown for the link. %7C is the same address.
    return f"<{_mrkdwn(url).replace('|', '%7C')}|{_mrkdwn(label)}>"


def _section(text: str) -> dict[str, Any]:
    # Verbatim: Slack would otherwise turn bare addresses, #channels and
    # @mentions in page text and the judge's words into links and pings; our
    # own <url|words> links are kept either way.
    return {
        "type": "section",
        "text": {"type": "mrkdwn", "text": text[:SECTION_CHARS], "verbatim": True},
    }


def blocks(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Block Kit: a header, then the monitor's pages (reason, before → after,
    a link to the diff) and failed targets, cut with "and N more"."""
    title = messages.title(message)
    out: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": _header(title)}}
    ]
    if message.get("type") == messages.CHANGE:
        entries = [_page_section(page) for page in message.get("pages") or []]
        entries.extend(
            _section(
                # The reason says it failed ("The web search failed: …").
                f"*{_mrkdwn(failure['label'])}:* {_mrkdwn(failure['reason'])}"
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
        out.append(_section(_mrkdwn(messages.text(message))))
    return out


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


def _page_section(page: Mapping[str, Any]) -> dict[str, Any]:
    lines = [f"*{_link(page['url'], page['url'])}* — {_mrkdwn(page['label'])}"]
    if page.get("reason"):
        lines.append(f"_{_mrkdwn(page['reason'])}_")
    # Why the page could not be checked, in the dashboard's words; a
    # blocked page's label already says it.
    if page.get("error") and not page.get("blocked"):
        lines.append(_mrkdwn(page["error"]))
    if page.get("before") or page.get("after"):
        lines.append(
            f"~{_mrkdwn(page.get('before') or '')}~ → "
            f"{_mrkdwn(page.get('after') or '')}"
        )
    # Only a changed page has a diff; the others open its result.
    words = "See the diff" if page.get("status") == "changed" else None
    lines.append(_link(page["link"], words or "Open in Pagewatch"))
    return _section("\n".join(lines))


def _digest_blocks(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A section per monitor, each within Slack's size: one section for the
    whole digest was cut at its limit, mid-link, and the monitors after the
    first few pages were never shown."""
    entries = list(message.get("monitors") or [])
    # Room for the header and this intro.
    shown = _within(entries, MAX_BLOCKS - 2)
    out = [_section(_mrkdwn(messages.digest_intro(message)))]
    out.extend(_section(_digest_entry(entry)) for entry in shown)
    if rest := len(entries) - len(shown):
        out.append(_section(f"…and {rest} more monitors with changes."))
    return out


def _digest_entry(entry: Mapping[str, Any]) -> str:
    monitor = entry["monitor"]
    lines = [f"*{_link(monitor['link'], monitor['name'])}*"]
    pages = list(entry.get("pages") or [])
    # What "…and N more." takes at most, kept free so it always fits.
    room = SECTION_CHARS - len(lines[0]) - 40
    listed = 0
    for page in pages:
        line = f"• {_link(page['url'], page['url'])}"
        changed = page.get("status") == "changed"
        if not changed:
            line += " (new page)"
        elif page.get("notJudged"):
            line += " (not judged)"
        elif page.get("unimportant"):
            line += " (judged unimportant)"
        if page.get("reason"):
            line += f": {_mrkdwn(page['reason'])}"
        words = "see the diff" if changed else "open in Pagewatch"
        line += f" ({_link(page['link'], words)})"
        if len(line) + 1 > room:
            break
        lines.append(line)
        room -= len(line) + 1
        listed += 1
    if more := int(entry.get("more") or 0) + len(pages) - listed:
        lines.append(f"…and {more} more.")
    return "\n".join(lines)


class SlackKind(ChannelKind):
    name = "slack"
    label = "Slack (app)"
    help = "Posts to a Slack channel with the Slack app's bot token."
    fields = {
        "channelId": ("Channel", "The Slack channel's id, e.g. C0123456789."),
        "channelName": ("Channel name", "Shown in Pagewatch; optional."),
    }
    needs_setting = TOKEN_SETTING

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
                "text": messages.title(message),
                "blocks": blocks(message),
                "unfurl_links": False,
            },
        )


class SlackWebhookKind(ChannelKind):
    name = "slack_webhook"
    label = "Slack (incoming webhook)"
    help = (
        "For a workspace without the Pagewatch app: paste an incoming-webhook "
        "URL from Slack (https://hooks.slack.com/services/…)."
    )
    fields = {"url": ("Webhook URL", "Slack shows it once when you add the webhook.")}
    secrets = ("url",)

    def clean(self, settings: dict[str, Any]) -> dict[str, Any]:
        cleaned = super().clean(settings)
        # The address policy too, as for the webhook kind (see there).
        if problem := url_problem(cleaned["url"]):
            raise SettingsError({"url": problem[1]})
        return cleaned

    def prepare(self, delivery: Delivery) -> Attempt:
        channel = delivery.channel
        assert channel is not None
        message = self.message(delivery)
        payload = {"text": messages.title(message), "blocks": blocks(message)}
        return http.post_json(channel.settings["url"], payload)
