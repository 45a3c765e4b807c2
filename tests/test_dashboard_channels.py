"""The dashboard's Channels page: adding, editing, testing and deleting a
team's channels, with the same rules as /v2/channels."""

from __future__ import annotations

import html
import re

import pytest

from checks.models import Delivery
from monitors.models import Channel, Membership
from teams.models import Activity
from tests.sites import Request, Site
from tests.test_admin_deleting import CHECKS, history_read, with_history


@pytest.fixture
def owner(team, django_user_model):
    user = django_user_model.objects.create_user("owner", password="pw")
    Membership.objects.create(team=team, user=user, role=Membership.Role.OWNER)
    return user


@pytest.fixture
def web(client, owner):
    client.force_login(owner)
    return client


@pytest.fixture
def hook(site: Site, settings) -> list[Request]:
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True
    got: list[Request] = []

    def answer(request: Request) -> tuple[int, dict[str, str], bytes]:
        got.append(request)
        return 500, {"Content-Type": "text/plain"}, b"down"

    site.handle("/hook", answer)
    return got


def test_the_channels_page_offers_every_registered_kind(web):
    page = web.get("/channels/new/").content.decode()
    for label in ("Webhook", "Slack (app)", "Slack (incoming webhook)", "Apprise"):
        assert label in page


def test_the_channels_page_says_what_each_channel_is_told_in_words(web, team):
    Channel.objects.create(
        team=team,
        name="Ops room",
        kind="webhook",
        settings={"url": "https://hooks.example.com/x"},
        events=["meaningful", "failing"],
    )
    Channel.objects.create(team=team, name="Quiet", kind="webhook", events=[])

    page = html.unescape(web.get("/channels/").content.decode())

    assert "tells meaningful changes; a monitor failing, and recovering" in page
    assert "tells nothing yet" in page
    assert "meaningful, failing" not in page


def test_adding_an_apprise_channel_stores_it_and_never_shows_the_url(web, team):
    url = "tgram://123456789:AAHverysecrettoken/42"
    response = web.post(
        "/channels/new/",
        {
            "kind": "apprise",
            "name": "Telegram",
            "setting_url": url,
            "events": ["meaningful", "failing"],
            "failing_after": "3",
            "digest": "",
        },
    )
    assert response.status_code == 302
    channel = Channel.objects.get(team=team)
    assert channel.settings == {"url": url}
    for page in (web.get("/channels/"), web.get(f"/channels/{channel.pk}/")):
        assert "verysecret" not in page.content.decode()

    # Saving the form again without the URL keeps it.
    web.post(
        f"/channels/{channel.pk}/",
        {"kind": "apprise", "name": "Telegram ops", "events": ["change"]},
    )
    channel.refresh_from_db()
    assert channel.name == "Telegram ops" and channel.settings == {"url": url}


def test_an_unknown_apprise_scheme_is_named_in_the_form(web):
    response = web.post(
        "/channels/new/",
        {"kind": "apprise", "name": "X", "setting_url": "nosuch://x/y", "events": []},
    )
    assert response.status_code == 400
    assert "nosuch://" in response.content.decode()
    assert not Channel.objects.exists()


def test_a_discord_address_pasted_in_the_form_is_saved_and_never_shown(web, team):
    url = "https://discord.com/api/webhooks/417429632418316298/tokenABCsecret"
    response = web.post(
        "/channels/new/",
        {"kind": "apprise", "name": "Discord", "setting_url": url,
         "events": ["meaningful"]},
    )  # fmt: skip

    assert response.status_code == 302
    channel = Channel.objects.get(team=team)
    assert channel.settings == {"url": url}
    for page in (web.get("/channels/"), web.get(f"/channels/{channel.pk}/")):
        assert "tokenABCsecret" not in page.content.decode()


def test_an_old_teams_webhook_address_in_the_form_says_to_use_workflows(web):
    url = "https://acme.webhook.office.com/webhookb2/abc@def/IncomingWebhook/1/2"
    response = web.post(
        "/channels/new/",
        {"kind": "apprise", "name": "Teams", "setting_url": url, "events": []},
    )

    assert response.status_code == 400
    page = html.unescape(response.content.decode())
    assert "isn't one Apprise recognises" in page
    assert "For Microsoft Teams, make a Workflows webhook" in page
    assert "URL scheme" not in page
    assert not Channel.objects.exists()


def test_slack_without_a_token_says_which_setting_turns_it_on(web, settings):
    settings.SLACK_BOT_TOKEN = ""
    page = web.get("/channels/new/?kind=slack").content.decode()
    assert "SLACK_BOT_TOKEN" in page


def unframed_settings(page: str) -> list[str]:
    """Setting names said to staff outside the administrator's line."""
    text = html.unescape(re.sub(r"<[^>]+>", " ", page))
    return re.findall(r"(?<!For the administrator: set )SLACK_BOT_TOKEN", text)


def test_slack_without_a_token_names_its_setting_only_for_the_administrator(
    web, settings
):
    settings.SLACK_BOT_TOKEN = ""

    picker = web.get("/channels/new/").content.decode()
    form = web.get("/channels/new/?kind=slack").content.decode()
    saved = web.post(
        "/channels/new/",
        {"kind": "slack", "name": "Ops", "setting_channelId": "C0123456789",
         "events": ["monitor.change"]},
    )  # fmt: skip

    assert saved.status_code == 400 and not Channel.objects.exists()
    for page in (picker, form, saved.content.decode()):
        text = html.unescape(page)
        assert "For the administrator: set SLACK_BOT_TOKEN" in text
        assert unframed_settings(page) == []
    assert "Slack (app) is not set up on this server yet" in html.unescape(form)


def test_a_message_slack_could_not_send_names_its_setting_only_for_the_administrator(
    web, team, settings
):
    from tests.test_history import make_monitor

    settings.SLACK_BOT_TOKEN = ""
    channel = Channel.objects.create(
        team=team, name="Ops", kind="slack", settings={"channelId": "C0123456789"}
    )
    monitor = make_monitor(team, "Library hours")
    monitor.channels.add(channel)
    web.post(f"/channels/{channel.pk}/test/")
    Delivery.objects.create(
        kind="slack",
        channel=channel,
        monitor=monitor,
        event="monitor.change",
        body="{}",
        status=Delivery.Status.FAILED,
        last_error="Not sent: SLACK_BOT_TOKEN is not set.",
    )

    tested = Delivery.objects.get(channel=channel, event="channel.test")
    channels = web.get("/channels/").content.decode()
    deliveries = web.get(f"/monitors/{monitor.pk}/deliveries/").content.decode()

    # Stored (and given to the API) as it was: integrators read setting names.
    assert tested.status == Delivery.Status.FAILED
    assert tested.last_error == "Not sent: SLACK_BOT_TOKEN is not set."
    for page in (channels, deliveries):
        text = html.unescape(page)
        assert "For the administrator: set SLACK_BOT_TOKEN" in text
        assert "was not set up on this server" in text
        assert "We gave up" not in text
        assert unframed_settings(page) == []


def test_a_failed_test_message_says_why_in_plain_words(web, team, site, hook):
    channel = Channel.objects.create(
        team=team, name="Hook", kind="webhook", settings={"url": site.url("/hook")}
    )
    response = web.post(f"/channels/{channel.pk}/test/", follow=True)
    page = response.content.decode()
    assert "was not delivered" in page
    assert "The receiving server answered with error 500." in page
    assert Delivery.objects.get(channel=channel).status == Delivery.Status.PENDING


def test_another_teams_channel_is_a_404(web, other_team):
    theirs = Channel.objects.create(
        team=other_team, name="Theirs", kind="webhook", settings={"url": "https://e/h"}
    )
    assert web.get(f"/channels/{theirs.pk}/").status_code == 404
    assert web.post(f"/channels/{theirs.pk}/test/").status_code == 404
    assert web.post(f"/channels/{theirs.pk}/delete/").status_code == 404
    assert Channel.objects.filter(pk=theirs.pk).exists()
    assert "Theirs" not in web.get("/channels/").content.decode()


def test_the_monitor_form_picks_channels_by_name(web, team, other_team):
    from monitors.models import Monitor
    from tests.test_dashboard_views import scrape_form

    ops, sales = (
        Channel.objects.create(
            team=team, name=n, kind="webhook", settings={"url": "https://e/h"}
        )
        for n in ("Ops room", "Sales room")
    )
    Channel.objects.create(
        team=other_team,
        name="Not ours",
        kind="webhook",
        settings={"url": "https://e/h"},
    )
    form = web.get("/monitors/new/").content.decode()
    assert "Ops room" in form and "Sales room" in form
    assert "Not ours" not in form

    response = web.post("/monitors/new/", scrape_form(channels=[str(sales.pk)]))
    assert response.status_code == 302
    monitor = Monitor.objects.get(team=team)
    assert list(monitor.channels.all()) == [sales]

    edit = web.get(f"/monitors/{monitor.pk}/edit/").content.decode()
    assert f'value="{sales.pk}" ' in edit or f'value="{sales.pk}"' in edit
    web.post(
        f"/monitors/{monitor.pk}/edit/",
        scrape_form(channels=[str(ops.pk), str(sales.pk)]),
    )
    assert set(monitor.channels.all()) == {ops, sales}


def test_a_webhook_channel_to_the_metadata_address_is_refused_in_the_form(web):
    response = web.post(
        "/channels/new/",
        {
            "kind": "webhook",
            "name": "Inside",
            "setting_url": "http://169.254.169.254/latest/meta-data",
            "events": ["meaningful"],
        },
    )
    assert response.status_code == 400
    assert "can never connect" in response.content.decode()
    assert not Channel.objects.exists()


def test_a_new_apprise_url_from_the_form_is_logged_as_replaced_without_it(web, team):
    channel = Channel.objects.create(
        team=team,
        name="Telegram",
        kind="apprise",
        settings={"url": "tgram://123456789:AAHoldsecrettoken/42"},
    )
    form = {"kind": "apprise", "name": "Telegram", "events": ["meaningful"]}
    web.post(f"/channels/{channel.pk}/", form)  # the URL left empty: kept
    new = "tgram://123456789:AAHnewsecrettoken/42"
    web.post(f"/channels/{channel.pk}/", form | {"setting_url": new})

    kept, replaced = Activity.objects.filter(
        team=team, kind=Activity.Kind.CHANNEL_EDITED
    ).order_by("pk")
    assert kept.details == {"name": "Telegram"}
    assert replaced.details == {"name": "Telegram", "replaced": ["url"]}
    channel.refresh_from_db()
    assert channel.settings == {"url": new}
    page = web.get("/activity/").content.decode()
    assert "replaced its secret address" in page and "newsecret" not in page


def post_webhook_form(web, **fields: str):
    """The new-channel form for a webhook named "Ops" without its address."""
    form = {"kind": "webhook", "name": "Ops", "setting_url": "",
            "events": ["meaningful"], "failing_after": "3", "digest": ""}  # fmt: skip
    return web.post("/channels/new/", form | fields)


def test_a_channel_form_with_mistakes_says_them_in_plain_words_at_each_field(web, team):
    response = post_webhook_form(web, name="", failing_after="0")

    page = html.unescape(response.content.decode())
    assert response.status_code == 400
    assert Channel.objects.filter(team=team).count() == 0
    assert "Give the channel a name." in page
    assert "Enter a number of failed checks from 1 to 100." in page
    assert 'aria-describedby="error-name"' in page
    assert 'aria-describedby="error-failing-after"' in page
    for api_words in ("name:", "failingAfter", "This field", "Ensure this"):
        assert api_words not in page


def test_a_channel_without_its_address_asks_for_it_by_its_label(web, team):
    response = post_webhook_form(web)

    page = html.unescape(response.content.decode())
    assert response.status_code == 400
    assert "Enter the URL." in page
    assert "Required." not in page
    assert 'value="Ops"' in page


def test_a_channel_form_missing_its_name_and_address_says_both_on_the_first_submit(
    web, team
):
    response = post_webhook_form(web, name="")

    page = html.unescape(response.content.decode())
    assert response.status_code == 400
    assert not Channel.objects.filter(team=team).exists()
    assert "Give the channel a name." in page
    assert "Enter the URL." in page


def test_a_failed_test_message_says_when_it_will_be_tried_again(web, team, site, hook):
    channel = Channel.objects.create(
        team=team, name="Hook", kind="webhook", settings={"url": site.url("/hook")}
    )
    response = web.post(f"/channels/{channel.pk}/test/", follow=True)

    page = html.unescape(response.content.decode())
    delivery = Delivery.objects.get(channel=channel)
    assert delivery.status == Delivery.Status.PENDING and delivery.next_attempt_at
    said = "It failed: The receiving server answered with error 500. We will try again"
    assert page.count(said) == 2  # the message at the top and the channel's row
    assert "We will try again in about " in page and ">Will retry<" in page


def test_a_failed_apprise_test_message_says_why_without_apprise_log_stamps(
    web, team, site, hook
):
    host = site.url("/hook").split("//", 1)[1]
    channel = Channel.objects.create(
        team=team, name="Chat", kind="apprise", settings={"url": f"json://{host}"}
    )
    response = web.post(f"/channels/{channel.pk}/test/", follow=True)

    page = html.unescape(response.content.decode())
    delivery = Delivery.objects.get(channel=channel)
    assert delivery.status == Delivery.Status.PENDING
    assert delivery.last_error.startswith("Apprise could not send: Failed to send")
    assert "error=500" in delivery.last_error
    # Apprise's log lines start with a time stamp and a level: not for people.
    assert "WARNING" not in page and not re.search(r"\d\d:\d\d:\d\d,\d{3}", page)


def test_a_message_out_of_retries_says_we_gave_up(web, team):
    channel = Channel.objects.create(
        team=team, name="Hook", kind="webhook", settings={"url": "https://e.com/h"}
    )
    Delivery.objects.create(
        kind="webhook",
        channel=channel,
        event="channel.test",
        body="{}",
        status=Delivery.Status.FAILED,
        last_error="Answered 500.",
    )

    page = html.unescape(web.get("/channels/").content.decode())
    assert "We gave up: The receiving server answered with error 500." in page


def test_the_channel_forms_describe_kinds_without_developer_words(web):
    pages = [web.get("/channels/new/"), web.get("/channels/new/?kind=webhook")]
    for response in pages:
        shown = re.sub(r"<[^>]*>", " ", response.content.decode())
        for jargon in ("POST", "JSON", "Standard Webhooks", "headers"):
            assert jargon not in shown


def _channels_fact(page: str) -> str:
    """The text of the monitor page's "Channels" line, tags and spacing gone."""
    found = re.search(r"<dt>Channels</dt>\s*<dd>(.*?)</dd>", page, re.S)
    assert found, "the monitor page has no Channels line"
    return " ".join(re.sub(r"<[^>]+>", " ", html.unescape(found[1])).split())


def test_a_monitors_page_names_the_channels_it_sends_to(web, team):
    from monitors.models import Monitor
    from tests.test_dashboard_views import scrape_form

    ops = Channel.objects.create(
        team=team,
        name="Ops room",
        kind="webhook",
        settings={"url": "https://e/h"},
        events=["meaningful", "failing"],
    )
    Channel.objects.create(
        team=team, name="Sales room", kind="webhook", settings={"url": "https://e/h"}
    )
    web.post("/monitors/new/", scrape_form(name="Told", channels=[str(ops.pk)]))
    web.post("/monitors/new/", scrape_form(name="Untold"))
    told, untold = (Monitor.objects.get(team=team, name=n) for n in ("Told", "Untold"))

    told_line = _channels_fact(web.get(told.get_absolute_url()).content.decode())
    untold_line = _channels_fact(web.get(untold.get_absolute_url()).content.decode())

    # With e-mail and webhook "Off", staff must still see who hears about it.
    assert "Ops room" in told_line and "meaningful changes" in told_line
    assert "Sales room" not in told_line
    assert untold_line == "None"


def test_the_channel_form_says_what_counts_as_a_meaningful_change(web, settings):
    settings.LLM_BASE_URL = "http://127.0.0.1:9/v1"
    page = html.unescape(web.get("/channels/new/?kind=webhook").content.decode())
    assert (
        "Meaningful changes are all changes except those the AI judge called "
        "unimportant for the monitor's goal."
    ) in page
    assert "No AI model is set up here" not in page

    settings.LLM_BASE_URL = ""
    page = html.unescape(web.get("/channels/new/?kind=webhook").content.decode())
    assert ("No AI model is set up here, so every change counts as meaningful.") in page


def test_the_digest_time_says_it_is_for_digests_and_stays_without_javascript(web):
    page = html.unescape(web.get("/channels/new/?kind=webhook").content.decode())
    opening = r'<div class="field"[^>]*>\s*<label for="channel-digest-at"'
    field = re.search(opening, page)

    # Served visible, so the form works without JavaScript; app.js hides it
    # while "at once" is chosen.
    assert field is not None
    assert " hidden" not in field.group(0)
    assert 'data-shown-when="channel-digest"' in field.group(0)
    assert 'data-shown-values="daily weekly"' in field.group(0)
    assert (
        "Only for a daily or weekly digest. Weekly digests go out on Mondays." in page
    )


def _channel_facts(page: str, name: str) -> str:
    section = page.split(f">{name}</h2>", 1)[1]
    facts = section.split('<p class="muted">', 1)[1].split("</p>")[0]
    return re.sub(r"\s+", " ", facts)


def test_the_channels_page_names_the_monitors_each_channel_serves(web, team):
    from django.utils import timezone

    from tests.test_history import make_monitor

    ops = Channel.objects.create(team=team, name="Ops room", kind="webhook")
    busy = Channel.objects.create(team=team, name="Busy room", kind="webhook")
    Channel.objects.create(team=team, name="Idle room", kind="webhook")
    make_monitor(team, "Library hours").channels.add(ops)
    make_monitor(team, "Broken pages").channels.add(ops)
    gone = make_monitor(team, "Gone")
    gone.channels.add(ops)
    gone.soft_delete(timezone.now())
    for name in ("Alpha", "Bravo", "Charlie", "Delta", "Echo"):
        make_monitor(team, name).channels.add(busy)

    page = html.unescape(web.get("/channels/").content.decode())

    assert _channel_facts(page, "Ops room").endswith(
        "2 monitors: Broken pages and Library hours"
    )
    assert _channel_facts(page, "Busy room").endswith(
        "5 monitors: Alpha, Bravo, Charlie and 2 more"
    )
    assert _channel_facts(page, "Idle room").endswith("no monitors yet")


def test_the_channels_page_takes_as_many_queries_for_many_channels_as_for_one(
    web, team
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from tests.test_history import make_monitor

    def add_channel(name: str) -> None:
        channel = Channel.objects.create(team=team, name=name, kind="webhook")
        make_monitor(team, f"{name} monitor").channels.add(channel)
        for _ in range(2):
            Delivery.objects.create(
                kind="webhook", channel=channel, event="channel.test", body="{}"
            )

    add_channel("First")
    web.get("/channels/")  # sessions and caches warm
    with CaptureQueriesContext(connection) as one:
        web.get("/channels/")
    for name in ("Second", "Third", "Fourth"):
        add_channel(name)
    with CaptureQueriesContext(connection) as four:
        page = html.unescape(web.get("/channels/").content.decode())

    assert "Fourth monitor" in page
    assert len(four) == len(one)


def test_deleting_a_channel_asks_first_and_names_the_monitors_that_lose_it(web, team):
    from tests.test_history import make_monitor

    ops = Channel.objects.create(team=team, name="Ops room", kind="webhook")
    make_monitor(team, "Library hours").channels.add(ops)
    edit = html.unescape(web.get(f"/channels/{ops.pk}/").content.decode())

    asked = html.unescape(web.get(f"/channels/{ops.pk}/delete/").content.decode())

    assert f'href="/channels/{ops.pk}/delete/"' in edit  # a link, not a POST
    assert f'action="/channels/{ops.pk}/delete/"' not in edit
    assert "Delete “Ops room”?" in asked
    assert "1 monitor sends to it: Library hours." in asked
    assert Channel.objects.filter(pk=ops.pk).exists()

    response = web.post(f"/channels/{ops.pk}/delete/")

    assert response.status_code == 302
    assert not Channel.objects.filter(pk=ops.pk).exists()


def test_the_channel_form_can_be_left_without_saving(web, team):
    ops = Channel.objects.create(team=team, name="Ops room", kind="webhook")

    for url in ("/channels/new/?kind=webhook", f"/channels/{ops.pk}/"):
        page = web.get(url).content.decode()
        assert '<a href="/channels/">Cancel</a>' in page, url


def test_a_number_of_failed_checks_int_cannot_read_is_said_plainly(web, team):
    # "²" passes str.isdigit() and int() refuses it: it was a 500.
    response = post_webhook_form(web, failing_after="²")

    assert response.status_code == 400
    assert Channel.objects.filter(team=team).count() == 0
    assert "Enter a number of failed checks from 1 to 100." in html.unescape(
        response.content.decode()
    )


def test_deleting_a_channel_takes_its_deliveries_without_reading_them(
    web, team, loaded
):
    monitor = with_history(team)
    shared = Channel.objects.get(team=team, owner_monitor=None)

    loaded.clear()
    response = web.post(f"/channels/{shared.pk}/delete/")

    assert response.status_code == 302
    assert history_read(loaded) == {}
    assert not Channel.objects.filter(pk=shared.pk).exists()
    assert not Delivery.objects.filter(channel=shared.pk).exists()
    assert Delivery.objects.filter(monitor=monitor).count() == CHECKS + 1
    entry = Activity.objects.filter(kind=Activity.Kind.CHANNEL_DELETED).get()
    assert entry.details == {"name": "Ops"}


def test_the_apprise_address_field_says_what_it_is_with_examples(web):
    page = html.unescape(web.get("/channels/new/?kind=apprise").content.decode())

    label = re.search(r'<label for="setting-url"[^>]*>(.*?)</label>', page, re.S)
    assert label and label[1].strip() == "Service address (Apprise URL)"
    for service in ("Microsoft Teams", "Discord", "Telegram"):
        assert service in page.split('id="help-url"', 1)[1].split("</p>", 1)[0]


def test_editing_a_slack_channel_missing_from_the_picker_keeps_its_channel(
    web, team, site, settings
):
    from tests.test_channels import FakeSlack

    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True
    fake = FakeSlack(site)  # lists #pricing (C111) and #alerts (C222)
    settings.SLACK_BOT_TOKEN = FakeSlack.TOKEN
    settings.SLACK_API_URL = fake.url
    # Archived since, or past the first page of a big workspace's channels.
    channel = Channel.objects.create(
        team=team,
        name="Ops",
        kind="slack",
        settings={"channelId": "C999", "channelName": "ops"},
        events=["meaningful"],
    )

    form = web.get(f"/channels/{channel.pk}/").content.decode()

    # A browser sends the selected option, or the first one when none is:
    # saving any other change moved the channel to #pricing unasked.
    select = re.search(r'<select id="setting-channelId".*?</select>', form, re.S)
    assert select is not None
    selected = re.findall(r'<option value="(\w+)" selected>', select[0])
    assert selected == ["C999"]
    assert "#ops" in select[0]


def test_a_slack_channel_picked_from_the_list_says_where_it_posts(
    web, team, site, settings
):
    from tests.test_channels import FakeSlack

    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True
    fake = FakeSlack(site)  # lists #pricing (C111) and #alerts (C222)
    settings.SLACK_BOT_TOKEN = FakeSlack.TOKEN
    settings.SLACK_API_URL = fake.url

    form = web.get("/channels/new/?kind=slack").content.decode()
    web.post(
        "/channels/new/",
        {"kind": "slack", "name": "Ops", "setting_channelId": "C222",
         "events": ["meaningful"], "digest": "", "failing_after": "3"},
    )  # fmt: skip

    # The picker names the channel: no second field to type its name into,
    # and no id to look up.
    assert 'name="setting_channelName"' not in form
    assert "channel's id" not in form
    assert "invite the Slack app" in form
    channel = Channel.objects.get(team=team)
    assert channel.settings == {"channelId": "C222", "channelName": "alerts"}
    page = html.unescape(web.get("/channels/").content.decode())
    # Several Slack channels of one team read apart by where they post.
    assert "Slack (app): #alerts" in page


def test_an_apprise_url_at_a_private_address_is_refused_in_the_form(web, settings):
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = False
    response = web.post(
        "/channels/new/",
        {
            "kind": "apprise",
            "name": "Inside",
            "setting_url": "json://10.0.0.5/hook",
            "events": ["meaningful"],
        },
    )

    assert response.status_code == 400
    page = html.unescape(response.content.decode())
    assert (
        "Pagewatch can never connect to 10.0.0.5: 10.0.0.5 is a private address."
        in page
    )
    assert not Channel.objects.exists()


@pytest.fixture
def slack_api(site, settings):
    from tests.test_channels import FakeSlack

    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True
    fake = FakeSlack(site)  # lists #pricing (C111) and #alerts (C222)
    settings.SLACK_BOT_TOKEN = FakeSlack.TOKEN
    settings.SLACK_API_URL = fake.url
    return fake


def listings(site: Site) -> int:
    return len(site.requests_to("/api/conversations.list"))


def test_the_slack_picker_asks_slack_once_for_two_views_of_the_form(
    web, site, slack_api
):
    first = web.get("/channels/new/?kind=slack").content.decode()
    second = web.get("/channels/new/?kind=slack").content.decode()

    # Slack rate-limits conversations.list hard, and the form is drawn at
    # every visit and every refused save: its list is remembered a while.
    assert listings(site) == 1
    for form in (first, second):
        assert '<option value="C222">#alerts</option>' in form


def test_refreshing_the_slack_picker_asks_slack_again_and_shows_a_new_channel(
    web, site, slack_api
):
    form = web.get("/channels/new/?kind=slack").content.decode()
    slack_api.next_answers.append(
        (200, {}, {"ok": True, "channels": [{"id": "C333", "name": "launches"}]})
    )

    refreshed = web.get("/channels/new/?kind=slack&refresh=1").content.decode()
    again = web.get("/channels/new/?kind=slack").content.decode()

    assert 'href="/channels/new/?kind=slack&amp;refresh=1"' in form
    assert "Refresh the list" in form
    assert listings(site) == 2
    assert "#launches" in refreshed and "#launches" in again


def test_a_slack_list_slack_refused_is_not_remembered(web, site, slack_api):
    slack_api.next_answers.append(
        (429, {"Retry-After": "30"}, {"ok": False, "error": "ratelimited"})
    )

    refused = web.get("/channels/new/?kind=slack").content.decode()
    listed = web.get("/channels/new/?kind=slack").content.decode()

    # Without a list the channel's id is typed in; the next view asks again.
    assert '<select id="setting-channelId"' not in refused
    assert '<select id="setting-channelId"' in listed
    assert listings(site) == 2


def test_a_slack_list_cut_short_by_a_rate_limit_keeps_its_first_page(
    web, site, slack_api
):
    slack_api.next_answers += [
        (200, {}, {"ok": True, "channels": [{"id": "C111", "name": "pricing"}],
                   "response_metadata": {"next_cursor": "page-2"}}),
        (429, {"Retry-After": "30"}, {"ok": False, "error": "ratelimited"}),
    ]  # fmt: skip

    first = web.get("/channels/new/?kind=slack").content.decode()
    second = web.get("/channels/new/?kind=slack").content.decode()

    for form in (first, second):
        assert '<option value="C111">#pricing</option>' in form
    assert listings(site) == 2


def test_the_slack_picker_asks_again_when_the_bot_token_changes(
    web, site, slack_api, settings
):
    web.get("/channels/new/?kind=slack")
    settings.SLACK_BOT_TOKEN = "xoxb-another-workspace"

    form = web.get("/channels/new/?kind=slack").content.decode()

    # Another token is another workspace (here refused: no list to offer).
    assert listings(site) == 2
    assert "#alerts" not in form


def test_a_slack_webhook_form_with_another_tools_address_points_to_apprise(web):
    response = web.post(
        "/channels/new/",
        {"kind": "slack_webhook", "name": "Chat", "events": ["meaningful"],
         "setting_url": "https://chat.acme.example/hooks/abc123"},
    )  # fmt: skip

    assert response.status_code == 400
    page = html.unescape(response.content.decode())
    assert "This is not a Slack incoming-webhook address" in page
    assert "make a “Chat and push (Apprise)” channel" in page
    assert not Channel.objects.exists()


# Another tool's hook, which a Slack incoming-webhook channel could be given
# before only Slack's own hosts were taken.
EARLIER_HOOK = "https://chat.acme.example/hooks/abc123"


def saved_before_the_slack_hosts_rule(team) -> Channel:
    return Channel.objects.create(
        team=team, name="Chat", kind="slack_webhook",
        settings={"url": EARLIER_HOOK}, events=["meaningful"],
    )  # fmt: skip


def test_a_slack_webhook_saved_before_the_hosts_rule_is_renamed_keeping_its_address(
    web, team
):
    channel = saved_before_the_slack_hosts_rule(team)
    url = f"/channels/{channel.pk}/"
    form = html.unescape(web.get(url).content.decode())
    assert EARLIER_HOOK not in form  # a secret: shown masked, sent back empty

    response = web.post(
        url,
        {"name": "Team chat", "events": ["meaningful"], "setting_url": "",
         "failing_after": "3"},
    )  # fmt: skip

    assert response.status_code == 302
    channel.refresh_from_db()
    assert (channel.name, channel.settings) == ("Team chat", {"url": EARLIER_HOOK})
    entry = Activity.objects.get(kind=Activity.Kind.CHANNEL_EDITED)
    assert entry.what_words == "Changed the channel “Team chat”"


def test_a_new_address_for_a_slack_webhook_saved_before_the_rule_must_be_slacks(
    web, team
):
    channel = saved_before_the_slack_hosts_rule(team)

    response = web.post(
        f"/channels/{channel.pk}/",
        {"name": "Chat", "events": ["meaningful"], "failing_after": "3",
         "setting_url": "https://chat.acme.example/hooks/other456"},
    )  # fmt: skip

    assert response.status_code == 400
    page = html.unescape(response.content.decode())
    assert "This is not a Slack incoming-webhook address" in page
    channel.refresh_from_db()
    assert channel.settings == {"url": EARLIER_HOOK}
    assert not Activity.objects.filter(kind=Activity.Kind.CHANNEL_EDITED).exists()
