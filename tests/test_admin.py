"""The Django admin: every page loads with data present, keys are shown once
and stored hashed, actions change state, search finds monitors by target URL,
and page-derived content is escaped."""

from __future__ import annotations

import re
from datetime import UTC, datetime, time, timedelta
from typing import Any

import pytest
from axes.models import AccessAttempt
from django import forms
from django.contrib import admin
from django.contrib.admin.models import LogEntry
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils.html import escape
from django_otp.plugins.otp_static.models import StaticDevice
from django_otp.plugins.otp_totp.models import TOTPDevice
from rest_framework.test import APIClient

from checks.models import (
    Check,
    CheckBatch,
    Delivery,
    DeliveryAttempt,
    EmailDelivery,
    PageResult,
    PageState,
    Snapshot,
    WebhookDelivery,
)
from monitors.admin.keys import ApiKeyAdmin
from monitors.admin.monitors import MonitorAdmin
from monitors.models import (
    KEY_LOOKUP_LENGTH,
    KEY_PREFIX,
    ApiKey,
    Channel,
    EmailRecipient,
    Membership,
    Monitor,
    Tag,
    Target,
    Team,
)
from teams import second_factor
from teams.activity import SYSTEM, record
from teams.models import Activity, Invitation

NOW = datetime(2025, 3, 10, 12, 0, tzinfo=UTC)
HOSTILE = '<script>alert("x")</script>'


def make_monitor(team: Team, name: str = "Pricing page", **fields) -> Monitor:
    fields = {"next_run_at": NOW + timedelta(minutes=30)} | fields
    return Monitor.objects.create(
        team=team,
        name=name,
        schedule_cron="*/30 * * * *",
        schedule_timezone="Europe/Berlin",
        **fields,
    )


@pytest.fixture
def monitor(team, admin_user) -> Monitor:
    Membership.objects.create(team=team, user=admin_user, role=Membership.Role.OWNER)
    team.rotate_webhook_secret()
    monitor = make_monitor(
        team,
        last_check_summary={
            "totalPages": 2,
            "same": 1,
            "changed": 1,
            "new": 0,
            "removed": 0,
            "error": 0,
        },
        webhook={"url": "https://hooks.example.com/in", "headers": {}},
        notification={"email": {"recipients": ["ops@example.com"]}},
    )
    Target.objects.create(
        monitor=monitor,
        type=Target.Type.SCRAPE,
        urls=["https://example.com/pricing", f"https://example.com/?q={HOSTILE}"],
        scrape_options={"formats": ["markdown"]},
    )
    Target.objects.create(
        monitor=monitor,
        position=1,
        type=Target.Type.CRAWL,
        url="https://docs.example.org/",
        crawl_options={"limit": 20},
    )
    EmailRecipient.objects.create(
        monitor=monitor,
        email="ops@example.com",
        status=EmailRecipient.Status.PENDING,
        source=EmailRecipient.Source.OPT_IN,
    )
    return monitor


@pytest.fixture
def check_with_pages(monitor) -> Check:
    check = Check.objects.create(
        monitor=monitor,
        status=Check.Status.COMPLETED,
        trigger=Check.Trigger.SCHEDULED,
        scheduled_for=NOW,
        started_at=NOW,
        finished_at=NOW + timedelta(seconds=4),
        summary={"totalPages": 2, "same": 1, "changed": 0, "error": 1},
        target_results=[{"targetId": "x", "status": "completed"}],
        estimated_credits=2,
    )
    before = Snapshot.store("old text")
    after = Snapshot.store(f"new text {HOSTILE}")
    target = monitor.targets.first()
    PageResult.objects.create(
        check_run=check,
        target_id=target.id,
        url="https://example.com/pricing",
        status=PageResult.Status.CHANGED,
        status_code=200,
        previous_snapshot=before,
        current_snapshot=after,
        metadata={"title": HOSTILE},
        diff={"text": f"-old text\n+new text {HOSTILE}"},
        judgment={"meaningful": True, "reason": HOSTILE},
    )
    PageResult.objects.create(
        check_run=check,
        target_id=target.id,
        url="https://example.com/gone",
        status=PageResult.Status.ERROR,
        error=f"Fetch failed: {HOSTILE}",
    )
    PageState.objects.create(
        monitor=monitor,
        target_id=target.id,
        url="https://example.com/pricing",
        url_hash=PageState.hash_url("https://example.com/pricing"),
        snapshot=after,
        fetched_at=NOW,
    )
    webhook = WebhookDelivery.objects.create(
        kind=Delivery.Kind.WEBHOOK,
        monitor=monitor,
        check_run=check,
        event="monitor.check.completed",
        url="https://hooks.example.com/in",
        body=f'{{"title": "{HOSTILE}"}}',
        attempts=1,
        last_status_code=500,
    )
    DeliveryAttempt.objects.create(
        delivery=webhook,
        number=1,
        started_at=NOW,
        status_code=500,
        response_body=HOSTILE,
    )
    EmailDelivery.objects.create(
        kind=Delivery.Kind.EMAIL,
        monitor=monitor,
        check_run=check,
        event="email.notification",
        email="ops@example.com",
        status=Delivery.Status.DELIVERED,
    )
    channel = Channel.objects.create(
        team=monitor.team,
        name=f"Ops {HOSTILE}",
        kind="apprise",
        settings={"url": "tgram://123456789:AAHsecretsecret/42"},
    )
    Delivery.objects.create(
        kind="apprise",
        channel=channel,
        monitor=monitor,
        check_run=check,
        event="channel.change",
        body="{}",
        last_error=HOSTILE,
    )
    return check


def race_after_load(monkeypatch, model_admin: type, write) -> None:
    """Run `write` (another process's update) right after the admin loads the
    object it is about to save."""
    original = model_admin.get_object

    def get_object(self, *args, **kwargs):
        obj = original(self, *args, **kwargs)
        write()
        return obj

    monkeypatch.setattr(model_admin, "get_object", get_object)


def admin_url(model, view: str, *args) -> str:
    opts = model._meta
    return reverse(f"admin:{opts.app_label}_{opts.model_name}_{view}", args=args)


def test_a_superuser_can_load_every_admin_page_with_data_present(
    admin_client, check_with_pages, api_key
):
    Group.objects.create(name="Operators")
    AccessAttempt.objects.create(
        username="olive", ip_address="192.0.2.1", failures_since_start=3
    )
    team = check_with_pages.monitor.team
    Invitation.issue(
        team, "sam@example.com", "viewer", None, check_with_pages.created_at
    )
    record(SYSTEM, team, Activity.Kind.MONITOR_PAUSED, check_with_pages.monitor)
    check_with_pages.monitor.tags.set(Tag.objects.named(team, ["Competitors"]))
    someone = get_user_model().objects.first()
    second_factor.start_setup(someone)  # an authenticator, and recovery codes
    second_factor.new_recovery_codes(someone)
    for model, model_admin in admin.site._registry.items():
        response = admin_client.get(admin_url(model, "changelist"))
        assert response.status_code == 200, model
        obj = model_admin.get_queryset(response.wsgi_request).first()
        assert obj is not None, f"no {model.__name__} rows to open"
        response = admin_client.get(admin_url(model, "change", obj.pk))
        assert response.status_code == 200, model
        if model_admin.has_add_permission(response.wsgi_request):
            assert admin_client.get(admin_url(model, "add")).status_code == 200, model


def test_the_admin_never_shows_an_authenticator_secret_or_recovery_code(
    admin_client, django_user_model
):
    someone = django_user_model.objects.create_user("olive")
    device = second_factor.start_setup(someone)
    codes = second_factor.new_recovery_codes(someone)
    recovery = StaticDevice.objects.get(user=someone)
    pages = [
        admin_url(TOTPDevice, "changelist"),
        admin_url(TOTPDevice, "change", device.pk),
        admin_url(StaticDevice, "change", recovery.pk),
    ]

    shown = "".join(admin_client.get(url).content.decode() for url in pages)
    # The QR code and its page carry the same secret as the key.
    qr_code = reverse("admin:otp_totp_totpdevice_qrcode", args=[device.pk])
    config = reverse("admin:otp_totp_totpdevice_config", args=[device.pk])

    assert device.key not in shown
    assert [code for code in codes if code in shown] == []
    assert admin_client.get(qr_code).status_code == 403
    assert admin_client.get(config).status_code == 403


def test_page_derived_content_is_escaped_on_admin_pages(admin_client, check_with_pages):
    page = check_with_pages.pages.get(status=PageResult.Status.CHANGED)
    snapshot = page.current_snapshot
    pages = [
        admin_url(Monitor, "change", check_with_pages.monitor.pk),
        admin_url(Check, "change", check_with_pages.pk),
        admin_url(PageResult, "change", page.pk),
        admin_url(Snapshot, "change", snapshot.pk),
        admin_url(
            WebhookDelivery, "change", check_with_pages.deliveries.webhooks()[0].pk
        ),
    ]
    for url in pages:
        content = admin_client.get(url).content.decode()
        assert HOSTILE not in content, url
        assert "&lt;script&gt;" in content, url


def test_adding_an_api_key_shows_the_raw_key_once_and_stores_only_its_hash(
    admin_client, admin_user, team
):
    response = admin_client.post(
        admin_url(ApiKey, "add"),
        {"team": team.pk, "name": "CI", "scope": "write"},
        follow=True,
    )

    assert response.status_code == 200
    shown = re.findall(rf"{KEY_PREFIX}[A-Za-z0-9_-]{{40,}}", response.content.decode())
    assert len(shown) == 1
    raw = shown[0]
    key = ApiKey.objects.get(
        prefix=raw[len(KEY_PREFIX) : len(KEY_PREFIX) + KEY_LOOKUP_LENGTH]
    )
    assert key.matches(raw)
    assert key.key_hash == ApiKey.hash_key(raw)
    assert (key.team, key.name, key.created_by) == (team, "CI", admin_user)
    stored = [str(getattr(key, f.attname)) for f in ApiKey._meta.concrete_fields]
    assert not any(raw in value for value in stored)
    assert not LogEntry.objects.filter(object_repr__contains=raw).exists()
    again = admin_client.get(admin_url(ApiKey, "changelist")).content.decode()
    assert raw not in again


def test_the_api_key_form_asks_only_for_team_name_and_scope(admin_client):
    form = admin_client.get(admin_url(ApiKey, "add")).context["adminform"].form
    assert set(form.fields) == {"team", "name", "scope"}


def test_revoke_action_revokes_the_selected_keys_at_once(admin_client, team, api_key):
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {api_key}")
    assert api.get("/v2/monitor").status_code == 200
    key = ApiKey.objects.get()

    admin_client.post(
        admin_url(ApiKey, "changelist"),
        {"action": "revoke_selected", "_selected_action": [key.pk]},
    )

    key.refresh_from_db()
    assert key.revoked_at is not None
    assert api.get("/v2/monitor").status_code == 401


def test_editing_a_key_name_does_not_undo_a_concurrent_revocation(
    admin_client, team, api_key, monkeypatch
):
    key = ApiKey.objects.get()
    race_after_load(
        monkeypatch,
        ApiKeyAdmin,
        lambda: ApiKey.objects.filter(pk=key.pk).update(revoked_at=NOW),
    )

    response = admin_client.post(admin_url(ApiKey, "change", key.pk), {"name": "new"})

    assert response.status_code == 302
    key.refresh_from_db()
    assert (key.name, key.revoked_at) == ("new", NOW)


def test_pause_action_clears_next_run_at(admin_client, monitor):
    admin_client.post(
        admin_url(Monitor, "changelist"),
        {"action": "pause_selected", "_selected_action": [monitor.pk]},
    )

    monitor.refresh_from_db()
    assert monitor.status == Monitor.Status.PAUSED
    assert monitor.next_run_at is None


def _action_messages(admin_client, model, action: str, ids: list) -> list[str]:
    response = admin_client.post(
        admin_url(model, "changelist"),
        {"action": action, "_selected_action": ids},
        follow=True,
    )
    return [str(m) for m in response.context["messages"]]


def test_pausing_an_already_paused_monitor_says_nothing_changed_and_why(
    admin_client, monitor
):
    monitor.pause()
    monitor.save()
    said = _action_messages(admin_client, Monitor, "pause_selected", [monitor.pk])
    assert said == ["Nothing changed: the selection was already paused or deleted."]


def test_an_action_on_a_mixed_selection_says_what_it_left_alone(
    admin_client, team, time_machine
):
    time_machine.move_to(NOW, tick=False)
    active = make_monitor(team, name="active")
    paused = make_monitor(team, name="paused", status=Monitor.Status.PAUSED)
    said = _action_messages(
        admin_client, Monitor, "pause_selected", [active.pk, paused.pk]
    )
    assert said == ["Paused 1 monitor. 1 left as it was (already paused or deleted)."]
    active.refresh_from_db()
    assert active.status == Monitor.Status.PAUSED


def test_resume_action_schedules_the_next_run(admin_client, monitor, time_machine):
    time_machine.move_to(NOW, tick=False)
    monitor.pause()
    monitor.save()

    admin_client.post(
        admin_url(Monitor, "changelist"),
        {"action": "resume_selected", "_selected_action": [monitor.pk]},
    )

    monitor.refresh_from_db()
    assert monitor.status == Monitor.Status.ACTIVE
    assert monitor.next_run_at == NOW + timedelta(minutes=30)


def test_resume_leaves_active_and_deleted_monitors_alone(admin_client, team):
    due = make_monitor(team, name="due", next_run_at=NOW - timedelta(minutes=1))
    deleted = make_monitor(team, name="deleted", status=Monitor.Status.PAUSED)
    deleted.soft_delete(NOW)

    admin_client.post(
        admin_url(Monitor, "changelist"),
        {"action": "resume_selected", "_selected_action": [due.pk, deleted.pk]},
    )

    due.refresh_from_db()
    deleted.refresh_from_db()
    assert due.next_run_at == NOW - timedelta(minutes=1)
    assert (deleted.status, deleted.next_run_at) == (Monitor.Status.PAUSED, None)


def test_search_by_target_url_finds_the_monitor(admin_client, monitor):
    other = make_monitor(monitor.team, name="Other")
    Target.objects.create(
        monitor=other, type=Target.Type.SCRAPE, urls=["https://elsewhere.test/"]
    )
    changelist = admin_url(Monitor, "changelist")

    def found(term: str) -> list[Monitor]:
        response = admin_client.get(changelist, {"q": term})
        return list(response.context["cl"].result_list)

    assert found("EXAMPLE.com/pricing") == [monitor]
    assert found("docs.example.org") == [monitor]
    assert found("elsewhere") == [other]
    assert found("nothing-like-this") == []


def test_soft_deleted_monitors_are_listed_only_with_the_deleted_filter(
    admin_client, monitor
):
    gone = make_monitor(monitor.team, name="Gone")
    gone.soft_delete(NOW)
    changelist = admin_url(Monitor, "changelist")

    def listed(**params) -> set[str]:
        response = admin_client.get(changelist, params)
        return {m.name for m in response.context["cl"].result_list}

    assert listed() == {"Pricing page"}
    assert listed(deleted="yes") == {"Gone"}
    assert listed(deleted="any") == {"Pricing page", "Gone"}
    assert admin_client.get(admin_url(Monitor, "change", gone.pk)).status_code == 200
    rows = admin_client.get(changelist, {"deleted": "yes"}).content.decode()
    assert '<td class="field-state">Deleted</td>' in rows


def test_rotate_action_replaces_the_webhook_secret_and_lists_it_masked(
    admin_client, team
):
    team.rotate_webhook_secret()
    old = team.webhook_secret

    response = admin_client.post(
        admin_url(Team, "changelist"),
        {"action": "rotate_webhook_secret", "_selected_action": [team.pk]},
        follow=True,
    )

    team.refresh_from_db()
    assert team.webhook_secret != old
    assert team.webhook_secret in response.content.decode()  # shown once
    listing = admin_client.get(admin_url(Team, "changelist")).content.decode()
    assert team.webhook_secret not in listing
    assert "whsec_…" + team.webhook_secret[-4:] in listing


def test_rotating_in_the_admin_keeps_the_old_secret_signing_for_a_while(
    admin_client, team
):
    old = team.ensure_webhook_secret()

    response = admin_client.post(
        admin_url(Team, "changelist"),
        {"action": "rotate_webhook_secret", "_selected_action": [team.pk]},
        follow=True,
    )

    team.refresh_from_db()
    assert team.previous_webhook_secret == old
    page = response.content.decode()
    assert "The previous one also signs until" in page
    listing = admin_client.get(admin_url(Team, "changelist")).content.decode()
    assert old not in listing and team.webhook_secret not in listing
    assert f"the previous whsec_…{old[-4:]} signs too until" in listing


def test_header_values_are_masked_in_the_admin(admin_client, team):
    monitor = make_monitor(
        team,
        webhook={"url": "https://hooks.example.com/in",
                 "headers": {"Authorization": "Bearer topsecret-header-1234"}},
    )  # fmt: skip
    Target.objects.create(
        monitor=monitor,
        type="scrape",
        urls=["https://example.com/"],
        scrape_options={"headers": {"Cookie": "session=hush-hush-5678"}},
    )

    page = admin_client.get(admin_url(Monitor, "change", monitor.pk)).content.decode()

    assert "topsecret" not in page and "hush-hush" not in page
    assert "Authorization" in page and "…1234" in page
    assert "Cookie" in page and "…5678" in page


def test_the_checks_list_names_its_monitor_column_and_sorts_by_it(
    admin_client, check_with_pages
):
    page = admin_client.get(admin_url(Check, "changelist")).content.decode()
    header = re.search(
        r'<th scope="col"[^>]*column-monitor_link[^>]*>.*?</th>', page, re.S
    )
    assert "sortable" in header[0] and ">Monitor<" in header[0]


def test_checks_are_read_only_in_the_admin(admin_client, check_with_pages):
    url = admin_url(Check, "change", check_with_pages.pk)
    admin_client.post(url, {"status": Check.Status.FAILED})

    check_with_pages.refresh_from_db()
    assert check_with_pages.status == Check.Status.COMPLETED
    assert admin_client.get(admin_url(Check, "add")).status_code == 403


@pytest.mark.parametrize("how", ["delete page", "bulk action"])
def test_deleting_a_running_check_lets_its_monitor_run_again(
    admin_client, monitor, how
):
    running = Check.objects.create(monitor=monitor, status=Check.Status.RUNNING)
    Monitor.objects.filter(pk=monitor.pk).update(current_check_id=running.pk)

    if how == "delete page":
        admin_client.post(admin_url(Check, "delete", running.pk), {"post": "yes"})
    else:
        admin_client.post(
            admin_url(Check, "changelist"),
            {
                "action": "delete_selected",
                "_selected_action": [running.pk],
                "post": "yes",
            },
        )

    monitor.refresh_from_db()
    assert not Check.objects.filter(pk=running.pk).exists()
    assert monitor.current_check_id is None
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {ApiKey.issue(monitor.team)[1]}")
    assert api.post(f"/v2/monitor/{monitor.pk}/run").status_code == 200


def test_a_superuser_can_delete_a_check_with_its_page_results(
    admin_client, check_with_pages
):
    CheckBatch.objects.append(
        check_with_pages, ["https://example.com/"], size=1, uses_browser=False
    )
    asked = admin_client.get(admin_url(Check, "delete", check_with_pages.pk))
    assert "Check batches: 1" in asked.content.decode()

    response = admin_client.post(
        admin_url(Check, "delete", check_with_pages.pk), {"post": "yes"}
    )

    assert response.status_code == 302
    assert not Check.objects.exists()
    assert not PageResult.objects.exists()
    assert not Delivery.objects.exists()


def test_api_keys_are_found_by_listed_prefix_name_or_team(
    admin_client, team, other_team
):
    key, _ = ApiKey.issue(team, name="deploy bot")
    ApiKey.issue(other_team, name="other")
    changelist = admin_url(ApiKey, "changelist")

    def found(term: str) -> list[ApiKey]:
        response = admin_client.get(changelist, {"q": term})
        return list(response.context["cl"].result_list)

    assert found(key.display_prefix) == [key]
    assert found("deploy") == [key]
    assert found("Acme") == [key]


def shown_form(client, url: str) -> dict[str, Any]:
    """What a browser sends when the admin's change page is saved as shown:
    every field's value, ticked boxes only, and the inlines' management forms."""
    page = client.get(url)
    assert page.status_code == 200
    form = page.context["adminform"].form
    data: dict[str, Any] = {}
    for name, field in form.fields.items():
        value = form[name].value()
        if isinstance(field.widget, forms.CheckboxInput):
            if value:
                data[name] = "on"
        elif isinstance(value, list | tuple):
            data[name] = [str(item) for item in value]
        else:
            data[name] = "" if value is None else str(value)
    for inline in page.context["inline_admin_formsets"]:
        management = inline.formset.management_form
        for name in management.fields:
            data[management.add_prefix(name)] = management[name].value()
    return data


def row_key(target: Target) -> str:
    """The prefix of a target's fields on the monitor's change page."""
    return f"t{target.id.hex[:16]}"


def test_renaming_a_monitor_keeps_what_the_scheduler_wrote_meanwhile(
    admin_client, monitor, monkeypatch
):
    later = NOW + timedelta(hours=1)
    race_after_load(
        monkeypatch,
        MonitorAdmin,
        lambda: Monitor.objects.filter(pk=monitor.pk).update(next_run_at=later),
    )

    change = admin_url(Monitor, "change", monitor.pk)
    fields = shown_form(admin_client, change)

    response = admin_client.post(change, {**fields, "name": "Renamed"})

    assert response.status_code == 302
    monitor.refresh_from_db()
    assert (monitor.name, monitor.next_run_at) == ("Renamed", later)


def test_a_damaged_snapshot_row_is_shown_as_unreadable_not_a_500(admin_client):
    damaged = Snapshot.objects.create(content_hash="0" * 64, data=b"garbage", size=7)

    response = admin_client.get(admin_url(Snapshot, "change", damaged.pk))

    assert response.status_code == 200
    assert "(could not be read)" in response.content.decode()


def test_the_admin_chooses_how_pages_are_loaded_under_the_apis_rule(
    admin_client, monitor
):
    change = admin_url(Monitor, "change", monitor.pk)
    fields = shown_form(admin_client, change)

    forced = admin_client.post(change, {**fields, "fetch_with": "browser"})
    monitor.refresh_from_db()
    assert forced.status_code == 302
    assert monitor.fetch_with == Monitor.FetchWith.BROWSER

    monitor.targets.filter(position=0).update(scrape_options={"waitFor": 1000})
    fields = shown_form(admin_client, change)
    refused = admin_client.post(change, {**fields, "fetch_with": "http"})
    monitor.refresh_from_db()
    assert refused.status_code == 200
    assert "only a browser can do that" in refused.content.decode()
    assert monitor.fetch_with == Monitor.FetchWith.BROWSER


def test_the_admin_chooses_which_pages_get_webhook_events(admin_client, monitor):
    page = admin_client.get(admin_url(Monitor, "change", monitor.pk))
    assert "Only pages that changed (new or changed)" in page.content.decode()

    change = admin_url(Monitor, "change", monitor.pk)
    fields = shown_form(admin_client, change)
    response = admin_client.post(change, {**fields, "webhook_pages": "changed"})

    assert response.status_code == 302
    monitor.refresh_from_db()
    assert monitor.webhook_pages == Monitor.WebhookPages.CHANGED


# --- Pages that stay quick as the data grows ------------------------------------


def count_queries(client, url: str) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert client.get(url).status_code == 200
    return len(queries)


def add_members(team: Team, django_user_model, names: range) -> None:
    for n in names:
        user = django_user_model.objects.create_user(f"member{n}", f"m{n}@e.com")
        Membership.objects.create(team=team, user=user)


def test_the_team_page_loads_each_member_with_their_row(
    admin_client, team, django_user_model
):
    url = admin_url(Team, "change", team.pk)
    add_members(team, django_user_model, range(2))
    count_queries(admin_client, url)  # what is cached for the session after
    two = count_queries(admin_client, url)
    add_members(team, django_user_model, range(2, 12))
    # A member's row names them from the row's own query: the autocomplete
    # box, which looked up its chosen user one query a row, is only on the
    # rows that add someone.
    assert count_queries(admin_client, url) == two


def test_the_team_list_counts_members_and_monitors_without_pairing_them(
    admin_client, team, django_user_model
):
    add_members(team, django_user_model, range(3))
    for n in range(4):
        make_monitor(team, name=f"M{n}", deleted_at=NOW if n == 0 else None)
    with CaptureQueriesContext(connection) as queries:
        page = admin_client.get(admin_url(Team, "changelist")).content.decode()
    assert '<td class="field-member_count">3</td>' in page
    assert ">3</a></td>" in page  # live monitors, linked to their list
    # A join of both would read members x monitors rows of every team.
    listing = [q["sql"] for q in queries if 'FROM "monitors_team"' in q["sql"]]
    assert listing and not any(
        'JOIN "monitors_membership"' in sql and 'JOIN "monitors_monitor"' in sql
        for sql in listing
    )


@pytest.mark.parametrize("model", [Check, WebhookDelivery, EmailDelivery])
def test_the_longest_lists_filter_by_date_without_reading_every_rows_date(
    admin_client, check_with_pages, model
):
    with CaptureQueriesContext(connection) as queries:
        page = admin_client.get(admin_url(model, "changelist")).content.decode()
    assert "Past 7 days" in page
    # date_hierarchy drew its links from a DISTINCT over every row's date,
    # after a MIN and MAX over them all.
    sql = [q["sql"] for q in queries]
    assert not [s for s in sql if "DISTINCT" in s and "created_at" in s]
    assert not [s for s in sql if 'MIN("checks_' in s]


def test_the_activity_list_filters_by_date_without_reading_every_entrys_date(
    admin_client, team
):
    record(SYSTEM, team, Activity.Kind.MONITOR_CREATED, name="Pricing page")
    with CaptureQueriesContext(connection) as queries:
        page = admin_client.get(admin_url(Activity, "changelist")).content.decode()
    assert "Past 7 days" in page
    sql = [q["sql"] for q in queries]
    assert not [s for s in sql if "DISTINCT" in s and '"at"' in s]
    assert not [s for s in sql if 'MIN("teams_activity"' in s]


@pytest.mark.parametrize("model", [Check, Monitor])
def test_deleting_is_confirmed_with_counts_not_a_link_to_every_page(
    admin_client, check_with_pages, model
):
    check = check_with_pages
    PageResult.objects.bulk_create(
        PageResult(
            check_run=check,
            target_id=check.pk,
            url=f"https://example.com/p{n}",
            status=PageResult.Status.SAME,
        )
        for n in range(40)
    )
    obj = check if model is Check else check.monitor
    url = admin_url(model, "delete", obj.pk)
    page = admin_client.get(url).content.decode()
    # Django's list loaded and linked every row; a 1,000-page check took seconds.
    assert "Page results: 42" in page
    assert "Deliveries: 3" in page
    assert "https://example.com/p7" not in page
    assert admin_client.post(url, {"post": "yes"}).status_code == 302
    assert not model.objects.filter(pk=obj.pk).exists()
    assert not PageResult.objects.exists()


def test_the_monitor_list_says_schedules_in_words_and_times_in_their_zone(
    admin_client, monitor
):
    listing = admin_client.get(admin_url(Monitor, "changelist")).content.decode()
    assert "Every 30 minutes (*/30 * * * *, Europe/Berlin)" in listing
    # 12:30 UTC is 13:30 in Berlin in March (CET).
    assert "2025-03-10 13:30:00 CET" in listing
    page = admin_client.get(admin_url(Monitor, "change", monitor.pk)).content
    assert "Every 30 minutes" in page.decode()


# --- Editing a monitor under the dashboard's rules ------------------------------


def test_an_administrator_edits_name_schedule_and_urls_and_the_next_run_follows(
    admin_client, monitor, time_machine
):
    time_machine.move_to(NOW, tick=False)
    change = admin_url(Monitor, "change", monitor.pk)
    pages, crawl = monitor.targets.order_by("position")
    fields = shown_form(admin_client, change)

    response = admin_client.post(
        change,
        {
            **fields,
            "name": "Prices, weekday mornings",
            "schedule": "0 9 * * 1-5",
            "timezone": "Europe/Berlin",
            f"{row_key(pages)}-urls": "https://example.com/pricing\n"
            "https://example.com/plans",
            f"{row_key(crawl)}-limit": "50",
        },
    )

    assert response.status_code == 302
    monitor.refresh_from_db()
    assert monitor.name == "Prices, weekday mornings"
    assert (monitor.schedule_cron, monitor.schedule_timezone) == (
        "0 9 * * 1-5",
        "Europe/Berlin",
    )
    # Monday 12:00 UTC is 13:00 in Berlin: the next run is Tuesday 09:00 CET.
    assert monitor.next_run_at == datetime(2025, 3, 11, 8, 0, tzinfo=UTC)
    pages.refresh_from_db()
    crawl.refresh_from_db()
    assert pages.urls == ["https://example.com/pricing", "https://example.com/plans"]
    # Options the dashboard does not show are kept as stored.
    assert pages.scrape_options["formats"] == ["markdown"]
    assert crawl.crawl_options["limit"] == 50
    entry = Activity.objects.get(kind=Activity.Kind.MONITOR_EDITED)
    assert entry.via == Activity.Via.ADMIN and entry.monitor_id == monitor.pk
    assert {"name", "schedule", "targets"} <= set(entry.details["fields"])

    page = admin_client.get(change).content.decode()
    assert "Every weekday at 09:00 (0 9 * * 1-5, Europe/Berlin)" in page
    assert "2025-03-11 09:00:00 CET" in page


def test_saving_the_page_as_shown_changes_nothing(admin_client, monitor):
    monitor.targets.filter(position=0).update(
        scrape_options={"headers": {"Cookie": "session=hush-hush-5678"}}
    )
    # As the API stores them: every key of the webhook and the e-mail settings.
    Monitor.objects.filter(pk=monitor.pk).update(
        webhook={
            "url": "https://hooks.example.com/in",
            "headers": {"Authorization": "Bearer topsecret-header-1234"},
            "metadata": {"team": "pricing"},
            "events": ["monitor.check.completed"],
        },
        notification={
            "email": {
                "enabled": True,
                "recipients": ["ops@example.com"],
                "includeDiffs": False,
            }
        },
    )
    change = admin_url(Monitor, "change", monitor.pk)
    before = Monitor.objects.get(pk=monitor.pk)
    targets = list(monitor.targets.values())

    response = admin_client.post(change, shown_form(admin_client, change))

    assert response.status_code == 302
    after = Monitor.objects.get(pk=monitor.pk)
    for field in ("name", "schedule_cron", "schedule_timezone", "next_run_at",
                  "webhook", "notification", "goal", "status"):  # fmt: skip
        assert getattr(after, field) == getattr(before, field), field
    assert list(monitor.targets.values()) == targets
    assert not Activity.objects.filter(kind=Activity.Kind.MONITOR_EDITED).exists()


def test_saving_as_shown_a_monitor_stored_in_short_form_logs_nothing(
    admin_client, monitor
):
    # The fixture's webhook and e-mail settings leave out what has a default
    # (events, metadata, enabled, includeDiffs), as imports and older rows
    # do; the form writes them whole, which means the same.
    monitor.tags.set(Tag.objects.named(monitor.team, ["Rivals"]))
    change = admin_url(Monitor, "change", monitor.pk)

    response = admin_client.post(change, shown_form(admin_client, change))

    assert response.status_code == 302
    assert not Activity.objects.filter(kind=Activity.Kind.MONITOR_EDITED).exists()


# What is typed, the field it is refused on (URLS: the first target's
# addresses), and words of the rule's message.
REFUSED = {
    "a cron that cannot run": (
        {"schedule": "61 * * * *"},
        "schedule",
        "We could not read this schedule.",
    ),
    "a time zone that does not exist": (
        {"timezone": "Berlin"},
        "timezone",
        "“Berlin” is not a time zone we know: did you mean Europe/Berlin?",
    ),
    "a private address": (
        {"URLS": "http://127.0.0.1/admin"},
        "URLS",
        "Pagewatch can never connect to http://127.0.0.1/admin: 127.0.0.1 is a "
        "loopback address.",
    ),
    "an address that is not one": (
        {"URLS": "not a url"},
        "URLS",
        "“not a url” is not a web address",
    ),
    "no name": ({"name": "  "}, "name", "Give the monitor a name."),
    "judging with no goal": (
        {"judge": "on", "goal": ""},
        "judge",
        "Write a goal for the AI to judge changes against",
    ),
    "no days of history": (
        {"retention_days": "0"},
        "retention_days",
        "Enter a whole number of days from 1 to 365",
    ),
}


@pytest.mark.parametrize("typed, field, words", REFUSED.values(), ids=REFUSED.keys())
def test_what_the_rules_refuse_is_refused_in_their_words_and_nothing_is_saved(
    admin_client, monitor, settings, typed, field, words
):
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = False
    change = admin_url(Monitor, "change", monitor.pk)
    urls = f"{row_key(monitor.targets.get(position=0))}-urls"
    fields = shown_form(admin_client, change)
    typed = {(urls if name == "URLS" else name): value for name, value in typed.items()}
    stored = Monitor.objects.filter(pk=monitor.pk).values().get()
    stored_targets = list(monitor.targets.values())

    response = admin_client.post(change, {**fields, "name": "Renamed", **typed})

    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    messages_ = errors[urls if field == "URLS" else field]
    assert any(words in message for message in messages_), messages_
    page = response.content.decode()
    assert all(escape(message) in page for message in messages_)
    assert Monitor.objects.filter(pk=monitor.pk).values().get() == stored
    assert list(monitor.targets.values()) == stored_targets
    assert not Activity.objects.exists()


def test_pausing_in_the_form_clears_the_next_run_and_is_logged_as_a_pause(
    admin_client, monitor
):
    change = admin_url(Monitor, "change", monitor.pk)

    response = admin_client.post(
        change, {**shown_form(admin_client, change), "status": "paused"}
    )

    assert response.status_code == 302
    monitor.refresh_from_db()
    assert (monitor.status, monitor.next_run_at) == (Monitor.Status.PAUSED, None)
    entry = Activity.objects.get(kind=Activity.Kind.MONITOR_PAUSED)
    assert (entry.via, entry.monitor_id) == (Activity.Via.ADMIN, monitor.pk)


def test_targets_are_added_and_removed_like_on_the_dashboard(admin_client, monitor):
    change = admin_url(Monitor, "change", monitor.pk)
    pages, crawl = monitor.targets.order_by("position")
    fields = shown_form(admin_client, change)
    # An "Add a target" row left empty adds nothing.
    assert fields["tadd1-urls"] == "" and "tadd2-url" in fields

    response = admin_client.post(
        change,
        {
            **fields,
            f"{row_key(crawl)}-remove": "on",
            "tadd1-urls": "https://shop.example.net/cart",
        },
    )

    assert response.status_code == 302
    targets = list(monitor.targets.order_by("position"))
    assert [t.type for t in targets] == ["scrape", "scrape"]
    assert targets[0].pk == pages.pk  # kept with its page history
    assert targets[1].urls == ["https://shop.example.net/cart"]


def test_removing_every_target_is_refused_with_the_rules_words(admin_client, monitor):
    change = admin_url(Monitor, "change", monitor.pk)
    fields = shown_form(admin_client, change)
    for target in monitor.targets.all():
        fields[f"{row_key(target)}-remove"] = "on"

    response = admin_client.post(change, fields)

    assert response.status_code == 200
    refused = response.context["adminform"].form.non_field_errors()
    assert refused and escape(refused[0]) in response.content.decode()
    assert monitor.targets.count() == 2


def test_the_admin_picks_the_teams_channels_for_a_monitor(admin_client, monitor):
    slack = Channel.objects.create(
        team=monitor.team, name="Pricing alerts", kind="slack", settings={}
    )
    change = admin_url(Monitor, "change", monitor.pk)
    fields = shown_form(admin_client, change)
    assert "Pricing alerts" in admin_client.get(change).content.decode()

    response = admin_client.post(change, {**fields, "channels": [str(slack.pk)]})

    assert response.status_code == 302
    assert list(monitor.channels.all()) == [slack]


def test_a_deleted_monitor_is_shown_as_stored_and_cannot_be_edited(
    admin_client, monitor
):
    Monitor.objects.filter(pk=monitor.pk).update(deleted_at=NOW)
    change = admin_url(Monitor, "change", monitor.pk)

    page = admin_client.get(change).content.decode()
    response = admin_client.post(change, {"name": "Revived", "status": "active"})

    assert 'name="name"' not in page and "https://docs.example.org/" in page
    assert response.status_code == 403
    monitor.refresh_from_db()
    assert monitor.name == "Pricing page"


def test_a_header_typed_over_its_mask_is_saved_and_the_others_kept(
    admin_client, monitor
):
    pages = monitor.targets.get(position=0)
    headers = {"Cookie": "session=hush-hush-5678", "Authorization": "Bearer kept-9999"}
    pages.scrape_options = {"headers": headers}
    pages.save()
    change = admin_url(Monitor, "change", monitor.pk)
    fields = shown_form(admin_client, change)
    shown = fields[f"{row_key(pages)}-headers"]
    assert shown == "Cookie: …5678\nAuthorization: …9999"

    response = admin_client.post(
        change,
        {**fields, f"{row_key(pages)}-headers": shown.replace("…5678", "fresh")},
    )

    assert response.status_code == 302
    pages.refresh_from_db()
    assert pages.scrape_options["headers"] == {
        "Cookie": "fresh",
        "Authorization": "Bearer kept-9999",
    }


def test_staff_who_may_only_view_monitors_see_them_as_stored(
    client, monitor, django_user_model
):
    viewer = django_user_model.objects.create_user("vera", is_staff=True)
    viewer.user_permissions.add(
        *Permission.objects.filter(codename__in=["view_monitor", "view_target"])
    )
    client.force_login(viewer)
    change = admin_url(Monitor, "change", monitor.pk)

    page = client.get(change).content.decode()
    response = client.post(change, {"name": "Renamed", "status": "paused"})

    assert 'name="name"' not in page and "https://docs.example.org/" in page
    assert "Every 30 minutes (*/30 * * * *, Europe/Berlin)" in page
    assert response.status_code == 403
    monitor.refresh_from_db()
    assert (monitor.name, monitor.status) == ("Pricing page", Monitor.Status.ACTIVE)


# --- Channels ---------------------------------------------------------------------


def test_a_channel_switched_to_a_digest_here_gets_its_digest_and_its_time(
    admin_client, team, time_machine
):
    time_machine.move_to(NOW)  # 12:00 UTC, 13:00 in Berlin
    team.time_zone = "Europe/Berlin"
    team.save()
    channel = Channel.objects.create(
        team=team, name="Ops", kind="apprise", settings={"url": "json://ops.example"}
    )
    url = admin_url(Channel, "change", channel.pk)
    data = shown_form(admin_client, url) | {"events": channel.events}

    daily = admin_client.post(url, data | {"digest": "daily", "digest_at": "09:30"})
    channel.refresh_from_db()
    # A digest channel is told nothing at once: without a due time it would
    # never hear of a change again.
    first_digest = channel.next_digest_at
    later = admin_client.post(url, data | {"digest": "daily", "digest_at": "18:00"})
    channel.refresh_from_db()
    moved_to = channel.next_digest_at
    at_once = admin_client.post(url, data | {"digest": "", "digest_at": ""})
    channel.refresh_from_db()

    assert [daily.status_code, later.status_code, at_once.status_code] == [302] * 3
    assert first_digest == datetime(2025, 3, 11, 8, 30, tzinfo=UTC)
    assert moved_to == datetime(2025, 3, 10, 17, 0, tzinfo=UTC)
    assert (channel.digest, channel.next_digest_at) == ("", None)


def test_a_channels_events_are_picked_from_the_known_ones_in_the_admin(
    admin_client, team
):
    channel = Channel.objects.create(
        team=team, name="Ops", kind="apprise", settings={"url": "json://ops.example"}
    )
    url = admin_url(Channel, "change", channel.pk)
    page = admin_client.get(url).content.decode()
    assert 'type="checkbox" name="events" value="failing"' in page
    data = shown_form(admin_client, url)

    wrong = admin_client.post(url, data | {"events": ["meaningful", "everything"]})
    channel.refresh_from_db()
    assert wrong.status_code == 200
    assert channel.events == []

    right = admin_client.post(url, data | {"events": ["change", "failing"]})
    channel.refresh_from_db()
    assert right.status_code == 302
    assert channel.events == ["change", "failing"]


def test_a_digest_chosen_in_the_admin_without_a_time_goes_out_at_nine(
    admin_client, team
):
    channel = Channel.objects.create(
        team=team, name="Ops", kind="apprise", settings={"url": "json://ops.example"}
    )
    url = admin_url(Channel, "change", channel.pk)
    data = shown_form(admin_client, url) | {"events": ["meaningful"]}

    response = admin_client.post(url, data | {"digest": "daily", "digest_at": ""})

    channel.refresh_from_db()
    assert response.status_code == 302
    assert channel.digest_at == time(9, 0)
    assert channel.next_digest_at is not None


# --- Invitations ------------------------------------------------------------------


def test_staff_who_may_only_view_invitations_cannot_withdraw_them(
    client, team, django_user_model
):
    viewer = django_user_model.objects.create_user("vera", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_invitation"))
    client.force_login(viewer)
    invitation, _ = Invitation.issue(team, "sam@example.com", "viewer", None, NOW)

    listing = client.get(admin_url(Invitation, "changelist")).content.decode()
    client.post(
        admin_url(Invitation, "changelist"),
        {"action": "withdraw", "_selected_action": [invitation.pk]},
    )

    invitation.refresh_from_db()
    assert invitation.revoked_at is None
    assert 'value="withdraw"' not in listing


def test_withdrawing_invitations_in_the_admin_is_in_each_teams_activity_log(
    admin_client, team, other_team
):
    pending, _ = Invitation.issue(team, "sam@example.com", "viewer", None, NOW)
    elsewhere, _ = Invitation.issue(other_team, "kim@example.com", "editor", None, NOW)
    used, _ = Invitation.issue(team, "old@example.com", "viewer", None, NOW)
    used.revoke(NOW)
    ids = [pending.pk, elsewhere.pk, used.pk]

    said = _action_messages(admin_client, Invitation, "withdraw", ids)

    logged = Activity.objects.filter(kind=Activity.Kind.INVITATION_WITHDRAWN)
    assert sorted(logged.values_list("team__slug", "details__email", "via")) == [
        ("acme", "sam@example.com", "admin"),
        ("globex", "kim@example.com", "admin"),
    ]
    assert said == [
        "Withdrew 2 invitations. 1 left as it was (already used or withdrawn)."
    ]


def test_a_superuser_can_delete_a_team_with_its_activity_log(admin_client, team):
    make_monitor(team)
    record(SYSTEM, team, Activity.Kind.MONITOR_CREATED, name="Pricing page")
    asked = admin_client.get(admin_url(Team, "delete", team.pk)).content.decode()
    assert re.search(r"[Aa]ctivit\w*: 1\b", asked)
    assert "permission" not in asked.lower()

    response = admin_client.post(admin_url(Team, "delete", team.pk), {"post": "yes"})

    assert response.status_code == 302
    assert not Team.objects.filter(pk=team.pk).exists()
    assert not Activity.objects.filter(team=team.pk).exists()


def test_activity_entries_cannot_be_deleted_on_their_own(admin_client, team):
    record(SYSTEM, team, Activity.Kind.MONITOR_CREATED, name="Pricing page")
    entry = Activity.objects.get()

    response = admin_client.post(
        admin_url(Activity, "delete", entry.pk), {"post": "yes"}
    )

    assert response.status_code == 403
    assert Activity.objects.filter(pk=entry.pk).exists()


@pytest.mark.parametrize("how", ["delete page", "delete selected"])
def test_removing_an_authenticator_in_the_admin_is_in_each_of_their_teams_logs(
    admin_client, admin_user, django_user_model, team, other_team, how
):
    olive = django_user_model.objects.create_user("olive")
    for each in (team, other_team):
        Membership.objects.create(team=each, user=olive, role=Membership.Role.EDITOR)
    device = second_factor.start_setup(olive)
    TOTPDevice.objects.filter(pk=device.pk).update(confirmed=True)
    second_factor.new_recovery_codes(olive)

    if how == "delete page":
        admin_client.post(admin_url(TOTPDevice, "delete", device.pk), {"post": "yes"})
    else:
        admin_client.post(
            admin_url(TOTPDevice, "changelist"),
            {
                "action": "delete_selected",
                "_selected_action": [device.pk],
                "post": "yes",
            },
        )

    assert not TOTPDevice.objects.filter(user=olive).exists()
    for each in (team, other_team):
        entries = Activity.objects.filter(team=each)
        assert [(e.kind, e.user, e.actor_words, e.what_words) for e in entries] == [
            (
                Activity.Kind.SECOND_FACTOR_OFF,
                admin_user,
                "admin (administration)",
                "Removed olive's authenticator: their second factor is off",
            )
        ]


@pytest.mark.parametrize("how", ["delete page", "delete selected"])
def test_removing_only_recovery_codes_in_the_admin_is_in_each_of_their_teams_logs(
    admin_client, admin_user, django_user_model, team, other_team, how
):
    olive = django_user_model.objects.create_user("olive")
    for each in (team, other_team):
        Membership.objects.create(team=each, user=olive, role=Membership.Role.EDITOR)
    device = second_factor.start_setup(olive)
    TOTPDevice.objects.filter(pk=device.pk).update(confirmed=True)
    second_factor.new_recovery_codes(olive)
    codes = StaticDevice.objects.get(user=olive)

    if how == "delete page":
        admin_client.post(admin_url(StaticDevice, "delete", codes.pk), {"post": "yes"})
    else:
        admin_client.post(
            admin_url(StaticDevice, "changelist"),
            {
                "action": "delete_selected",
                "_selected_action": [codes.pk],
                "post": "yes",
            },
        )

    assert not StaticDevice.objects.filter(user=olive).exists()
    assert TOTPDevice.objects.filter(user=olive, confirmed=True).exists()
    for each in (team, other_team):
        entries = Activity.objects.filter(team=each)
        assert [(e.kind, e.user, e.actor_words, e.what_words) for e in entries] == [
            (
                Activity.Kind.RECOVERY_CODES_REMOVED,
                admin_user,
                "admin (administration)",
                "Removed olive's recovery codes: only their authenticator app is left",
            )
        ]


def test_removing_recovery_codes_left_without_an_authenticator_says_only_that(
    admin_client, django_user_model, team
):
    olive = django_user_model.objects.create_user("olive")
    Membership.objects.create(team=team, user=olive, role=Membership.Role.EDITOR)
    second_factor.new_recovery_codes(olive)
    codes = StaticDevice.objects.get(user=olive)

    admin_client.post(admin_url(StaticDevice, "delete", codes.pk), {"post": "yes"})

    [entry] = Activity.objects.filter(team=team)
    assert entry.what_words == "Removed olive's recovery codes"


def test_removing_an_authenticator_never_confirmed_in_the_admin_is_not_logged(
    admin_client, django_user_model, team
):
    olive = django_user_model.objects.create_user("olive")
    Membership.objects.create(team=team, user=olive, role=Membership.Role.EDITOR)
    device = second_factor.start_setup(olive)  # a setup begun, never finished

    admin_client.post(admin_url(TOTPDevice, "delete", device.pk), {"post": "yes"})

    assert not TOTPDevice.objects.filter(user=olive).exists()
    assert not Activity.objects.filter(team=team).exists()


def test_someone_added_in_the_admin_spends_the_invitation_waiting_for_them(
    admin_client, team, django_user_model
):
    from django.utils import timezone

    olive = django_user_model.objects.create_user("olive", "olive@acme.test")
    owner = Membership.objects.create(team=team, user=olive, role="owner")
    sam = django_user_model.objects.create_user("sam", "sam@example.com")
    invitation, _ = Invitation.issue(team, "sam@example.com", "viewer", olive,
                                     timezone.now())  # fmt: skip
    data = {
        "name": team.name, "slug": team.slug, "credit_allowance": "",
        "time_zone": "UTC",
        "membership_set-TOTAL_FORMS": "2", "membership_set-INITIAL_FORMS": "1",
        "membership_set-MIN_NUM_FORMS": "0", "membership_set-MAX_NUM_FORMS": "1000",
        "membership_set-0-id": str(owner.pk), "membership_set-0-team": str(team.pk),
        "membership_set-0-user": str(olive.pk), "membership_set-0-role": "owner",
        "membership_set-1-team": str(team.pk),
        "membership_set-1-user": str(sam.pk), "membership_set-1-role": "editor",
        "api_keys-TOTAL_FORMS": "0", "api_keys-INITIAL_FORMS": "0",
        "api_keys-MIN_NUM_FORMS": "0", "api_keys-MAX_NUM_FORMS": "1000",
    }  # fmt: skip

    response = admin_client.post(admin_url(Team, "change", team.pk), data)

    assert response.status_code == 302, response.content.decode()[:3000]
    assert Membership.objects.get(team=team, user=sam).role == "editor"
    invitation.refresh_from_db()
    assert invitation.accepted_by == sam
    assert not Invitation.objects.pending(timezone.now()).exists()


def test_a_membership_is_not_moved_to_someone_else_in_the_admin(
    admin_client, team, django_user_model
):
    olive = django_user_model.objects.create_user("olive", "olive@acme.test")
    sam = django_user_model.objects.create_user("sam", "sam@example.com")
    owner = Membership.objects.create(team=team, user=olive, role="owner")
    ApiKey.issue(team, name="olive's", created_by=olive)
    data = {
        "name": team.name, "slug": team.slug, "credit_allowance": "",
        "time_zone": "UTC",
        "membership_set-TOTAL_FORMS": "1", "membership_set-INITIAL_FORMS": "1",
        "membership_set-MIN_NUM_FORMS": "0", "membership_set-MAX_NUM_FORMS": "1000",
        "membership_set-0-id": str(owner.pk), "membership_set-0-team": str(team.pk),
        "membership_set-0-user": str(sam.pk), "membership_set-0-role": "owner",
        "api_keys-TOTAL_FORMS": "0", "api_keys-INITIAL_FORMS": "0",
        "api_keys-MIN_NUM_FORMS": "0", "api_keys-MAX_NUM_FORMS": "1000",
    }  # fmt: skip

    admin_client.post(admin_url(Team, "change", team.pk), data)

    # Swapping the person in a row made Sam an owner and put Olive out, with
    # no "joined" or "removed" in the log and Olive's keys still working.
    # Someone leaves by their row's delete box, and joins on a row of their own.
    owner.refresh_from_db()
    assert owner.user == olive
    assert not Membership.objects.filter(user=sam).exists()
    assert ApiKey.objects.get(name="olive's").revoked_at is None


def test_a_monitors_admin_page_says_who_added_each_address(admin_client, monitor):
    """The consent record says who asked for the address, as its
    confirmation e-mail did."""
    monitor.email_recipients.update(added_by="Olive Stone")

    page = admin_client.get(admin_url(Monitor, "change", monitor.pk)).content.decode()

    assert "Added by" in page and "Olive Stone" in page


def test_the_admin_sets_which_changes_matter_under_the_apis_rules(
    admin_client, monitor
):
    change = admin_url(Monitor, "change", monitor.pk)
    page = admin_client.get(change).content.decode()
    assert "Which changes matter" in page and "Only lines added" in page

    fields = shown_form(admin_client, change)
    saved = admin_client.post(
        change,
        {**fields, "change_lines": "added", "change_disappears": "Out of stock"},
    )
    refused = admin_client.post(change, {**fields, "change_containing": "/(/"})

    assert saved.status_code == 302
    assert refused.status_code == 200
    assert "This pattern is not valid" in refused.content.decode()
    monitor.refresh_from_db()
    assert monitor.change_rules == {
        "lines": "added",
        "containing": [],
        "appears": None,
        "disappears": "Out of stock",
    }
