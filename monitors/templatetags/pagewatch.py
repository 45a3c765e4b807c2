"""Small display helpers for the dashboard templates: wording, times, counts.
No business logic lives here.

One module over 500 lines on purpose: it is the one template library every
page loads ({% load pagewatch %}), and each helper is a few lines that stand
alone, so splitting it would only add a second name to load."""

from __future__ import annotations

import functools
import html
import json
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo

from django import template
from django.forms import BaseForm, BaseFormSet
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from checks.errors import ErrorKind, plain_error
from checks.jobs import Via
from checks.notify import events, transports
from checks.notify.kinds.base import mask_url
from checks.pipeline.outcome import FETCHED_BECAUSE
from checks.summary import (
    SEARCH_WORDS,
    looked_at_words,
    page_counts,
    search_counts,
    search_words,
)
from config.mail import not_sent_reason
from monitors import rules, search_provider, time_words
from monitors.schedule import Schedule
from monitors.schedule_words import CUSTOM_SCHEDULE, describe
from monitors.target_kinds import TargetKind
from monitors.url_rule import short_url
from teams.models import keys_made_words, keys_stop_words

register = template.Library()

CHECK_STATUS_LABELS = {
    "queued": "Waiting to start",
    "running": "Running",
    "completed": "Completed",
    "partial": "Completed with errors",
    "failed": "Failed",
    "skipped_overlap": "Skipped: previous check still running",
    "skipped_no_credits": "Skipped: not enough credits",
}
# Short symbols so a status never relies on colour alone.
CHECK_STATUS_SYMBOLS = {
    "queued": "…",
    "running": "▶",
    "completed": "✓",
    "partial": "!",
    "failed": "✕",
    "skipped_overlap": "–",
    "skipped_no_credits": "–",
}
PAGE_STATUS_LABELS = {
    "changed": "Changed",
    "new": "New",
    "same": "Unchanged",
    "removed": "Removed",
    "error": "Error",
}
# A page still gone after it was reported removed is `same` on the wire (see
# PageResult.is_still_gone), but to a reader it is gone, not unchanged.
STILL_GONE_LABEL = "Still gone (the page answers {code})"
# One that still shows the site's "not found" page answers 200, as if there.
STILL_NOT_FOUND_LABEL = "Still gone (the site shows its “not found” page)"
SUMMARY_ORDER = ("changed", "new", "removed", "error", "same")
SUMMARY_WORDS = {
    "changed": "changed",
    "new": "new",
    "removed": "removed",
    "error": "failed",
    "same": "unchanged",
}


@register.filter
def placed_at(messages: Any, place: str = "") -> list[Any]:
    """The messages said beside a part of the page (added with extra_tags
    naming it, e.g. "feed"), or with no place, the others, said at the top: a
    page that opens at its part would show the top's out of sight."""
    return [m for m in messages if (m.extra_tags or "") == place]


@register.filter
def masked_url(url: str) -> str:
    """A webhook's address where it cannot be changed, for everyone: whole
    only in the form that changes it (see mask_url)."""
    return mask_url(url) if url else ""


@register.filter
def delivery_to(delivery: Any) -> str:
    """Where a delivery went, as its list says it to everyone: a webhook's
    address in shape only, since nobody changes it there (its form shows it
    whole to who may)."""
    if delivery.url and not delivery.email:
        return mask_url(delivery.url)
    return delivery.destination


@register.filter
def next_run(moment: datetime | None) -> str:
    """ "in 12 minutes", or "waiting to start (due 1 hour ago)" for a run the
    scheduler has not started (see monitors.time_words)."""
    return time_words.next_run(moment)


@register.filter
def relative(moment: datetime | None) -> str:
    """ "in 12 minutes", "3 hours ago", "just now" (see monitors.time_words)."""
    return time_words.relative(moment)


@register.filter
def local(moment: datetime | None, zone: str | None = None) -> str:
    """An absolute time in the zone named (a monitor's), else on the team's
    clock (team_view makes it the current zone): "Mon 24 Nov 2025, 10:30 CET"."""
    if moment is None:
        return ""
    return time_words.clock_text(time_words.in_zone(moment, zone), seconds=False)


@register.filter
def local_full(moment: datetime | None, zone: str | None = None) -> str:
    """`local` to the second, for hover titles: "Mon 24 Nov 2025, 10:30:12 CET"."""
    if moment is None:
        return ""
    return time_words.clock_text(time_words.in_zone(moment, zone), seconds=True)


@register.simple_tag
def when(
    moment: datetime | None, zone: str | None = None, words: str = "relative"
) -> SafeString:
    """`{% when moment monitor.schedule_timezone %}`: a moment counted from now
    ("3 hours ago"), its full time (`local`) said after it to screen readers
    and kept in a title for mouse users: a title alone reaches neither
    keyboard, touch nor screen-reader users. `words="next_run"` says it as
    `next_run` does. No zone: the current one (the team's clock on team pages)."""
    if moment is None:
        return SafeString("")
    full = local(moment, zone)
    shown = next_run(moment) if words == "next_run" else relative(moment)
    return format_html(
        '<time datetime="{}" title="{}">{}<span class="visually-hidden"> ({})</span>'
        "</time>",
        iso(moment),
        full,
        shown,
        full,
    )


def _moment_of(item: Any) -> datetime:
    """When a check started (else was queued), or when a page result was made."""
    return getattr(item, "started_at", None) or item.created_at


@register.filter
def with_times(items: Iterable[Any], zone: str | None = None) -> list[tuple]:
    """(item, shown time, full time) for a list of checks or page results,
    in order. The shown time has seconds only where a neighbour falls in the
    same minute: two checks 33 s apart must not read as the same time, and
    the rest stay short."""
    rows = list(items)
    values = [time_words.in_zone(_moment_of(item), zone) for item in rows]
    minutes = [value.replace(second=0, microsecond=0) for value in values]
    out = []
    for index, (item, value) in enumerate(zip(rows, values, strict=True)):
        neighbours = minutes[max(0, index - 1) : index] + minutes[index + 1 : index + 2]
        shared = minutes[index] in neighbours
        shown = time_words.clock_text(value, seconds=shared)
        out.append((item, shown, time_words.clock_text(value, seconds=True)))
    return out


@register.filter
def iso(moment: datetime | None) -> str:
    return moment.isoformat() if moment else ""


@register.filter
def duration(seconds: float | timedelta | None) -> str:
    if seconds is None:
        return ""
    if isinstance(seconds, timedelta):
        seconds = seconds.total_seconds()
    # Most checks of a few pages take well under a second: "0 s" would read
    # as "did nothing", so short runs keep a decimal.
    if seconds < 0.1:
        return "under 0.1 s"
    if seconds < 9.95:
        return f"{seconds:.1f} s"
    total = int(round(seconds))
    if total < 60:
        return f"{total} s"
    minutes, secs = divmod(total, 60)
    if minutes < 60:
        return f"{minutes} min {secs} s" if secs else f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


@register.filter
def search_window_words(window: str | None) -> str:
    """ "24h" -> "Last 24 hours", as the form offers it."""
    window = window or rules.SEARCH_WINDOW_DEFAULT
    return rules.SEARCH_WINDOW_LABELS.get(window, window)


@register.filter
def site_names(domains: Iterable[str] | None) -> list[str]:
    """`{{ target.include_domains|site_names|join:", " }}`: sites kept in
    their ASCII form (xn--bcher-kva.de) as people write them (bücher.de)."""
    return [rules.unicode_domain(domain) for domain in domains or ()]


@register.simple_tag
def mail_not_sent() -> str:
    """`{% mail_not_sent as reason %}`: why no e-mail leaves this server (the
    log backend), or "" when e-mail is sent."""
    return not_sent_reason() or ""


@register.simple_tag
def schedule_said(monitor: Any) -> SafeString:
    """`{% schedule_said monitor %}`: "Every 30 minutes, Europe/Berlin"; when
    there are no plain words for it, "Custom schedule, UTC" and its cron, the
    only way left to say exactly when it runs."""
    words = describe(monitor.schedule)
    if words is not None:
        return format_html("{}, {}", words, monitor.run_zone)
    return format_html(
        '{} <code class="muted" title="Cron expression">{}</code>, {}',
        CUSTOM_SCHEDULE,
        monitor.schedule_cron,
        monitor.run_zone,
    )


@register.filter
def check_status_label(status: str) -> str:
    return CHECK_STATUS_LABELS.get(status, status)


@register.filter
def check_status_symbol(status: str) -> str:
    return CHECK_STATUS_SYMBOLS.get(status, "?")


@register.filter
def page_status_label(status: str) -> str:
    return PAGE_STATUS_LABELS.get(status, status)


@register.filter
def page_result_label(page: Any) -> str:
    """`{{ page|page_result_label }}`: a PageResult's status in words, where
    one is at hand (a status alone cannot tell a page still gone)."""
    if page.is_still_gone and page.error_kind == ErrorKind.NOT_FOUND_PAGE:
        return STILL_NOT_FOUND_LABEL
    if page.is_still_gone:
        return STILL_GONE_LABEL.format(code=page.status_code)
    return page_status_label(page.status)


@register.filter
def result_tone(page: Any) -> str:
    """`s-{{ page|result_tone }}`: the colour of a PageResult's status badge,
    its status's, but the calm one of the counts ("noise") for a change the
    judge called unimportant, so it never looks like one that matters."""
    if page.status == "changed" and getattr(page, "verdict", "") == "noise":
        return "noise"
    return str(page.status)


# metadata.searchStatus of a search result (checks.search.stage), in words.
SEARCH_STATUS_LABELS = {status: words[0] for status, words in SEARCH_WORDS.items()}


@register.filter
def search_status_label(status: str) -> str:
    return SEARCH_STATUS_LABELS.get(status, status)


# SearchResultState.status: what a monitor knows of a result it has seen.
SEARCH_STATE_LABELS = {
    "alerted": "Reported",
    "ignored": "Not relevant",
    "watching": "Watching: not sure yet",
    "skipped": "Could not be judged yet",
}


@register.filter
def search_state_label(status: str) -> str:
    return SEARCH_STATE_LABELS.get(status, status)


@register.filter
def from_iso(value: str | None) -> datetime | None:
    """A time stored as ISO 8601 text (page metadata) as a datetime."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


@register.filter
def summary_parts(
    summary: Mapping[str, int] | None, noise: int | None = 0
) -> list[tuple[str, int, str]]:
    """(status, count, words) for the non-zero counts of a check summary;
    changed pages the judge called not meaningful (`noise` of them) are told
    apart as "noise", so a change that does not matter never reads like one
    that does."""
    if not summary:
        return []
    pages = page_counts(summary)
    found = search_counts(summary)
    parts = []
    if "alert" in found:  # a search's new matches lead, like changes
        matches = found.pop("alert")
        parts.append(("new", matches, search_words("alert", matches)))
    for status in SUMMARY_ORDER:
        count = pages[status]
        if not count:
            continue
        if status == "changed" and noise:
            parts.extend(_changed_parts(count, min(int(noise), count)))
            continue
        if status == "same":  # what else a search found comes before
            parts += [_search_part(s, n) for s, n in found.items()]
            found = {}
        parts.append((status, count, f"{count} {SUMMARY_WORDS[status]}"))
    parts += [_search_part(s, n) for s, n in found.items()]
    return parts


def _search_part(status: str, count: int) -> tuple[str, int, str]:
    """A search outcome as a count: muted ("same") unless it failed."""
    kind = "error" if status == "skipped" else "same"
    return (kind, count, search_words(status, count))


def _changed_parts(changed: int, noise: int) -> list[tuple[str, int, str]]:
    unimportant = "judged unimportant"
    if noise == changed:
        words = "1 change" if noise == 1 else f"{noise} changes"
        return [("noise", noise, f"{words}, {unimportant}")]
    return [
        ("changed", changed - noise, f"{changed - noise} changed"),
        ("noise", noise, f"{noise} more {unimportant}"),
    ]


@register.filter
def looking_at(check: Any) -> str:
    """`{{ running_check|looking_at }}`: what a running check looks at,
    "pages", "search results" or both."""
    return looked_at_words(2, check.search_results_total, int(check.pages_total))


@register.simple_tag
def progress_words(check: Any, monitor: Any) -> str:
    """`{% progress_words running_check monitor %}`: how far a running check
    is, in words: "3 of 7 pages done", "2 of 5 search results done"; a
    crawl's total is what it found so far."""
    done, total = int(check.pages_done), int(check.pages_total)
    results = check.search_results_total
    if monitor.finds_pages:
        noun = looked_at_words(done, results, total)
        return f"{done} {noun} checked of {total} found so far; more may be found"
    return f"{done} of {total} {looked_at_words(total, results, total)} done"


@register.filter
def http_url(url: str | None) -> str:
    """The URL when it may be a link (http/https only); "" otherwise."""
    if not url:
        return ""
    try:
        scheme = urlsplit(url).scheme.lower()
    except ValueError:
        return ""
    return url if scheme in ("http", "https") else ""


register.filter("short_url", short_url)


@register.filter
def summary_template(target: Any) -> str:
    """`{% include target|summary_template %}`: the monitor page's lines about
    a target, from its kind (a plain one for a type no kind knows)."""
    kind = target.kind
    return kind.summary_template if kind is not None else TargetKind.summary_template


@register.filter
def described(target: Any) -> str:
    """A target in a few plain words, as its kind says it."""
    kind = target.kind
    return kind.describe(target) if kind is not None else f"A {target.type} target"


@register.filter
def names_in_words(things: Iterable[Any], shown: int = 3) -> str:
    """Monitors by name, as staff say them: "Alpha and Bravo", "Alpha, Bravo,
    Charlie and 2 more". One more than `shown` is named rather than counted:
    "and 1 more" would take as much room as the name."""
    names = [str(getattr(thing, "name", thing)) for thing in things]
    if len(names) > shown + 1:
        names = [*names[:shown], f"{len(names) - shown} more"]
    if len(names) < 2:
        return "".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]


@register.filter
def targets_summary(monitor: Any) -> str:
    """What a monitor watches, in a few words: "example.com/pricing + 2 more"."""
    things: list[str] = []
    for target in monitor.targets.all():
        if target.kind is not None:
            things.extend(target.kind.summary_items(target))
    if not things:
        return ""
    more = len(things) - 1
    return things[0] + (f" + {more} more" if more else "")


@register.filter
def plain_check_error(text: str | None) -> str:
    """`{{ check.error|plain_check_error }}`: a check's error (written for the
    API) without setting names, for people using the dashboard."""
    return search_provider.in_message_words(text or "")


@register.filter
def check_error_for_administrator(text: str | None) -> str:
    """What plain_check_error left out that an administrator changes (a search
    service's refusal of its set-up), said after "For the administrator:"."""
    return " ".join(search_provider.refusals(text or ""))


@register.simple_tag
def page_error(page: Any) -> str:
    """`{% page_error page %}`: a PageResult's error in plain words (escaped
    by the template like any simple tag's output)."""
    return plain_error(page.error_kind, page.status_code, page.error)


@register.simple_tag(takes_context=True)
def error_title(context: template.Context) -> str:
    """`{% error_title %}` in base.html's <title>: "Error: " when the page
    shows a refused form (GOV.UK's pattern), so a screen reader hears at once
    that the submission did not go through. A refused form is a bound Django
    form or formset with errors, or the `errors` / `error` / `refused` a view
    that checks by hand (channels, second factor, import) puts in its context."""
    refused = any(
        isinstance(value, BaseForm | BaseFormSet)
        and value.is_bound
        and (
            value.total_error_count()
            if isinstance(value, BaseFormSet)
            else value.errors
        )
        for value in context.flatten().values()
    )
    if refused or any(context.get(name) for name in ("errors", "error", "refused")):
        return "Error: "
    return ""


@register.simple_tag
def error_slot(
    form: Any,
    slot: str,
    messages: Any = None,
    oob: bool = False,
    controls: list[str] | None = None,
) -> SafeString:
    """The error container of one field: always present (so aria-describedby
    and htmx out-of-band swaps have a target), empty when there is no error.
    `controls` (else the form's controls_for(slot)) names the controls its
    messages are about when the slot describes several (data-controls, read
    by static/js/app.js to set aria-invalid)."""
    if messages is None:
        errors = getattr(form, "errors", None) or {}
        messages = errors.get(slot, [])
    if controls is None and hasattr(form, "controls_for"):
        controls = form.controls_for(slot)
    items = format_html_join("", "<p>{}</p>", ((m,) for m in messages))
    return format_html(
        '<div id="err-{}" class="field-error"{}{}>{}</div>',
        slot,
        format_html(' data-controls="{}"', " ".join(controls)) if controls else "",
        SafeString(' hx-swap-oob="true"') if oob else "",
        items,
    )


_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun",
           "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")  # fmt: skip


_CONFIDENCE = {"high": "quite sure", "medium": "fairly sure", "low": "unsure"}


@register.filter
def confidence_words(confidence: str | None) -> str:
    """The judge's confidence in plain words ("high" -> "quite sure")."""
    return _CONFIDENCE.get(str(confidence or ""), "unsure")


@register.filter
def field_value(value: Any) -> str:
    """One extracted field's value as text: strings as they are, the rest as
    compact JSON, nothing for a missing value. Escaped by the template."""
    if value is None:
        return "—"
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, indent=1)


@functools.cache
def _cell_parts(status: str) -> tuple[str, str, str]:
    """(class, label, symbol) of a status, escaped once."""
    return (
        html.escape(f"cell c-{status}"),
        html.escape(check_status_label(status)),
        html.escape(check_status_symbol(status)),
    )


def _strip_cell(check: Any, zone: Any) -> str:
    """One cell, as HTML: a monitors.history.RecentCheck as a status symbol,
    with its time (to the second) and what it found on hover. Plain string
    building from escaped parts: 350 cells through format_html and strftime
    were most of the list's rendering time."""
    css, label, symbol = _cell_parts(check.status)
    at = check.at.astimezone(zone)
    title = (
        f"{_DAYS[at.weekday()]} {at.day:02d} {_MONTHS[at.month - 1]},"
        f" {at.hour:02d}:{at.minute:02d}:{at.second:02d}: {label}"
    )
    # The words of the History page's counts (summary_parts), in its order,
    # its "not judged" badge last.
    if check.matches:  # a search's new matches lead, as in summary_parts
        title += f", {search_words('alert', int(check.matches))}"
    changed = int(check.changed)
    noise = min(int(check.noise), changed)
    if noise:
        title += "".join(f", {words}" for _, _, words in _changed_parts(changed, noise))
    elif changed:
        title += f", {changed} changed"
    if check.new:
        title += f", {int(check.new)} new"
    if check.removed:
        title += f", {int(check.removed)} removed"
    if check.not_judged:
        title += f", {int(check.not_judged)} not judged"
    if check.found_changes_that_matter:
        css += " has-changes"
    return f'<li class="{css}" title="{title}">{symbol}</li>'


def _strip_words(checks: list[Any]) -> str:
    """The strip in one sentence, for screen readers: "Last 14 checks, oldest
    first: 12 completed, 2 completed with errors; 3 found changes", and how
    many of those found only changes judged unimportant."""
    labels: dict[str, int] = {}
    for check in checks:
        label = check_status_label(check.status).lower()
        labels[label] = labels.get(label, 0) + 1
    matter = sum(check.found_changes_that_matter for check in checks)
    noise_only = sum(
        check.found_changes and not check.found_changes_that_matter for check in checks
    )
    counts = ", ".join(f"{n} {label}" for label, n in labels.items())
    plural = "s" if len(checks) != 1 else ""
    found = (
        f"{matter} found changes that matter, {noise_only} only changes judged"
        " unimportant"
        if noise_only
        else f"{matter} found changes"
    )
    return f"Last {len(checks)} check{plural}, oldest first: {counts}; {found}"


@register.simple_tag
def check_strip(monitor: Any) -> SafeString:
    """`{% check_strip monitor %}`: a monitor's recent checks as small cells
    (status symbol, time and changes on hover) and one sentence for screen
    readers. Built here rather than in a template loop, which made the
    monitor list's page heavy to render and to download."""
    checks = monitor.recent_checks
    try:
        zone = ZoneInfo(monitor.schedule_timezone)
    except (ValueError, KeyError):
        zone = timezone.get_current_timezone()
    cells = "".join(_strip_cell(check, zone) for check in checks)
    return format_html(
        '<ol class="strip" aria-hidden="true">{}</ol>'
        '<span class="visually-hidden">{}</span>',
        SafeString(cells),  # noqa: S308 (built above from escaped parts)
        _strip_words(checks),
    )


_FETCHED_HOW = {
    Via.OPTIONS: "Opened in a real browser, as this page's settings ask.",
    Via.REMEMBERED: (
        "Opened in a real browser: an earlier check found that scripts build "
        "this page's content."
    ),
    Via.DETECTED: (
        "Opened in a real browser: scripts build this page's content, which a "
        "plain download does not show."
    ),
}
_NO_BROWSER_HOW = (
    "Scripts seem to build this page's content, but no browser is installed "
    "to show it, so what was read may be incomplete."
)


@register.simple_tag
def fetched_how(page: Any) -> str:
    """`{% fetched_how page as how %}`: how a page result was fetched, in
    plain words ("" for an ordinary download)."""
    metadata = page.metadata or {}
    reason = str(metadata.get("fetchedWithReason") or "")
    if metadata.get("fetchedWith") != "browser":
        return _NO_BROWSER_HOW if "no browser is available" in reason else ""
    for via, sentence in FETCHED_BECAUSE.items():
        if reason.startswith(sentence.split("{", 1)[0]):
            return _FETCHED_HOW[via]
    return "Opened in a real browser."


@register.filter
def event_label(event: str | None) -> str:
    """ "monitor.check.completed" -> "Check finished"; an unknown name as is.
    Templates keep the raw name in a title for whoever wires up the receiver."""
    return events.words_for(event)


@register.filter
def event_labels(names: Iterable[str] | None) -> str:
    """A webhook's `events` in words, "Each page's result, Check finished"
    (no list means every event, as events.wants reads it)."""
    return ", ".join(event_label(name) for name in (names or events.ALL))


@register.filter
def delivery_error(text: str | None) -> str:
    """A delivery's error in plain words (see transports.answer_in_plain_words)."""
    return transports.answer_in_plain_words(str(text or ""))


@register.filter
def delivery_outcome(delivery: Any) -> str:
    """What became of a message that was not delivered, in a sentence (see
    transports.outcome_in_words)."""
    return transports.outcome_in_words(delivery)


@register.filter
def planned_schedule(validated: Mapping[str, Any] | None) -> str:
    """When an import's planned monitor runs, in words (its cron when there
    are none)."""
    schedule = (validated or {}).get("schedule") or {}
    cron, zone = schedule.get("cron"), schedule.get("timezone") or "UTC"
    if not cron:
        return ""
    words = describe(Schedule(cron, zone))
    return f"{words}, {zone}" if words else f"{CUSTOM_SCHEDULE} ({cron}), {zone}"


@register.filter
def visual_words(change: Any) -> str:
    """How much of a page's screenshot looks different, in a sentence."""
    places = len(change.boxes)
    if not places:
        return (
            "Nothing looks different: the two screenshots differ only in a "
            "few faint pixels."
        )
    percent = change.changed_fraction * 100
    share = "Less than 1 %" if percent < 1 else f"About {round(percent)} %"
    where = "in 1 place" if places == 1 else f"in {places} places"
    return f"{share} of the page looks different, {where}."


@register.simple_tag
def keys_made(count: int, who: str, writes: bool = False) -> str:
    """ "the 2 API keys they made": teams.models.keys_made_words."""
    return keys_made_words(count, who, writes=writes)


@register.simple_tag
def keys_stop(count: int, who: str, writes: bool = False) -> str:
    """ "The API key you made stops working": teams.models.keys_stop_words."""
    return keys_stop_words(count, who, writes=writes)
