"""A new kind of target arrives through the registry alone: one class (this
module's OnePageKind, with its serializer and source) and one `register`
call, and the API, the dashboard's form, the runner and the monitor page take
it without a line changed elsewhere."""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping
from typing import Any

import httpx
import pytest
from django.contrib.admin import AdminSite
from django.core.exceptions import ValidationError
from django.urls import reverse
from rest_framework import serializers

from checks import runner
from checks.jobs import PageJob
from checks.models import Check
from checks.targets.options import StrictMixin, UrlField
from monitors.admin.monitors import TargetInline
from monitors.models import Membership, Monitor, Target
from monitors.moving.exporting import export_csv
from monitors.target_kinds import FormField, TargetKind, register, unregister
from tests.sites import Site
from tests.test_worker_integration import (  # noqa: F401 - fixtures
    FINISHED,
    Worker,
    broker,
    database_url,
    redis_url,
    wait_for,
    worker_env,
    worker_sessions,
)

PAGE = "<h1>Acme</h1><p>Price: 19 €</p>"


# --- The kind: all of it, in one place -----------------------------------------


class OnePageSerializer(StrictMixin, serializers.Serializer):
    id = serializers.UUIDField(required=False, allow_null=True)
    type = serializers.ChoiceField(choices=["onepage"])
    url = UrlField()


class OnePageSource:
    def __init__(self, target: Target) -> None:
        self.target = target

    def jobs(self) -> list[PageJob]:
        credits = self.target.credits_per_page()
        return [PageJob(self.target.id, self.target.url, {}, credits, uuid.uuid4())]

    def persist(self, check: Check, jobs: list[PageJob]) -> None:
        return None

    def target_result(self) -> dict[str, Any]:
        return {"targetId": str(self.target.id), "type": self.target.type}


class OnePageKind(TargetKind):
    name = "onepage"
    label = "One page"
    serializer = OnePageSerializer
    form_fields = (
        FormField(
            "url", "Address", "The one page to watch.",
            path=("url",), widget="url", always=True,
        ),
    )  # fmt: skip

    def page_budget(self, target: Target) -> int:
        return 1

    def represent(self, target: Target) -> dict[str, Any]:
        return {"url": target.url}

    def describe(self, target: Target) -> str:
        return f"One page at {target.url}"

    def addresses(self, target: Target) -> list[str]:
        return [target.url]

    def plan(
        self, target: Target, stored: Mapping[str, Any], resolver: Any, alive: Any
    ) -> OnePageSource:
        return OnePageSource(target)


@pytest.fixture(autouse=True)
def one_page_kind(settings) -> Iterator[None]:
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True  # the pages are on 127.0.0.1
    register(OnePageKind)
    yield
    unregister(OnePageKind.name)


@pytest.fixture
def web(client, team, django_user_model):
    user = django_user_model.objects.create_user("olive", "olive@example.com", "pw")
    Membership.objects.create(team=team, user=user, role=Membership.Role.OWNER)
    client.force_login(user)
    return client


def monitor_body(*targets: dict[str, Any]) -> dict[str, Any]:
    return {"name": "Acme", "schedule": {"text": "hourly"}, "targets": list(targets)}


def form_of(url: str, **fields: str) -> dict[str, Any]:
    return {
        "name": "Acme",
        "schedule": "hourly",
        "timezone": "UTC",
        "judge": "auto",
        "target": ["t0000aaaa"],
        "t0000aaaa-type": "onepage",
        "t0000aaaa-url": url,
        **fields,
    }


# --- The API -----------------------------------------------------------------------


def test_the_api_creates_and_shows_a_target_of_a_new_kind(api, team, site):
    url = site.html("/price", "Price", PAGE)

    created = api.post(
        "/v2/monitor", monitor_body({"type": "onepage", "url": url}), format="json"
    )

    assert created.status_code == 200, created.json()
    data = created.json()["data"]
    [target] = Target.objects.filter(monitor_id=data["id"])
    assert (target.type, target.url) == ("onepage", url)
    assert data["targets"] == [{"id": str(target.id), "type": "onepage", "url": url}]
    assert data["warning"] is None
    assert data["estimatedCreditsPerMonth"] == 30 * 24  # one page, hourly
    shown = api.get(f"/v2/monitor/{data['id']}").json()["data"]
    assert shown["targets"] == data["targets"]


@pytest.mark.parametrize(
    ("target", "field", "words"),
    [
        ({"type": "onepage"}, "url", "required"),
        ({"type": "onepage", "url": "not a page"}, "url", ""),
        ({"type": "onepage", "url": "https://e.com/", "urls": []}, "urls", "Unknown"),
    ],
)
def test_the_api_validates_a_target_of_a_new_kind_with_its_own_rules(
    api, team, target, field, words
):
    response = api.post("/v2/monitor", monitor_body(target), format="json")

    assert response.status_code == 400
    assert f"targets[0].{field}: " in response.json()["error"]
    assert words in response.json()["error"]
    assert not Monitor.objects.filter(team=team).exists()


def test_the_api_names_every_registered_kind_for_an_unknown_type(api):
    response = api.post("/v2/monitor", monitor_body({"type": "feed"}), format="json")

    assert response.status_code == 400
    assert "scrape, crawl, search or onepage" in response.json()["error"]


# --- The dashboard -------------------------------------------------------------


def test_the_dashboard_form_offers_and_saves_a_target_of_a_new_kind(web, team, site):
    url = site.html("/price", "Price", PAGE)
    new = web.get(reverse("monitor-create")).content.decode()
    row = web.get(reverse("target-row"), {"add_target": "onepage"}).content.decode()

    response = web.post(reverse("monitor-create"), form_of(url))

    assert 'value="onepage"' in new and "+ One page" in new
    assert "One page" in row and "The one page to watch." in row
    assert 'type="url"' in row and "-url" in row
    assert response.status_code == 302
    monitor = Monitor.objects.get(team=team)
    [target] = monitor.targets.all()
    assert (target.type, target.url) == ("onepage", url)
    edit = web.get(reverse("monitor-edit", args=[monitor.pk])).content.decode()
    assert f'value="{url}"' in edit


def test_the_dashboard_form_puts_the_kinds_own_errors_beside_its_field(web, team):
    response = web.post(reverse("monitor-create"), form_of(""))

    page = response.content.decode()
    assert response.status_code == 400
    assert 'id="err-t0000aaaa-url"' in page
    assert 'aria-invalid="true"' in page
    assert not Monitor.objects.filter(team=team).exists()


# --- A check, and the monitor page ---------------------------------------------


def test_a_check_runs_a_target_of_a_new_kind_and_its_page_says_what_it_watches(
    web, team, site
):
    url = site.html("/price", "Price", PAGE)
    monitor = Monitor.objects.create(team=team, name="Acme", schedule_cron="0 * * * *")
    Target.objects.create(monitor=monitor, type="onepage", url=url)

    first = runner.run(Check.objects.create(monitor=monitor))
    site.html("/price", "Price", PAGE.replace("19", "24"))
    second = runner.run(Check.objects.create(monitor=monitor))

    assert first.status == Check.Status.COMPLETED
    assert [(p.url, p.status) for p in first.pages.all()] == [(url, "new")]
    assert [(p.url, p.status) for p in second.pages.all()] == [(url, "changed")]
    assert first.target_results == [
        {"targetId": str(monitor.targets.get().id), "type": "onepage"}
    ]
    detail = web.get(monitor.get_absolute_url()).content.decode()
    assert f"One page at {url}" in detail
    check_page = web.get(second.get_absolute_url())
    assert check_page.status_code == 200
    assert url.split("://")[1] in check_page.content.decode()


class FoundPagesKind(OnePageKind):
    """The kind again, as one whose pages are found rather than listed."""

    name = "foundpages"
    label = "Found pages"
    finds_pages = True


def test_the_csv_export_and_the_admin_show_a_new_kind_from_its_class(team, site):
    url = site.html("/price", "Price", PAGE)
    monitor = Monitor.objects.create(team=team, name="Acme", schedule_cron="0 * * * *")
    target = Target.objects.create(monitor=monitor, type="onepage", url=url)
    Target.objects.create(monitor=monitor, type="search", queries=["acme"], position=1)

    rows = export_csv(team).splitlines()

    # Its address is a row; the web search names none.
    assert rows[1:] == [f"Acme,{url},0 * * * *,"]
    inline = TargetInline(Monitor, AdminSite())
    assert url in inline.pages(target) and url in inline.options(target)


def test_the_model_takes_a_new_kinds_type_as_valid_and_names_it_in_its_words(team):
    monitor = Monitor.objects.create(team=team, name="Acme", schedule_cron="0 * * * *")
    target = Target(monitor=monitor, type="onepage", url="https://e.com/")

    target.full_clean()  # a type the model listed itself would be refused here

    assert target.get_type_display() == "One page"
    unregister(OnePageKind.name)
    with pytest.raises(ValidationError):
        target.full_clean()


def test_the_admin_edits_a_new_kinds_target_with_its_own_words(admin_client, team):
    monitor = Monitor.objects.create(team=team, name="Acme", schedule_cron="0 * * * *")
    target = Target.objects.create(
        monitor=monitor, type="onepage", url="https://e.com/"
    )

    page = admin_client.get(
        reverse("admin:monitors_monitor_change", args=[monitor.pk])
    ).content.decode()

    # Not the words of another kind's field of the same name (a crawl's url).
    assert f'for="id_t{target.id.hex[:16]}-url">Address:</label>' in page
    assert "The one page to watch." in page


def test_a_new_kind_that_finds_its_pages_gets_the_page_of_every_page_found(
    web, team, site
):
    register(FoundPagesKind)
    try:
        url = site.html("/price", "Price", PAGE)
        monitor = Monitor.objects.create(
            team=team, name="Acme", schedule_cron="0 * * * *"
        )
        listed = Target.objects.create(monitor=monitor, type="onepage", url=url)
        found = Target.objects.create(monitor=monitor, type="foundpages", url=url)
        runner.run(Check.objects.create(monitor=monitor))

        where = "site-pages"
        page = web.get(reverse(where, args=[monitor.pk, found.pk]))
        assert page.status_code == 200 and url in page.content.decode()
        assert web.get(reverse(where, args=[monitor.pk, listed.pk])).status_code == 404
        # Not a kind that reports results found on the web: no such section.
        detail = web.get(monitor.get_absolute_url()).content.decode()
        assert "Found on the web" not in detail
    finally:
        unregister(FoundPagesKind.name)


# --- On a real worker ------------------------------------------------------------


@pytest.fixture
def kind_worker(request, tmp_path) -> Iterator[Worker]:
    """A Celery worker that loads the kind as a plugin would."""
    broker_url = request.getfixturevalue("broker")
    env = worker_env(broker_url, request.getfixturevalue("database_url"), tmp_path)
    running = Worker(env, tmp_path / "worker.log", "--include", "tests.kinds_plugin")
    try:
        running.wait_ready()
        yield running
    finally:
        running.stop()
        wait_for(lambda: worker_sessions() == 0, "the worker's sessions to end")


def run_on(worker: Worker, api: httpx.Client, monitor: Monitor) -> dict[str, Any]:
    """Run the monitor through the API and wait for the worker to finish the
    check; its detail as the API gives it (the Firecrawl SDK's types know
    Firecrawl's three kinds only)."""
    queued = api.post(f"/v2/monitor/{monitor.pk}/run", json={}).json()["data"]
    where = f"/v2/monitor/{monitor.pk}/checks/{queued['id']}"

    def finished() -> dict[str, Any] | None:
        detail = api.get(where).json()["data"]
        return detail if detail["status"] in FINISHED else None

    return wait_for(finished, f"check {queued['id']} to finish", worker.log)


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_checks_a_target_of_a_new_kind(
    live_server, api_key, team, kind_worker
):
    headers = {"Authorization": f"Bearer {api_key}"}
    with Site() as site, httpx.Client(base_url=live_server.url, headers=headers) as api:
        url = site.html("/price", "Price", PAGE)
        monitor = Monitor.objects.create(
            team=team, name="Acme", schedule_cron="0 * * * *"
        )
        Target.objects.create(monitor=monitor, type="onepage", url=url)

        first = run_on(kind_worker, api, monitor)
        site.html("/price", "Price", PAGE.replace("19", "24"))
        second = run_on(kind_worker, api, monitor)

    assert first["status"] == "completed", kind_worker.log()[-2000:]
    assert [(p["url"], p["status"]) for p in first["pages"]] == [(url, "new")]
    assert [(p["url"], p["status"]) for p in second["pages"]] == [(url, "changed")]
    assert first["targetResults"] == [
        {"targetId": str(monitor.targets.get().pk), "type": "onepage"}
    ]
