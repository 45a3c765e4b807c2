"""The e-mails Pagewatch sends, built from templates/emails/, and the signed
tokens in their consent links.

Bodies come from templates: the HTML part through Django's autoescaping
engine, the plain-text part and the subject through a twin engine without
HTML escaping (they are not HTML; escaping would only print `&amp;`).
Subjects are stripped of line breaks; links are only made from http(s) URLs.
Readers are people, not programs: page errors are said in the dashboard's
plain words, and diff excerpts carry no unified-diff hunk headers.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import cache
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core import signing
from django.core.mail import EmailMultiAlternatives
from django.db.models.fields.json import KT
from django.template import Context, Engine
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone

from checks.errors import ErrorKind, plain_error
from monitors.models import EmailRecipient, Monitor

if TYPE_CHECKING:
    from checks.models import Check
    from checks.notify.models import Delivery

NOTIFICATION = "email.notification"
CONFIRMATION = "email.confirmation"
WEBHOOK_DISABLED = "email.webhook_disabled"

# Signed into every consent link already sent: keep them as they are (they
# name this module's former path, checks/emails.py).
CONFIRM_SALT = "checks.emails.confirm"
UNSUBSCRIBE_SALT = "checks.emails.unsubscribe"
CONFIRM_MAX_AGE = timedelta(days=30)

PAGES_LISTED = 20
DIFF_PAGES = 5
DIFF_LINES = 24
DIFF_LINE_CHARS = 300
REASON_CHARS = 300
SUBJECT_MAX = 200
NAME_IN_SUBJECT_MAX = 120

_LINE_BREAKS = re.compile(r"[\r\n\t\x00-\x1f\x7f\u2028\u2029\x85]+")


# --- Rendering helpers ----------------------------------------------------------


@cache
def _text_engine() -> Engine:
    return Engine(
        dirs=[str(d) for d in settings.TEMPLATES[0]["DIRS"]],
        app_dirs=True,
        autoescape=False,
    )


def render_text(template_name: str, context: dict[str, Any]) -> str:
    template = _text_engine().get_template(template_name)
    return template.render(Context(context, autoescape=False))


def one_line(text: str, limit: int = SUBJECT_MAX) -> str:
    """Header-safe: no line breaks or control characters, bounded length."""
    flat = _LINE_BREAKS.sub(" ", text).strip()
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def absolute(path: str) -> str:
    return settings.PUBLIC_BASE_URL + path


def http_href(url: str | None) -> str | None:
    """Only http(s) URLs become links; anything else is shown as text."""
    if url and url.lower().startswith(("http://", "https://")):
        return url
    return None


def _message(
    *,
    subject: str,
    to: str,
    text_template: str,
    html_template: str,
    context: dict[str, Any],
    headers: dict[str, str] | None = None,
) -> EmailMultiAlternatives:
    message = EmailMultiAlternatives(
        subject=one_line(subject),
        body=render_text(text_template, context),
        from_email=settings.DEFAULT_FROM_EMAIL,
        to=[to],
        headers={"Auto-Submitted": "auto-generated", **(headers or {})},
    )
    message.attach_alternative(render_to_string(html_template, context), "text/html")
    return message


# --- Consent tokens -------------------------------------------------------------


def _stamp(moment: datetime | None) -> int:
    return int(moment.timestamp()) if moment else 0


def confirm_token(recipient: EmailRecipient) -> str:
    # "s" ties the token to the confirmation e-mail that carried it, so only
    # the link of the latest one confirms the address.
    payload = {
        "r": recipient.pk,
        "e": recipient.email,
        "s": _stamp(recipient.confirmation_sent_at),
    }
    return signing.dumps(payload, salt=CONFIRM_SALT, compress=True)


def unsubscribe_token(recipient: EmailRecipient) -> str:
    # Untimed and deterministic: an unsubscribe link must work for as long as
    # the e-mail that carries it, and is the same in every e-mail.
    payload = {"r": recipient.pk, "e": recipient.email}
    return signing.Signer(salt=UNSUBSCRIBE_SALT).sign_object(payload, compress=True)


def _recipient(payload: Any) -> EmailRecipient | None:
    if not isinstance(payload, dict) or not isinstance(payload.get("r"), int):
        return None
    recipient = (
        EmailRecipient.objects.select_related("monitor", "monitor__team")
        .filter(pk=payload["r"], email=payload.get("e"))
        .first()
    )
    if recipient is None or recipient.monitor.deleted_at is not None:
        return None
    return recipient


def read_confirm_token(token: str) -> EmailRecipient | None:
    try:
        payload = signing.loads(token, salt=CONFIRM_SALT, max_age=CONFIRM_MAX_AGE)
    except signing.BadSignature:
        return None
    recipient = _recipient(payload)
    if recipient is None or payload.get("s") != _stamp(recipient.confirmation_sent_at):
        return None
    return recipient


def read_unsubscribe_token(token: str) -> EmailRecipient | None:
    try:
        payload = signing.Signer(salt=UNSUBSCRIBE_SALT).unsign_object(token)
    except signing.BadSignature:
        return None
    return _recipient(payload)


def confirm_url(recipient: EmailRecipient) -> str:
    return absolute(reverse("email_confirm", args=[confirm_token(recipient)]))


def unsubscribe_url(recipient: EmailRecipient) -> str:
    return absolute(reverse("email_unsubscribe", args=[unsubscribe_token(recipient)]))


def one_click_url(recipient: EmailRecipient) -> str:
    return absolute(
        reverse("email_unsubscribe_one_click", args=[unsubscribe_token(recipient)])
    )


class OneLineHeader(str):
    """A header value that goes out as it is, on one line.

    Python's email package folds headers at 78 characters; a URL longer than
    that has no space to fold at, so it would be sent as an RFC 2047 encoded
    word ("=?utf-8?q?=3Chttps=3A//…"), which mail clients do not read as
    List-Unsubscribe's <URL>: they would offer no unsubscribe button. A value
    with a `name` and a `fold()` is a header object to email.policy, written
    by its own fold(). Only for ASCII without line breaks, within RFC 5322's
    998 characters a line (unsubscribe_headers checks)."""

    name: str

    def __new__(cls, name: str, value: str) -> OneLineHeader:
        header = super().__new__(cls, value)
        header.name = name
        return header

    def fold(self, *, policy: Any) -> str:
        return f"{self.name}: {self}{policy.linesep}"

    def __reduce__(self) -> tuple[Any, ...]:
        # Copies of the message (the locmem backend's) keep the header as it is.
        return (OneLineHeader, (self.name, str(self)))


def unsubscribe_headers(recipient: EmailRecipient) -> dict[str, str]:
    """RFC 2369 + RFC 8058 one-click: mail clients POST to the URL."""
    value = f"<{one_click_url(recipient)}>"
    if value.isascii() and len(value) < 900 and not _LINE_BREAKS.search(value):
        value = OneLineHeader("List-Unsubscribe", value)
    return {
        "List-Unsubscribe": value,
        "List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
    }


# --- Whether a check deserves an e-mail -------------------------------------------


# What a failed web search is listed as, in place of an address.
SEARCH_FAILED_PAGE = "Web search"


@dataclass
class PageLine:
    url: str
    status: str
    # The judge's verdict on a changed page; None when it gave none.
    meaningful: bool | None
    error: str = ""
    reason: str = ""
    pk: Any = None
    # The page's result in Pagewatch (what changed, in full), set for the
    # pages an e-mail lists.
    pagewatch_url: str = ""
    diff_lines: list[str] = field(default_factory=list)
    diff_truncated: bool = False
    # The judge failed open: reported as a change, and said to be unjudged.
    not_judged: bool = False
    # A web search's new match (a `new` page on the wire).
    search_match: bool = False

    @property
    def href(self) -> str | None:
        return http_href(self.url)

    @property
    def styled_diff_lines(self) -> list[tuple[str, str]]:
        """(line, inline style) for the HTML mail: mail clients drop <style>
        blocks, so removed and added lines carry their colours themselves."""
        return [(line, _diff_line_style(line)) for line in self.diff_lines]

    @property
    def label(self) -> str:
        if self.status == "changed" and self.not_judged:
            return "changed (not judged)"
        if self.status == "changed" and self.meaningful is True:
            return "changed (meaningful)"
        if self.status == "changed" and self.meaningful is False:
            return "changed (not meaningful)"
        if self.search_match:
            return "new match"
        return self.status

    @property
    def rank(self) -> int:
        """Meaningful first: changes that matter, new, errors, removed, noise."""
        if self.status == "changed":
            return 4 if self.meaningful is False else 0
        return {"new": 1, "error": 2, "removed": 3}.get(self.status, 5)


@dataclass
class ChangeReport:
    counts: Counter
    pages: list[PageLine]  # every non-same page, meaningful first

    @property
    def noteworthy(self) -> int:
        return sum(self.counts[s] for s in ("changed", "new", "removed", "error"))

    @property
    def meaningful(self) -> int:
        """Changes the judge called meaningful: what the e-mail calls so."""
        return sum(1 for p in self.pages if p.status == "changed" and p.meaningful)

    @property
    def noise(self) -> int:
        return sum(1 for p in self.pages if p.meaningful is False)

    @property
    def not_judged(self) -> int:
        return sum(1 for p in self.pages if p.status == "changed" and p.not_judged)

    @property
    def judged(self) -> bool:
        return any(p.meaningful is not None for p in self.pages)

    def suppression_reason(self) -> str | None:
        """Why no e-mail is due, or None when one is."""
        if not self.noteworthy:
            return "no_changes"
        only_noise = self.counts["changed"] == self.noise and not (
            self.counts["new"] + self.counts["removed"] + self.counts["error"]
        )
        # A changed page without a judgment counts as meaningful (fail open).
        return "not_meaningful" if only_noise else None

    def counts_line(self) -> str:
        """How many pages did what, each count with its noun ("300 pages
        changed, 5 new pages"): it also stands alone in the subject."""
        parts = []
        # Changes the judge called unimportant are counted apart, after what
        # matters: the subject leads with the changes worth opening it for.
        if n := self.counts["changed"] - self.noise:
            parts.append(f"{_pages(n)} changed{self._verdicts()}")
        if self.noise:
            more = " more" if parts else ""
            parts.append(f"{self.noise}{more} judged unimportant")
        if n := self.matches:
            parts.append(f"{n} new match{'es' if n != 1 else ''}")
        if n := self.counts["new"] - self.matches:
            parts.append(f"{n} new page{'s' if n != 1 else ''}")
        if n := self.counts["removed"]:
            parts.append(f"{_pages(n)} removed")
        if n := self.counts["error"]:
            parts.append(f"{_pages(n)} with {'errors' if n != 1 else 'an error'}")
        return ", ".join(parts) or "no changes"

    @property
    def matches(self) -> int:
        """New pages that are a web search's new matches."""
        return sum(1 for p in self.pages if p.status == "new" and p.search_match)

    @property
    def only_new(self) -> bool:
        return self.counts["new"] > 0 and self.noteworthy == self.counts["new"]

    def _verdicts(self) -> str:
        """What the judge said of the changed pages, in brackets: only a
        verdict is called meaningful, never a change it did not judge."""
        matter = self.counts["changed"] - self.noise
        if self.not_judged and self.not_judged == matter:
            return " (not judged)"
        if not self.judged:
            return ""
        words = [f"{self.meaningful} meaningful"] if self.meaningful else []
        if self.not_judged:
            words.append(f"{self.not_judged} not judged")
        return f" ({', '.join(words)})" if words else ""


def _pages(n: int) -> str:
    return f"{n} page{'s' if n != 1 else ''}"


def change_report(check: Check) -> ChangeReport:
    counts: Counter = Counter()
    pages: list[PageLine] = []
    fields = ("url", "status", "error", "error_kind", "status_code", "judgment")
    rows = check.pages.values_list(
        "pk", *fields, "verdict", KT("metadata__searchStatus")
    ).order_by("created_at", "id")
    for pk, url, status, error, kind, code, judgment, verdict, found in rows:
        counts[status] += 1
        if status == "same":
            continue
        meaningful = None
        reason = ""
        not_judged = verdict == "not_judged"  # PageResult.Verdict.NOT_JUDGED
        if status == "changed" and isinstance(judgment, dict) and not not_judged:
            meaningful = bool(judgment.get("meaningful"))
            reason = str(judgment.get("reason") or "")[:REASON_CHARS]
        # A failed-open judgment says "meaningful" but is no verdict: the page
        # is neither meaningful nor noise here (so still mailed), and
        # the label says it was not judged.
        # The stored error is written for the API ("ReadTimeout…", "HTTP 404"):
        # the e-mail says it the way the dashboard does.
        said = plain_error(kind, code, error) if (error or kind) else ""
        if kind == ErrorKind.SEARCH_FAILED:
            # Its address is the search provider's, often on the internal
            # network: nothing for a reader to open, or to be shown.
            url = SEARCH_FAILED_PAGE
        line = PageLine(url, status, meaningful, said, reason, pk)
        line.not_judged = not_judged
        line.search_match = found == "alert"
        pages.append(line)
    pages.sort(key=lambda p: p.rank)
    return ChangeReport(counts, pages)


_REMOVED_STYLE = "background: #fde8e8; color: #8a1c1c;"
_ADDED_STYLE = "background: #e6f4ea; color: #14532d;"
_GAP_STYLE = "color: #6b7280;"


def _diff_line_style(line: str) -> str:
    if line == GAP:
        return _GAP_STYLE
    if line.startswith("-"):
        return _REMOVED_STYLE
    if line.startswith("+"):
        return _ADDED_STYLE
    return ""


_HUNK = re.compile(r"@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")
GAP = "…"


def _without_hunk_headers(lines: list[str]) -> list[str]:
    """A hunk header ("@@ -12,5 +12,7 @@") means nothing to a reader: it
    becomes a "…" line where lines were left out, and goes where none were
    (a first hunk starting at the top of the page)."""
    shown = []
    for line in lines:
        if not line.startswith("@@"):
            shown.append(line)
            continue
        match = _HUNK.match(line)
        at_top = match is not None and int(match[1]) <= 1 and int(match[2]) <= 1
        if not (at_top and not shown):
            shown.append(GAP)
    return shown


def diff_excerpt(text: str) -> tuple[list[str], bool]:
    """The first DIFF_LINES lines of a unified diff's hunks, each bounded."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("@@")), 0)
    body = _without_hunk_headers(lines[start:])
    shown = [
        line if len(line) <= DIFF_LINE_CHARS else line[:DIFF_LINE_CHARS] + "…"
        for line in body[:DIFF_LINES]
    ]
    return shown, len(body) > DIFF_LINES


def _attach_diffs(check: Check, report: ChangeReport) -> None:
    chosen = [
        p for p in report.pages if p.status == "changed" and p.meaningful is not False
    ]
    chosen = chosen[:DIFF_PAGES]
    rows = check.pages.filter(pk__in=[p.pk for p in chosen])
    rows = rows.only(
        "pk", "packed_diff", "stored_diff", "previous_snapshot", "current_snapshot"
    )
    diffs = {row.pk: row.diff for row in rows.model.with_diffs(list(rows))}
    for page in chosen:
        text = (diffs.get(page.pk) or {}).get("text")
        if isinstance(text, str) and text:
            page.diff_lines, page.diff_truncated = diff_excerpt(text)


# --- Messages -------------------------------------------------------------------


def consent_problem(delivery: Delivery) -> str | None:
    """Why an e-mail delivery must not go out any more, or None."""
    monitor = delivery.monitor
    if monitor.deleted_at is not None:
        return "the monitor was deleted."
    recipient = delivery.recipient
    if delivery.event == NOTIFICATION:
        if recipient is None:
            return "the recipient was removed."
        if recipient.status != EmailRecipient.Status.CONFIRMED:
            return f"{recipient.email} is {recipient.status}."
        if not monitor.email_settings.get("enabled"):
            return "e-mail notifications were turned off."
    if delivery.event == CONFIRMATION and (
        recipient is None or recipient.status != EmailRecipient.Status.PENDING
    ):
        return "the address no longer awaits confirmation."
    return None


def build(delivery: Delivery) -> EmailMultiAlternatives:
    builders = {
        NOTIFICATION: build_notification,
        CONFIRMATION: build_confirmation,
        WEBHOOK_DISABLED: build_webhook_disabled,
    }
    return builders[delivery.event](delivery)


def _monitor_context(monitor: Monitor) -> dict[str, Any]:
    return {
        "monitor_name": one_line(monitor.name, NAME_IN_SUBJECT_MAX),
        "team_name": monitor.team.name,
        "monitor_url": absolute(monitor.get_absolute_url()),
    }


def build_notification(delivery: Delivery) -> EmailMultiAlternatives:
    check = delivery.check_run
    monitor = delivery.monitor
    recipient = delivery.recipient
    assert check is not None and recipient is not None
    report = change_report(check)
    include_diffs = bool(monitor.email_settings.get("includeDiffs"))
    if include_diffs:
        _attach_diffs(check, report)
    listed = report.pages[:PAGES_LISTED]
    for page in listed:
        page.pagewatch_url = absolute(
            reverse(
                "page-diff",
                kwargs={"pk": monitor.pk, "check_id": check.pk, "page_id": page.pk},
            )
        )
    # A monitor's first look finds every page new: say so, not "changes".
    first_check = report.only_new and not (
        monitor.checks.filter(
            created_at__lt=check.created_at, pages__isnull=False
        ).exists()
    )
    context = {
        **_monitor_context(monitor),
        "check": check,
        "check_url": absolute(check.get_absolute_url()),
        "counts": report.counts,
        "counts_line": report.counts_line(),
        "meaningful": report.meaningful,
        "noise": report.noise,
        "not_judged": report.not_judged,
        "judged": report.judged,
        "pages": listed,
        "first_check": first_check,
        "more_pages": max(len(report.pages) - PAGES_LISTED, 0),
        "include_diffs": include_diffs,
        "diffs_shown": any(page.diff_lines for page in listed),
        # Credits mean something only to a team with an allowance.
        "credits": check.actual_credits if monitor.team.counts_credits else None,
        "credit_allowance": monitor.team.credit_allowance,
        "unsubscribe_url": unsubscribe_url(recipient),
        "email": recipient.email,
    }
    subject = render_text("emails/check_changes_subject.txt", context)
    return _message(
        subject=subject,
        to=recipient.email,
        text_template="emails/check_changes.txt",
        html_template="emails/check_changes.html",
        context=context,
        headers=unsubscribe_headers(recipient),
    )


def build_confirmation(delivery: Delivery) -> EmailMultiAlternatives:
    recipient = delivery.recipient
    assert recipient is not None
    context = {
        **_monitor_context(delivery.monitor),
        "email": recipient.email,
        "confirm_url": confirm_url(recipient),
        "expires_days": CONFIRM_MAX_AGE.days,
    }
    return _message(
        subject=render_text("emails/confirm_subject.txt", context),
        to=recipient.email,
        text_template="emails/confirm.txt",
        html_template="emails/confirm.html",
        context=context,
    )


def build_webhook_disabled(delivery: Delivery) -> EmailMultiAlternatives:
    context = {
        **_monitor_context(delivery.monitor),
        "webhook_url": delivery.url,
        "edit_url": absolute(reverse("monitor-edit", args=[delivery.monitor.pk])),
        "disabled_at": delivery.created_at,
    }
    return _message(
        subject=render_text("emails/webhook_disabled_subject.txt", context),
        to=delivery.email,
        text_template="emails/webhook_disabled.txt",
        html_template="emails/webhook_disabled.html",
        context=context,
    )


# --- Consent transitions (the /email/ pages) ----------------------------------------


def confirm_recipient(recipient: EmailRecipient) -> bool:
    """The address owner confirmed (a POST with a valid, latest confirm token).

    Also re-confirms an address that unsubscribed: only its owner holds the
    token."""
    now = timezone.now()
    done = (
        EmailRecipient.objects.filter(pk=recipient.pk)
        .exclude(status=EmailRecipient.Status.CONFIRMED)
        .update(status=EmailRecipient.Status.CONFIRMED, confirmed_at=now)
    )
    recipient.refresh_from_db()
    return bool(done)


def unsubscribe_recipient(recipient: EmailRecipient) -> bool:
    """Stop all e-mail to this address from this monitor until it confirms again.
    Notifications already queued for it are cancelled when their turn comes."""
    now = timezone.now()
    done = (
        EmailRecipient.objects.filter(pk=recipient.pk)
        .exclude(status=EmailRecipient.Status.UNSUBSCRIBED)
        .update(status=EmailRecipient.Status.UNSUBSCRIBED, unsubscribed_at=now)
    )
    recipient.refresh_from_db()
    return bool(done)
