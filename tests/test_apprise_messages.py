"""What Apprise services receive of a message whose words came from a page, a
monitor's name or the judge: Markdown services (Mattermost, Discord-style),
plain-text ones (JSON, ntfy) and HTML ones each show those words as they
were written, never as formatting or a link (local receivers on 127.0.0.1)."""

from __future__ import annotations

import datetime
import json
import re
from typing import Any
from urllib.parse import urlsplit

import apprise as apprise_lib
import pytest

from checks.notify.kinds import apprise, outbound
from tests.notifying import make_monitor
from tests.sites import Request, Site, self_signed
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
        assert apprise._title_for(plugin, "*Sale*") == r"\*Sale\*"


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


def test_a_digest_of_sixty_monitors_fits_discord_naming_the_rest_with_a_link(
    team, site, received, settings
):
    from checks.notify import channels, drain, messages

    url = f"fluxer://{host_of(site)}/417429632418316298/tokenabcdefghijklmnop"
    channel = make_channel(team, kind="apprise", settings={"url": url})
    now = datetime.datetime.now(datetime.UTC)
    monitors = [
        {
            "monitor": {
                "id": str(n),
                "name": f"{HOSTILE} {n}",
                "link": f"{settings.PUBLIC_BASE_URL}/monitors/{n}/",
            },
            "pages": [
                {
                    "url": f"https://example.com/{n}/{page}",
                    "status": "changed",
                    "reason": REASON,
                    "at": "2026-03-02T08:00:00.000Z",
                    "link": f"{settings.PUBLIC_BASE_URL}/monitors/{n}/pages/{page}/",
                }
                for page in range(4)
            ],
            "more": 0,
        }
        for n in range(60)
    ]
    message = messages.digest(now - datetime.timedelta(days=1), now, monitors)
    delivery = channels.create(channel, None, None, message)

    drain.deliver(delivery.pk)

    [request] = received
    [embed] = json.loads(request.body)["embeds"]
    # Discord refuses an embed over its limit: the digest would never arrive.
    assert len(embed["title"]) + len(embed["description"]) <= 2000
    assert embed["title"] == "Pagewatch digest: 240 meaningful changes"
    said = embed["description"].replace(apprise.NO_MENTION, "")
    shown = said.count("https://example.com/") + said.count(" more.")
    assert 0 < shown < 60
    every = settings.PUBLIC_BASE_URL + "/"
    assert re.search(r"…and \d+ more monitors with changes\.", said)
    assert f"All your monitors: [{every}](<{every}>)" in said


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


AT_LINK = "https://medium.com/@alice/post"
AT_PAGE_WORDS = f"Now: {AT_LINK} says @everyone [x](http://evil.example/)"


ROOM_LINK = "https://x.example/@room"


def test_a_link_with_an_at_sign_pings_no_one_on_a_plain_text_service(site, received):
    # Matrix, Signal, ntfy and the like get plain text, where "@room" in a
    # link's words pings the whole room as it would anywhere else.
    url = f"json://{host_of(site)}/json"

    apprise.send_url(url, "Pricing page", f"Now: {ROOM_LINK}", links=[ROOM_LINK])

    [request] = received
    message = json.loads(request.body)["message"]
    assert "@room" not in message
    assert f"Now: https://x.example/@{apprise.NO_MENTION}room" in message


def test_a_link_with_an_at_sign_is_a_link_that_pings_no_one_on_an_html_service(
    site, received
):
    url = f"json://{host_of(site)}/json?format=html"

    apprise.send_url(url, "Pricing page", AT_PAGE_WORDS, links=[AT_LINK])

    [request] = received
    message = json.loads(request.body)["message"]
    shown = AT_LINK.replace("@", "@" + apprise.NO_MENTION)
    assert f'<a href="https://medium.com/%40alice/post">{shown}</a>' in message
    assert "@alice" not in message
    assert f"@{apprise.NO_MENTION}everyone" in message


def test_a_link_with_an_at_sign_is_a_link_in_a_discord_like_channel_and_pings_no_one(
    site, received
):
    url = f"fluxer://{host_of(site)}/417429632418316298/tokenabcdefghijklmnop"

    apprise.send_url(url, "Pricing page", AT_PAGE_WORDS, links=[AT_LINK])

    [request] = received
    payload = json.loads(request.body)
    said = payload["embeds"][0]["description"]
    # A link to the page, its "@" written %40 in its address (servers read
    # both alike) and broken in its words: Discord-style plugins read
    # "@name" anywhere in a Markdown body as a ping to send.
    shown = AT_LINK.replace("@", "@" + apprise.NO_MENTION)
    assert f"[{shown}](<https://medium.com/%40alice/post>)" in said
    assert "allow_mentions" not in payload and "content" not in payload
    assert "](http://evil.example/)" not in said


@pytest.fixture
def workflows(tmp_path, settings, monkeypatch):
    """A Microsoft Teams Workflows URL (Apprise sends it over https only, as
    Markdown with a title of its own), its host resolved by the proxy to an
    HTTPS receiver on 127.0.0.1, and what that receiver gets."""
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True
    host = "prod-00.westus.logic.azure.com"
    monkeypatch.setattr(outbound, "system_resolver", lambda name, port: ["127.0.0.1"])
    with Site(tls=self_signed(tmp_path, host)) as receiver:
        receiver.handle(
            "/workflows/abc123/triggers/manual/paths/invoke",
            lambda request: (200, {}, b""),
        )
        yield f"workflow://{host}:{receiver.port}/abc123/sig456?verify=no", receiver


def test_a_markdown_service_with_a_title_of_its_own_gets_the_title_escaped(
    workflows,
):
    url, receiver = workflows

    apprise.send_url(url, "[x](https://evil.example/) *Sale*", "The price went up.")

    [request] = receiver.requests
    blocks = json.loads(request.body)["attachments"][0]["content"]["body"]
    [title] = [block["text"] for block in blocks if block.get("id") == "title"]
    # Teams shows a TextBlock's Markdown: the name shows as written, no link.
    assert title == r"\[x\]\(https://evil.example/\) \*Sale\*"


def test_page_words_cannot_hide_behind_a_discord_spoiler(site, received):
    url = f"fluxer://{host_of(site)}/417429632418316298/tokenabcdefghijklmnop"

    apprise.send_url(url, "Pricing page", "Now: ||free for all|| today")

    [request] = received
    said = json.loads(request.body)["embeds"][0]["description"]
    # Discord shows ||words|| hidden until clicked; Apprise leaves "|" as is.
    assert "||" not in said
    assert said.replace(apprise.NO_MENTION, "") == "Now: ||free for all|| today"


def test_a_markdown_service_that_shows_its_title_as_text_gets_it_unescaped():
    # Slack's attachment title is plain text: escapes would show.
    plugin = apprise._plugin("slack://T1JJ3T3L2/A1BRTD4JD/TIiajkdnlazkcOXrIdevi7FQ/")

    assert plugin.notify_format == apprise_lib.NotifyFormat.MARKDOWN
    assert apprise._title_for(plugin, "Prices (EU) *Sale*") == "Prices (EU) *Sale*"
