"""What Apprise services receive of a message whose words came from a page, a
monitor's name or the judge: Markdown services (Mattermost, Discord-style),
plain-text ones (JSON, ntfy) and HTML ones each show those words as they
were written, never as formatting or a link (local receivers on 127.0.0.1)."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

import apprise as apprise_lib
import pytest

from checks.notify.kinds import apprise
from tests.notifying import make_monitor
from tests.sites import Request, Site
from tests.test_channels import make_channel

pytest_plugins = ["tests.notifying"]

HOSTILE = "*Sale* _now_ [x](http://evil.example/) `tick` <b>bold</b> & more"
# The same words as CommonMark shows them literally.
ESCAPED = (
    r"\*Sale\* \_now\_ \[x\]\(http://evil.example/\) \`tick\` "
    r"\<b\>bold\</b\> & more"
)
REASON = "Price *dropped* to [free](http://evil.example/) <script>x</script>"


@pytest.fixture
def received(site: Site, settings: Any) -> list[Request]:
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True
    requests: list[Request] = []

    def take(request: Request) -> tuple[int, dict[str, str], bytes]:
        requests.append(request)
        return 200, {"Content-Type": "application/json"}, b'{"ok": true}'

    for path in ("/json", "/hooks/abc123"):
        site.handle(path, take)
    site.handle(
        "/webhooks/417429632418316298/tokenabcdefghijklmnop",
        lambda request: (requests.append(request), (204, {}, b""))[1],
    )
    return requests


def hostile_change(team, scenario, queued, url: str) -> None:
    monitor = make_monitor(team, name=HOSTILE)
    make_channel(team, monitor, kind="apprise", settings={"url": url})
    judgment = {
        "meaningful": True,
        "confidence": "high",
        "reason": REASON,
        "meaningfulChanges": [
            {"type": "changed", "before": "_old_", "after": "**new**", "reason": "x"}
        ],
    }
    scenario.run(
        monitor, [("https://example.com/a_b_c", "changed", {"judgment": judgment})]
    )
    queued.run()


def host_of(site: Site) -> str:
    return urlsplit(site.url()).netloc


def test_a_mattermost_channel_shows_a_monitor_name_and_reason_literally(
    team, site, received, scenario, queued
):
    hostile_change(team, scenario, queued, f"mmost://{host_of(site)}/abc123")

    [request] = received
    text = json.loads(request.body)["text"].replace(apprise.NO_MENTION, "")
    # Mattermost reads Markdown: escaped, the title shows as written and its
    # "[x](…)" is no link; so does the judge's reason.
    assert f"# {ESCAPED}" in text
    assert r"Price \*dropped\* to \[free\]\(http://evil.example/\)" in text
    assert r"\<script\>x\</script\>" in text
    assert "](http://evil.example/)" not in text
    assert "*Sale*" not in text.replace(r"\*", "")
    # The quotes too.
    assert r"\_old\_" in text and r"\*\*new\*\*" in text


@pytest.mark.parametrize(
    "url",
    [
        "https://discord.com/api/webhooks/417429632418316298/tokenabcdefghijklmnop",
        "https://mattermost.example.com/hooks/abc123",
    ],
)
def test_a_markdown_service_pasted_as_its_own_address_gets_words_escaped(url):
    # The address the service shows, which Apprise reads as its own URL: its
    # service reads Markdown as much as when written discord:// or mmost://.
    plugin = apprise._plugin(url)

    assert plugin.notify_format == apprise_lib.NotifyFormat.MARKDOWN
    if plugin.title_maxlen > 0:  # Discord's title, shown as Markdown too
        assert apprise._title_for(url, plugin, "*Sale*") == r"\*Sale\*"


def test_a_discord_like_channel_shows_page_words_literally_with_real_links(
    team, site, received, scenario, queued
):
    host = host_of(site)
    url = f"fluxer://{host}/417429632418316298/tokenabcdefghijklmnop"
    hostile_change(team, scenario, queued, url)

    [request] = received
    sent = json.dumps(json.loads(request.body), ensure_ascii=False)
    sent = sent.replace(apprise.NO_MENTION, "")
    assert ESCAPED.replace("\\", "\\\\") in sent
    assert "](http://evil.example/)" not in sent
    # Pagewatch's own links are still links, to the address they show.
    assert "[https://example.com/a\\\\_b\\\\_c](<https://example.com/a_b_c>)" in sent


def test_a_plain_text_service_gets_the_words_as_written(
    team, site, received, scenario, queued
):
    hostile_change(team, scenario, queued, f"json://{host_of(site)}/json")

    [request] = received
    payload = json.loads(request.body)
    assert payload["title"].startswith(HOSTILE)
    # No escapes, entities or tags a reader of plain text would see.
    message = payload["message"].replace(apprise.NO_MENTION, "")
    assert REASON in message
    assert "\\" not in message and "&amp;" not in message and "&lt;" not in message
    assert "https://example.com/a_b_c" in message


def test_an_html_service_gets_page_words_escaped_and_its_own_links_linked(
    team, site, received, scenario, queued
):
    hostile_change(team, scenario, queued, f"json://{host_of(site)}/json?format=html")

    [request] = received
    payload = json.loads(request.body)
    message = payload["message"]
    assert "<script>" not in message and "<b>" not in message
    assert "&lt;script&gt;x&lt;/script&gt;" in message
    page = "https://example.com/a_b_c"
    assert f'<a href="{page}">{page}</a>' in message
    # A service with a title of its own shows it as text.
    assert payload["title"].startswith(HOSTILE)
