"""What a walk through the dashboard as its users found: pages that said too
little, or something not quite true, on its less-travelled paths."""

from __future__ import annotations

import html

import pytest

from monitors.models import Membership
from tests.test_dashboard_views import make_monitor

pytestmark = pytest.mark.django_db


@pytest.fixture
def viewer(team, django_user_model):
    user = django_user_model.objects.create_user("vera", "vera@example.com", "pw")
    Membership.objects.create(team=team, user=user, role=Membership.Role.VIEWER)
    return user


def text_of(response) -> str:
    return html.unescape(response.content.decode())


def test_a_monitor_of_fifty_pages_lists_every_address_on_its_page(client, viewer, team):
    urls = [f"https://shop.example.com/product-{n}" for n in range(1, 51)]
    monitor = make_monitor(team, targets=[{"type": "scrape", "urls": urls}])
    client.force_login(viewer)  # who cannot open the form to read them there

    page = text_of(client.get(monitor.get_absolute_url()))

    assert "50 pages" in page
    for url in urls:
        assert f">shop.example.com/product-{url.rsplit('-', 1)[1]}<" in page
    assert "and 40 more" in page


@pytest.fixture
def editor(team, django_user_model):
    user = django_user_model.objects.create_user("ed", "ed@example.com", "pw")
    Membership.objects.create(team=team, user=user, role=Membership.Role.EDITOR)
    return user


def test_the_delete_page_offers_a_pause_button_that_pauses_and_keeps_the_monitor(
    client, editor, team
):
    monitor = make_monitor(team)
    client.force_login(editor)
    page = text_of(client.get(f"/monitors/{monitor.pk}/delete/"))
    assert f'action="/monitors/{monitor.pk}/toggle/"' in page
    assert ">Pause it instead</button>" in page

    response = client.post(
        f"/monitors/{monitor.pk}/toggle/",
        {"status": "paused", "next": monitor.get_absolute_url()},
    )

    assert response["Location"] == monitor.get_absolute_url()
    monitor.refresh_from_db()
    assert monitor.status == monitor.Status.PAUSED and monitor.deleted_at is None


def test_the_delete_page_of_a_paused_monitor_does_not_suggest_pausing_it(
    client, editor, team
):
    monitor = make_monitor(team)
    monitor.status = monitor.Status.PAUSED
    monitor.save()
    client.force_login(editor)

    page = text_of(client.get(f"/monitors/{monitor.pk}/delete/"))

    assert "Pause it instead" not in page and "Pause</strong>" not in page
    assert "It is paused already" in page


def test_the_webhook_test_button_speaks_of_a_test_message_as_the_channels_page_does(
    client, editor, team
):
    hook = {"url": "https://hooks.example.com/x", "headers": {}, "metadata": {}}
    monitor = make_monitor(team, webhook=hook)
    client.force_login(editor)

    detail = text_of(client.get(monitor.get_absolute_url()))
    deliveries = text_of(client.get(f"/monitors/{monitor.pk}/deliveries/"))
    sent = text_of(client.post(f"/monitors/{monitor.pk}/deliveries/test/", follow=True))

    for page in (detail, deliveries):
        assert ">Send a test message</button>" in page
        assert "test event" not in page.lower() and "monitor.test" not in page
    assert "Test message queued; it appears below once sent." in sent


def test_a_viewer_is_not_promised_a_retry_they_cannot_press(client, viewer, team):
    monitor = make_monitor(team)
    client.force_login(viewer)

    page = text_of(client.get(monitor.get_absolute_url()))

    assert "Recent webhook and e-mail deliveries" in page
    assert "retry now" not in page.lower()


def test_the_first_steps_name_the_teams_chat_channels_among_who_hears(client, editor):
    client.force_login(editor)

    page = text_of(client.get("/"))

    assert "Nothing is being watched yet" in page
    assert "Choose who hears about changes: an e-mail, a channel such as Slack or" in (
        page
    )


def test_a_history_page_past_the_last_leads_back_to_the_newest_changes(client, editor):
    client.force_login(editor)

    page = text_of(client.get("/history/?page=9&show=matter"))

    assert "There are no older changes." in page
    assert '<a href="?show=matter">Back to the newest changes</a>' in page
