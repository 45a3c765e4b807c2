"""Sign-in throttling (django-axes, config.signin): a run of wrong passwords
locks that user name out from that address, on the dashboard's sign-in and
the admin's alike, until the cool-off has passed."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.core.management import CommandError, call_command
from django.test import RequestFactory, override_settings
from django.urls import reverse

from config import signin
from config.signin import client_ip

pytestmark = pytest.mark.django_db

PASSWORD = "correct-horse-battery-staple"
NOW = datetime(2026, 5, 16, 12, 0, tzinfo=UTC)
LIMIT = 10


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def olive(django_user_model):
    return django_user_model.objects.create_user("olive", "olive@example.com", PASSWORD)


def sign_in(client, password: str, *, path: str = "login", **headers: str):
    return client.post(
        reverse(path), {"username": "olive", "password": password}, **headers
    )


def fail(client, times: int, **headers: str) -> None:
    """`times` wrong passwords: the form again each time, the lockout page for
    the one that reaches the limit."""
    for attempt in range(1, times + 1):
        response = sign_in(client, f"wrong-{attempt}", **headers)
        assert response.status_code == (429 if attempt == LIMIT else 200)


def test_a_right_password_signs_in_after_fewer_failures_than_the_limit(client, olive):
    fail(client, LIMIT - 1)

    response = sign_in(client, PASSWORD)

    assert response.status_code == 302
    assert client.session["_auth_user_id"] == str(olive.pk)


def test_too_many_wrong_passwords_refuse_even_the_right_one(client, olive):
    fail(client, LIMIT)

    response = sign_in(client, PASSWORD)

    assert response.status_code == 429
    assert "Too many failed sign-ins" in response.content.decode()
    assert "Try again in 15 minutes" in response.content.decode()
    assert "_auth_user_id" not in client.session


def test_the_admin_sign_in_counts_and_refuses_too(client, olive):
    olive.is_staff = True
    olive.save()
    for attempt in range(LIMIT):
        sign_in(client, f"wrong-{attempt}", path="admin:login")

    response = sign_in(client, PASSWORD, path="admin:login")

    assert response.status_code == 429
    assert "_auth_user_id" not in client.session


def test_the_lockout_ends_when_the_cool_off_has_passed(client, olive):
    with time_machine.travel(NOW, tick=False):
        fail(client, LIMIT)
    with time_machine.travel(NOW + timedelta(minutes=14), tick=False):
        assert sign_in(client, PASSWORD).status_code == 429
    # A try while locked out starts the wait again.
    with time_machine.travel(NOW + timedelta(minutes=28), tick=False):
        assert sign_in(client, PASSWORD).status_code == 429
    with time_machine.travel(NOW + timedelta(minutes=44), tick=False):
        assert sign_in(client, PASSWORD).status_code == 302


def test_a_success_clears_the_count(client, olive):
    fail(client, LIMIT - 1)
    assert sign_in(client, PASSWORD).status_code == 302
    client.logout()

    fail(client, LIMIT - 1)

    assert sign_in(client, PASSWORD).status_code == 302


def test_behind_the_proxy_a_stranger_cannot_lock_the_owner_out_elsewhere(
    client, olive, settings
):
    settings.TRUST_PROXY_HEADERS = True
    # The stranger forges a first hop; the proxy appends the real address.
    fail(client, LIMIT, HTTP_X_FORWARDED_FOR="192.0.2.10, 203.0.113.7")
    assert (
        sign_in(client, PASSWORD, HTTP_X_FORWARDED_FOR="192.0.2.10, 203.0.113.7")
    ).status_code == 429

    response = sign_in(client, PASSWORD, HTTP_X_FORWARDED_FOR="192.0.2.10")

    assert response.status_code == 302


def test_addresses_of_one_ipv6_network_count_as_one_address(client, olive):
    # One machine on IPv6 is given a /64: 2**64 addresses to pick from, one per
    # try, would otherwise never reach the limit.
    for attempt in range(1, LIMIT + 1):
        address = f"2001:db8:1:2::{attempt:x}"
        response = sign_in(client, f"wrong-{attempt}", REMOTE_ADDR=address)
        assert response.status_code == (429 if attempt == LIMIT else 200)

    locked = sign_in(client, PASSWORD, REMOTE_ADDR="2001:db8:1:2:ffff::1")
    elsewhere = sign_in(client, PASSWORD, REMOTE_ADDR="2001:db8:1:3::1")

    assert locked.status_code == 429
    assert elsewhere.status_code == 302


# ---------------------------------------------------------------- client_ip


@pytest.mark.parametrize(
    ("forwarded", "expected"),
    [
        ("203.0.113.7", "203.0.113.7"),
        ("192.0.2.10, 203.0.113.7", "203.0.113.7"),
        ("192.0.2.10,203.0.113.7 ", "203.0.113.7"),
        ("", "10.0.0.2"),
    ],
)
def test_behind_the_proxy_the_client_is_the_hop_the_proxy_added(
    settings, forwarded, expected
):
    settings.TRUST_PROXY_HEADERS = True
    request = RequestFactory().get(
        "/", REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR=forwarded
    )

    assert client_ip(request) == expected


def test_without_a_trusted_proxy_a_forwarded_for_header_is_ignored(settings):
    settings.TRUST_PROXY_HEADERS = False
    request = RequestFactory().get(
        "/", REMOTE_ADDR="198.51.100.4", HTTP_X_FORWARDED_FOR="203.0.113.7"
    )

    assert client_ip(request) == "198.51.100.4"


# --- One address trying many user names --------------------------------------


def spray(client, names: int, **headers: str) -> list[int]:
    """One wrong password for each of `names` user names, as a password
    sprayer does: never enough for any one name's lockout."""
    return [
        client.post(
            reverse("login"), {"username": f"user{n}", "password": "Summer2026!"},
            **headers,
        ).status_code
        for n in range(names)
    ]  # fmt: skip


# A public address (not a proxy's): 203.0.113.0/24 is reserved for examples.
SPRAYER = {"REMOTE_ADDR": "203.0.113.66"}


def test_one_address_trying_many_user_names_is_refused_for_the_cool_off(
    client, olive, settings
):
    limit = settings.SIGNIN_FAILURES_PER_ADDRESS
    with time_machine.travel(NOW, tick=False):
        answers = spray(client, limit, **SPRAYER)
        refused = sign_in(client, PASSWORD, **SPRAYER)
        elsewhere = sign_in(client.__class__(), PASSWORD, REMOTE_ADDR="198.51.100.9")

    assert set(answers) == {200}  # each name below its own limit
    assert refused.status_code == 429
    words = " ".join(refused.content.decode().split())
    assert "refused for a while for everyone signing in from your address" in words
    assert "_auth_user_id" not in client.session
    assert elsewhere.status_code == 302  # another address is not held back
    with time_machine.travel(NOW + settings.AXES_COOLOFF_TIME + timedelta(seconds=1)):
        assert sign_in(client, PASSWORD, **SPRAYER).status_code == 302


def test_the_admin_sign_in_refuses_a_spraying_address_too(client, olive, settings):
    olive.is_staff = True
    olive.save()
    with time_machine.travel(NOW, tick=False):
        spray(client, settings.SIGNIN_FAILURES_PER_ADDRESS, **SPRAYER)

        response = sign_in(client, PASSWORD, path="admin:login", **SPRAYER)

    assert response.status_code == 429
    assert "_auth_user_id" not in client.session


def test_an_office_where_several_people_mistype_still_signs_in(
    client, olive, django_user_model
):
    """People behind one office address, each a few tries short of their own
    name's lockout, are not shut out by the limit for the whole address."""
    with time_machine.travel(NOW, tick=False):
        for n in range(4):
            name = f"colleague{n}"
            django_user_model.objects.create_user(name, f"{name}@example.com", "x")
            for attempt in range(LIMIT - 1):
                answer = client.post(
                    reverse("login"),
                    {"username": name, "password": f"wrong-{attempt}"},
                    **SPRAYER,
                )
                assert answer.status_code == 200

        response = sign_in(client, PASSWORD, **SPRAYER)

        assert response.status_code == 302
        assert client.session["_auth_user_id"] == str(olive.pk)


@pytest.mark.parametrize("proxy", ["127.0.0.1", "10.0.0.2", "172.18.0.5", "fd00::5"])
def test_behind_an_untrusted_proxy_a_sprayer_cannot_lock_everyone_out(
    client, olive, settings, caplog, proxy
):
    """Without TRUST_PROXY_HEADERS behind a proxy every sign-in seems to come
    from the proxy's own (loopback or private) address: one counter for all
    would let anyone lock every password sign-in. The limit is not applied
    there, and the log says which setting to turn on, once."""
    settings.TRUST_PROXY_HEADERS = False
    signin.warn_untrusted_proxy.cache_clear()
    with time_machine.travel(NOW, tick=False):
        spray(client, settings.SIGNIN_FAILURES_PER_ADDRESS + 5, REMOTE_ADDR=proxy)

        response = sign_in(client, PASSWORD, REMOTE_ADDR=proxy)

        assert response.status_code == 302
        assert client.session["_auth_user_id"] == str(olive.pk)
    warnings = [r for r in caplog.records if "TRUST_PROXY_HEADERS" in r.getMessage()]
    assert len(warnings) == 1
    assert warnings[0].levelname == "WARNING"


def test_behind_a_trusted_proxy_the_clients_own_address_is_limited(
    client, olive, settings
):
    settings.TRUST_PROXY_HEADERS = True
    forwarded = {"REMOTE_ADDR": "10.0.0.2", "HTTP_X_FORWARDED_FOR": "203.0.113.66"}
    with time_machine.travel(NOW, tick=False):
        spray(client, settings.SIGNIN_FAILURES_PER_ADDRESS, **forwarded)

        response = sign_in(client, PASSWORD, **forwarded)

    assert response.status_code == 429


def test_an_administrator_lifts_an_address_block_with_a_command(
    client, olive, settings
):
    with time_machine.travel(NOW, tick=False):
        spray(client, settings.SIGNIN_FAILURES_PER_ADDRESS, **SPRAYER)
        assert sign_in(client, PASSWORD, **SPRAYER).status_code == 429
        out = io.StringIO()

        call_command("signin_unblock", "203.0.113.66", stdout=out)
        response = sign_in(client, PASSWORD, **SPRAYER)

    assert response.status_code == 302
    assert "203.0.113.66" in out.getvalue()


def test_the_command_lifts_a_user_names_lockout_from_that_address_too(client, olive):
    with time_machine.travel(NOW, tick=False):
        fail(client, LIMIT, **SPRAYER)

        call_command("signin_unblock", "203.0.113.66", stdout=io.StringIO())
        response = sign_in(client, PASSWORD, **SPRAYER)

    assert response.status_code == 302


def test_the_command_lifts_an_ipv6_networks_block_named_by_any_of_its_addresses(
    client, olive, settings
):
    network = {"REMOTE_ADDR": "2001:db8:1:2::7"}
    with time_machine.travel(NOW, tick=False):
        spray(client, settings.SIGNIN_FAILURES_PER_ADDRESS, **network)
        assert sign_in(client, PASSWORD, **network).status_code == 429

        call_command("signin_unblock", "2001:db8:1:2::99", stdout=io.StringIO())

        assert sign_in(client, PASSWORD, **network).status_code == 302


def test_the_locked_out_pages_point_to_an_administrator(client, olive, settings):
    with time_machine.travel(NOW, tick=False):
        spray(client, settings.SIGNIN_FAILURES_PER_ADDRESS, **SPRAYER)
        page = sign_in(client, PASSWORD, **SPRAYER).content.decode()
    whole_address = " ".join(page.split())

    assert "everyone signing in from your address" in whole_address
    assert "ask an administrator to lift the block" in whole_address
    assert "Choose a new one" not in whole_address  # a new password would not help


def test_while_the_cache_is_unreachable_failures_are_not_counted_and_no_one_is_refused(
    client, olive, settings, caplog
):
    nowhere = {
        "default": {**settings.CACHES["default"], "LOCATION": "redis://127.0.0.1:1/0"}
    }
    with time_machine.travel(NOW, tick=False), override_settings(CACHES=nowhere):
        answers = spray(client, settings.SIGNIN_FAILURES_PER_ADDRESS + 1, **SPRAYER)

        response = sign_in(client, PASSWORD, **SPRAYER)

    assert set(answers) == {200}
    assert response.status_code == 302
    messages = [r.getMessage() for r in caplog.records]
    assert any("signin-failures not counted" in m for m in messages)
    assert not any("203.0.113.66" in m for m in messages)  # no address logged


def test_the_command_refuses_a_mistyped_address_and_lifts_nothing():
    out = io.StringIO()
    with pytest.raises(CommandError, match="203.0.113.666 is not an address"):
        call_command("signin_unblock", "203.0.113.666", stdout=out)

    assert out.getvalue() == ""


def test_the_command_refuses_a_proxys_address_which_is_never_limited():
    out = io.StringIO()
    with pytest.raises(CommandError, match="10.0.0.7 is a proxy's or private address"):
        call_command("signin_unblock", "10.0.0.7", stdout=out)

    assert out.getvalue() == ""
