"""The Channels page and picking channels in the monitor form, in a real
Chromium: a person adds a channel, sends a test message that the receiver
refuses and reads why in plain words, then picks the channel for a monitor."""

from __future__ import annotations

import pytest

from checks.notify import consent
from monitors.models import Channel, Membership
from tests.browser.people import sign_in
from tests.browser.test_dashboard_browser import assert_clean, make_monitor
from tests.sites import Site

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_adding_testing_and_picking_a_channel(
    browser_page, member, team, settings, screenshot
):
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True
    page = browser_page
    monitor = make_monitor(team, ["https://example.com/a"])
    with Site() as site:
        site.handle("/hook", lambda r: (503, {"Content-Type": "text/plain"}, b"busy"))
        sign_in(page)
        page.get_by_role("link", name="Channels").click()
        page.get_by_text("No channels yet").wait_for()
        page.get_by_role("link", name="Add a channel").click()
        page.get_by_role("link", name="Webhook", exact=True).click()
        page.get_by_label("Name").fill("Ops room")
        page.get_by_label("URL").fill(site.url("/hook"))
        page.get_by_role("button", name="Save channel").click()
        page.get_by_text("Channel “Ops room” saved.").wait_for()

        page.get_by_role("button", name="Send a test message to Ops room").click()
        page.get_by_text(
            "was not delivered. It failed: The receiving server answered with "
            "error 503. We will try again in about"
        ).wait_for()
        row = page.get_by_role("row").filter(has_text="Test message")
        assert "It failed: The receiving server answered with error 503." in (
            row.inner_text()
        )
        assert "We will try again" in row.inner_text()
        screenshot(page, "29-channels-page")
        assert_clean(page)

    channel = Channel.objects.get(team=team)
    page.goto(f"/monitors/{monitor.pk}/edit/")
    page.get_by_label("Ops room").check()
    screenshot(page, "29-monitor-form-channels", full_page=False)
    page.get_by_role("button", name="Save").first.click()
    page.wait_for_url(f"**/monitors/{monitor.pk}/")
    assert list(monitor.channels.all()) == [channel]
    assert_clean(page)


def test_the_digest_time_shows_only_while_a_digest_is_chosen(browser_page, member):
    page = browser_page
    sign_in(page)
    page.goto("/channels/new/?kind=webhook")
    send = page.get_by_label("Send")
    digest_time = page.locator("#channel-digest-at")

    assert send.input_value() == ""  # at once
    assert not digest_time.is_visible()

    send.select_option("daily")
    assert digest_time.is_visible()
    send.select_option("weekly")
    assert digest_time.is_visible()
    send.select_option("")
    assert not digest_time.is_visible()
    assert_clean(page)


def test_e_mailing_chosen_members_and_seeing_whom_it_goes_to(
    browser_page, member, team, django_user_model, mailoutbox, screenshot
):
    member.first_name, member.last_name = "Olive", "Oyl"
    member.save()
    noah = django_user_model.objects.create_user(
        "noah", "noah@example.com", first_name="Noah", last_name="Berg"
    )
    Membership.objects.create(team=team, user=noah, role=Membership.Role.VIEWER)
    monitor = make_monitor(team, ["https://example.com/a"])
    page = browser_page
    sign_in(page)

    page.goto("/channels/new/")
    page.get_by_role("link", name="E-mail to team members").click()
    page.get_by_label("Name").fill("Pricing people")
    page.get_by_label("Noah Berg (noah@example.com)").check()
    screenshot(page, "29-team-email-form", full_page=False)
    page.get_by_role("button", name="Save channel").click()
    page.get_by_text("Channel “Pricing people” saved.").wait_for()
    page.get_by_text("E-mail to team members: Noah Berg").wait_for()

    noah.email = "noah.berg@example.com"
    noah.save()
    page.get_by_role("button", name="Send a test message to Pricing people").click()
    page.get_by_text("Test message sent to “Pricing people”.").wait_for()
    assert [mail.to for mail in mailoutbox] == [["noah.berg@example.com"]]
    screenshot(page, "29-team-email-channels-page")
    assert_clean(page)

    monitor.channels.add(Channel.objects.get(team=team))
    page.goto(f"/monitors/{monitor.pk}/")
    page.get_by_text("E-mail to team members: Noah Berg").wait_for()
    assert_clean(page)


def test_the_last_person_leaving_a_channel_from_its_e_mail_shows_on_its_page(
    browser_page, member, team, django_user_model, settings
):
    noah = django_user_model.objects.create_user(
        "noah", "noah@example.com", first_name="Noah", last_name="Berg"
    )
    Membership.objects.create(team=team, user=noah, role=Membership.Role.VIEWER)
    channel = Channel.objects.create(
        team=team,
        name="Pricing people",
        kind="team_email",
        settings={"recipients": [noah.pk]},
        events=list(Channel.DEFAULT_EVENTS),
    )
    link = consent.channel_unsubscribe_url(channel.pk, [noah.pk])
    page = browser_page

    # Noah follows "Stop these e-mails to you" from his e-mail, signed in nowhere.
    page.goto(link.removeprefix(settings.PUBLIC_BASE_URL))
    page.get_by_role("button", name="Unsubscribe").click()
    page.get_by_text("You will get no more e-mails").wait_for()

    sign_in(page)
    page.goto("/channels/")
    notice = page.locator(f"#channel-{channel.pk}-nobody")
    assert "Nobody gets this channel's e-mails now" in notice.inner_text()
    assert "The last to go was noah@example.com" in notice.inner_text()
    notice.get_by_role("link", name="Choose who gets them").click()
    page.wait_for_url(f"**/channels/{channel.pk}/")

    page.goto("/activity/")
    row = page.get_by_role("row").filter(has_text="Pricing people")
    assert "noah@example.com" in row.inner_text()
    assert "Stopped the e-mails of channel “Pricing people”: nobody gets them now" in (
        row.inner_text()
    )
    assert "An e-mail link" in row.inner_text()
    assert_clean(page)
