"""manage.py createapikey and bootstrap: what they create, what they print, and
that what they print works against the API."""

from __future__ import annotations

import re
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from monitors.models import KEY_PREFIX, ApiKey, Membership, Team

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    # bootstrap creates a real admin; the default hasher costs seconds per test.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def run(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def key_works(raw: str) -> bool:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client.get("/v2/monitor").status_code == 200


# ------------------------------------------------------------------ createapikey


def test_createapikey_prints_a_working_key_as_the_last_line(team):
    out, err = run("createapikey", "--team", "acme", "--name", "ci")

    raw = out.strip().splitlines()[-1]
    assert raw.startswith(KEY_PREFIX)
    assert key_works(raw)
    key = ApiKey.objects.get()
    assert key.matches(raw)
    assert (key.team.slug, key.name) == ("acme", "ci")
    assert key.display_prefix in err
    assert raw not in err


def test_createapikey_creates_a_missing_team_only_when_asked_to():
    out, err = run("createapikey", "--team", "Brand New Co", "--create-team")
    team = Team.objects.get()
    assert (team.slug, team.name) == ("brand-new-co", "Brand New Co")
    assert "Created team 'brand-new-co'." in err
    assert team.api_keys.get().matches(out.strip())


def test_createapikey_with_a_mistyped_team_lists_the_teams_and_creates_nothing(
    team,
):
    Team.objects.create(name="Demo team", slug="demo")
    with pytest.raises(CommandError) as refused:
        run("createapikey", "--team", "dmeo")
    assert str(refused.value) == (
        "No team has the slug 'dmeo'. Existing teams: acme (Acme), demo (Demo team). "
        "Check the spelling, or add --create-team to create 'dmeo'."
    )
    assert Team.objects.count() == 2
    assert ApiKey.objects.count() == 0


def test_createapikey_without_any_team_says_how_to_create_one():
    with pytest.raises(CommandError, match="There are no teams yet. Add --create-team"):
        run("createapikey", "--team", "acme")
    assert not Team.objects.exists()


def test_createapikey_with_a_name_too_long_is_refused_plainly_and_makes_no_key(team):
    # The database refused the 101st character with a DataError traceback.
    with pytest.raises(CommandError, match="--name can be at most 100 characters"):
        run("createapikey", "--team", "acme", "--name", "n" * 101)
    assert not ApiKey.objects.exists()


def test_createapikey_creates_a_team_whose_long_name_is_cut_to_fit():
    given = "Acme " * 40  # 200 characters; a team's name holds 120
    out, _ = run("createapikey", "--team", given, "--create-team")
    team = Team.objects.get()
    assert team.name == given.strip()[:120]
    assert team.api_keys.get().matches(out.strip())


def test_createapikey_finds_a_team_by_its_name_written_as_a_slug(team):
    out, _ = run("createapikey", "--team", "ACME")
    assert team.api_keys.get().matches(out.strip())


def test_createapikey_adds_keys_to_an_existing_team(team):
    first, _ = run("createapikey", "--team", "acme")
    second, _ = run("createapikey", "--team", "acme")

    assert Team.objects.count() == 1
    assert team.api_keys.count() == 2
    first_key, second_key = first.strip(), second.strip()
    assert first_key != second_key
    assert key_works(first_key) and key_works(second_key)


def test_createapikey_key_sees_only_its_teams_monitors(team, api):
    api.post(
        "/v2/monitor",
        {
            "name": "Acme's",
            "schedule": {"text": "hourly"},
            "targets": [{"type": "scrape", "urls": ["https://example.com/"]}],
        },
        format="json",
    )
    out, _ = run("createapikey", "--team", "globex", "--create-team")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {out.strip()}")
    assert client.get("/v2/monitor").json()["data"] == []


def test_createapikey_without_a_team_is_refused():
    with pytest.raises(CommandError, match="--team"):
        run("createapikey")
    assert ApiKey.objects.count() == 0


# ------------------------------------------------------------------ bootstrap


def field(out: str, label: str) -> str:
    match = re.search(rf"^\s*{label}\s*:\s*(\S+)\s*$", out, re.MULTILINE)
    assert match, out
    return match.group(1)


def test_bootstrap_creates_an_admin_a_demo_team_and_a_working_key():
    out, _ = run("bootstrap")

    admin = get_user_model().objects.get()
    assert admin.username == "admin"
    assert admin.is_superuser and admin.is_staff
    assert admin.check_password(field(out, "Password"))
    team = Team.objects.get()
    assert team.slug == "demo"
    assert team.webhook_secret.startswith("whsec_")
    membership = Membership.objects.get()
    assert (membership.team, membership.user, membership.role) == (team, admin, "owner")
    raw = field(out, "API key")
    assert key_works(raw)
    key = ApiKey.objects.get()
    assert (key.team, key.created_by) == (team, admin)


def test_bootstrap_a_second_time_changes_nothing():
    first, _ = run("bootstrap")
    admin = get_user_model().objects.get()
    password_hash = admin.password

    second, _ = run("bootstrap")

    assert "API key" not in second
    assert "Password" not in second
    assert get_user_model().objects.count() == 1
    assert Team.objects.count() == 1
    assert ApiKey.objects.count() == 1
    admin.refresh_from_db()
    assert admin.password == password_hash
    assert key_works(field(first, "API key"))


def test_bootstrap_leaves_an_installation_with_users_alone():
    get_user_model().objects.create_user("someone", password="x")
    out, _ = run("bootstrap")
    assert Team.objects.count() == 0
    assert ApiKey.objects.count() == 0
    assert "set up" in out
    assert "No administrator: .venv/bin/python manage.py createsuperuser" in out


def test_bootstrap_on_a_later_start_says_where_to_sign_in_and_how_to_reset_the_password(
    settings,
):
    settings.PUBLIC_BASE_URL = "http://127.0.0.1:8741"
    first, _ = run("bootstrap")

    later, _ = run("bootstrap")

    assert later.splitlines() == [
        "Pagewatch is set up: sign in at http://127.0.0.1:8741/ with your account.",
        "Lost the password? .venv/bin/python manage.py changepassword admin",
    ]
