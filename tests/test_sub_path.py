"""Pagewatch at https://intranet.example/pagewatch/ behind a reverse proxy:
PUBLIC_BASE_URL's path is where every page, link, cookie and API answer
lives, whether the proxy strips the prefix or passes it on."""

from __future__ import annotations

import http.cookiejar
import io
import json
import re
import threading
import urllib.request
from collections.abc import Iterator
from typing import Any
from wsgiref.util import setup_testing_defaults

import pytest
from celery import signals
from django.core.signals import request_started
from django.db import close_old_connections
from django.test import Client
from django.urls import set_script_prefix
from drf_spectacular.settings import spectacular_settings

from monitors.links import public_url
from monitors.models import Membership, Monitor
from monitors.models.teams import feed_link
from teams import second_factor
from teams.emails import send_password_reset
from tests.browser.people import PASSWORD
from tests.test_dashboard_views import make_monitor
from tests.test_second_factor import code_for

pytestmark = pytest.mark.django_db

BASE = "https://intranet.example/pagewatch"


@pytest.fixture
def under_sub_path(settings) -> Iterator[None]:
    """What config.settings makes of PUBLIC_BASE_URL=BASE."""
    settings.PUBLIC_BASE_URL = BASE
    settings.FORCE_SCRIPT_NAME = "/pagewatch"
    settings.SESSION_COOKIE_PATH = settings.CSRF_COOKIE_PATH = "/pagewatch"
    settings.STATIC_URL = "/pagewatch/static/"
    settings.ALLOWED_HOSTS = ["intranet.example", "testserver"]
    set_script_prefix("/pagewatch/")
    yield
    set_script_prefix("/")


@pytest.fixture
def owner(team, django_user_model) -> Any:
    user = django_user_model.objects.create_user("olive", "olive@acme.test", PASSWORD)
    Membership.objects.create(team=team, user=user, role=Membership.Role.OWNER)
    return user


@pytest.fixture
def monitor(team) -> Monitor:
    return make_monitor(team)


def settings_of(tmp_path, **env: str) -> dict[str, Any]:
    from tests.test_settings import fresh

    names = ["FORCE_SCRIPT_NAME", "SESSION_COOKIE_PATH", "CSRF_COOKIE_PATH"]
    expression = (
        f"{{n: getattr(settings, n) for n in {names!r}}}"
        " | {'servers': settings.SPECTACULAR_SETTINGS['SERVERS']}"
    )
    return fresh(expression, tmp_path, **env)


def test_the_public_address_s_path_becomes_the_sub_path_of_everything(tmp_path):
    found = settings_of(tmp_path, PUBLIC_BASE_URL=BASE + "/")
    assert found == {
        "FORCE_SCRIPT_NAME": "/pagewatch",
        "SESSION_COOKIE_PATH": "/pagewatch",
        "CSRF_COOKIE_PATH": "/pagewatch",
        "servers": [{"url": "/pagewatch"}],
    }


def test_static_files_are_under_the_sub_path_in_a_served_process(tmp_path):
    from tests.test_settings import in_fresh_process

    code = (
        "import json; from config.wsgi import application;"
        "from django.conf import settings; print(json.dumps(settings.STATIC_URL))"
    )
    found = in_fresh_process(code, tmp_path, PUBLIC_BASE_URL=BASE)
    assert json.loads(found) == "/pagewatch/static/"


def test_a_public_address_without_a_path_serves_from_the_root(tmp_path):
    found = settings_of(tmp_path, PUBLIC_BASE_URL="https://watch.example")
    assert found["FORCE_SCRIPT_NAME"] is None
    assert found["SESSION_COOKIE_PATH"] == "/"
    assert found["servers"] == []


def test_signing_in_lands_on_the_monitors_under_the_sub_path(
    under_sub_path, client, owner
):
    page = client.get("/accounts/login/")
    assert 'action="/pagewatch/accounts/login/"' in page.content.decode()
    assert "/pagewatch/static/" in page.content.decode()
    response = client.post(
        "/accounts/login/", {"username": "olive", "password": PASSWORD}
    )
    assert response.status_code == 302
    assert response["Location"] == "/pagewatch/"
    assert client.cookies["sessionid"]["path"] == "/pagewatch"
    assert client.cookies["csrftoken"]["path"] == "/pagewatch"


def test_pages_link_only_inside_the_sub_path(under_sub_path, client, owner, monitor):
    client.force_login(owner)
    for url in ("/", monitor.get_absolute_url().removeprefix("/pagewatch")):
        html = client.get(url).content.decode()
        outside = [
            link
            for link in re.findall(r'(?:href|src|action|hx-\w+)="(/[^"]*)"', html)
            if not link.startswith("/pagewatch/")
        ]
        assert outside == [], url


def test_the_admin_links_only_inside_the_sub_path(
    under_sub_path, client, django_user_model
):
    admin = django_user_model.objects.create_superuser("root", "root@acme.test", "x")
    client.force_login(admin)
    html = client.get("/admin/").content.decode()
    links = re.findall(r'(?:href|src|action)="(/[^"]*)"', html)
    # "View site" is the bare prefix, which the proxy and config.wsgi take.
    inside = [link for link in links if link.startswith("/pagewatch/")]
    assert len(inside) > 10 and set(links) - set(inside) == {"/pagewatch"}


def test_a_refused_stale_form_links_back_inside_the_sub_path(under_sub_path, owner):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(owner)
    response = browser.post("/settings/team/invite/", {"email": "sam@example.com"})
    assert response.status_code == 403
    assert 'href="/pagewatch/"' in response.content.decode()


def test_an_api_error_under_the_sub_path_is_json(under_sub_path, client):
    response = client.get("/v2/no-such-thing")
    assert response.status_code in (401, 404)
    assert response["Content-Type"].startswith("application/json")


def test_links_given_out_keep_the_sub_path_once(under_sub_path, team, monitor):
    assert public_url(monitor.get_absolute_url()) == (f"{BASE}/monitors/{monitor.pk}/")
    feed = feed_link("team-feed", "token")
    assert feed.startswith(BASE + "/") and "/pagewatch/pagewatch/" not in feed


def test_a_password_reset_link_keeps_the_sub_path(under_sub_path, owner, mailoutbox):
    assert send_password_reset("olive@acme.test") == 1
    link = re.search(r"https?://\S+", mailoutbox[0].body).group(0)
    assert link.startswith(BASE + "/accounts/reset/")


def test_an_invitation_link_keeps_the_sub_path(
    under_sub_path, client, owner, mailoutbox
):
    client.force_login(owner)
    invite = {"email": "sam@example.com", "role": "editor"}
    client.post("/settings/team/invite/", invite)
    link = re.search(r"https?://\S+/invitations/\S+/", mailoutbox[-1].body).group(0)
    assert link.startswith(BASE + "/invitations/")


def test_the_api_document_s_paths_follow_its_server_s_sub_path(
    under_sub_path, client, monkeypatch
):
    # What config.settings sets for this PUBLIC_BASE_URL (read once, at start).
    monkeypatch.setattr(spectacular_settings, "SERVERS", [{"url": "/pagewatch"}])
    document = client.get("/v2/openapi.json")
    assert document.status_code == 200
    body = json.loads(document.content)
    assert body["servers"] == [{"url": "/pagewatch"}]
    assert "/v2/monitor" in body["paths"]


def wsgi_get(path: str, cookie: str = "") -> tuple[str, bytes]:
    """A request as a server hands it to config.wsgi.application."""
    from config.wsgi import application

    environ: dict[str, Any] = {"PATH_INFO": path, "wsgi.input": io.BytesIO()}
    setup_testing_defaults(environ)
    environ["HTTP_HOST"] = "intranet.example"
    if cookie:
        environ["HTTP_COOKIE"] = cookie
    status: list[str] = []
    # As Django's test client does: a request's start would close the test's
    # connection, and with it (on PostgreSQL) the test's open transaction.
    request_started.disconnect(close_old_connections)
    try:
        body = b"".join(application(environ, lambda s, h, e=None: status.append(s)))
    finally:
        request_started.connect(close_old_connections)
    return status[0], body


def test_a_proxy_that_keeps_the_prefix_reaches_the_same_pages(under_sub_path):
    assert wsgi_get("/pagewatch/accounts/login/")[0].startswith("200")
    assert wsgi_get("/accounts/login/")[0].startswith("200")
    # A probe asking the machine itself, past the proxy, or through it.
    assert wsgi_get("/healthz")[0] == wsgi_get("/pagewatch/healthz")[0]
    assert not wsgi_get("/healthz")[0].startswith("404")


def cookies_sent_to(client: Client, url: str) -> str:
    """The Cookie header a browser sends `url` of the client's cookies, by
    their paths (RFC 6265's path match, as http.cookiejar does it)."""
    jar = http.cookiejar.CookieJar()
    for c in client.cookies.values():
        jar.set_cookie(
            http.cookiejar.Cookie(
                0, c.key, c.value, None, False, "intranet.example", False, False,
                c["path"], True, False, None, False, None, None, {},
            )
        )  # fmt: skip
    request = urllib.request.Request(url)
    jar.add_cookie_header(request)
    return request.get_header("Cookie", "")


def test_the_bare_prefix_has_the_sign_in_cookie(under_sub_path, client, owner):
    client.post("/accounts/login/", {"username": "olive", "password": PASSWORD})
    cookie = cookies_sent_to(client, BASE)

    assert "sessionid=" in cookie
    assert "sessionid=" not in cookies_sent_to(client, BASE + "evil/")
    status, body = wsgi_get("/pagewatch", cookie=cookie)
    assert status.startswith("200")
    assert "Sign in" not in body.decode()


def test_every_route_of_pagewatch_is_a_sub_path_it_refuses(under_sub_path):
    from django.conf import settings
    from django.urls import URLResolver, get_resolver

    def first_segments(patterns) -> set[str]:
        found = set()
        for pattern in patterns:
            if isinstance(pattern, URLResolver) and str(pattern.pattern) == "":
                found |= first_segments(pattern.url_patterns)
            elif str(pattern.pattern):
                found.add(str(pattern.pattern).split("/")[0])
        return found

    routes = first_segments(get_resolver().url_patterns) | {"static"}
    assert routes == settings.APP_ROUTES


def test_someone_half_signed_in_can_still_sign_out_under_the_sub_path(
    under_sub_path, client, owner
):
    device = second_factor.start_setup(owner)
    second_factor.confirm(device, code_for(device))
    client.post("/accounts/login/", {"username": "olive", "password": PASSWORD})

    # The code is still to be typed: every page but the open ones asks for it.
    assert client.get("/")["Location"].startswith("/pagewatch/accounts/two-factor/")
    response = client.post("/accounts/logout/")
    assert response["Location"] == "/pagewatch/accounts/login/"
    assert "_auth_user_id" not in client.session


def test_a_worker_thread_s_links_keep_the_sub_path(under_sub_path, monitor):
    """A threads pool's thread starts without django.setup()'s script prefix;
    each task sets it (config.celery)."""
    links: list[str] = []

    def task() -> None:
        signals.task_prerun.send(sender=None, task_id="t", task=None)
        links.append(public_url(monitor.get_absolute_url()))

    thread = threading.Thread(target=task)
    thread.start()
    thread.join()
    assert links == [f"{BASE}/monitors/{monitor.pk}/"]


def test_a_list_s_next_link_keeps_the_sub_path_once(
    under_sub_path, settings, api, team
):
    settings.PUBLIC_BASE_URL_SET = True
    for n in range(3):
        Monitor.objects.create(
            team=team, name=f"M{n}", schedule_cron="0 * * * *", schedule_timezone="UTC"
        )
    answer = api.get("/v2/monitor?limit=2").json()
    assert len(answer["data"]) == 2
    assert answer["next"].startswith(f"{BASE}/v2/monitor?")
    assert "/pagewatch/pagewatch/" not in answer["next"]
