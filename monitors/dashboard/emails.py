"""Public consent pages behind the links in Pagewatch's e-mails (no login).

GET only shows a page with a button; only POST acts, so link scanners and
mail-client previews never confirm or unsubscribe anybody. Tokens are signed
(checks.notify.emails) and name one EmailRecipient; a bad token is a 404 page.

The RFC 8058 one-click endpoint is the one CSRF-exempt view: mail clients POST
`List-Unsubscribe=One-Click` to it without any cookie or form token. That is
safe because its only effect is unsubscribing the address the signed token
names, idempotently; a forger would need the token itself.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from checks.notify import consent, emails
from checks.notify.kinds import team_email
from monitors.models import Channel, EmailRecipient
from teams.activity import Actor, Kind, record


def _invalid(request: HttpRequest) -> HttpResponse:
    return render(request, "emails/consent_invalid.html", status=404)


def _context(recipient: EmailRecipient, **extra: object) -> dict[str, object]:
    return {
        "recipient": recipient,
        "monitor_name": emails.one_line(recipient.monitor.name, 120),
        "team_name": recipient.monitor.team.name,
        **extra,
    }


def _unsubscribed(request: HttpRequest, recipient: EmailRecipient) -> None:
    """The monitor's team hears that this address stopped its e-mails."""
    monitor = recipient.monitor
    actor = Actor.email_link(request, recipient.email)
    record(
        actor, monitor.team_id, Kind.EMAIL_UNSUBSCRIBED, monitor, email=recipient.email
    )


def _left(request: HttpRequest, channel: Channel, accounts: Iterable[int]) -> None:
    """The channel's team hears who stopped its e-mails, and whether anybody
    still gets them (its messages are cancelled when nobody does)."""
    people = list(get_user_model().objects.filter(pk__in=accounts).order_by("pk"))
    to = ", ".join(sorted({p.email.lower() for p in people if p.email})) or "someone"
    actor = Actor.email_link(request, to, user=people[0] if people else None)
    record(
        actor,
        channel.team,
        Kind.CHANNEL_LEFT,
        channel=channel.pk,
        name=channel.name,
        email=to,
        nobody_left=not team_email.chosen(channel.team, channel.settings),
    )


def _page(request: HttpRequest, template: str, context: dict) -> HttpResponse:
    response = render(request, template, context)
    response["X-Robots-Tag"] = "noindex"
    return response


@login_not_required
@never_cache
@require_http_methods(["GET", "POST"])
def confirm(request: HttpRequest, token: str) -> HttpResponse:
    recipient = emails.read_confirm_token(token)
    if recipient is None:
        return _invalid(request)
    done = request.method == "POST" and emails.confirm_recipient(recipient)
    if done:
        monitor = recipient.monitor
        record(Actor.email_link(request, recipient.email), monitor.team_id,
               Kind.EMAIL_CONFIRMED, monitor, email=recipient.email)  # fmt: skip
    return _page(request, "emails/consent_confirm.html", _context(recipient, done=done))


@login_not_required
@never_cache
@require_http_methods(["GET", "POST"])
def unsubscribe(request: HttpRequest, token: str) -> HttpResponse:
    recipient = emails.read_unsubscribe_token(token)
    if recipient is None:
        return _invalid(request)
    done = request.method == "POST" and emails.unsubscribe_recipient(recipient)
    if done:
        _unsubscribed(request, recipient)
    context = _context(
        recipient,
        done=done,
        form_action=reverse("email_unsubscribe", args=[token]),
    )
    return _page(request, "emails/consent_unsubscribe.html", context)


@login_not_required
@csrf_exempt
@never_cache
@require_http_methods(["GET", "POST"])
def one_click_unsubscribe(request: HttpRequest, token: str) -> HttpResponse:
    if request.method == "GET":
        # A person (or a client without RFC 8058) opened the header's link:
        # show the page with its button rather than acting on a GET.
        return redirect("email_unsubscribe", token=token)
    if request.POST.get("List-Unsubscribe") != "One-Click":
        return HttpResponseBadRequest("Expected List-Unsubscribe=One-Click.")
    recipient = emails.read_unsubscribe_token(token)
    if recipient is None:
        return HttpResponse("Unknown or invalid link.", status=404)
    if emails.unsubscribe_recipient(recipient):
        _unsubscribed(request, recipient)
    return HttpResponse("Unsubscribed.", content_type="text/plain")


@login_not_required
@never_cache
@require_http_methods(["GET", "POST"])
def channel_unsubscribe(request: HttpRequest, token: str) -> HttpResponse:
    """A team channel's e-mail: take the accounts it went to off the channel."""
    found = consent.read_channel_token(token)
    if found is None:
        return _invalid(request)
    channel, accounts = found
    done = request.method == "POST" and consent.leave_channel(channel, accounts)
    if done:
        _left(request, channel, accounts)
    context = {
        "channel": channel,
        "done": done,
        "on_channel": consent.on_channel(channel, accounts),
        "form_action": reverse("email_channel_unsubscribe", args=[token]),
    }
    return _page(request, "emails/consent_channel.html", context)


@login_not_required
@csrf_exempt
@never_cache
@require_http_methods(["GET", "POST"])
def channel_one_click_unsubscribe(request: HttpRequest, token: str) -> HttpResponse:
    if request.method == "GET":
        return redirect("email_channel_unsubscribe", token=token)
    if request.POST.get("List-Unsubscribe") != "One-Click":
        return HttpResponseBadRequest("Expected List-Unsubscribe=One-Click.")
    found = consent.read_channel_token(token)
    if found is None:
        return HttpResponse("Unknown or invalid link.", status=404)
    if consent.leave_channel(*found):
        _left(request, *found)
    return HttpResponse("Unsubscribed.", content_type="text/plain")
