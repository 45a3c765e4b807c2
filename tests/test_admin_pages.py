"""The admin walked as an administrator uses it, on what it found: lists that
stay fast on long tables, channel edits held to the API's rules and logged
like the dashboard's, API keys that are revoked rather than deleted."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from django import forms
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django_otp.plugins.otp_static.models import StaticDevice
from django_otp.plugins.otp_totp.models import TOTPDevice

from checks.models import (
    Check,
    Delivery,
    EmailDelivery,
    PageResult,
    WebhookDelivery,
)
from checks.notify import kinds
from monitors.models import (
    ApiKey,
    Channel,
    EmailRecipient,
    Membership,
    Monitor,
    MonitorChannel,
    Target,
    Team,
)
from teams import second_factor
from teams.activity import SYSTEM, record
from teams.models import Activity, Invitation

NOW = datetime(2025, 3, 10, 12, 0, tzinfo=UTC)


def admin_url(model, view: str, *args) -> str:
    opts = model._meta
    return reverse(f"admin:{opts.app_label}_{opts.model_name}_{view}", args=args)


def shown_form(client, url: str) -> dict[str, Any]:
    """What a browser sends when the change page is saved as shown."""
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
    return data


@pytest.fixture
def monitor(team) -> Monitor:
    monitor = Monitor.objects.create(
        team=team,
        name="Pricing page",
        schedule_cron="*/30 * * * *",
        schedule_timezone="UTC",
        next_run_at=NOW,
    )
    Target.objects.create(
        monitor=monitor, type=Target.Type.SCRAPE, urls=["https://example.com/"]
    )
    return monitor


@pytest.mark.parametrize("search", ["", "example"])
def test_the_page_results_list_does_not_join_every_page_to_its_check(
    admin_client, monitor, search
):
    check = Check.objects.create(
        monitor=monitor,
        status=Check.Status.COMPLETED,
        trigger=Check.Trigger.SCHEDULED,
        scheduled_for=NOW,
        estimated_credits=3,
    )
    PageResult.objects.bulk_create(
        PageResult(
            check_run=check,
            target_id=check.pk,
            url=f"https://example.com/p{n}",
            status=PageResult.Status.SAME,
        )
        for n in range(3)
    )

    with CaptureQueriesContext(connection) as queries:
        page = admin_client.get(admin_url(PageResult, "changelist"), {"q": search})

    # On PostgreSQL a search for a common word joined 100,000 page results to
    # their checks in a nested loop: 10 s for one page of the list.
    listing = [q["sql"] for q in queries if 'FROM "checks_pageresult"' in q["sql"]]
    assert listing and not [sql for sql in listing if "JOIN" in sql]
    assert page.content.decode().count(admin_url(Check, "change", check.pk)) == 3


@pytest.fixture
def channel(team) -> Channel:
    return Channel.objects.create(
        team=team, name="Ops", kind="apprise", settings={"url": "json://ops.example"}
    )


@pytest.mark.parametrize("failing_after", ["0", "101"])
def test_a_channel_edited_in_the_admin_is_held_to_the_apis_rules(
    admin_client, channel, failing_after
):
    url = admin_url(Channel, "change", channel.pk)
    data = shown_form(admin_client, url)

    refused = admin_client.post(url, data | {"failing_after": failing_after})
    channel.refresh_from_db()

    # The API takes 1 to 100 failed checks before a channel says "failing".
    assert refused.status_code == 200
    assert refused.context["adminform"].form.errors["failing_after"]
    assert channel.failing_after == Channel._meta.get_field("failing_after").default
    assert not Activity.objects.exists()


def test_a_channel_edited_in_the_admin_is_in_the_teams_activity_log(
    admin_client, channel
):
    url = admin_url(Channel, "change", channel.pk)
    data = shown_form(admin_client, url)

    saved = admin_client.post(url, data | {"name": "Operations", "failing_after": "5"})
    channel.refresh_from_db()

    assert saved.status_code == 302
    assert (channel.name, channel.failing_after) == ("Operations", 5)
    entry = Activity.objects.get()
    assert (entry.team_id, entry.kind, entry.via, entry.details) == (
        channel.team_id,
        Activity.Kind.CHANNEL_EDITED,
        "admin",
        {"name": "Operations"},
    )


@pytest.mark.parametrize("how", ["delete page", "bulk action"])
def test_a_channel_deleted_in_the_admin_is_in_the_teams_activity_log(
    admin_client, channel, how
):
    if how == "delete page":
        admin_client.post(admin_url(Channel, "delete", channel.pk), {"post": "yes"})
    else:
        admin_client.post(
            admin_url(Channel, "changelist"),
            {
                "action": "delete_selected",
                "_selected_action": [channel.pk],
                "post": "yes",
            },
        )

    assert not Channel.objects.filter(pk=channel.pk).exists()
    entry = Activity.objects.get()
    assert (entry.team_id, entry.kind, entry.via, entry.details) == (
        channel.team_id,
        Activity.Kind.CHANNEL_DELETED,
        "admin",
        {"name": "Ops"},
    )


def test_a_monitors_own_channel_is_shown_as_stored_not_edited_in_the_admin(
    admin_client, monitor
):
    # A monitor's own channels are its Firecrawl fields (checks.notify.own):
    # the API and the dashboard change them only through the monitor.
    own = Channel.objects.create(
        team=monitor.team,
        owner_monitor=monitor,
        name="webhook",
        kind="firecrawl_webhook",
        settings={"url": "https://hooks.example.com/in"},
    )
    url = admin_url(Channel, "change", own.pk)

    page = admin_client.get(url).content.decode()
    posted = admin_client.post(
        url, {"name": "Renamed", "digest": "daily", "failing_after": "3"}
    )
    own.refresh_from_db()

    assert 'name="name"' not in page
    assert posted.status_code == 403
    assert (own.name, own.digest) == ("webhook", "")


def own_webhook(monitor: Monitor) -> Channel:
    return Channel.objects.create(
        team=monitor.team,
        owner_monitor=monitor,
        name="webhook",
        kind="firecrawl_webhook",
        settings={"url": "https://hooks.example.com/in"},
    )


def test_a_monitors_own_channel_cannot_be_deleted_on_its_delete_page(
    admin_client, monitor
):
    own = own_webhook(monitor)
    MonitorChannel.objects.create(monitor=monitor, channel=own)
    url = admin_url(Channel, "delete", own.pk)

    asked = admin_client.get(url)
    posted = admin_client.post(url, {"post": "yes"})

    assert (asked.status_code, posted.status_code) == (403, 403)
    assert Channel.objects.filter(pk=own.pk).exists()
    assert MonitorChannel.objects.filter(channel=own).exists()
    assert not Activity.objects.exists()


def test_deleting_a_monitors_own_channel_with_others_is_refused_saying_why(
    admin_client, monitor, channel
):
    own = own_webhook(monitor)
    url = admin_url(Channel, "changelist")
    chosen = {"action": "delete_selected", "_selected_action": [own.pk, channel.pk]}

    asked = admin_client.post(url, chosen)
    confirmed = admin_client.post(url, chosen | {"post": "yes"})

    assert asked.status_code == 200
    assert "a monitor&#x27;s own channel: change it with its monitor" in (
        asked.content.decode()
    )
    assert confirmed.status_code == 403
    assert set(Channel.objects.values_list("pk", flat=True)) == {own.pk, channel.pk}
    assert not Activity.objects.exists()


def test_a_monitors_own_channel_page_says_where_to_change_it(admin_client, monitor):
    own = own_webhook(monitor)

    page = admin_client.get(admin_url(Channel, "change", own.pk)).content.decode()

    assert "Change or remove it with its monitor" in page
    assert f'href="{reverse("monitor-edit", args=[monitor.pk])}"' in page
    assert admin_url(Channel, "delete", own.pk) not in page


def test_a_team_channel_page_offers_its_delete_and_no_note(admin_client, channel):
    page = admin_client.get(admin_url(Channel, "change", channel.pk)).content.decode()

    assert admin_url(Channel, "delete", channel.pk) in page
    assert "Change or remove it with its monitor" not in page


def test_an_api_key_is_revoked_in_the_admin_not_deleted(admin_client, team):
    key, _ = ApiKey.issue(team, name="ci")

    deleted = admin_client.post(admin_url(ApiKey, "delete", key.pk), {"post": "yes"})
    listed = admin_client.get(admin_url(ApiKey, "changelist")).content.decode()

    # A deleted key would stop working with nothing in the team's log; a
    # revoked one says when, and stays listed with its last use.
    assert deleted.status_code == 403
    assert ApiKey.objects.filter(pk=key.pk).exists()
    assert 'value="delete_selected"' not in listed
    assert 'value="revoke_selected"' in listed


def test_replacing_a_webhook_secret_in_the_admin_is_in_the_teams_activity_log(
    admin_client, team, other_team
):
    team.rotate_webhook_secret()
    before = team.webhook_secret

    admin_client.post(
        admin_url(Team, "changelist"),
        {"action": "rotate_webhook_secret", "_selected_action": [team.pk]},
    )
    team.refresh_from_db()

    # As when replaced on the dashboard: receivers stop trusting the old one.
    assert team.webhook_secret != before
    entry = Activity.objects.get()
    assert (entry.team_id, entry.kind, entry.via) == (
        team.pk,
        Activity.Kind.SECRET_ROTATED,
        "admin",
    )
    assert before not in str(entry.details)


def person(name: str):
    return get_user_model().objects.create_user(name, f"{name}@example.com", "x")


@pytest.mark.parametrize("how", ["delete page", "bulk action"])
def test_the_last_owner_of_a_team_cannot_be_deleted_in_the_admin(
    admin_client, team, how
):
    olive = person("olive")
    Membership.objects.create(team=team, user=olive, role=Membership.Role.OWNER)
    User = get_user_model()

    if how == "delete page":
        url = admin_url(User, "delete", olive.pk)
        asked = admin_client.get(url).content.decode()
        admin_client.post(url, {"post": "yes"})
    else:
        form = {"action": "delete_selected", "_selected_action": [olive.pk]}
        asked = admin_client.post(admin_url(User, "changelist"), form)
        asked = asked.content.decode()
        admin_client.post(admin_url(User, "changelist"), form | {"post": "yes"})

    # As on the Team page: a team always keeps an owner. Alone in it, she
    # waits for the team's deletion, which would otherwise go on checking
    # its monitors for nobody.
    delete_team = admin_url(Team, "delete", team.pk)
    assert (
        f"{team.name}: its only owner is olive, and nobody else is in it "
        f'(<a href="{delete_team}">delete the team</a> first)'
    ) in asked
    assert User.objects.filter(pk=olive.pk).exists()
    assert Membership.objects.filter(team=team, user=olive).exists()


def test_the_only_owner_of_a_team_others_are_in_waits_for_another_owner(
    admin_client, team
):
    olive, eddie = person("olive"), person("eddie")
    Membership.objects.create(team=team, user=olive, role=Membership.Role.OWNER)
    Membership.objects.create(team=team, user=eddie, role=Membership.Role.EDITOR)
    User = get_user_model()
    url = admin_url(User, "delete", olive.pk)

    asked = admin_client.get(url).content.decode()
    admin_client.post(url, {"post": "yes"})

    assert (
        f"{team.name}: its only owner is olive (give the team another owner first)"
    ) in asked
    assert Membership.objects.filter(team=team, user=olive).exists()


def test_two_owners_deleted_together_leave_their_team_no_owner_so_neither_goes(
    admin_client, team
):
    olive, owen, eddie = person("olive"), person("owen"), person("eddie")
    for owner in (olive, owen):
        Membership.objects.create(team=team, user=owner, role=Membership.Role.OWNER)
    Membership.objects.create(team=team, user=eddie, role=Membership.Role.EDITOR)
    User = get_user_model()
    form = {"action": "delete_selected", "_selected_action": [olive.pk, owen.pk]}

    asked = admin_client.post(admin_url(User, "changelist"), form).content.decode()
    admin_client.post(admin_url(User, "changelist"), form | {"post": "yes"})

    assert f"{team.name}: its only owner is olive and owen" in asked
    assert User.objects.filter(pk__in=[olive.pk, owen.pk]).count() == 2


def test_deleting_an_account_in_the_admin_is_in_each_of_its_teams_logs(
    admin_client, team, other_team
):
    olive, owner = person("olive"), person("owen")
    for each in (team, other_team):
        Membership.objects.create(team=each, user=owner, role=Membership.Role.OWNER)
        Membership.objects.create(team=each, user=olive, role=Membership.Role.EDITOR)
    key, _ = ApiKey.issue(team, name="olive's", created_by=olive)
    User = get_user_model()

    admin_client.post(admin_url(User, "delete", olive.pk), {"post": "yes"})

    assert not User.objects.filter(pk=olive.pk).exists()
    removed = Activity.objects.filter(kind=Activity.Kind.MEMBER_REMOVED)
    assert sorted(removed.values_list("team_id", "via", "details__member")) == [
        (team.pk, "admin", "olive"),
        (other_team.pk, "admin", "olive"),
    ]
    key.refresh_from_db()
    assert key.revoked_at is not None


@pytest.mark.parametrize("model", [TOTPDevice, StaticDevice])
def test_the_admin_gives_nobody_an_authenticator_or_recovery_codes(admin_client, model):
    olive = person("olive")
    add = admin_url(model, "add")
    fields = {"user": olive.pk, "name": "mine", "confirmed": "on"}
    extra = (
        {"key": "3132333435363738393031323334353637383930", "step": "30",
         "t0": "0", "digits": "6", "tolerance": "1", "drift": "0"}
        if model is TOTPDevice
        else {"token_set-TOTAL_FORMS": "1", "token_set-INITIAL_FORMS": "0",
              "token_set-0-token": "knowncode"}
    )  # fmt: skip

    asked = admin_client.get(add)
    posted = admin_client.post(add, fields | extra)

    # A second factor whose secret the administrator chose lets them sign
    # in as the person; people set theirs up themselves on the dashboard.
    assert (asked.status_code, posted.status_code) == (403, 403)
    assert not model.objects.filter(user=olive).exists()


def test_the_admin_moves_nobodys_authenticator_to_someone_else(
    admin_client, admin_user
):
    olive = person("olive")
    mine = second_factor.start_setup(admin_user)  # its key is the admin's
    url = admin_url(TOTPDevice, "change", mine.pk)

    posted = admin_client.post(
        url, {"user": olive.pk, "name": "Authenticator app", "confirmed": "on"}
    )
    mine.refresh_from_db()

    assert posted.status_code == 403
    assert mine.user == admin_user
    assert admin_client.get(url).status_code == 200  # still shown


@pytest.mark.parametrize("model", [Monitor, ApiKey, Invitation, Activity])
def test_lists_filter_by_team_without_a_link_to_every_team(
    admin_client, monitor, model
):
    team = monitor.team
    Team.objects.bulk_create(
        Team(name=f"Customer {n}", slug=f"customer-{n}", feed_token=f"t{n}")
        for n in range(30)
    )
    ApiKey.issue(team, name="ci")
    Invitation.issue(team, "sam@example.com", "viewer", None, NOW)
    record(SYSTEM, team, Activity.Kind.MONITOR_PAUSED, monitor)
    url = admin_url(model, "changelist")

    everyone = admin_client.get(url).content.decode()
    chosen = admin_client.get(url, {"team__id__exact": team.pk})
    nonsense = admin_client.get(url, {"team__id__exact": "x"})
    superscript = admin_client.get(url, {"team__id__exact": "²"})  # int() refuses

    # 5,000 teams made every one of these lists 400 KB of team links.
    assert "team__id__exact" not in everyone
    assert chosen.status_code == 200
    assert f"team__id__exact={team.pk}" in chosen.content.decode()
    assert set(chosen.context["cl"].queryset) == set(
        model._default_manager.filter(team=team)
    )
    assert nonsense.status_code == 200
    assert superscript.status_code == 200


HOOK = "https://hooks.slack.com/services/T0000/B0000/XXXXsecretXXXX"


def test_a_webhooks_address_is_read_in_shape_only_where_it_cannot_be_changed(
    admin_client, client, monitor, django_user_model
):
    # Slack, Discord and Zapier hook URLs are their receivers' credentials:
    # as for the dashboard's viewers, read-only pages show their shape.
    Monitor.objects.filter(pk=monitor.pk).update(webhook={"url": HOOK})
    check = Check.objects.create(
        monitor=monitor,
        status=Check.Status.COMPLETED,
        trigger=Check.Trigger.SCHEDULED,
        scheduled_for=NOW,
        estimated_credits=1,
    )
    delivery = WebhookDelivery.objects.create(
        kind=Delivery.Kind.WEBHOOK,
        monitor=monitor,
        check_run=check,
        event="monitor.check.completed",
        url=HOOK,
        body="{}",
    )
    viewer = django_user_model.objects.create_user("vera", is_staff=True)
    viewer.user_permissions.add(
        *Permission.objects.filter(codename__in=["view_monitor", "view_target"])
    )
    client.force_login(viewer)

    read_only = [
        admin_client.get(admin_url(WebhookDelivery, "changelist")),
        admin_client.get(admin_url(WebhookDelivery, "change", delivery.pk)),
        client.get(admin_url(Monitor, "change", monitor.pk)),
    ]
    editing = admin_client.get(admin_url(Monitor, "change", monitor.pk))

    for page in read_only:
        assert page.status_code == 200
        assert "hooks.slack.com/services/" in page.content.decode()
        assert "XXXXsecretXXXX" not in page.content.decode()
    assert HOOK in editing.content.decode()  # who may change it reads it whole


def test_the_email_saying_a_webhook_was_turned_off_is_listed_by_its_address(
    admin_client, monitor
):
    # The row also holds the webhook's address (the e-mail names it): the
    # admin names where the row went, as Delivery.destination does.
    delivery = EmailDelivery.objects.create(
        kind=Delivery.Kind.EMAIL,
        monitor=monitor,
        event="email.webhook_disabled",
        email="owner@example.com",
        url=HOOK,
        body="{}",
    )

    listed = admin_client.get(admin_url(EmailDelivery, "changelist"))
    shown = admin_client.get(admin_url(EmailDelivery, "change", delivery.pk))

    for page in (listed.content.decode(), shown.content.decode()):
        assert "owner@example.com" in page
        assert "hooks.slack.com/services/" not in page


def test_a_webhook_channels_address_is_shown_in_shape_only(admin_client, team):
    # Its settings are never changed in the admin (the dashboard and the API
    # validate them): nobody reads the address whole here.
    hook = Channel.objects.create(
        team=team, name="Zapier", kind="webhook", settings={"url": HOOK}
    )

    page = admin_client.get(admin_url(Channel, "change", hook.pk)).content.decode()

    assert "hooks.slack.com/services/" in page
    assert "XXXXsecretXXXX" not in page


def _run_action(client, model, action: str, ids: list) -> list[str]:
    response = client.post(
        admin_url(model, "changelist"),
        {"action": action, "_selected_action": ids},
        follow=True,
    )
    return [str(m) for m in response.context["messages"]]


def test_run_now_in_the_admin_queues_a_manual_check_logged_like_the_dashboards(
    admin_client, monitor, django_capture_on_commit_callbacks
):
    paused = Monitor.objects.create(
        team=monitor.team, name="Paused", schedule_cron="0 * * * *"
    )
    paused.pause()
    paused.save()

    with django_capture_on_commit_callbacks(execute=False) as sent:
        said = _run_action(
            admin_client, Monitor, "run_now_selected", [monitor.pk, paused.pk]
        )

    check = Check.objects.get()
    assert (check.monitor, check.trigger, check.status) == (
        monitor,
        Check.Trigger.MANUAL,
        Check.Status.QUEUED,
    )
    assert len(sent) == 1  # the check goes to a worker once committed
    monitor.refresh_from_db()
    assert monitor.current_check_id == check.pk
    entry = Activity.objects.get(kind=Activity.Kind.MONITOR_RUN)
    assert (entry.monitor, entry.via) == (monitor, Activity.Via.ADMIN)
    assert said == [
        "Started a check of 1 monitor.",
        "Left alone: “Paused” is paused (resume it first).",
    ]


def test_run_now_in_the_admin_starts_no_second_check_beside_a_running_one(
    admin_client, monitor
):
    running = Check.objects.create(
        monitor=monitor,
        status=Check.Status.RUNNING,
        trigger=Check.Trigger.SCHEDULED,
        scheduled_for=NOW,
        estimated_credits=1,
    )

    said = _run_action(admin_client, Monitor, "run_now_selected", [monitor.pk])

    assert list(Check.objects.all()) == [running]
    assert not Activity.objects.filter(kind=Activity.Kind.MONITOR_RUN).exists()
    assert said == [
        "No check was started.",
        f"Left alone: “{monitor.name}” is already running a check.",
    ]


def _delivery(monitor, status: str) -> WebhookDelivery:
    return WebhookDelivery.objects.create(
        kind=Delivery.Kind.WEBHOOK,
        monitor=monitor,
        event="monitor.check.completed",
        url="https://hooks.example.com/in",
        body="{}",
        status=status,
        attempts=5,
    )


def test_a_failed_delivery_is_retried_from_the_admin_as_from_the_dashboard(
    admin_client, monitor, django_capture_on_commit_callbacks
):
    failed = _delivery(monitor, Delivery.Status.FAILED)
    delivered = _delivery(monitor, Delivery.Status.DELIVERED)

    with django_capture_on_commit_callbacks(execute=False) as sent:
        said = _run_action(
            admin_client, WebhookDelivery, "retry_now", [failed.pk, delivered.pk]
        )

    failed.refresh_from_db()
    delivered.refresh_from_db()
    assert failed.status == Delivery.Status.PENDING
    assert failed.next_attempt_at is not None
    assert delivered.status == Delivery.Status.DELIVERED
    assert len(sent) == 1  # queued for the notifications worker once committed
    assert said == [
        "Retrying 1 delivery now. 1 left as it was "
        "(delivered, being sent or cancelled)."
    ]


def test_staff_who_may_only_view_deliveries_cannot_retry_them(
    client, monitor, django_user_model
):
    model = WebhookDelivery
    viewer = django_user_model.objects.create_user("vera", is_staff=True)
    viewer.user_permissions.add(
        Permission.objects.get(codename=f"view_{model._meta.model_name}")
    )
    client.force_login(viewer)
    failed = _delivery(monitor, Delivery.Status.FAILED)

    listing = client.get(admin_url(model, "changelist")).content.decode()
    client.post(
        admin_url(model, "changelist"),
        {"action": "retry_now", "_selected_action": [failed.pk]},
    )

    failed.refresh_from_db()
    assert listing.count("<tr") > 1 and 'value="retry_now"' not in listing
    assert failed.status == Delivery.Status.FAILED


@pytest.mark.parametrize(
    ("model", "kind", "event", "words"),
    [
        (WebhookDelivery, Delivery.Kind.WEBHOOK, "monitor.check.completed",
         "Check finished"),
        (EmailDelivery, Delivery.Kind.EMAIL, "email.notification", "E-mail"),
        (Delivery, "apprise", "channel.change", "Changes"),
    ],
)  # fmt: skip
def test_delivery_lists_name_events_in_words_without_reading_every_row(
    admin_client, monitor, channel, model, kind, event, words
):
    delivery = Delivery.objects.create(
        kind=kind,
        monitor=monitor,
        channel=channel if kind == "apprise" else None,
        event=event,
        url="https://hooks.example.com/in",
        email="ops@example.com",
        body="{}",
    )
    url = admin_url(model, "changelist") if model is not Delivery else (
        reverse("admin:checks_channeldelivery_changelist")
    )  # fmt: skip

    with CaptureQueriesContext(connection) as queries:
        page = admin_client.get(url).content.decode()
    filtered = admin_client.get(url, {"event": event}).content.decode()
    other = admin_client.get(url, {"event": "monitor.page"}).content.decode()

    # The event in the row and in the filter in words, as on the dashboard,
    # the filter's choices known beforehand: Django's own read them from a
    # DISTINCT over the whole outbox on every load.
    assert f'<td class="field-event_words">{words}</td>' in page
    assert f">{words}</a>" in page.split('id="changelist-filter"')[1]
    assert f">{event}<" not in page
    assert not [q["sql"] for q in queries if "DISTINCT" in q["sql"]]
    assert f"/{delivery.pk}/change/" in filtered
    assert f"/{delivery.pk}/change/" not in other


def test_channel_lists_name_kinds_in_words_without_reading_every_row(
    admin_client, monitor, channel
):
    Delivery.objects.create(
        kind="apprise", monitor=monitor, channel=channel, event="channel.change"
    )
    for url in (
        admin_url(Channel, "changelist"),
        reverse("admin:checks_channeldelivery_changelist"),
    ):
        with CaptureQueriesContext(connection) as queries:
            page = admin_client.get(url).content.decode()
        filters = page.split('id="changelist-filter"')[1]
        assert ">Chat and push (Apprise)</a>" in filters, url
        assert ">apprise<" not in page, url
        assert not [q["sql"] for q in queries if "DISTINCT" in q["sql"]], url
        assert (
            admin_client.get(url, {"kind": "webhook"}).context["cl"].result_count == 0
        )
        assert (
            admin_client.get(url, {"kind": "apprise"}).context["cl"].result_count == 1
        )


def test_channels_checks_and_deliveries_are_filtered_by_team(
    admin_client, monitor, channel, other_team
):
    theirs = Monitor.objects.create(
        team=other_team, name="Theirs", schedule_cron="0 * * * *"
    )
    their_channel = Channel.objects.create(
        team=other_team, name="Their ops", kind="apprise", settings={}
    )
    for each, where in ((monitor, channel), (theirs, their_channel)):
        check = Check.objects.create(
            monitor=each,
            status=Check.Status.COMPLETED,
            trigger=Check.Trigger.SCHEDULED,
            scheduled_for=NOW,
            estimated_credits=1,
        )
        _delivery(each, Delivery.Status.FAILED)
        Delivery.objects.create(
            kind="apprise", monitor=each, channel=where, event="channel.change",
            check_run=check,
        )  # fmt: skip

    for model in (Channel, Check, WebhookDelivery, EmailDelivery, "channeldelivery"):
        url = (
            reverse("admin:checks_channeldelivery_changelist")
            if model == "channeldelivery"
            else admin_url(model, "changelist")
        )
        page = admin_client.get(url, {"team__id__exact": monitor.team_id})
        rows = list(page.context["cl"].result_list)
        assert page.status_code == 200, url
        assert "Acme" in page.content.decode().split('id="changelist-filter"')[1]
        if model is not EmailDelivery:
            assert rows, url
        assert all(
            getattr(row, "team_id", None) == monitor.team_id
            or row.monitor.team_id == monitor.team_id
            for row in rows
        ), url


def test_an_address_is_found_across_monitors_and_its_emails_stopped_in_the_admin(
    admin_client, monitor, other_team
):
    theirs = Monitor.objects.create(
        team=other_team, name="Their prices", schedule_cron="0 * * * *"
    )
    ours = EmailRecipient.objects.create(
        monitor=monitor, email="ext@partner.test", status="confirmed", source="opt_in"
    )
    EmailRecipient.objects.create(
        monitor=theirs, email="ext@partner.test", status="pending", source="opt_in"
    )
    EmailRecipient.objects.create(
        monitor=monitor, email="ops@acme.test", status="confirmed", source="opt_in"
    )
    url = admin_url(EmailRecipient, "changelist")

    found = admin_client.get(url, {"q": "ext@partner.test"})
    said = _run_action(admin_client, EmailRecipient, "stop_emails", [ours.pk])

    # Someone asking to be taken off every list is found on each monitor.
    assert {r.monitor.name for r in found.context["cl"].result_list} == {
        "Pricing page",
        "Their prices",
    }
    ours.refresh_from_db()
    assert ours.status == EmailRecipient.Status.UNSUBSCRIBED
    assert ours.unsubscribed_at is not None
    entry = Activity.objects.get(kind=Activity.Kind.EMAIL_UNSUBSCRIBED)
    assert (entry.team, entry.via) == (monitor.team, Activity.Via.ADMIN)
    assert entry.what_words == (
        "Stopped the e-mails of monitor “Pricing page” to ext@partner.test"
    )
    assert said == ["Stopped the e-mails to 1 address."]
    # Consent records are never written by hand.
    assert admin_client.get(admin_url(EmailRecipient, "add")).status_code == 403


def test_the_admin_names_a_check_by_its_time_not_its_id(admin_client, monitor):
    check = Check.objects.create(
        monitor=monitor,
        status=Check.Status.COMPLETED,
        trigger=Check.Trigger.SCHEDULED,
        scheduled_for=NOW,
        estimated_credits=1,
    )
    PageResult.objects.create(
        check_run=check, target_id=check.pk, url="https://example.com/", status="same"
    )

    listing = admin_client.get(admin_url(PageResult, "changelist")).content.decode()
    page = admin_client.get(admin_url(Check, "change", check.pk)).content.decode()

    for shown in (listing, page):
        assert "Completed check of 2025-03-10 12:00 UTC" in shown
        assert f"check of {check.monitor_id}" not in shown


def test_an_administrator_sends_a_channel_a_test_message_as_the_dashboard_does(
    admin_client, team, monitor, django_user_model, mailoutbox
):
    mia = django_user_model.objects.create_user("mia", "mia@acme.test")
    Membership.objects.create(team=team, user=mia, role=Membership.Role.OWNER)
    people = Channel.objects.create(
        team=team,
        name="Pricing people",
        kind="team_email",
        settings=kinds.kind_for("team_email").clean_for(
            team, {"recipients": ["mia@acme.test"]}
        ),
    )
    own = Channel.objects.create(
        team=team, name="Own", kind="email", owner_monitor=monitor, settings={}
    )

    said = _run_action(admin_client, Channel, "send_test", [people.pk, own.pk])

    assert [m.to for m in mailoutbox] == [["mia@acme.test"]]
    test = Delivery.objects.get(channel=people)
    assert (test.event, test.status) == ("channel.test", Delivery.Status.DELIVERED)
    assert not Delivery.objects.filter(channel=own).exists()
    assert said == [
        "Left “Own” alone: a monitor's own channel is tested from its monitor.",
        "Test message sent to “Pricing people”.",
    ]


def test_a_persons_admin_page_lists_their_teams_and_roles_without_changing_them(
    admin_client, team, other_team, django_user_model
):
    olive = django_user_model.objects.create_user("olive", "olive@acme.test")
    Membership.objects.create(team=team, user=olive, role=Membership.Role.OWNER)
    Membership.objects.create(team=other_team, user=olive, role=Membership.Role.VIEWER)
    url = admin_url(get_user_model(), "change", olive.pk)

    page = admin_client.get(url)

    # Whoever decides to switch off or delete an account sees what it holds;
    # roles are changed on the team's page, where the change is logged.
    rows = page.content.decode()
    assert admin_url(Team, "change", team.pk) in rows
    assert admin_url(Team, "change", other_team.pk) in rows
    assert ">Owner<" in rows and ">Viewer<" in rows
    assert not [
        name for name in page.context["adminform"].form.data if "membership" in name
    ]
    assert 'name="membership_set-0-role"' not in rows
