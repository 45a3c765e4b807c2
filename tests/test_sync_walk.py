"""An integrator's sync script: every minute it lists every monitor, then each
monitor's checks, then each new check's pages and diffs, while monitors are
created, edited and deleted and checks keep finishing. The SDK where it has
the call (a check with its pages, which it pages through itself), plain HTTP
where it has not (the lists' `next` links, a Pagewatch extension)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
import requests
import time_machine
from django.utils import timezone
from firecrawl import Firecrawl
from firecrawl.v2.utils import http_client
from firecrawl.v2.utils.error_handler import FirecrawlError, RateLimitError

from checks import deleting, runner
from checks.models import Check, PageResult
from checks.pipeline import record, sources
from checks.pipeline.outcome import Outcome
from monitors.api.auth import ApiKeyRateThrottle
from monitors.models import Monitor, Target, Team

# Fixed, so that every xdist worker collects the same test names.
SOME_ID = "0194f1c2a3b44c5d8e6f708192a3b4c5"
FINISHED = {"completed", "partial", "failed", "skipped_overlap", "skipped_no_credits"}


def make_monitor(team: Team, name: str) -> Monitor:
    monitor = Monitor.objects.create(
        team=team,
        name=name,
        schedule_cron="*/30 * * * *",
        next_run_at=timezone.now() + timedelta(minutes=30),
    )
    Target.objects.create(monitor=monitor, type="scrape", urls=["https://a.test/"])
    return monitor


def make_check(monitor: Monitor, status: str = Check.Status.COMPLETED) -> Check:
    return Check.objects.create(
        monitor=monitor, trigger=Check.Trigger.MANUAL, status=status
    )


def add_pages(check: Check, count: int) -> None:
    target_id = check.monitor.targets.get().pk
    done = check.pages.count()
    for i in range(done, done + count):
        PageResult.objects.create(
            check_run=check,
            target_id=target_id,
            url=f"https://a.test/{i:02d}",
            status=PageResult.Status.CHANGED,
            metadata={"creditsUsed": 1},
        )


class Gone(Exception):
    """A list's monitor was deleted while the script read it."""


def walk(get: Callable[[str], Any], first: str) -> list[dict[str, Any]]:
    """Every item of a list, following each answer's `next`."""
    items, address = [], first
    while address:
        response = get(address)
        if response.status_code == 404:
            raise Gone(response.json()["error"])
        assert response.status_code == 200, response.content
        body = response.json()
        items.extend(body["data"])
        address = body.get("next")
    return items


# --- the lists' next links, in-process ------------------------------------------


@pytest.fixture
def public(settings) -> str:
    settings.PUBLIC_BASE_URL = "https://pagewatch.example"
    settings.PUBLIC_BASE_URL_SET = True
    return "https://pagewatch.example"


def local(api) -> Callable[[str], Any]:
    """GET an absolute address of PUBLIC_BASE_URL through the test client."""
    return lambda address: api.get(address.removeprefix("https://pagewatch.example"))


@pytest.mark.django_db
def test_monitors_walked_by_next_are_each_seen_once_while_others_come_and_go(
    api, team, public
):
    first = [make_monitor(team, f"m{i}") for i in range(5)]
    page = api.get("/v2/monitor?limit=2").json()
    seen = [m["id"] for m in page["data"]]
    # Meanwhile: two monitors made (they go first, newest first), one already
    # seen deleted. With offset=2 the walk would read m2 again and miss m1.
    make_monitor(team, "late 1")
    make_monitor(team, "late 2")
    deleting.soft_delete_monitor(Monitor.objects.get(pk=seen[0]), timezone.now())

    assert page["next"].startswith(f"{public}/v2/monitor?limit=2&before=")
    seen += [m["id"] for m in walk(local(api), page["next"])]

    assert seen == [str(m.pk) for m in reversed(first)]


@pytest.mark.django_db
def test_checks_walked_by_next_are_each_seen_once_while_checks_are_queued(
    api, team, public
):
    monitor = make_monitor(team, "m")
    older = [make_check(monitor) for _ in range(5)]
    base = f"/v2/monitor/{monitor.pk}/checks"
    page = api.get(f"{base}?limit=2&status=completed").json()
    seen = [c["id"] for c in page["data"]]
    make_check(monitor)  # queued by the scheduler as the client pages
    make_check(monitor, Check.Status.QUEUED)

    assert page["next"].startswith(f"{public}{base}?limit=2&before=")
    assert page["next"].endswith("&status=completed")
    seen += [c["id"] for c in walk(local(api), page["next"])]

    assert seen == [str(c.pk) for c in reversed(older)]


@pytest.mark.django_db
def test_checks_created_in_one_instant_are_ordered_by_id_and_paged_without_a_gap(
    api, team, public
):
    monitor = make_monitor(team, "m")
    checks = [make_check(monitor) for _ in range(7)]
    instant = timezone.now()
    Check.objects.filter(monitor=monitor).update(created_at=instant)

    seen = [
        c["id"] for c in walk(local(api), f"/v2/monitor/{monitor.pk}/checks?limit=3")
    ]

    assert seen == sorted((str(c.pk) for c in checks), key=uuid.UUID, reverse=True)
    offsets = [
        c["id"]
        for offset in (0, 3, 6)
        for c in api.get(
            f"/v2/monitor/{monitor.pk}/checks?limit=3&offset={offset}"
        ).json()["data"]
    ]
    assert offsets == seen


@pytest.mark.django_db
def test_the_last_page_has_no_next_and_a_full_last_page_is_not_followed_by_an_empty_one(
    api, team, public
):
    for i in range(4):
        make_monitor(team, f"m{i}")

    assert "next" not in api.get("/v2/monitor?limit=4").json()
    assert "next" in api.get("/v2/monitor?limit=3").json()
    assert "next" not in api.get("/v2/monitor?limit=2&offset=2").json()


@pytest.mark.django_db
@pytest.mark.parametrize(
    "before",
    [
        "yesterday",
        "123",
        "_" + SOME_ID,
        "-5_" + SOME_ID,
        "1_not-an-id",
        "9" * 30 + "_" + SOME_ID,
        "١٢٣_" + SOME_ID,
        "1" * 200,
    ],
)
def test_a_cursor_that_is_not_one_is_a_400_naming_before(api, team, before):
    monitor = make_monitor(team, "m")
    for path in ("/v2/monitor", f"/v2/monitor/{monitor.pk}/checks"):
        response = api.get(path, {"before": before})
        assert response.status_code == 400, (path, before)
        assert response.json()["success"] is False
        assert "before" in response.json()["error"]


@pytest.mark.django_db
@pytest.mark.parametrize(
    "query",
    ["limit=0", "limit=-1", "limit=101", "limit=abc", "limit=1.5", "limit=9e9"]
    + ["limit=" + "9" * 40, "offset=-1"],
)
def test_limits_out_of_range_are_400s_on_every_list(api, team, query):
    monitor = make_monitor(team, "m")
    check = make_check(monitor)
    for path in (
        f"/v2/monitor?{query}",
        f"/v2/monitor/{monitor.pk}/checks?{query}",
        f"/v2/monitor/{monitor.pk}/checks/{check.pk}?{query.replace('offset', 'skip')}",
    ):
        response = api.get(path)
        assert response.status_code == 400, (path, query)
        assert response.json()["code"] == "BAD_REQUEST"


@pytest.mark.django_db
def test_a_huge_offset_is_an_empty_page_without_next(api, team):
    make_monitor(team, "m")

    body = api.get("/v2/monitor?offset=" + "9" * 40).json()

    assert body == {"success": True, "data": []}


@pytest.mark.django_db
def test_a_deleted_monitors_checks_and_their_next_links_are_monitor_not_found(
    api, team, public
):
    monitor = make_monitor(team, "m")
    check = make_check(monitor)
    add_pages(check, 3)
    checks_page = api.get(f"/v2/monitor/{monitor.pk}/checks?limit=1")
    detail = api.get(f"/v2/monitor/{monitor.pk}/checks/{check.pk}?limit=1").json()
    deleting.soft_delete_monitor(monitor, timezone.now())

    for address in (
        f"/v2/monitor/{monitor.pk}/checks",
        f"/v2/monitor/{monitor.pk}/checks/{check.pk}",
        detail["next"],
    ):
        response = local(api)(address)
        assert response.status_code == 404
        assert response.json() == {
            "success": False,
            "error": "Monitor not found",
            "code": "NOT_FOUND",
        }
    assert checks_page.status_code == 200


@pytest.mark.django_db
def test_a_running_check_read_midway_shows_its_pages_so_far_then_all_of_them(api, team):
    monitor = make_monitor(team, "m")
    check = make_check(monitor, Check.Status.RUNNING)
    add_pages(check, 3)
    path = f"/v2/monitor/{monitor.pk}/checks/{check.pk}"

    midway = api.get(path).json()["data"]
    add_pages(check, 2)
    check.finish(timezone.now())
    done = api.get(path).json()["data"]

    assert midway["status"] == "running"
    assert midway["finishedAt"] is None
    assert len(midway["pages"]) == 3
    assert done["status"] == "completed"
    assert done["summary"]["totalPages"] == len(done["pages"]) == 5
    assert [p["id"] for p in done["pages"][:3]] == [p["id"] for p in midway["pages"]]


@pytest.mark.django_db
def test_pages_recorded_by_a_worker_whose_clock_is_behind_come_after_those_listed(
    api, team
):
    monitor = make_monitor(team, "m")
    Target.objects.filter(monitor=monitor).update(
        urls=[f"https://a.test/{i}" for i in range(4)]
    )
    check = make_check(monitor, Check.Status.QUEUED)
    assert runner.claim(check)
    [(_, jobs)] = sources.plan(check, list(monitor.targets.all()))
    new = Outcome(PageResult.Status.NEW, {"creditsUsed": 1})
    record.record_many(check, [(job, new, None) for job in jobs[:3]])
    path = f"/v2/monitor/{monitor.pk}/checks/{check.pk}?limit=2"
    first = api.get(path).json()
    # Another machine, its clock a minute behind, records the last one.
    with time_machine.travel(timezone.now() - timedelta(minutes=1), tick=False):
        record.record_many(check, [(job, new, None) for job in jobs[3:]])

    rest = api.get(first["next"]).json()["data"]["pages"]

    assert [p["url"] for p in first["data"]["pages"] + rest] == [
        f"https://a.test/{i}" for i in range(4)
    ]


# --- the SDK, against a live server ------------------------------------------------


@pytest.fixture
def sdk(live_server, api_key, settings) -> Firecrawl:
    settings.PUBLIC_BASE_URL = live_server.url
    return Firecrawl(api_key=api_key, api_url=live_server.url, max_retries=1)


@pytest.mark.django_db(transaction=True)
def test_a_rate_limited_sdk_call_carries_retry_after_for_the_script_to_wait(
    sdk, team, monkeypatch
):
    monkeypatch.setattr(ApiKeyRateThrottle, "THROTTLE_RATES", {"api_key": "1/min"})
    sdk.list_monitors()

    with pytest.raises(RateLimitError) as refused:
        sdk.list_monitors()

    assert refused.value.status_code == 429
    assert 1 <= int(refused.value.response.headers["Retry-After"]) <= 60


@pytest.mark.django_db(transaction=True)
def test_the_sdk_gets_a_deleted_monitors_checks_as_a_404(sdk, team):
    monitor = make_monitor(team, "m")
    check = make_check(monitor)
    deleting.soft_delete_monitor(monitor, timezone.now())

    with pytest.raises(FirecrawlError) as missing:
        sdk.list_monitor_checks(str(monitor.pk))
    with pytest.raises(FirecrawlError) as missing_check:
        sdk.get_monitor_check(str(monitor.pk), str(check.pk))

    assert missing.value.status_code == missing_check.value.status_code == 404
    assert "Monitor not found" in str(missing.value)


class Churn:
    """The service going on while the script reads: before each GET the
    script makes, the next of these changes happens."""

    def __init__(self, changes: list[Callable[[], None]]) -> None:
        self.changes = changes

    def __call__(self) -> None:
        if self.changes:
            self.changes.pop(0)()


@pytest.fixture
def churn(monkeypatch) -> Iterator[Churn]:
    pending = Churn([])
    real = http_client.requests.get

    def get(*args: Any, **kwargs: Any) -> Any:
        pending()
        return real(*args, **kwargs)

    monkeypatch.setattr(http_client.requests, "get", get)
    yield pending


def sync(sdk: Firecrawl, base: str, key: str, copy: dict[str, Any]) -> None:
    """One pass of the integrator's script: the monitors and their checks by
    the lists' `next` links, each check not yet seen finished with all its
    pages through the SDK (which follows the check's own `next`)."""

    def get(address: str) -> Any:
        return requests.get(
            address, headers={"Authorization": f"Bearer {key}"}, timeout=30
        )

    monitors = walk(get, f"{base}/v2/monitor?limit=2")
    copy["monitors"] = {m["id"]: m["name"] for m in monitors}
    for monitor_id in list(copy["checks"]):
        if monitor_id not in copy["monitors"]:
            del copy["checks"][monitor_id]
    for monitor_id in list(copy["monitors"]):
        first = f"{base}/v2/monitor/{monitor_id}/checks?limit=2"
        known = copy["checks"].setdefault(monitor_id, {})
        try:
            for check in walk(get, first):
                if known.get(check["id"], {}).get("status") in FINISHED:
                    continue
                detail = sdk.get_monitor_check(monitor_id, check["id"], limit=2)
                known[check["id"]] = {
                    "status": detail.status,
                    "pages": [page.id for page in detail.pages],
                }
        except (Gone, FirecrawlError) as error:  # the monitor was deleted meanwhile
            assert isinstance(error, Gone) or error.status_code == 404
            copy["monitors"].pop(monitor_id)
            copy["checks"].pop(monitor_id)


def server_data(team: Team) -> dict[str, Any]:
    monitors = Monitor.objects.for_team(team)
    return {
        "monitors": {str(m.pk): m.name for m in monitors},
        "checks": {
            str(m.pk): {
                str(c.pk): {
                    "status": c.status,
                    "pages": [str(p) for p in c.pages.values_list("pk", flat=True)],
                }
                for c in Check.objects.filter(monitor=m)
            }
            for m in monitors
        },
    }


@pytest.mark.django_db(transaction=True)
def test_the_sync_loop_ends_with_an_exact_copy_while_checks_finish_as_it_pages(
    sdk, live_server, api_key, team, churn
):
    a, b, c, gone = (make_monitor(team, name) for name in ("a", "b", "c", "gone"))
    for monitor in (a, b, c, gone):
        for _ in range(3):
            add_pages(make_check(monitor), 3)
    running = make_check(b, Check.Status.RUNNING)
    add_pages(running, 3)

    def queue_on_a() -> None:
        add_pages(make_check(a), 2)

    def finish_running() -> None:
        add_pages(running, 2)
        running.finish(timezone.now())

    def another_monitor() -> None:
        add_pages(make_check(make_monitor(team, "d")), 1)

    def rename_c() -> None:
        Monitor.objects.filter(pk=c.pk).update(name="c renamed")

    def delete_gone() -> None:
        deleting.soft_delete_monitor(gone, timezone.now())

    churn.changes = [
        queue_on_a, another_monitor, queue_on_a, rename_c, finish_running,
        queue_on_a, delete_gone, queue_on_a, queue_on_a,
    ]  # fmt: skip
    copy: dict[str, Any] = {"monitors": {}, "checks": {}}

    sync(sdk, live_server.url, api_key, copy)  # the changes happen during this pass
    assert not churn.changes
    sync(sdk, live_server.url, api_key, copy)  # the next minute's pass

    assert copy == server_data(team)
    assert copy["checks"][str(b.pk)][str(running.pk)]["status"] == "completed"
    assert len(copy["checks"][str(b.pk)][str(running.pk)]["pages"]) == 5
