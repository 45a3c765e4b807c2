"""Single sign-on settings and rules without a browser: the claim that maps
to teams and roles, verified e-mail only, password sign-in turned off."""

from __future__ import annotations

import pytest
from django.urls import reverse

from monitors.models import Membership
from teams import sso

pytestmark = pytest.mark.django_db


@pytest.fixture
def claim_settings(settings):
    settings.OIDC_TEAMS_CLAIM = "groups"
    settings.OIDC_DEFAULT_ROLE = "viewer"
    return settings


def test_the_claim_gives_teams_and_roles(claim_settings):
    assert sso.parse_teams_claim(["acme:editor", "globex", "x:admin", 3, ""]) == {
        "acme": "editor",
        "globex": "viewer",
    }
    assert sso.parse_teams_claim("acme:owner") == {"acme": "owner"}
    assert sso.parse_teams_claim({"acme": "owner"}) == {}


def test_signing_in_joins_named_teams_and_keeps_a_last_owner(
    claim_settings, team, other_team, django_user_model
):
    ana = django_user_model.objects.create_user("ana", "ana@acme.test")
    Membership.objects.create(team=team, user=ana, role="owner")
    sso.sync_teams(ana, ["acme:viewer", "globex:editor", "nowhere:owner"])
    roles = dict(Membership.objects.filter(user=ana).values_list("team__slug", "role"))
    assert roles == {"acme": "owner", "globex": "editor"}  # acme's last owner


def test_only_a_verified_email_signs_in():
    backend = sso.Backend.__new__(sso.Backend)
    assert backend.verify_claims({"email": "a@b.c", "email_verified": True})
    assert not backend.verify_claims({"email": "a@b.c", "email_verified": False})
    assert not backend.verify_claims({"email": "a@b.c"})
    assert not backend.verify_claims({"email_verified": True})


def test_an_unreachable_provider_is_said_in_words_not_a_500(client, settings):
    settings.OIDC_ISSUER = "http://127.0.0.1:9"  # nothing listens there
    settings.OIDC_CLIENT_ID, settings.OIDC_CLIENT_SECRET = "pw", "secret"
    settings.OIDC_PROVIDER_NAME = "Example ID"
    sso._discovery.cache_clear()
    response = client.get("/accounts/sso/", follow=True)
    assert response.redirect_chain == [("/accounts/login/?sso=unreachable", 302)]
    assert "Example ID cannot be reached right now." in response.content.decode()
    sso._discovery.cache_clear()


def test_a_signed_in_session_needs_no_provider_to_load(settings, django_user_model):
    settings.OIDC_ISSUER = "http://127.0.0.1:9"
    sso._discovery.cache_clear()
    ana = django_user_model.objects.create_user("ana", "ana@acme.test")
    assert sso.Backend().get_user(ana.pk) == ana  # no request to the provider


def test_without_single_sign_on_the_page_shows_only_passwords(client):
    page = client.get(reverse("login")).content.decode()
    assert "Sign in with" not in page and 'name="password"' in page
    assert client.get("/accounts/sso/").status_code == 404


def test_with_passwords_turned_off_a_password_post_is_refused(
    client, settings, django_user_model
):
    settings.OIDC_ISSUER = "https://id.example.com"
    settings.OIDC_PROVIDER_NAME = "Example ID"
    settings.PASSWORD_SIGNIN = False
    django_user_model.objects.create_user("ana", "ana@acme.test", "a-good-password-1")
    page = client.get(reverse("login")).content.decode()
    assert "Sign in with Example ID" in page and 'name="password"' not in page
    response = client.post(
        reverse("login"), {"username": "ana", "password": "a-good-password-1"}
    )
    assert response.status_code == 403
    assert "Signing in with a password is turned off here" in response.content.decode()
    assert "_auth_user_id" not in client.session
    admin = client.get("/admin/login/?next=/admin/")
    assert admin.status_code == 302
    assert admin["Location"] == "/accounts/login/?next=%2Fadmin%2F"


def test_a_role_the_claim_changes_is_logged_and_a_new_viewer_loses_write_keys(
    claim_settings, team, django_user_model
):
    from monitors.models import ApiKey
    from teams.models import Activity

    ana = django_user_model.objects.create_user("ana", "ana@acme.test")
    Membership.objects.create(team=team, user=ana, role="editor")
    key, _ = ApiKey.issue(team, name="ana's CI", created_by=ana)

    sso.sync_teams(ana, ["acme:viewer"])

    key.refresh_from_db()
    assert key.revoked_at is not None
    entry = Activity.objects.get(team=team, kind=Activity.Kind.ROLE_CHANGED)
    assert entry.what_words == (
        "Made ana a viewer (was an editor) through single sign-on and revoked "
        "the API key they made that can change monitors"
    )


def test_joining_through_the_claim_says_so_in_the_teams_activity_log(
    claim_settings, team, django_user_model
):
    """No invitation let them in: the owner reading the log sees what did."""
    from teams.models import Activity

    ana = django_user_model.objects.create_user("ana", "ana@acme.test")

    sso.sync_teams(ana, ["acme:viewer"])

    entry = Activity.objects.get(team=team, kind=Activity.Kind.MEMBER_JOINED)
    assert entry.sentence == "Joined as a viewer through single sign-on by ana"


def test_joining_through_the_claim_spends_the_invitation_still_waiting(
    claim_settings, team, django_user_model
):
    """In the team already, an invitation to their address is not left
    listed as waiting, nor usable by whoever else opens its link."""
    from django.utils import timezone

    from teams.models import Invitation

    invitation, _ = Invitation.issue(team, "Ana@Acme.test", "editor", None,
                                     timezone.now())  # fmt: skip
    ana = django_user_model.objects.create_user("ana", "ana@acme.test")

    sso.sync_teams(ana, ["acme:viewer"])

    invitation.refresh_from_db()
    assert invitation.accepted_by == ana and invitation.accepted_at is not None
    assert not Invitation.objects.pending(timezone.now()).exists()
