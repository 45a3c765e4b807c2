"""Tags on monitors: one rule for the form and the API, the list's chips and
tag filter, the API's `tags` and `?tag=`, and acting on many ticked monitors
from the list (with the activity log, roles and tenancy)."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse
from django.utils import timezone

from monitors import rules
from monitors.dashboard.forms.monitor import MonitorForm
from monitors.editing import create_monitor
from monitors.models import Membership, Monitor, Tag
from monitors.wire.monitor import MonitorUpdateSerializer, MonitorWriteSerializer
from teams.models import Activity
from tests.test_dashboard_forms import post
from tests.test_moving_api import upload

PASSWORD = "correct-horse-battery-staple"


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def member(team, django_user_model, name: str, role: str):
    user = django_user_model.objects.create_user(name, f"{name}@example.com", PASSWORD)
    Membership.objects.create(team=team, user=user, role=role)
    return user


@pytest.fixture
def web(client, team, django_user_model):
    client.force_login(member(team, django_user_model, "olive", "owner"))
    return client


@pytest.fixture
def viewer_web(client, team, django_user_model):
    client.force_login(member(team, django_user_model, "vera", "viewer"))
    return client


def make_monitor(team, name: str = "Pricing", tags: list[str] | None = None):
    body = {
        "name": name,
        "schedule": {"cron": "*/30 * * * *", "timezone": "UTC"},
        "targets": [{"type": "scrape", "urls": ["https://example.com/a"]}],
    }
    if tags is not None:
        body["tags"] = tags
    serializer = MonitorWriteSerializer(data=body, context={"team": team})
    serializer.is_valid(raise_exception=True)
    return create_monitor(team, serializer.validated_data, timezone.now())


# ---------------------------------------------------------------- one rule


TOO_MANY = [f"Tag {n}" for n in range(rules.MONITOR_TAGS_MAX + 1)]


@pytest.mark.parametrize(
    "tags",
    [
        ["x" * (rules.TAG_NAME_MAX + 1)],
        ["Black\tFriday"],
        TOO_MANY,
    ],
    ids=["too long", "control character", "too many"],
)
def test_the_form_and_the_api_refuse_the_same_tags_with_the_same_words(team, tags):
    body = {
        "name": "Pricing",
        "schedule": {"text": "every 30 minutes"},
        "targets": [{"type": "scrape", "urls": ["https://example.com/a"]}],
        "tags": tags,
    }
    serializer = MonitorWriteSerializer(data=body, context={"team": team})
    assert not serializer.is_valid()
    form = MonitorForm(post(tags=", ".join(tags)), team=team)
    assert not form.is_valid()

    expected = rules.tags_error(tags)
    assert expected
    assert [str(e) for e in serializer.errors["tags"]] == [expected]
    assert form.errors["tags"] == [rules.curly_quotes(expected)]


def test_a_comma_in_an_api_tag_is_refused_as_the_form_could_not_keep_it(team):
    serializer = MonitorUpdateSerializer(data={"tags": ["Shop, Pricing"]})
    assert not serializer.is_valid()
    assert "comma" in str(serializer.errors["tags"][0])


def test_tags_are_trimmed_and_one_per_name_whatever_its_case(team):
    first = make_monitor(team, tags=["  Competitors ", "competitors", "Black  Friday"])
    second = make_monitor(team, tags=["COMPETITORS"])

    assert first.tag_names == ["Black Friday", "Competitors"]
    # The team's first spelling stays.
    assert second.tag_names == ["Competitors"]
    assert Tag.objects.filter(team=team).count() == 2


def test_another_team_has_its_own_tag_of_the_same_name(team, other_team):
    ours = make_monitor(team, tags=["Competitors"])
    theirs = make_monitor(other_team, tags=["Competitors"])

    assert ours.tags.get().team == team
    assert theirs.tags.get().team == other_team


def test_the_form_saves_tags_typed_with_commas_and_shows_them_again(web, team):
    response = web.post(
        reverse("monitor-create"),
        post(tags="Competitors, Black Friday, ,competitors"),
    )

    assert response.status_code == 302
    monitor = Monitor.objects.get(team=team)
    assert monitor.tag_names == ["Black Friday", "Competitors"]
    page = web.get(reverse("monitor-edit", args=[monitor.pk])).content.decode()
    assert 'value="Black Friday, Competitors"' in page
    assert "Group monitors, e.g. Competitors" in page


def test_an_edit_of_the_tags_is_in_the_activity_log(web, team):
    monitor = make_monitor(team, tags=["Competitors"])
    data = post(name="Pricing", tags="Sales")

    web.post(reverse("monitor-edit", args=[monitor.pk]), data)

    assert monitor.tag_names == ["Sales"]
    entry = Activity.objects.get(monitor=monitor, kind=Activity.Kind.MONITOR_EDITED)
    assert "tags" in entry.details["fields"]


# ---------------------------------------------------------------- API


def test_the_api_takes_and_returns_tags(api, team):
    body = {
        "name": "Pricing",
        "schedule": {"text": "every 30 minutes"},
        "targets": [{"type": "scrape", "urls": ["https://example.com/a"]}],
        "tags": ["Competitors", "Shop"],
    }
    created = api.post("/v2/monitor", body, format="json").json()["data"]
    assert created["tags"] == ["Competitors", "Shop"]

    path = f"/v2/monitor/{created['id']}"
    renamed = api.patch(path, {"name": "Prices"}, format="json").json()["data"]
    assert renamed["tags"] == ["Competitors", "Shop"]

    retagged = api.patch(path, {"tags": ["Sales"]}, format="json").json()["data"]
    assert retagged["tags"] == ["Sales"]
    assert Monitor.objects.get(pk=created["id"]).tag_names == ["Sales"]

    cleared = api.patch(path, {"tags": []}, format="json").json()["data"]
    assert cleared["tags"] == []


def test_the_api_lists_the_monitors_of_one_tag_any_case(api, team, other_team):
    tagged = make_monitor(team, "Rival", tags=["Competitors"])
    make_monitor(team, "Ours", tags=["Shop"])
    make_monitor(other_team, "Theirs", tags=["Competitors"])

    answer = api.get("/v2/monitor", {"tag": "competitors"}).json()["data"]

    assert [m["id"] for m in answer] == [str(tagged.pk)]
    assert len(api.get("/v2/monitor").json()["data"]) == 2


def test_the_next_page_of_one_tag_keeps_to_that_tag(api, team):
    rivals = [make_monitor(team, f"Rival {n}", tags=["Competitors"]) for n in range(3)]
    make_monitor(team, "Ours", tags=["Shop"])

    first = api.get("/v2/monitor", {"tag": "Competitors", "limit": 2}).json()
    second = api.get(first["next"].removeprefix("http://testserver")).json()

    assert "tag=Competitors" in first["next"]
    seen = [m["id"] for m in first["data"] + second["data"]]
    assert sorted(seen) == sorted(str(m.pk) for m in rivals)
    assert "next" not in second


def test_the_api_refuses_a_tag_too_long_with_a_400(api):
    body = {
        "name": "Pricing",
        "schedule": {"text": "every 30 minutes"},
        "targets": [{"type": "scrape", "urls": ["https://example.com/a"]}],
        "tags": ["x" * (rules.TAG_NAME_MAX + 1)],
    }
    response = api.post("/v2/monitor", body, format="json")

    assert response.status_code == 400
    assert not Monitor.objects.exists()


def test_the_openapi_document_describes_tags(client):
    schema = client.get("/v2/openapi.json").json()
    monitor = schema["components"]["schemas"]["Monitor"]["properties"]
    assert monitor["tags"]["type"] == "array"
    parameters = schema["paths"]["/v2/monitor"]["get"]["parameters"]
    assert "tag" in [p["name"] for p in parameters]


# ---------------------------------------------------------------- the list


def test_the_list_shows_tags_as_links_that_filter_by_them(web, team):
    make_monitor(team, "Rival", tags=["Competitors"])
    make_monitor(team, "Ours", tags=["Shop"])

    page = web.get(reverse("monitor-list")).content.decode()
    assert f'href="{reverse("monitor-list")}?tag=Competitors"' in page
    assert '<option value="Competitors">Competitors</option>' in page

    filtered = web.get(reverse("monitor-list"), {"tag": "competitors"})
    names = [m.name for m in filtered.context["page"].object_list]
    assert names == ["Rival"]
    assert "Competitors</option>" in filtered.content.decode()


def test_a_monitors_page_shows_its_tags_as_links_to_their_monitors(web, team):
    monitor = make_monitor(team, "Rival", tags=["Black Friday"])

    page = web.get(monitor.get_absolute_url()).content.decode()

    assert f'href="{reverse("monitor-list")}?tag=Black%20Friday"' in page


def test_viewers_see_no_tick_boxes(viewer_web, team):
    make_monitor(team, tags=["Competitors"])

    page = viewer_web.get(reverse("monitor-list")).content.decode()

    assert "data-select-row" not in page
    assert reverse("monitor-bulk") not in page


def test_editors_see_tick_boxes_and_the_actions(web, team):
    monitor = make_monitor(team)

    page = web.get(reverse("monitor-list")).content.decode()

    assert f'name="monitor" value="{monitor.pk}" form="bulk"' in page
    assert "Select all shown" in page


# ---------------------------------------------------------------- acting on many


def bulk(client, action: str, monitors, **fields):
    data = {"action": action, "monitor": [str(m.pk) for m in monitors], **fields}
    return client.post(reverse("monitor-bulk"), data)


def test_pausing_many_pauses_them_all_and_logs_each(web, team):
    ticked = [make_monitor(team, f"M{n}") for n in range(3)]
    untouched = make_monitor(team, "Other")

    response = bulk(web, "pause", ticked)

    assert response.status_code == 302
    for monitor in ticked:
        monitor.refresh_from_db()
        assert monitor.status == Monitor.Status.PAUSED
        assert monitor.next_run_at is None
    untouched.refresh_from_db()
    assert untouched.is_active
    entries = Activity.objects.filter(kind=Activity.Kind.MONITOR_PAUSED)
    assert sorted(e.monitor_id for e in entries) == sorted(m.pk for m in ticked)
    assert {e.user_name for e in entries} == {"olive"}


def test_resuming_many_gives_each_its_next_run(web, team):
    ticked = [make_monitor(team, f"M{n}") for n in range(2)]
    Monitor.objects.filter(pk__in=[m.pk for m in ticked]).pause()

    bulk(web, "resume", ticked)

    for monitor in ticked:
        monitor.refresh_from_db()
        assert monitor.is_active
        assert monitor.next_run_at is not None
    assert Activity.objects.filter(kind=Activity.Kind.MONITOR_RESUMED).count() == 2


def test_pausing_many_takes_one_query_to_change_them(team):
    ticked = [make_monitor(team, f"M{n}") for n in range(5)]
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        Monitor.objects.filter(pk__in=[m.pk for m in ticked]).pause()

    updates = [q for q in queries if q["sql"].startswith("UPDATE")]
    assert len(updates) == 1


def test_adding_and_removing_a_tag_on_many(web, team):
    ticked = [make_monitor(team, f"M{n}") for n in range(2)]
    already = make_monitor(team, "Tagged", tags=["competitors"])

    bulk(web, "add_tag", [*ticked, already], tag=" Competitors ")

    for monitor in [*ticked, already]:
        assert monitor.tag_names == ["competitors"]
    edits = Activity.objects.filter(kind=Activity.Kind.MONITOR_EDITED)
    # The one that had it already was not changed, so not logged.
    assert sorted(e.monitor_id for e in edits) == sorted(m.pk for m in ticked)
    assert all(e.details == {"fields": ["tags"]} for e in edits)

    bulk(web, "remove_tag", [ticked[0], already], tag="COMPETITORS")

    assert ticked[0].tag_names == []
    assert already.tag_names == []
    assert ticked[1].tag_names == ["competitors"]


def test_adding_a_tag_to_many_skips_monitors_that_have_the_most_tags(web, team):
    full = [make_monitor(team, f"Full {n}", tags=TOO_MANY[:-1]) for n in range(2)]
    roomy = make_monitor(team, "Roomy")

    response = bulk(web, "add_tag", [*full, roomy], tag="Sale")

    assert roomy.tag_names == ["Sale"]
    for monitor in full:
        assert len(monitor.tag_names) == rules.MONITOR_TAGS_MAX
        assert "Sale" not in monitor.tag_names
    edits = Activity.objects.filter(kind=Activity.Kind.MONITOR_EDITED)
    assert [e.monitor_id for e in edits] == [roomy.pk]
    shown = [str(m) for m in response.wsgi_request._messages]
    assert "2 monitors skipped: they already have 20 tags." in shown
    assert "1 monitor tagged." in shown


def test_a_tag_the_rule_refuses_is_not_added(web, team):
    monitor = make_monitor(team)

    response = bulk(web, "add_tag", [monitor], tag="x" * (rules.TAG_NAME_MAX + 1))

    assert response.status_code == 302
    assert monitor.tag_names == []
    assert not Tag.objects.exists()


def test_deleting_many_asks_first_in_the_single_deletes_words(web, team):
    ticked = [make_monitor(team, f"M{n}") for n in range(2)]

    asked = bulk(web, "delete", ticked)

    assert asked.status_code == 200
    page = asked.content.decode()
    assert "Delete 2 monitors?" in page
    assert "This cannot be undone here." in page
    assert Monitor.objects.alive().count() == 2

    done = bulk(web, "delete", ticked, confirmed="yes")

    assert done.status_code == 302
    assert Monitor.objects.alive().count() == 0
    entries = Activity.objects.filter(kind=Activity.Kind.MONITOR_DELETED)
    assert entries.count() == 2


def test_select_all_shown_acts_on_every_row_the_page_listed(web, team):
    shown = [make_monitor(team, f"M{n}") for n in range(3)]

    web.post(
        reverse("monitor-bulk"),
        {"action": "pause", "all_shown": "1", "shown": [str(m.pk) for m in shown]},
    )

    assert Monitor.objects.filter(status="paused").count() == 3


def test_another_teams_monitors_in_a_bulk_post_are_left_alone(web, team, other_team):
    ours = make_monitor(team, "Ours")
    theirs = make_monitor(other_team, "Theirs")

    bulk(web, "pause", [ours, theirs])
    bulk(web, "add_tag", [theirs], tag="Mine now")
    bulk(web, "delete", [theirs], confirmed="yes")

    theirs.refresh_from_db()
    assert theirs.is_active
    assert theirs.deleted_at is None
    assert theirs.tag_names == []
    assert not Tag.objects.filter(team=other_team).exists()
    assert not Activity.objects.filter(team=other_team).exists()
    ours.refresh_from_db()
    assert not ours.is_active


def test_viewers_are_refused_acting_on_many(viewer_web, team):
    monitor = make_monitor(team)

    response = bulk(viewer_web, "pause", [monitor])

    assert response.status_code == 403
    monitor.refresh_from_db()
    assert monitor.is_active
    assert not Activity.objects.filter(kind=Activity.Kind.MONITOR_PAUSED).exists()


# ---------------------------------------------------------------- moving


def test_a_changedetection_backups_tags_become_tags_not_name_prefixes(team):
    from monitors import moving
    from monitors.moving import importing, plan
    from tests.moving import backup_zip

    items = plan.prepare(team, moving.read("changedetection", data=backup_zip()))
    importing.run_import(team, items, timezone.now())

    pricing = Monitor.objects.get(team=team, name="Pricing")
    assert pricing.tag_names == ["Shop"]
    assert not Monitor.objects.filter(name__startswith="Shop:").exists()


def test_distill_and_urlwatch_tags_become_tags():
    from monitors.moving.base import Draft, split_tags

    draft = Draft(ref="1", url="https://a.test/", name="A")
    draft.tags = split_tags("Shop, Sales") + split_tags(["Ops"])

    assert draft.plan().payload["tags"] == ["Shop", "Sales", "Ops"]
    assert draft.plan().payload["name"] == "A"


def test_a_tag_an_import_cannot_keep_is_left_out_with_a_note():
    from monitors.moving.base import Draft

    draft = Draft(ref="1", url="https://a.test/", name="A")
    draft.tags = ["Shop", "x" * (rules.TAG_NAME_MAX + 1)]
    planned = draft.plan()

    assert planned.payload["tags"] == ["Shop"]
    assert any("not imported" in note for note in planned.notes)


def test_an_export_carries_tags_and_another_pagewatch_imports_them(
    api, other_api, team, other_team
):
    make_monitor(team, "Rival", tags=["Competitors", "Sales"])
    document = api.get("/v2/export").json()["data"]
    assert document["monitors"][0]["tags"] == ["Competitors", "Sales"]

    data = json.dumps(document).encode()
    response = upload(other_api, "pagewatch", data, "export.json", dryRun=False)

    assert response.status_code == 200, response.content
    copy = Monitor.objects.get(team=other_team)
    assert copy.tag_names == ["Competitors", "Sales"]
    assert copy.tags.get(name="Sales").team == other_team


# ---------------------------------------------------------------- admin


def test_the_admin_lists_tags_and_shows_them_on_monitors(admin_client, team):
    monitor = make_monitor(team, "Rival", tags=["Competitors"])
    make_monitor(team, "Gone", tags=["Competitors"]).soft_delete(timezone.now())

    tags = admin_client.get("/admin/monitors/tag/").content.decode()
    monitors = admin_client.get("/admin/monitors/monitor/").content.decode()
    page = admin_client.get(f"/admin/monitors/monitor/{monitor.pk}/change/")

    assert "Competitors" in tags
    assert '<td class="field-monitor_count">1</td>' in tags
    assert '<td class="field-tag_list">Competitors</td>' in monitors
    assert 'value="Competitors"' in page.content.decode()


@pytest.mark.parametrize(
    ("name", "refusal"),
    [
        ("sale", "The team already has a tag “sale”."),
        ("Black Friday, Sale", "A tag cannot contain a comma."),
        ("Black\tFriday", "A tag cannot contain line breaks or other control"),
    ],
    ids=["another tag's name in another case", "comma", "control character"],
)
def test_the_admin_refuses_a_new_name_the_dashboard_would_refuse(
    admin_client, team, name, refusal
):
    make_monitor(team, "Rival", tags=["SALE", "Promo"])
    tag = Tag.objects.get(team=team, name="Promo")

    page = admin_client.post(f"/admin/monitors/tag/{tag.pk}/change/", {"name": name})

    assert page.status_code == 200
    assert refusal in page.content.decode()
    tag.refresh_from_db()
    assert tag.name == "Promo"


def test_the_admin_renames_a_tag_to_another_case_or_another_teams_name(
    admin_client, team, other_team
):
    make_monitor(team, "Rival", tags=["Sale"])
    make_monitor(other_team, "Theirs", tags=["SALE"])
    tag = Tag.objects.get(team=team)

    page = admin_client.post(
        f"/admin/monitors/tag/{tag.pk}/change/", {"name": " SALE "}
    )

    assert page.status_code == 302
    tag.refresh_from_db()
    assert tag.name == "SALE"
