"""The team page (members, roles, invitations) and the invitation link.

Thin: the rules live on the models (Membership.can, Membership.change_role,
Invitation.accept); team_view checks the role before a view runs."""

from __future__ import annotations

import logging
import smtplib
from typing import Any

from django.contrib import messages
from django.contrib.auth import get_user_model, login
from django.contrib.auth.decorators import login_not_required
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from checks import storage
from monitors.context import switch_team
from monitors.models import LastOwnerError, Membership
from monitors.views import Action, DashboardRequest, team_view
from teams.emails import invitation_url, send_invitation
from teams.forms import InviteForm, JoinForm, RoleForm
from teams.models import Invitation, InvitationError

logger = logging.getLogger(__name__)

# Signs the invitee in after they made their account (axes' backend only
# counts failures; it never signs anyone in).
SIGN_IN_BACKEND = "django.contrib.auth.backends.ModelBackend"


def _team_page(
    request: DashboardRequest, invite_form: InviteForm | None = None, status: int = 200
) -> HttpResponse:
    memberships = (
        Membership.objects.filter(team=request.team)
        .select_related("user")
        .order_by("role", "user__username")
    )
    pending = (
        Invitation.objects.filter(team=request.team)
        .pending(timezone.now())
        .select_related("invited_by")
    )
    # Administrators can still do everything in the Django admin.
    admin_url = (
        reverse("admin:monitors_team_change", args=[request.team.pk])
        if request.user.has_perm("monitors.change_team")
        else None
    )
    context = {
        "memberships": memberships,
        "invitations": pending,
        "invite_form": invite_form or InviteForm(team=request.team),
        "roles": Membership.Role.choices,
        "admin_url": admin_url,
        "history_bytes": storage.team_bytes(request.team),
    }
    return render(request, "teams/team_members.html", context, status=status)


@require_GET
@team_view
def team_members(request: DashboardRequest) -> HttpResponse:
    return _team_page(request)


@require_POST
@team_view(needs=Action.MANAGE)
def team_invite(request: DashboardRequest) -> HttpResponse:
    form = InviteForm(request.POST, team=request.team)
    if not form.is_valid():
        return _team_page(request, form, status=400)
    invitation, token = Invitation.issue(
        request.team,
        form.cleaned_data["email"],
        form.cleaned_data["role"],
        request.user,
        timezone.now(),
    )
    try:
        send_invitation(invitation, token)
    except (OSError, smtplib.SMTPException) as exc:
        logger.warning("Invitation e-mail to %s not sent: %s", invitation.email, exc)
        messages.warning(
            request,
            f"The invitation for {invitation.email} is ready, but the e-mail could "
            f"not be sent. Give them this link yourself: {invitation_url(token)}",
        )
    else:
        messages.success(request, f"Invitation sent to {invitation.email}.")
    return redirect("team-members")


@require_POST
@team_view(needs=Action.MANAGE)
def invitation_revoke(request: DashboardRequest, invitation_id: int) -> HttpResponse:
    invitation = Invitation.objects.filter(team=request.team, pk=invitation_id).first()
    if invitation is None:
        raise Http404("Invitation not found")
    if invitation.revoke(timezone.now()):
        messages.success(
            request, f"The invitation for {invitation.email} is withdrawn."
        )
    else:
        messages.info(request, "This invitation was already used or withdrawn.")
    return redirect("team-members")


def _membership_for(request: DashboardRequest, membership_id: int) -> Membership:
    membership = (
        Membership.objects.filter(team=request.team, pk=membership_id)
        .select_related("user")
        .first()
    )
    if membership is None:
        raise Http404("Member not found")
    return membership


@require_POST
@team_view(needs=Action.MANAGE)
def member_role(request: DashboardRequest, membership_id: int) -> HttpResponse:
    membership = _membership_for(request, membership_id)
    form = RoleForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose owner, editor or viewer.")
        return redirect("team-members")
    try:
        membership.change_role(form.cleaned_data["role"])
    except LastOwnerError as exc:
        messages.error(request, str(exc))
    else:
        name = membership.user.get_username()
        messages.success(request, f"{name} is now {membership.get_role_display()}.")
    return redirect("team-members")


@require_POST
@team_view(needs=Action.MANAGE)
def member_remove(request: DashboardRequest, membership_id: int) -> HttpResponse:
    membership = _membership_for(request, membership_id)
    try:
        membership.remove()
    except LastOwnerError as exc:
        messages.error(request, str(exc))
        return redirect("team-members")
    messages.success(request, f"{membership.user.get_username()} left the team.")
    if membership.user_id == request.user.pk:
        return redirect("monitor-list")
    return redirect("team-members")


# ---------------------------------------------------------------- the link


def _joined(request: HttpRequest, membership: Membership) -> HttpResponse:
    switch_team(request, membership.team_id)
    messages.success(
        request,
        f"Welcome to {membership.team.name}: you are {membership.role_words} here.",
    )
    return redirect("monitor-list")


@login_not_required
@require_http_methods(["GET", "POST"])
def invitation_accept(request: HttpRequest, token: str) -> HttpResponse:
    """The link in the invitation e-mail. Signed in: join with this account.
    Signed out: make an account (the invitation's address) and join, or
    sign in first and come back."""
    invitation = Invitation.for_token(token)
    now = timezone.now()
    if invitation is None:
        context = {
            "reason": "This invitation link is not valid. Check that it "
            "was copied whole, or ask for a new invitation."
        }
        return render(request, "teams/invitation.html", context, status=404)
    reason = invitation.unusable_reason(now)
    if reason:
        return render(request, "teams/invitation.html", {"reason": reason}, status=410)
    context: dict[str, Any] = {"invitation": invitation}
    if request.user.is_authenticated:
        if request.method == "POST":
            try:
                return _joined(request, invitation.accept(request.user, now))
            except InvitationError as exc:
                return render(
                    request, "teams/invitation.html", {"reason": str(exc)}, status=410
                )
        return render(request, "teams/invitation.html", context)
    form = JoinForm(request.POST or None, email=invitation.email)
    if request.method == "POST" and form.is_valid():
        try:
            with transaction.atomic():
                user = form.save()
                membership = invitation.accept(user, now)
        except InvitationError as exc:
            return render(
                request, "teams/invitation.html", {"reason": str(exc)}, status=410
            )
        login(request, user, backend=SIGN_IN_BACKEND)
        return _joined(request, membership)
    context |= {
        "form": form,
        "has_account": get_user_model()
        .objects.filter(email__iexact=invitation.email)
        .exists(),
        "sign_in_url": reverse("login") + "?next=" + request.path,
    }
    status = 400 if request.method == "POST" else 200
    return render(request, "teams/invitation.html", context, status=status)
