"""What follows a member's leaving, however it happened (the Team page, the
admin, a deleted account): the API keys they made stop working, an
invitation to their address they never used is withdrawn, and the monitors'
e-mails they got as a member stop.

A key is the team's, but its secret was shown once to the person who made it,
who may have kept a copy; a person who is no longer in the team must not keep
its access through one. Nor its monitors' e-mails: a member's address gets
them unconfirmed because the team vouches for its members, which ends with
the membership."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import (
    BooleanField,
    Case,
    Count,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Value,
    When,
)
from django.db.models.functions import Coalesce
from django.utils import timezone

from monitors.models import (
    ApiKey,
    EmailRecipient,
    LastOwnerError,
    Membership,
    Monitor,
    Team,
)
from teams.activity import SYSTEM, Actor, Kind, record
from teams.models import Invitation, listed


def member_left(actor: Actor, team: Team, user: Any, **details: Any) -> int:
    """Record the removal and revoke the keys `user` made for `team`; returns
    how many were revoked. `details` go into the entry (`account_deleted`)."""
    revoked = ApiKey.objects.filter(team=team, created_by=user).revoke()
    if user.email:
        # Sent before they came in another way (the admin, single sign-on):
        # unused, it would bring them back.
        now = timezone.now()
        Invitation.objects.pending(now).filter(
            team=team, email__iexact=user.email
        ).update(revoked_at=now)
    _unvouched(team, user)
    left = actor.user is not None and actor.user.pk == user.pk
    record(actor, team, Kind.MEMBER_REMOVED, member=user.get_username(),
           keys_revoked=len(revoked), **({"left": True} if left else {}),
           **details)  # fmt: skip
    return len(revoked)


def renew_feed_links(actor: Actor, team: Team) -> int:
    """Make every feed link of `team` new, its own and each monitor's (each
    has its own token), so one a former member copied answers 404; recorded
    once, as the Team page's button records the team's link. Returns how
    many monitors' links were made new.

    Not part of member_left: the others following a feed must be given the
    new links, so an owner chooses (the removal question ticks it for them
    while feeds are on; someone leaving on their own leaves a notice)."""
    # All or nothing, whoever calls it (the Team page, its notice, the
    # admin): links half renewed with no entry saying so help nobody.
    with transaction.atomic():
        team.renew_feed_token()
        renewed = Monitor.objects.for_team(team).renew_feed_tokens()
        record(actor, team, Kind.FEED_RENEWED, monitors=renewed)
    return renewed


def member_joined(actor: Actor, team: Team, user: Any, **details: Any) -> None:
    """Record someone joining `team` (an invitation, the admin, single
    sign-on). Monitors already naming their address mail it again as a
    member's (someone who left and came back was unvouched, and their rows
    wait for a confirmation nobody sends); an unsubscribe stays as it is."""
    record(actor, team, Kind.MEMBER_JOINED, **details)
    if user.email:
        EmailRecipient.objects.filter(
            monitor__team=team,
            email__iexact=user.email,
            status=EmailRecipient.Status.PENDING,
        ).update(
            status=EmailRecipient.Status.CONFIRMED,
            source=EmailRecipient.Source.TEAM,
            confirmed_at=timezone.now(),
        )


def _unvouched(team: Team, user: Any) -> None:
    """The monitors naming `user`'s address among their recipients stop
    e-mailing it: it is asked like any address outside the team from now on
    (at the next edit that keeps it). Monitors without a list of their own
    mail whoever is a member, so their rows are left for a return."""
    if not user.email:
        return
    rows = EmailRecipient.objects.filter(
        monitor__team=team,
        email__iexact=user.email,
        source=EmailRecipient.Source.TEAM,
        status=EmailRecipient.Status.CONFIRMED,
    ).select_related("monitor")
    listed = [
        row.pk
        for row in rows
        if row.email
        in {r.lower() for r in row.monitor.email_settings.get("recipients") or []}
    ]
    EmailRecipient.objects.filter(pk__in=listed).update(
        status=EmailRecipient.Status.PENDING,
        source=EmailRecipient.Source.OPT_IN,
        confirmed_at=None,
        confirmation_sent_at=None,
    )


def role_changed(actor: Actor, membership: Membership, was: str, **details: Any) -> int:
    """Record a role change. Someone made a viewer loses the write keys they
    made for the team, as someone leaving loses them all: holding one they
    could still change what their role no longer lets them. Returns how
    many were revoked."""
    revoked: list[ApiKey] = []
    if membership.role == Membership.Role.VIEWER:
        revoked = ApiKey.objects.filter(
            team=membership.team_id,
            created_by=membership.user_id,
            scope=ApiKey.Scope.WRITE,
        ).revoke()
    record(actor, membership.team_id, Kind.ROLE_CHANGED,
           member=membership.user.get_username(), role=membership.role, was=was,
           **({"keys_revoked": len(revoked)} if revoked else {}),
           **details)  # fmt: skip
    return len(revoked)


def account_deleted(sender: Any, instance: Any, **kwargs: Any) -> None:
    """pre_delete of a user, whatever deletes it (the admin, a command, the
    shell), sent inside the deletion's transaction: their keys would outlive
    them as nobody's, and each team they are still in must hear they are gone
    (its owners are asked to renew the feed links they may have copied).
    The admin takes them out of their teams first, naming the administrator;
    any other way nobody is known, and Pagewatch itself says it.

    Refused (raising rolls the deletion back) while they are the only owner
    of a team (Team.objects.left_ownerless_by, the rule the admin's
    confirmation page holds to): of one others are still in, nobody there
    could invite, change roles or hand ownership on; of one they are alone
    in, its monitors would go on checking and e-mailing for nobody."""
    if ownerless := list(Team.objects.left_ownerless_by(instance)):
        raise LastOwnerError(_left_ownerless(instance.get_username(), ownerless))
    for key in ApiKey.objects.filter(created_by=instance).revoke():
        record(SYSTEM, key.team_id, Kind.KEY_REVOKED, name=key.name,
               member=instance.get_username(), reason="account deleted")  # fmt: skip
    for membership in Membership.objects.filter(user=instance).select_related("team"):
        member_left(SYSTEM, membership.team, instance, account_deleted=True)


def _left_ownerless(name: str, teams: list[Team]) -> str:
    shared = [team.name for team in teams if team.has_others]
    alone = [team.name for team in teams if not team.has_others]
    said = []
    if shared:
        which = "which have" if len(shared) > 1 else "which has"
        said.append(
            f"{name} is the only owner of {listed(shared)}, {which} other "
            "members: make one of them an owner first, or delete the team."
        )
    if alone:
        said.append(
            f"{name} is the only member of {listed(alone)}: delete the "
            f"team{'s' if len(alone) > 1 else ''} first, or "
            f"{'their' if len(alone) > 1 else 'its'} monitors go on checking "
            "with nobody in it."
        )
    return " ".join(said)


def with_keys_made(memberships: QuerySet[Membership]) -> QuerySet[Membership]:
    """Each membership with `keys_made`: the working keys its member made for
    its team, which removing them would revoke, and `write_keys_made`: those
    of them that can change monitors, which making them a viewer would revoke
    (role_changed). The Team page says both before either is done."""
    made = (
        ApiKey.objects.active()
        .filter(team=OuterRef("team"), created_by=OuterRef("user"))
        .order_by()
        .values("created_by")
    )
    count = Count("pk")
    return memberships.annotate(
        keys_made=Coalesce(Subquery(made.annotate(n=count).values("n")), 0),
        write_keys_made=Coalesce(
            Subquery(
                made.filter(scope=ApiKey.Scope.WRITE).annotate(n=count).values("n")
            ),
            0,
        ),
    )


def with_removable(memberships: QuerySet[Membership]) -> QuerySet[Membership]:
    """Each membership with `removable`: whether its member can leave or be
    removed. The team's last owner cannot (Membership.remove refuses), so
    the Team page tells only the others what their leaving would revoke."""
    owners = (
        Membership.objects.filter(team=OuterRef("team"), role=Membership.Role.OWNER)
        .order_by()
        .values("team")
        .annotate(count=Count("pk"))
        .values("count")
    )
    last_owner = Q(role=Membership.Role.OWNER, owners__lte=1)
    return memberships.annotate(
        owners=Coalesce(Subquery(owners), 0),
        removable=Case(
            When(last_owner, then=Value(False)),
            default=Value(True),
            output_field=BooleanField(),
        ),
    )


@dataclass(frozen=True)
class RoleChange:
    """What making `member` (read through with_keys_made and with_removable)
    `role` would do, so the Team page can ask before a change with
    consequences: write keys turned off, or someone taking away their own
    right to manage the team (only another owner could give it back)."""

    member: Membership
    role: str
    yourself: bool

    @property
    def refused(self) -> bool:
        """The team's last owner made anything else (Membership.change_role
        refuses it)."""
        return not self.member.removable and self.role != Membership.Role.OWNER

    @property
    def write_keys_stop(self) -> int:
        if self.role != Membership.Role.VIEWER or self.member.role == self.role:
            return 0
        return int(self.member.write_keys_made)

    @property
    def steps_down(self) -> bool:
        return (
            self.yourself
            and self.member.role == Membership.Role.OWNER
            and self.role != Membership.Role.OWNER
        )

    @property
    def asks(self) -> bool:
        return not self.refused and bool(self.write_keys_stop or self.steps_down)

    @property
    def role_words(self) -> str:
        """The new role in a sentence: "a viewer"."""
        return Membership(role=self.role).role_words

    @property
    def was_words(self) -> str:
        return self.member.role_words


def role_change(membership: Membership, role: str, by: Any) -> RoleChange:
    member = (
        with_removable(with_keys_made(Membership.objects.filter(pk=membership.pk)))
        .select_related("user")
        .get()
    )
    return RoleChange(member, role, yourself=member.user_id == by.pk)
