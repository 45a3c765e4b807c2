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


def test_a_monitor_of_fifty_pages_lists_every_address_on_its_page(
    client, viewer, team
):
    urls = [f"https://shop.example.com/product-{n}" for n in range(1, 51)]
    monitor = make_monitor(team, targets=[{"type": "scrape", "urls": urls}])
    client.force_login(viewer)  # who cannot open the form to read them there

    page = text_of(client.get(monitor.get_absolute_url()))

    assert "50 pages" in page
    for url in urls:
        assert f">shop.example.com/product-{url.rsplit('-', 1)[1]}<" in page
    assert "and 40 more" in page
