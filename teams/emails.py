"""The invitation e-mail, sent through the site's e-mail settings."""

from __future__ import annotations

from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.template.loader import render_to_string
from django.urls import reverse

from checks.notify.texts import one_line, render_text
from teams.models import INVITATION_VALID_FOR, Invitation, role_words


def invitation_url(token: str) -> str:
    return settings.PUBLIC_BASE_URL + reverse("invitation-accept", args=[token])


def send_invitation(invitation: Invitation, token: str) -> None:
    """Send the invitation now (like Django's password reset e-mail): the
    owner learns at once whether it left. Raises what the mail backend raises."""
    inviter = invitation.invited_by
    context = {
        "team_name": invitation.team.name,
        "inviter": (inviter.get_full_name() or inviter.get_username())
        if inviter
        else "An administrator",
        "role": role_words(invitation.role),
        "url": invitation_url(token),
        "days": INVITATION_VALID_FOR.days,
    }
    message = EmailMultiAlternatives(
        subject=one_line(render_text("emails/invitation_subject.txt", context)),
        body=render_text("emails/invitation.txt", context),
        from_email=settings.DEFAULT_FROM_EMAIL,
        to=[invitation.email],
        headers={"Auto-Submitted": "auto-generated"},
    )
    message.attach_alternative(
        render_to_string("emails/invitation.html", context), "text/html"
    )
    message.send()
