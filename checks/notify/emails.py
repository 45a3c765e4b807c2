"""The e-mails Pagewatch sends, built from templates/emails/: a check's
changes, an address's confirmation, a webhook turned off; and whether one may
still go out.

What goes into them lives beside: checks.notify.texts (the text engine,
one-line subjects, links), checks.notify.consent (the signed links and what
they do) and checks.notify.reports (a check's changes as people read them).
Their names are reachable from here too, as callers have always used them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.core.mail import EmailMultiAlternatives
from django.urls import reverse

from checks.notify import events, mail_headers
from checks.notify.consent import (
    CONFIRM_MAX_AGE,
    CONFIRM_SALT,
    UNSUBSCRIBE_SALT,
    OneLineHeader,
    confirm_recipient,
    confirm_token,
    confirm_url,
    one_click_url,
    read_confirm_token,
    read_unsubscribe_token,
    unsubscribe_headers,
    unsubscribe_recipient,
    unsubscribe_token,
    unsubscribe_url,
)
from checks.notify.kinds.base import mask_url
from checks.notify.reports import (
    DIFF_LINE_CHARS,
    DIFF_LINES,
    DIFF_PAGES,
    GAP,
    REASON_CHARS,
    ChangeReport,
    PageLine,
    attach_diffs,
    change_report,
    diff_excerpt,
)
from checks.notify.texts import (
    SUBJECT_MAX,
    http_href,
    message,
    one_line,
    render_text,
)
from monitors import clock
from monitors.links import public_url
from monitors.models import EmailRecipient, Monitor
from monitors.time_words import on_the_clock

if TYPE_CHECKING:
    from checks.notify.models import Delivery

__all__ = [
    "CONFIRMATION",
    "CONFIRM_MAX_AGE",
    "CONFIRM_SALT",
    "DIFF_LINES",
    "DIFF_LINE_CHARS",
    "DIFF_PAGES",
    "GAP",
    "NOTIFICATION",
    "PAGES_LISTED",
    "REASON_CHARS",
    "SUBJECT_MAX",
    "UNSUBSCRIBE_SALT",
    "WEBHOOK_DISABLED",
    "ChangeReport",
    "OneLineHeader",
    "PageLine",
    "build",
    "change_report",
    "confirm_recipient",
    "confirm_token",
    "confirm_url",
    "consent_problem",
    "diff_excerpt",
    "http_href",
    "one_click_url",
    "one_line",
    "read_confirm_token",
    "read_unsubscribe_token",
    "render_text",
    "unsubscribe_headers",
    "unsubscribe_recipient",
    "unsubscribe_token",
    "unsubscribe_url",
]

# The events e-mails are sent for (and their words: checks.notify.events).
NOTIFICATION = events.EMAIL_NOTIFICATION
CONFIRMATION = events.EMAIL_CONFIRMATION
WEBHOOK_DISABLED = events.EMAIL_WEBHOOK_DISABLED

PAGES_LISTED = 20
WATCHED_LISTED = 5
NAME_IN_SUBJECT_MAX = 120


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
        "monitor_url": public_url(monitor.get_absolute_url()),
    }


def build_notification(delivery: Delivery) -> EmailMultiAlternatives:
    check = delivery.check_run
    monitor = delivery.monitor
    recipient = delivery.recipient
    assert check is not None and recipient is not None
    report = change_report(check)
    include_diffs = bool(monitor.email_settings.get("includeDiffs"))
    if include_diffs:
        attach_diffs(check, report)
    listed = report.pages[:PAGES_LISTED]
    # Pagewatch's pages open only for the team's members: an address outside
    # the team is offered none (each would end at a sign-in page), nor the
    # team's credits; the pages watched and the unsubscribe link stay.
    in_team = recipient.email.lower() in monitor.team.member_emails()
    for page in listed if in_team else ():
        page.pagewatch_url = public_url(
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
        "check_url": public_url(check.get_absolute_url()) if in_team else "",
        # When it looked, on the team's clock: a retried e-mail can come late.
        "checked_at": on_the_clock(
            check.started_at or check.created_at, clock.team_zone(monitor.team)
        ),
        "counts": report.counts,
        "counts_line": report.counts_line(),
        "meaningful": report.meaningful,
        "noise": report.noise,
        "not_judged": report.not_judged,
        "judged": report.judged,
        "pages": listed,
        "failures": report.failures,
        "first_check": first_check,
        # Nothing changed, only pages (or searches) that could not be checked:
        # not "found changes".
        "only_errors": all(page.status == "error" for page in report.pages),
        "more_pages": max(len(report.pages) - PAGES_LISTED, 0),
        "include_diffs": include_diffs,
        "diffs_shown": any(page.diff_lines for page in listed),
        # Credits mean something only to a team with an allowance.
        "credits": check.actual_credits
        if in_team and monitor.team.counts_credits
        else None,
        "credit_allowance": monitor.team.credit_allowance,
        "unsubscribe_url": unsubscribe_url(recipient),
        "email": recipient.email,
    }
    subject = render_text("emails/check_changes_subject.txt", context)
    return message(
        subject=subject,
        to=recipient.email,
        text_template="emails/check_changes.txt",
        html_template="emails/check_changes.html",
        context=context,
        headers={
            **mail_headers.message_id(delivery.webhook_id, recipient.email),
            # Every e-mail of the monitor's in one thread, none of another's.
            **mail_headers.in_thread(mail_headers.thread_root("changes", monitor.pk)),
            **mail_headers.list_id(monitor.name, "monitor", monitor.pk),
            **unsubscribe_headers(recipient),
        },
    )


def _watched(monitor: Monitor) -> list[str]:
    """What a monitor watches, item by item, as its list in the dashboard
    says it: "example.com/pricing", "example.com (whole site)", "search “…”"."""
    return [
        one_line(item, NAME_IN_SUBJECT_MAX)
        for target in monitor.targets.all()
        if target.kind is not None
        for item in target.kind.summary_items(target)
    ]


def build_confirmation(delivery: Delivery) -> EmailMultiAlternatives:
    recipient = delivery.recipient
    assert recipient is not None
    # Whoever is asked to consent hears to what: the monitor's name alone
    # ("Prices") does not say which pages, nor what mail would come.
    watched = _watched(delivery.monitor)
    context = {
        **_monitor_context(delivery.monitor),
        "watched": watched[:WATCHED_LISTED],
        "more_watched": max(len(watched) - WATCHED_LISTED, 0),
        "email": recipient.email,
        # A stranger's inbox: a person they may know, of a team they may not.
        "added_by": recipient.added_by,
        "confirm_url": confirm_url(recipient),
        "expires_days": CONFIRM_MAX_AGE.days,
    }
    return message(
        subject=render_text("emails/confirm_subject.txt", context),
        to=recipient.email,
        text_template="emails/confirm.txt",
        html_template="emails/confirm.html",
        context=context,
        headers={
            **mail_headers.message_id(delivery.webhook_id, recipient.email),
            **mail_headers.list_id(
                delivery.monitor.name, "monitor", delivery.monitor.pk
            ),
        },
    )


def build_webhook_disabled(delivery: Delivery) -> EmailMultiAlternatives:
    context = {
        **_monitor_context(delivery.monitor),
        # In shape only, as the activity log keeps it: every member gets this
        # e-mail, and a hook address is often its receiver's credential.
        "webhook_address": mask_url(delivery.url) if delivery.url else "",
        # Straight to the form's webhook field.
        "edit_url": public_url(reverse("monitor-edit", args=[delivery.monitor.pk]))
        + "#field-webhook_url",
    }
    return message(
        subject=render_text("emails/webhook_disabled_subject.txt", context),
        to=delivery.email,
        text_template="emails/webhook_disabled.txt",
        html_template="emails/webhook_disabled.html",
        context=context,
        headers={
            **mail_headers.message_id(delivery.webhook_id, delivery.email),
            **mail_headers.list_id(
                delivery.monitor.name, "monitor", delivery.monitor.pk
            ),
        },
    )
