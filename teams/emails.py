"""The invitation e-mail, sent through the site's e-mail settings, and the
password-reset e-mail, sent by a worker."""

from __future__ import annotations

import logging
from email.utils import make_msgid
from urllib.parse import urlsplit

from celery import current_app
from django.conf import settings
from django.contrib.auth.forms import PasswordResetForm
from django.core.mail import EmailMultiAlternatives
from django.template.loader import render_to_string
from django.urls import reverse

from checks import outages
from checks.notify.mail_headers import mail_domain
from checks.notify.texts import one_line, render_text
from monitors.links import public_origin, public_url
from teams.models import INVITATION_VALID_FOR, Invitation

logger = logging.getLogger(__name__)


def invitation_url(token: str) -> str:
    return public_url(reverse("invitation-accept", args=[token]))


def send_invitation(invitation: Invitation, token: str) -> None:
    """Send the invitation now (like Django's password reset e-mail): the
    owner learns at once whether it left. Raises what the mail backend raises."""
    inviter = invitation.invited_by
    context = {
        "team_name": invitation.team.name,
        "inviter": (inviter.get_full_name() or inviter.get_username())
        if inviter
        else "An administrator",
        "role_words": invitation.role_words,
        "url": invitation_url(token),
        "days": INVITATION_VALID_FOR.days,
    }
    message = EmailMultiAlternatives(
        subject=one_line(render_text("emails/invitation_subject.txt", context)),
        body=render_text("emails/invitation.txt", context),
        from_email=settings.DEFAULT_FROM_EMAIL,
        to=[invitation.email],
        headers={
            "Auto-Submitted": "auto-generated",
            # On our domain, not the sending machine's name.
            "Message-ID": make_msgid(domain=mail_domain()),
        },
    )
    message.attach_alternative(
        render_to_string("emails/invitation.html", context), "text/html"
    )
    message.send()


# The worker's task that sends a password-reset e-mail (teams.tasks).
PASSWORD_RESET_TASK = "teams.tasks.send_password_reset_task"  # noqa: S105


def queue_password_reset(email: str) -> None:
    """Hand a reset request to a worker, whether or not an account has the
    address: the request then costs the same either way, so neither its
    answer nor its time tells who has an account. Sent from the request,
    only for an address with an account, the mail server's seconds told
    exactly that.
    With the broker away the request is dropped, for every address alike:
    the person asks again."""
    try:
        current_app.send_task(PASSWORD_RESET_TASK, args=[email], expires=3600)
    except Exception as exc:
        outages.warn(logger, exc, "Could not queue a password-reset e-mail")


def send_password_reset(email: str) -> int:
    """The worker's half: e-mail a reset link to every account with this
    address (Django's PasswordResetForm, which leaves out accounts without
    a usable password), starting at PUBLIC_BASE_URL, never at a request's
    host. Returns how many accounts it found."""
    form = PasswordResetForm({"email": email})
    if not form.is_valid():
        return 0
    found = len(list(form.get_users(form.cleaned_data["email"])))
    # The template builds the link from base_url; the domain is unused.
    form.save(
        domain_override=urlsplit(settings.PUBLIC_BASE_URL).netloc,
        extra_email_context={"base_url": public_origin()},
    )
    return found
