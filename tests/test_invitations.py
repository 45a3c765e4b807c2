"""Invitations: an owner invites someone by e-mail with a role; the link works
once, for 7 days, until withdrawn; the invitee makes an account or joins with
the one they have."""

from __future__ import annotations

import html
import re
from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
import time_machine
from django.contrib.auth import get_user_model
from django.db.models import F
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from monitors.dashboard.context import SESSION_KEY
from monitors.models import Membership, Team
from teams.models import Activity, Invitation, InvitationError
from tests.test_dashboard_views import PASSWORD

pytestmark = pytest.mark.django_db
NEW_PASSWORD = "a-long-enough-passphrase-7"


def text_of(response) -> str:
    return html.unescape(response.content.decode())


@pytest.fixture
def owner(team, django_user_model):
    user = django_user_model.objects.create_user("olive", "olive@acme.test", PASSWORD)
    user.first_name = "Olive"
    user.save()
    Membership.objects.create(team=team, user=user, role=Membership.Role.OWNER)
    return user


@pytest.fixture
def owner_client(client, owner):
    client.force_login(owner)
    return client


@pytest.fixture
def client_factory():
    """More browsers: the invitee's, apart from the owner's."""
    return Client


def invite(owner_client, mailoutbox, email="sam@example.com", role="editor") -> str:
    """Invite through the team page; returns the link from the e-mail."""
    response = owner_client.post(reverse("team-invite"), {"email": email, "role": role})
    assert response.status_code == 302
    message = mailoutbox[-1]
    return re.search(r"http://\S+/invitations/\S+/", message.body).group(0)


def path_of(link: str) -> str:
    return "/" + link.split("://", 1)[1].split("/", 1)[1]


def test_an_owner_invites_by_email_in_plain_words(owner_client, team, mailoutbox):
    link = invite(owner_client, mailoutbox, role="viewer")

    [message] = mailoutbox
    assert message.to == ["sam@example.com"]
    assert message.subject == "Olive invited you to Acme on Pagewatch"
    assert "Olive invited you to join the team Acme on Pagewatch as\na viewer." in (
        message.body
    )
    assert "The link works once, for 7 days." in message.body.replace("\n", " ")
    assert link.startswith("http://127.0.0.1:8000/invitations/")  # PUBLIC_BASE_URL
    invitation = Invitation.objects.get()
    assert (invitation.email, invitation.role) == ("sam@example.com", "viewer")
    # Only a hash of the link's token is kept.
    assert path_of(link).split("/")[2] not in invitation.token_hash
    page = text_of(owner_client.get(reverse("team-members")))
    assert "sam@example.com" in page and "Withdraw" in page


def test_the_invitee_sets_a_password_and_joins_with_the_role(
    owner_client, client_factory, team, mailoutbox
):
    link = invite(owner_client, mailoutbox, role="viewer")
    visitor = client_factory()

    page = text_of(visitor.get(path_of(link)))
    assert "Olive invited sam@example.com to the team Acme as a viewer." in page
    response = visitor.post(
        path_of(link), {"username": "sam", "password": NEW_PASSWORD}, follow=True
    )

    sam = get_user_model().objects.get(username="sam")
    assert sam.email == "sam@example.com" and sam.check_password(NEW_PASSWORD)
    membership = Membership.objects.get(user=sam)
    assert (membership.team, membership.role) == (team, Membership.Role.VIEWER)
    assert "Welcome to Acme: you are a viewer here." in text_of(response)
    assert visitor.session[SESSION_KEY] == team.pk
    invitation = Invitation.objects.get()
    assert invitation.accepted_by == sam and invitation.accepted_at is not None


def test_the_invitee_is_told_what_a_password_needs_before_choosing_one(
    owner_client, client_factory, mailoutbox
):
    """The rules showed only as errors after a refused try (the password
    change page lists them up front)."""
    link = invite(owner_client, mailoutbox)

    page = text_of(client_factory().get(path_of(link)))

    assert 'id="help-password"' in page
    assert "Your password must contain at least 8 characters." in page
    field = re.search(r'<input type="password"[^>]*>', page).group(0)
    assert 'aria-describedby="help-password"' in field


def test_an_editors_invitation_says_an_editor_in_the_mail_and_on_its_page(
    owner_client, client_factory, mailoutbox
):
    link = invite(owner_client, mailoutbox, role="editor")

    [message] = mailoutbox
    assert "on Pagewatch as\nan editor." in message.body
    assert "on Pagewatch as an editor." in message.alternatives[0].content
    page = text_of(client_factory().get(path_of(link)))
    assert "Olive invited sam@example.com to the team Acme as an editor." in page
    assert "a editor" not in page


def test_joining_spends_the_other_invitations_to_the_same_address(
    owner_client, client_factory, mailoutbox
):
    first = invite(owner_client, mailoutbox, email="sam@example.com", role="editor")
    second = invite(owner_client, mailoutbox, email="Sam@Example.com", role="viewer")
    # Both waiting, as invitations made before a new one replaced the older.
    Invitation.objects.update(revoked_at=None)
    visitor = client_factory()

    visitor.post(path_of(second), {"username": "sam", "password": NEW_PASSWORD})

    assert not Invitation.objects.filter(accepted_at__isnull=True).exists()
    team_page = text_of(owner_client.get(reverse("team-members")))
    assert "No invitations waiting." in team_page
    assert "already been used" in text_of(client_factory().get(path_of(first)))
    assert Membership.objects.get(user__username="sam").role == "viewer"


def test_a_weak_password_or_a_taken_name_is_said_next_to_its_field(
    owner_client, client_factory, mailoutbox
):
    link = invite(owner_client, mailoutbox)
    visitor = client_factory()
    response = visitor.post(path_of(link), {"username": "olive", "password": "123"})
    assert response.status_code == 400
    page = text_of(response)
    assert "This user name is taken: choose another." in page
    assert "This password is too short." in page
    assert Invitation.objects.get().accepted_at is None


def test_the_owner_opening_their_own_invitation_is_told_and_leaves_it_unused(
    owner_client, mailoutbox
):
    link = invite(owner_client, mailoutbox, email="sam@example.com")

    page = text_of(owner_client.get(path_of(link)))
    refused = owner_client.post(path_of(link))

    assert "You are already in Acme, as an owner." in page
    assert "This invitation is for sam@example.com" in page
    main = page.split("<main", 1)[1].split("</main>", 1)[0]
    assert 'method="post"' not in main  # nothing to press that would use it up
    assert refused.status_code == 409
    invitation = Invitation.objects.get()
    assert invitation.accepted_at is None and invitation.accepted_by is None
    assert Membership.objects.get(user__username="olive").role == "owner"


def test_someone_with_an_account_signs_in_and_joins(
    owner_client, client_factory, team, other_team, django_user_model, mailoutbox
):
    sam = django_user_model.objects.create_user("sam", "sam@example.com", PASSWORD)
    Membership.objects.create(team=other_team, user=sam, role=Membership.Role.OWNER)
    link = invite(owner_client, mailoutbox, role="editor")
    visitor = client_factory()
    page = text_of(visitor.get(path_of(link)))
    assert "An account with this e-mail address exists." in page
    assert f"/accounts/login/?next={path_of(link)}" in page

    visitor.force_login(sam)
    page = text_of(visitor.get(path_of(link)))
    assert "Join Acme as sam" in page
    visitor.post(path_of(link))
    assert Membership.objects.get(user=sam, team=team).role == Membership.Role.EDITOR
    assert Membership.objects.get(user=sam, team=other_team).role == "owner"


def test_a_link_works_once(owner_client, client_factory, mailoutbox):
    link = invite(owner_client, mailoutbox)
    first, second = client_factory(), client_factory()
    first.post(path_of(link), {"username": "sam", "password": NEW_PASSWORD})
    response = second.post(
        path_of(link), {"username": "sam2", "password": NEW_PASSWORD}
    )
    assert response.status_code == 410
    assert "This invitation has already been used." in text_of(response)
    assert not get_user_model().objects.filter(username="sam2").exists()


def test_a_link_expires_after_seven_days(owner_client, client_factory, mailoutbox):
    link = invite(owner_client, mailoutbox)
    visitor = client_factory()
    with time_machine.travel(timezone.now() + timedelta(days=6, hours=23)):
        assert visitor.get(path_of(link)).status_code == 200
    with time_machine.travel(timezone.now() + timedelta(days=7, minutes=1)):
        response = visitor.post(
            path_of(link), {"username": "sam", "password": NEW_PASSWORD}
        )
    assert response.status_code == 410
    assert "This invitation has expired" in text_of(response)
    assert not get_user_model().objects.filter(username="sam").exists()


def test_a_withdrawn_link_stops_working(owner_client, client_factory, mailoutbox):
    link = invite(owner_client, mailoutbox)
    invitation = Invitation.objects.get()
    owner_client.post(reverse("invitation-revoke", args=[invitation.pk]))
    invitation.refresh_from_db()
    assert invitation.revoked_at is not None
    response = client_factory().get(path_of(link))
    assert response.status_code == 410
    assert "This invitation was withdrawn" in text_of(response)
    page = text_of(owner_client.get(reverse("team-members")))  # messages shown
    page = text_of(owner_client.get(reverse("team-members")))
    assert "sam@example.com" not in page and "No invitations waiting." in page


def test_with_passwords_off_the_invitee_joins_through_single_sign_on(
    owner_client, client_factory, settings, mailoutbox, team, django_user_model
):
    link = invite(owner_client, mailoutbox, role="editor")
    settings.OIDC_ISSUER = "https://id.example.com"
    settings.OIDC_PROVIDER_NAME = "Example ID"
    settings.PASSWORD_SIGNIN = False
    visitor = client_factory()
    page = text_of(visitor.get(path_of(link)))
    assert "Sign in with Example ID to join" in page and 'name="password"' not in page
    assert f"/accounts/sso/?next={path_of(link)}" in page
    refused = visitor.post(path_of(link), {"username": "sam", "password": "x" * 20})
    assert refused.status_code == 403
    assert not get_user_model().objects.filter(username="sam").exists()
    # Back from the provider, signed in: the link joins this account.
    sam = django_user_model.objects.create_user("sam", "sam@example.com")
    visitor.force_login(sam)
    visitor.post(path_of(link))
    assert Membership.objects.get(user=sam, team=team).role == "editor"


def test_a_made_up_link_says_it_is_not_valid(client):
    response = client.get("/invitations/not-a-real-token/")
    assert response.status_code == 404
    assert "This invitation link is not valid." in text_of(response)


def test_inviting_someone_already_in_the_team_is_refused_in_words(
    owner_client, owner, mailoutbox
):
    response = owner_client.post(
        reverse("team-invite"), {"email": "OLIVE@acme.test", "role": "editor"}
    )
    assert response.status_code == 400
    assert "Someone with this address is in the team already." in text_of(response)
    assert Invitation.objects.count() == 0 and mailoutbox == []


def test_another_teams_invitation_cannot_be_withdrawn(owner_client, other_team):
    theirs, _ = Invitation.issue(other_team, "x@globex.test", "editor", None,
                                 timezone.now())  # fmt: skip
    response = owner_client.post(reverse("invitation-revoke", args=[theirs.pk]))
    assert response.status_code == 404
    theirs.refresh_from_db()
    assert theirs.revoked_at is None


def test_when_the_email_cannot_be_sent_the_owner_gets_the_link(
    owner_client, settings, mailoutbox, monkeypatch
):
    def refuse(*args, **kwargs):
        raise OSError("Connection refused")

    monkeypatch.setattr("django.core.mail.EmailMessage.send", refuse)
    response = owner_client.post(
        reverse("team-invite"), {"email": "sam@example.com", "role": "editor"},
        follow=True,
    )  # fmt: skip
    page = text_of(response)
    assert "the e-mail could not be sent. Give them this link yourself:" in page
    assert "/invitations/" in page
    assert Team.objects.get().invitations.count() == 1


def test_an_invitation_as_an_editor_reads_an_editor(owner_client, mailoutbox):
    invite(owner_client, mailoutbox, role="editor")

    [message] = mailoutbox
    body = " ".join(message.body.split())
    assert "on Pagewatch as an editor." in body
    [(html, _)] = message.alternatives
    assert "on Pagewatch as an editor.</p>" in html


def test_an_invitation_comes_from_our_domain_and_asks_for_no_automatic_reply(
    owner_client, mailoutbox, settings
):
    settings.DEFAULT_FROM_EMAIL = "Pagewatch <team@watch.acme.test>"
    invite(owner_client, mailoutbox)

    [message] = mailoutbox
    sent = message.message()
    assert sent["Message-ID"].endswith("@watch.acme.test>")
    assert sent["Auto-Submitted"] == "auto-generated"


# ------------------------------------------------------------ expired invitations


def invite_long_ago(owner_client, mailoutbox, email="sam@example.com",
                    role="editor") -> str:  # fmt: skip
    """An invitation sent eight days ago: its link expired yesterday. (Moved
    back in the database: travelling the owner's session back in time would
    sign them out as idle.)"""
    link = invite(owner_client, mailoutbox, email=email, role=role)
    Invitation.objects.filter(email=email).update(
        created_at=F("created_at") - timedelta(days=8),
        expires_at=F("expires_at") - timedelta(days=8),
    )
    return link


def test_an_expired_invitation_stays_on_the_team_page_saying_when_it_expired(
    owner_client, mailoutbox
):
    invite_long_ago(owner_client, mailoutbox, email="sam@example.com", role="viewer")
    invitation = Invitation.objects.get()

    page = text_of(owner_client.get(reverse("team-members")))

    assert "No invitations waiting." in page
    expired = page.split('id="expired-invitations"', 1)[1].split("</section>", 1)[0]
    assert "sam@example.com" in expired and "Viewer" in expired
    assert "Expired on " in expired
    assert invitation.expires_at.isoformat() in expired
    assert "Invite again" in expired and "Remove from the list" in expired


def test_inviting_again_sends_a_fresh_link_with_the_same_address_and_role(
    owner_client, client_factory, team, mailoutbox
):
    old_link = invite_long_ago(owner_client, mailoutbox, role="viewer")
    expired = Invitation.objects.get()

    response = owner_client.post(
        reverse("invitation-renew", args=[expired.pk]), follow=True
    )
    new_link = re.search(r"http://\S+/invitations/\S+/", mailoutbox[-1].body).group(0)
    joining = client_factory().post(
        path_of(new_link), {"username": "sam", "password": NEW_PASSWORD}
    )

    page = text_of(response)
    assert "Invitation sent again to sam@example.com." in page
    assert len(mailoutbox) == 2 and mailoutbox[-1].to == ["sam@example.com"]
    assert new_link != old_link
    fresh = Invitation.objects.exclude(pk=expired.pk).get()
    assert (fresh.email, fresh.role) == ("sam@example.com", "viewer")
    assert fresh.invited_by.username == "olive"
    assert 'id="expired-invitations"' not in page  # the new one took its place
    assert joining.status_code == 302
    assert Membership.objects.get(user__username="sam", team=team).role == "viewer"
    assert team.activity.filter(kind="invitation.sent").count() == 2


def test_inviting_again_twice_sends_one_new_invitation(owner_client, mailoutbox):
    invite_long_ago(owner_client, mailoutbox)
    expired = Invitation.objects.get()

    owner_client.post(reverse("invitation-renew", args=[expired.pk]))
    again = owner_client.post(
        reverse("invitation-renew", args=[expired.pk]), follow=True
    )

    assert Invitation.objects.count() == 2 and len(mailoutbox) == 2
    assert "sam@example.com was invited again already." in text_of(again)


def test_a_waiting_invitation_is_not_sent_again_from_its_expired_button(
    owner_client, mailoutbox
):
    invite(owner_client, mailoutbox)
    waiting = Invitation.objects.get()

    response = owner_client.post(
        reverse("invitation-renew", args=[waiting.pk]), follow=True
    )

    assert Invitation.objects.count() == 1 and len(mailoutbox) == 1
    assert "The invitation for sam@example.com has not expired" in text_of(response)


def test_an_expired_invitation_can_be_removed_from_the_list(
    owner_client, team, mailoutbox
):
    invite_long_ago(owner_client, mailoutbox)
    expired = Invitation.objects.get()

    response = owner_client.post(
        reverse("invitation-revoke", args=[expired.pk]), follow=True
    )

    page = text_of(response)
    assert "The expired invitation for sam@example.com is off the list." in page
    assert 'id="expired-invitations"' not in page
    expired.refresh_from_db()
    assert expired.revoked_at is not None
    # Tidying the list is not a withdrawal: nobody could join with it anyway.
    assert not team.activity.filter(kind="invitation.withdrawn").exists()


def test_someone_who_joined_another_way_is_not_listed_as_an_expired_invitation(
    owner_client, team, django_user_model, mailoutbox
):
    invite_long_ago(owner_client, mailoutbox, email="sam@example.com")
    sam = django_user_model.objects.create_user("sam", "Sam@Example.com", PASSWORD)
    Membership.objects.create(team=team, user=sam, role=Membership.Role.EDITOR)

    page = text_of(owner_client.get(reverse("team-members")))

    assert 'id="expired-invitations"' not in page
    refused = owner_client.post(
        reverse("invitation-renew", args=[Invitation.objects.get().pk]), follow=True
    )
    assert "sam@example.com is in the team already." in text_of(refused)
    assert Invitation.objects.count() == 1 and len(mailoutbox) == 1


def test_a_viewer_sees_expired_invitations_but_no_buttons(
    owner_client, team, django_user_model, mailoutbox
):
    invite_long_ago(owner_client, mailoutbox, email="sam@example.com")
    vera = django_user_model.objects.create_user("vera", "vera@acme.test", PASSWORD)
    Membership.objects.create(team=team, user=vera, role=Membership.Role.VIEWER)
    viewer = Client()
    viewer.force_login(vera)

    page = text_of(viewer.get(reverse("team-members")))

    expired = page.split('id="expired-invitations"', 1)[1].split("</section>", 1)[0]
    assert "sam@example.com" in expired and "Expired on " in expired
    assert "Invite again" not in expired and "Remove from the list" not in expired
    assert "<form" not in expired


def test_inviting_an_address_again_replaces_the_link_still_waiting(
    owner_client, client_factory, mailoutbox, team
):
    first = invite(owner_client, mailoutbox, email="sam@example.com", role="editor")
    response = owner_client.post(
        reverse("team-invite"),
        {"email": "Sam@Example.com", "role": "viewer"},
        follow=True,
    )
    second = re.search(r"http://\S+/invitations/\S+/", mailoutbox[-1].body).group(0)

    said = text_of(response)
    assert (
        "Invitation sent to sam@example.com. The link sent before no longer works."
        in said
    )
    assert said.count("sam@example.com</td>") == 1
    assert Invitation.objects.pending(timezone.now()).get().role == "viewer"
    # The earlier link, at the earlier role, cannot be used any more.
    assert client_factory().get(path_of(first)).status_code == 410
    visitor = client_factory()
    visitor.post(path_of(second), {"username": "sam", "password": NEW_PASSWORD})
    assert Membership.objects.get(user__username="sam", team=team).role == "viewer"


def test_issuing_an_invitation_says_whether_it_replaced_a_waiting_link(team):
    now = timezone.now()
    first, _ = Invitation.issue(team, "sam@example.com", "editor", None, now)
    second, _ = Invitation.issue(team, "Sam@Example.com", "viewer", None, now)
    other, _ = Invitation.issue(team, "kim@example.com", "viewer", None, now)

    assert first.replaced_waiting is False
    assert second.replaced_waiting is True
    assert other.replaced_waiting is False
    first.refresh_from_db()
    assert first.revoked_at == now


def test_an_address_with_an_account_joins_by_signing_in_not_with_a_second_account(
    owner_client, client_factory, team, django_user_model, mailoutbox
):
    sam = django_user_model.objects.create_user("sam", "Sam@Example.com", PASSWORD)
    link = invite(owner_client, mailoutbox)
    visitor = client_factory()

    page = text_of(visitor.get(path_of(link)))
    response = visitor.post(
        path_of(link), {"username": "sam2", "password": NEW_PASSWORD}
    )

    assert "An account with this e-mail address exists." in page
    assert 'name="password"' not in page  # no form for a second account
    assert response.status_code == 409
    assert "Sign in" in text_of(response)
    assert list(get_user_model().objects.filter(email__iexact="sam@example.com")) == [
        sam
    ]
    assert not Membership.objects.filter(team=team, user__username="sam2").exists()
    assert Invitation.objects.get().accepted_at is None


def test_removing_someone_withdraws_the_invitation_they_never_used(
    owner_client, client_factory, team, django_user_model, mailoutbox
):
    """Invited, then added another way (the admin, single sign-on), then
    removed: the unused link must not bring them back."""
    link = invite(owner_client, mailoutbox, role="editor")
    sam = django_user_model.objects.create_user("sam", "sam@example.com", PASSWORD)
    added = Membership.objects.create(team=team, user=sam, role="viewer")

    owner_client.post(reverse("member-remove", args=[added.pk]))
    visitor = client_factory()
    visitor.force_login(sam)
    response = visitor.post(path_of(link))

    assert response.status_code == 410
    assert "withdrawn" in text_of(response)
    assert not Membership.objects.filter(team=team, user=sam).exists()


def test_an_account_with_another_address_cannot_use_the_invitation(
    owner_client, client_factory, team, django_user_model, mailoutbox
):
    """The link is for the address it was sent to: someone else who got hold
    of it (a forwarded mail, a shared screen) cannot join with their own
    account, and is not told the whole address either."""
    link = invite(owner_client, mailoutbox, email="sam@example.com", role="editor")
    eve = django_user_model.objects.create_user("eve", "eve@other.test", PASSWORD)
    visitor = client_factory()
    visitor.force_login(eve)

    page = text_of(visitor.get(path_of(link)))
    refused = visitor.post(path_of(link))

    assert "This invitation was sent to s***@example.com" in page
    assert "you are signed in as eve (eve@other.test)" in page
    assert "sam@example.com" not in page and "sam@example.com" not in text_of(refused)
    main = page.split("<main", 1)[1].split("</main>", 1)[0]
    assert "Join Acme as eve" not in main
    assert refused.status_code == 403
    assert not Membership.objects.filter(team=team, user=eve).exists()
    invitation = Invitation.objects.get()
    assert invitation.accepted_at is None and invitation.accepted_by is None
    # Signing out from there comes back to the link, to sign in as the invitee.
    signed_out = visitor.post(reverse("logout"), {"next": path_of(link)})
    assert signed_out.status_code == 302 and signed_out["Location"] == path_of(link)
    assert "Create my account and join" in text_of(visitor.get(path_of(link)))


def test_an_account_without_an_address_cannot_use_an_invitation(
    owner_client, client_factory, team, django_user_model, mailoutbox
):
    link = invite(owner_client, mailoutbox)
    nobody = django_user_model.objects.create_user("nobody", "", PASSWORD)
    visitor = client_factory()
    visitor.force_login(nobody)

    refused = visitor.post(path_of(link))

    assert refused.status_code == 403
    assert "This invitation was sent to s***@example.com" in text_of(refused)
    assert not Membership.objects.filter(team=team, user=nobody).exists()
    assert Invitation.objects.get().accepted_at is None


def test_accepting_for_another_address_is_refused_by_the_invitation_itself(
    team, django_user_model
):
    invitation, _ = Invitation.issue(
        team, "sam@example.com", "editor", None, timezone.now()
    )
    eve = django_user_model.objects.create_user("eve", "eve@other.test", PASSWORD)

    with pytest.raises(InvitationError):
        invitation.accept(eve, timezone.now())

    invitation.refresh_from_db()
    assert invitation.accepted_at is None
    assert not Membership.objects.filter(team=team, user=eve).exists()


def test_the_invited_address_joins_signed_in_whatever_its_letter_case(
    owner_client, client_factory, team, django_user_model, mailoutbox
):
    link = invite(owner_client, mailoutbox, email="sam@example.com", role="viewer")
    sam = django_user_model.objects.create_user("sam", "Sam@Example.COM", PASSWORD)
    visitor = client_factory()
    visitor.force_login(sam)

    visitor.post(path_of(link))

    assert Membership.objects.get(team=team, user=sam).role == "viewer"
    assert Invitation.objects.get().accepted_by == sam


def test_joining_through_an_invitation_is_in_the_activity_log_with_its_address(
    owner_client, client_factory, team, django_user_model, mailoutbox
):
    link = invite(owner_client, mailoutbox, email="sam@example.com", role="editor")
    sam = django_user_model.objects.create_user("sam", "sam@example.com", PASSWORD)
    visitor = client_factory()
    visitor.force_login(sam)

    visitor.post(path_of(link))

    entry = Activity.objects.get(team=team, kind=Activity.Kind.MEMBER_JOINED)
    assert entry.user == sam
    assert entry.details["email"] == "sam@example.com"
    assert entry.what_words == (
        "Joined as an editor through the invitation sent to sam@example.com"
    )


@pytest.mark.parametrize("passwords", [True, False])
def test_the_sign_in_links_next_is_the_invitation_path_url_encoded(
    client_factory, owner, team, settings, django_user_model, passwords
):
    # A token holding characters a query string gives a meaning to: left as
    # they are, "&" would start another parameter and "#" a fragment, and the
    # visitor would come back somewhere else after signing in.
    token = "odd token&next=elsewhere#top?x=1%2F"
    Invitation.objects.create(
        team=team,
        email="sam@example.com",
        token_hash=Invitation.hash_token(token),
        invited_by=owner,
        expires_at=timezone.now() + timedelta(days=1),
    )
    django_user_model.objects.create_user("sam", "sam@example.com", PASSWORD)
    if not passwords:
        settings.OIDC_ISSUER = "https://id.example.com"
        settings.PASSWORD_SIGNIN = False
    path = reverse("invitation-accept", args=[token])
    visitor = client_factory()

    page = visitor.get(path).content.decode()

    start = "/accounts/login/?" if passwords else "/accounts/sso/?"
    href = html.unescape(re.search(f'href="({re.escape(start)}[^"]*)"', page)[1])
    query = parse_qs(urlsplit(href).query, keep_blank_values=True)
    assert query == {"next": [f"/invitations/{token}/"]}
    assert urlsplit(href).fragment == ""
