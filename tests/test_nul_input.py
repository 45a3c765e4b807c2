"""A NUL character (%00) anywhere in a request's address is bad input, and
bad input is never a 500. PostgreSQL refuses NUL in text, and Django's admin
filters and search, the dashboard's list filters, the API's query parameters
and the tokens in links all pass what they are given to a query. These run on
SQLite too, where NUL is stored; the 500s they guard against are PostgreSQL's."""

from __future__ import annotations

import pytest
from django.urls import reverse

from monitors.models import Membership

pytestmark = pytest.mark.django_db

ADMIN_ADDRESSES = [
    "/admin/checks/check/?status=%00",
    "/admin/checks/check/?q=%00",
    "/admin/checks/webhookdelivery/?status=%00",
    "/admin/checks/webhookdelivery/?q=%00",
    "/admin/teams/activity/?kind=%00",
    "/admin/teams/activity/?q=%00",
    "/admin/auth/user/?username=%00",
    "/admin/auth/user/?q=%00",
    "/admin/monitors/monitor/?q=%00",
]

DASHBOARD_ADDRESSES = [
    "/?q=%00",
    "/?status=%00",
    "/history/?monitor=%00",
    "/activity/?kind=%00",
    "/activity/?person=%00",
    "/monitors/target-row/?type=%00",
    "/channels/new/?kind=%00",
    "/?q=price&%00=1",
]

TOKEN_ADDRESSES = [
    "/feeds/monitors/%00/",
    "/feeds/teams/a%00b/",
    "/invitations/%00/",
    "/email/confirm/%00/",
    "/captures/%00",
]

API_ADDRESSES = [
    "/v2/monitor?status=%00",
    "/v2/monitor?q=%00",
    "/v2/monitor?cursor=%00",
    "/v2/monitor/%00/checks?status=%00",
    "/v2/activity?kind=%00",
    "/v2/activity?before=%00",
]


@pytest.fixture
def owner(team, django_user_model):
    user = django_user_model.objects.create_user("olive", "olive@example.com", "pw")
    Membership.objects.create(team=team, user=user, role=Membership.Role.OWNER)
    return user


@pytest.mark.parametrize("address", ADMIN_ADDRESSES)
def test_a_nul_in_an_admin_address_is_a_bad_request(admin_client, address):
    response = admin_client.get(address)
    assert response.status_code == 400


@pytest.mark.parametrize("address", DASHBOARD_ADDRESSES)
def test_a_nul_in_a_dashboard_address_is_a_bad_request_page(client, owner, address):
    client.force_login(owner)
    response = client.get(address)
    assert response.status_code == 400
    assert b"Pagewatch could not understand that request" in response.content
    # The site's own 400, with the headers every page has.
    assert "Content-Security-Policy" in response.headers
    assert response.headers["X-Frame-Options"] == "DENY"


def test_a_nul_in_the_query_is_refused_before_asking_a_signed_out_visitor_to_sign_in(
    client,
):
    assert client.get("/?q=%00").status_code == 400


@pytest.mark.parametrize("address", TOKEN_ADDRESSES)
def test_a_nul_in_a_link_token_is_the_not_found_page(client, address):
    # A NUL in the path reaches no query of text (the middleware leaves
    # paths alone): each token is checked for shape, hashed or signature-
    # checked before any lookup.
    assert client.get(address).status_code == 404


@pytest.mark.parametrize("address", API_ADDRESSES)
def test_a_nul_in_an_api_address_answers_the_api_error_envelope(api, address):
    response = api.get(address)
    assert response.status_code == 400
    assert response.json() == {
        "success": False,
        "error": "Bad Request",
        "code": "BAD_REQUEST",
    }


def test_an_address_without_a_nul_is_answered_as_before(client, owner, api):
    client.force_login(owner)
    assert client.get(reverse("monitor-list"), {"q": "%00 price"}).status_code == 200
    assert api.get("/v2/monitor?limit=1").status_code == 200
