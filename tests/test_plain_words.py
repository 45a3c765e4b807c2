"""Words that do not contradict themselves: what the monitor page says of AI
judging, one message for a schedule that cannot be used, a plain answer for
something that is not an address, and the time zone a city name meant."""

from __future__ import annotations

import html
import re

import pytest
from django.urls import reverse

from monitors.schedule import ScheduleError, normalize_timezone, timezone_hint
from monitors.url_rule import url_syntax_error
from tests.test_history import make_monitor

pytestmark = pytest.mark.django_db


@pytest.fixture
def web(client, team, django_user_model):
    from monitors.models import Membership

    user = django_user_model.objects.create_user("olive", "o@example.com", "pw")
    Membership.objects.create(team=team, user=user, role=Membership.Role.OWNER)
    client.force_login(user)
    return client


def test_judging_asked_for_without_a_model_does_not_read_on(web, team, settings):
    settings.LLM_BASE_URL = ""
    monitor = make_monitor(
        team, goal="Tell me when the price changes", judge_enabled=True
    )

    page = html.unescape(web.get(monitor.get_absolute_url()).content.decode())

    assert "no AI model is set up on this server" in page
    assert "<dd>On</dd>" not in page


def test_a_schedule_that_cannot_be_used_is_explained_once(web):
    response = web.post(
        reverse("monitor-create"),
        {"name": "Prices", "schedule": "every banana", "timezone": "UTC",
         "url": "https://example.com/"},
    )  # fmt: skip
    page = html.unescape(response.content.decode())

    assert "We could not read this schedule" in page
    assert "Not a schedule we can use yet." not in page


def test_words_instead_of_an_address_are_named_as_such():
    assert url_syntax_error("not a url") == (
        "“not a url” is not a web address: it should look like https://example.com/page."
    )
    assert "spaces" in (url_syntax_error("https://example.com/a b") or "")


def test_a_city_alone_suggests_its_time_zone():
    with pytest.raises(ScheduleError) as caught:
        normalize_timezone("Berlin")

    assert caught.value.values["hint"] == "did you mean Europe/Berlin? Otherwise "
    assert timezone_hint("new york") == "did you mean America/New_York? Otherwise "
    assert timezone_hint("Atlantis") == ""


def test_an_offset_typed_as_gmt_plus_suggests_the_zone_an_hour_east_not_west():
    # The tz database's Etc/GMT+1 is UTC-1: POSIX writes the sign reversed.
    # Someone typing GMT+1 means an hour ahead of UTC (Berlin in winter).
    with pytest.raises(ScheduleError) as caught:
        normalize_timezone("GMT+1")

    assert "Etc/GMT+1" not in caught.value.values["hint"]
    assert caught.value.values["hint"].startswith("did you mean Etc/GMT-1 (")
    assert "UTC+1" in caught.value.values["hint"]
    assert timezone_hint("utc-5").startswith("did you mean Etc/GMT+5 (")
    assert timezone_hint("UTC+5:30") == ""  # no whole-hour zone for it
    assert timezone_hint("GMT+15") == ""


def test_the_form_suggests_the_zone_a_city_meant(web):
    response = web.post(
        reverse("monitor-create"),
        {"name": "Prices", "schedule": "every 30 minutes", "timezone": "Berlin",
         "url": "https://example.com/"},
    )  # fmt: skip
    page = html.unescape(response.content.decode())

    assert "“Berlin” is not a time zone we know: did you mean Europe/Berlin?" in page


def _readme_sections_named_on_the_dashboard() -> set[str]:
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    texts = [p.read_text() for p in (root / "templates").rglob("*.html")]
    texts.append((root / "monitors" / "search_provider.py").read_text())
    # A Python string may be split over lines: join its pieces first.
    joined = "".join(text.replace('"\n    "', "") for text in texts)
    return set(re.findall(r"README(?:, |'s )“([^”]+)”", joined))


def test_every_readme_section_the_dashboard_points_to_exists():
    from pathlib import Path

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    headings = re.findall(r"^#+ (.+)$", readme, flags=re.MULTILINE)
    named = _readme_sections_named_on_the_dashboard()

    assert "The AI layer" in named and "Watching the web" in named
    missing = {name for name in named if not any(h.startswith(name) for h in headings)}
    assert missing == set()


def test_a_search_target_without_a_provider_says_where_to_set_one_up(web, settings):
    settings.SEARXNG_URL = settings.BRAVE_API_KEY = settings.TAVILY_API_KEY = ""
    settings.FIRECRAWL_API_KEY = settings.SEARCH_PROVIDER = ""

    row = web.get(
        reverse("target-row"), {"add_target": "search"}, HTTP_HX_REQUEST="true"
    )
    body = html.unescape(row.content.decode())

    assert "no web search service is set up" in body
    assert "as the README's “Watching the web” says" in body
    # The settings are named apart, to the administrator, as on the monitor page.
    plain, admin = body.split("For the administrator:", 1)
    assert "SEARXNG_URL" not in plain
    assert "SEARXNG_URL" in admin


def test_a_monitor_without_a_webhook_reads_off_not_none(web, team):
    monitor = make_monitor(team)

    page = web.get(monitor.get_absolute_url()).content.decode()

    webhook_row = re.search(r"<dt>Webhook</dt>\s*<dd>(.*?)</dd>", page, re.S)[1]
    assert ">Off<" in webhook_row
    assert "None" not in webhook_row


def test_the_monitor_form_says_what_a_webhook_is_and_who_needs_one(web):
    page = html.unescape(web.get(reverse("monitor-create")).content.decode())
    help_text = re.search(r'id="help-webhook_url">(.*?)</', page, re.S)[1]

    assert help_text.startswith("A webhook sends a message to another program.")
    assert "Only if your developers give you an address" in help_text
    assert not help_text.startswith("We POST")


def test_the_webhook_choices_on_the_monitor_form_name_no_api_events(web):
    page = html.unescape(web.get(reverse("monitor-create")).content.decode())
    webhook = page.split('id="field-webhook_events"', 1)[1].split("</fieldset>", 1)[0]

    # The boxes still post the API's names; staff read only words.
    assert 'value="monitor.page"' in webhook
    assert 'value="monitor.check.completed"' in webhook
    labels = re.sub(r"<[^>]*>", " ", webhook)
    assert "monitor.page" not in labels
    assert "monitor.check.completed" not in labels
    assert "A message for each page checked" in labels
    assert "A message when a check ends" in labels
