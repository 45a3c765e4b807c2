"""What a channel is told, as plain JSON-ready data.

A channel delivery stores one of these in its outbox row (serialized once, so
every retry sends the same message); each kind in checks.notify.kinds turns it
into its own shape (Slack blocks, an Apprise title and body, a webhook's JSON).
Texts come from templates/notify/, so every kind words things the same way.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.template.loader import render_to_string
from django.urls import reverse

from checks.notify import events
from checks.notify.reports import change_report, failing_reason
from checks.notify.texts import one_line
from monitors.links import public_url
from monitors.time_words import on_the_clock, wire_time

if TYPE_CHECKING:
    from checks.models import Check
    from monitors.models import Monitor

# The events a channel's messages are sent for (and their words).
CHANGE = events.CHANNEL_CHANGE
FAILING = events.CHANNEL_FAILING
RECOVERED = events.CHANNEL_RECOVERED
DIGEST = events.CHANNEL_DIGEST
TEST = events.CHANNEL_TEST

# Pages listed in one message; the rest are "and N more".
PAGES_SHOWN = 10
QUOTE_CHARS = 300
# Of a monitor's name in a title, as in the monitor's own e-mail's subject.
NAME_IN_TITLE = 120


def _monitor(monitor: Monitor) -> dict[str, Any]:
    return {
        "id": str(monitor.pk),
        "name": monitor.name,
        "link": public_url(monitor.get_absolute_url()),
    }


def _cut(text: Any) -> str | None:
    if not isinstance(text, str) or not text.strip():
        return None
    return one_line(" ".join(text.split()), QUOTE_CHARS)


def _quotes(judgment: Any) -> tuple[str | None, str | None]:
    """The judge's first quoted change, before and after."""
    if not isinstance(judgment, Mapping):
        return None, None
    for entry in judgment.get("meaningfulChanges") or []:
        if isinstance(entry, Mapping):
            return _cut(entry.get("before")), _cut(entry.get("after"))
    return None, None


def change(check: Check, *, meaningful_only: bool) -> dict[str, Any] | None:
    """The change message of a finished check; None when there is nothing to
    say: no change at all, or (for `meaningful_only`) every change was judged
    noise, as Firecrawl suppresses its e-mail then."""
    report = change_report(check)
    reason = report.suppression_reason()
    if reason == "no_changes" or (meaningful_only and reason):
        return None
    # Pages that only errored are a failure, which channels hear of as
    # "failing" (checks.notify.channels); alongside changes they are listed.
    if all(line.status == "error" for line in report.pages):
        return None
    judgments = dict(check.pages.exclude(status="same").values_list("pk", "judgment"))
    pages = []
    for line in report.pages:
        if meaningful_only and line.meaningful is False:
            continue
        before, after = _quotes(judgments.get(line.pk))
        pages.append(
            {
                "url": line.url,
                "status": line.status,
                "label": line.label,
                "meaningful": line.meaningful,
                "reason": line.reason or None,
                "error": line.error or None,
                "blocked": line.blocked,
                "before": before,
                "after": after,
                "link": public_url(check.get_absolute_url())
                + (f"pages/{line.pk}/" if line.pk else ""),
            }
        )
    return {
        "type": CHANGE,
        "monitor": _monitor(check.monitor),
        "checkId": str(check.pk),
        "counts": report.counts_line(),
        "meaningful": report.meaningful,
        "pages": pages[:PAGES_SHOWN],
        # Targets that failed their part (a web search that could not be run).
        "failures": [
            {"label": failure.label, "reason": _cut(failure.reason)}
            for failure in report.failures
        ],
        "more": max(0, len(pages) - PAGES_SHOWN),
        "blocked": sum(1 for p in pages if p["blocked"]),
        "link": public_url(check.get_absolute_url()),
    }


def failing(monitor: Monitor, failures: int, check: Check) -> dict[str, Any]:
    """`check`: the failed check that made the monitor failing."""
    reason = failing_reason(check)
    return {
        "type": FAILING,
        "monitor": _monitor(monitor),
        "failures": failures,
        "error": _cut(reason.words),
        # The page that error is of, when it is a page's.
        "errorUrl": reason.url,
        "link": public_url(monitor.get_absolute_url()),
    }


def recovered(monitor: Monitor) -> dict[str, Any]:
    return {
        "type": RECOVERED,
        "monitor": _monitor(monitor),
        "link": public_url(monitor.get_absolute_url()),
    }


def test(channel_name: str) -> dict[str, Any]:
    return {"type": TEST, "channel": channel_name}


def digest(
    since: datetime,
    until: datetime,
    monitors: list[dict[str, Any]],
    time_zone: str = "UTC",
    *,
    meaningful_only: bool = True,
) -> dict[str, Any]:
    """`monitors`: [{monitor, pages: [{url, reason, at, link}]}], newest first.
    `time_zone`: the team's, in which the digest says its times.
    `meaningful_only`: the channel is told of meaningful changes only; one
    told of every change lists noise too, and must not call it meaningful."""
    return {
        "type": DIGEST,
        "since": wire_time(since),
        "until": wire_time(until),
        "timeZone": time_zone,
        "meaningfulOnly": meaningful_only,
        "monitors": monitors,
        # Every change, the ones past a monitor's list ("…and N more") too.
        "changes": sum(len(m["pages"]) + int(m.get("more") or 0) for m in monitors),
    }


def digest_intro(message: Mapping[str, Any]) -> str:
    """The digest's first line: since when it tells of changes."""
    return render_to_string("notify/digest_intro.txt", _context(message)).strip()


def _context(message: Mapping[str, Any]) -> dict[str, Any]:
    context: dict[str, Any] = {"m": message}
    if message.get("type") == DIGEST:
        since = datetime.fromisoformat(message["since"])
        context["since"] = on_the_clock(since, message.get("timeZone") or "UTC")
    return context


def links(message: Any) -> Iterator[str]:
    """Every address a message names as a link or a page's (not its quotes):
    the ones a receiver that shows links may show as links."""
    if isinstance(message, Mapping):
        if message.get("type") == DIGEST:
            # Where a digest cut to fit sends the reader for the rest.
            yield public_url(reverse("monitor-list"))
        for key, value in message.items():
            if key in ("link", "url", "errorUrl") and isinstance(value, str):
                yield value
            else:
                yield from links(value)
    elif isinstance(message, list):
        for value in message:
            yield from links(value)


def title(message: Mapping[str, Any]) -> str:
    """The message in one line: an e-mail's subject, a chat service's
    heading. A long monitor name is cut so that what happened ("is
    failing", "works again", the changes counted) still fits; the body
    names the monitor in full."""
    name = (message.get("monitor") or {}).get("name") or ""
    context = {"m": message, "name": one_line(name, NAME_IN_TITLE)}
    return render_to_string("notify/channel_title.txt", context).strip()


def without_title(body: str, title: str) -> str:
    """The body less a first line that only repeats the title, for a
    receiver that shows the title on its own (a chat service's heading, an
    e-mail's subject): the change message opens with the title's words."""
    first, _, rest = body.partition("\n")
    return rest.lstrip("\n") if first.strip() == title.strip() else body


def text(message: Mapping[str, Any], fits: Callable[[str], bool] | None = None) -> str:
    """The message as plain text (Markdown-friendly): Apprise's body, Slack's
    fallback text. With `fits` (a service's size limit), pages are left out
    from the end, counted in "…and N more", until the text fits: a service
    refuses a message over its limit, so it would never arrive; the link to
    the check, at the end, stays."""
    body = _render(message)
    if fits is None or fits(body):
        return body
    # The most pages that still fit, found by halving: the text grows with
    # every page kept.
    best = _most_that_fit(
        lambda shown: keeping(message, shown), _pages_in(message), fits
    )
    if best is not None or message.get("type") != DIGEST:
        return best or _render(keeping(message, 0))
    # A digest whose monitors' names alone are too long (sixty monitors for
    # Discord's 2000 characters) names the first that fit and counts the
    # rest, with a link to them all.
    bare = keeping(message, 0)
    link = public_url(reverse("monitor-list"))
    best = _most_that_fit(
        lambda shown: keeping_monitors(bare, shown, link),
        len(bare["monitors"]),
        fits,
    )
    return best or _render(keeping_monitors(bare, 0, link))


def _most_that_fit(
    shortened: Callable[[int], Mapping[str, Any]],
    most: int,
    fits: Callable[[str], bool],
) -> str | None:
    """The text of `shortened(n)` for the largest n up to `most` that fits,
    found by halving (the text grows with n); None if not even n=0 fits."""
    low, high, best = 0, most, None
    while low <= high:
        middle = (low + high) // 2
        shorter = _render(shortened(middle))
        if fits(shorter):
            best, low = shorter, middle + 1
        else:
            high = middle - 1
    return best


def _render(message: Mapping[str, Any]) -> str:
    rendered = render_to_string("notify/channel_message.txt", _context(message))
    lines = [line.rstrip() for line in rendered.splitlines()]
    # Collapse the template's blank runs into single blank lines.
    out: list[str] = []
    for line in lines:
        if line or (out and out[-1]):
            out.append(line)
    return "\n".join(out).strip()


def _pages_in(message: Mapping[str, Any]) -> int:
    if message.get("type") == DIGEST:
        return sum(len(entry["pages"]) for entry in message["monitors"])
    return len(message.get("pages") or [])


def keeping_monitors(
    message: Mapping[str, Any], shown: int, link: str
) -> dict[str, Any]:
    """A copy of a digest naming only its first `shown` monitors (the ones
    with the newest changes), and how many more had changes, seen at `link`:
    the ones an earlier cut left out are still counted."""
    shorter = dict(message)
    entries = list(message.get("monitors") or [])
    if len(entries) > shown:
        earlier = (message.get("moreMonitors") or {}).get("count") or 0
        left_out = earlier + len(entries) - shown
        shorter["monitors"] = entries[:shown]
        shorter["moreMonitors"] = {"count": left_out, "link": link}
    return shorter


def keeping(message: Mapping[str, Any], shown: int) -> dict[str, Any]:
    """A copy of a change or digest message listing only its first `shown`
    pages; the others are added to its "…and N more". A digest keeps every
    monitor's name, so none goes unmentioned."""
    shorter = copy.deepcopy(dict(message))
    entries = shorter["monitors"] if shorter.get("type") == DIGEST else [shorter]
    for entry in entries:
        pages = entry.get("pages") or []
        kept = pages[: max(shown, 0)]
        entry["more"] = int(entry.get("more") or 0) + len(pages) - len(kept)
        entry["pages"] = kept
        shown -= len(kept)
    return shorter
