"""The dashboard as people who use a keyboard, a screen reader or a phone meet
it, in a real Chromium: axe-core finds nothing on any page, a check started
from the keyboard keeps the keyboard's place and is announced once per stage,
focus rings are whole, field borders and chart bars stand out, and every form
error points at its field.

axe-core is pinned in tests/js/package.json and installed with the JS SDK
(`npm ci --prefix tests/js`, which `make test` runs). Without it the axe test
skips with the reason, except under CI=true, where it fails."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from datetime import timedelta
from importlib import import_module
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from django.contrib.auth.tokens import default_token_generator
from django.urls import Resolver404, URLResolver, resolve
from django.utils import timezone
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode
from playwright.sync_api import expect

from checks import ignore_suggestions
from checks.content import compare_texts
from checks.ignore_suggestions import Suggestion
from checks.models import (
    AIUse,
    Check,
    Delivery,
    DeliveryAttempt,
    PageResult,
    SearchResultState,
    Snapshot,
)
from checks.notify import consent
from monitors.models import (
    ApiKey,
    Channel,
    EmailRecipient,
    ImportRun,
    Membership,
    Monitor,
    Tag,
    Target,
    Team,
)
from teams.models import Invitation
from tests.browser.people import PASSWORD, sign_in
from tests.browser.test_dashboard_browser import make_monitor
from tests.browser.test_tags_browser import make_monitor as make_tagged

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

AXE = Path(__file__).resolve().parents[1] / "js" / "node_modules" / "axe-core"
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 900}


@pytest.fixture
def dashboard(team, member) -> dict:
    """A team's dashboard as it looks after a while: pages, a crawl and a web
    search watched; a check with a changed, a new, a removed and a failed page
    (the change judged against the goal); webhook deliveries, one that failed;
    a paused monitor; an API key."""
    now = timezone.now()
    pricing = make_monitor(
        team,
        [],
        name="Competitor pricing",
        goal="Tell me when the price of the Pro plan changes",
        judge_enabled=True,
        webhook={
            "url": "https://hooks.example.com/pagewatch",
            "headers": {},
            "metadata": {},
            "events": [],
        },
    )
    pages = Target.objects.create(
        monitor=pricing,
        type="scrape",
        urls=["https://example.com/pricing", "https://example.com/terms"],
    )
    blog = make_monitor(team, [], name="Blog")
    crawl = Target.objects.create(
        monitor=blog, type="crawl", url="https://example.com/blog", crawl_options={}
    )
    news = make_monitor(
        team, [], name="News about Acme", goal="Acme launches a product"
    )
    search = Target.objects.create(
        monitor=news, type="search", queries=["acme launch"], search_window="7d"
    )
    paused = make_monitor(team, [], name="Old landing page")
    paused.status = Monitor.Status.PAUSED
    paused.next_run_at = None
    paused.save()
    Target.objects.create(monitor=paused, type="scrape", urls=["https://example.com/"])

    for hours in (3, 2, 1):
        when = now - timedelta(hours=hours)
        check = Check.objects.create(
            monitor=pricing,
            trigger=Check.Trigger.SCHEDULED,
            status=Check.Status.PARTIAL,
            started_at=when,
            finished_at=when + timedelta(seconds=3),
            summary={"totalPages": 4, "same": 0, "changed": 1, "new": 1}
            | {"removed": 1, "error": 1},
        )
    before = "# Pricing\n\nPro costs $19 a month.\n\nTeam costs $49 a month."
    after = "# Pricing\n\nPro costs $24 a month.\n\nTeam costs $49 a month."
    _, _, diff = compare_texts(before, after)
    changed = PageResult.objects.create(
        check_run=check,
        target_id=pages.pk,
        url="https://example.com/pricing",
        status=PageResult.Status.CHANGED,
        previous_snapshot=Snapshot.store(before),
        current_snapshot=Snapshot.store(after),
        diff=diff,
        metadata={"title": "Pricing"},
        verdict=PageResult.Verdict.MEANINGFUL,
        judgment={
            "meaningful": True,
            "confidence": "high",
            "reason": "The Pro plan costs more.",
            "meaningfulChanges": [{"before": "$19", "after": "$24"}],
        },
    )
    new = PageResult.objects.create(
        check_run=check,
        target_id=pages.pk,
        url="https://example.com/terms",
        status=PageResult.Status.NEW,
        current_snapshot=Snapshot.store("# Terms\n\nBe kind."),
        metadata={"title": "Terms"},
    )
    for status, url in (("removed", "/old"), ("error", "/broken")):
        PageResult.objects.create(
            check_run=check,
            target_id=pages.pk,
            url=f"https://example.com{url}",
            status=status,
            status_code=500 if status == "error" else None,
            error="Answered 500." if status == "error" else None,
        )
    Check.objects.create(
        monitor=blog,
        trigger=Check.Trigger.MANUAL,
        status=Check.Status.COMPLETED,
        started_at=now,
        finished_at=now,
        summary={"totalPages": 0},
    )
    found = Check.objects.create(
        monitor=news,
        trigger=Check.Trigger.SCHEDULED,
        status=Check.Status.COMPLETED,
        started_at=now,
        finished_at=now,
        summary={"totalPages": 1, "new": 1},
    )
    reason = "The web search failed: “acme launch”: SearXNG answered HTTP 500 (boom)."
    search_failed = Check.objects.create(
        monitor=news,
        trigger=Check.Trigger.SCHEDULED,
        status=Check.Status.FAILED,
        error=reason,
        started_at=now,
        finished_at=now,
        summary={"totalPages": 0},
        target_results=[
            {"targetId": str(search.pk), "type": "search", "searchCompleted": False}
            | {"resultCount": 0, "matches": 0, "degradedReason": reason}
        ],
    )
    launch = "https://news.example.com/acme-launch"
    PageResult.objects.create(
        check_run=found,
        target_id=search.pk,
        url=launch,
        status=PageResult.Status.NEW,
        current_snapshot=Snapshot.store("Acme launches the Rocket"),
        metadata={"title": "Acme launches the Rocket", "searchStatus": "alerted"}
        | {"snippet": "Big news", "queries": ["acme launch"]},
    )
    SearchResultState.objects.create(
        monitor=news,
        target_id=search.pk,
        key="a" * 64,
        url=launch,
        title="Acme launches the Rocket",
        queries=["acme launch"],
        status=SearchResultState.Status.ALERTED,
        first_seen_at=now,
        last_seen_at=now,
        alerted_at=now,
    )
    failed = Delivery.objects.create(
        kind=Delivery.Kind.WEBHOOK,
        monitor=pricing,
        check_run=check,
        event="monitor.check.completed",
        url="https://hooks.example.com/pagewatch",
        body="{}",
        attempts=1,
        status=Delivery.Status.FAILED,
        last_status_code=500,
        last_error="Answered 500.",
    )
    DeliveryAttempt.objects.create(
        delivery=failed,
        number=1,
        started_at=now,
        status_code=500,
        error="Answered 500.",
        response_body="Internal Server Error",
    )
    Delivery.objects.create(
        kind=Delivery.Kind.WEBHOOK,
        monitor=pricing,
        check_run=check,
        event="monitor.page",
        url="https://hooks.example.com/pagewatch",
        body=json.dumps({"data": [{"url": changed.url, "status": "changed"}]}),
        attempts=1,
        status=Delivery.Status.DELIVERED,
    )
    ApiKey.issue(team, name="Zapier", created_by=member)
    return {
        "pricing": pricing,
        "blog": blog,
        "crawl": crawl,
        "news": news,
        "check": check,
        "found": found,
        "search_failed": search_failed,
        "changed": changed,
        "new": new,
    }


def _require_axe() -> Path:
    script = AXE / "axe.min.js"
    if script.exists():
        return script
    reason = (
        "axe-core is not installed in tests/js/node_modules; "
        "run `npm ci --prefix tests/js` (make test does it when npm exists)"
    )
    if os.environ.get("CI") == "true":
        pytest.fail(reason + " (CI=true: not skipping)", pytrace=False)
    pytest.skip(reason)


# Folded sections are opened first, so what they hold is checked too.
_RUN_AXE = """async () => {
  document.querySelectorAll('details').forEach((section) => { section.open = true; });
  const found = await axe.run(document, {resultTypes: ['violations', 'incomplete']});
  const where = (node) => `    ${node.target.join(' ')}  ${node.html.slice(0, 120)}`;
  const say = (result) => `${result.id} (${result.impact}): ${result.help}\\n` +
    result.nodes.map(where).join('\\n');
  return {
    violations: found.violations.map(say),
    // axe cannot judge the contrast of symbols (✓, →) and one-digit chart
    // ticks; every other undecided rule needs a person, so it fails here.
    undecided: found.incomplete.filter((r) => r.id !== 'color-contrast').map(say),
  };
}"""


def axe_problems(page, what: str) -> list[str]:
    found = page.evaluate(_RUN_AXE)
    return [f"{what}: {line}" for line in found["violations"] + found["undecided"]]


# The dashboard's routes that are not pages a person reads, each with why.
# Every other route of monitors/dashboard/urls.py and teams/urls.py must be
# opened (or posted to, for a page that answers a form) by the walk below, so
# a new page cannot be added without axe looking at it.
NOT_PAGES = {
    "page-visual-change": "a PNG image",
    "capture": "a screenshot image behind a signed link",
    "export": "a JSON download",
    "monitor-feed": "an Atom feed",
    "team-feed": "an Atom feed",
    "oidc_authentication_init": "a redirect to the sign-in provider",
    "oidc_authentication_callback": "the sign-in provider's redirect back",
    "email_unsubscribe_one_click": "a mail client's POST; a GET redirects",
    "email_channel_unsubscribe_one_click": "a mail client's POST; a GET redirects",
    # POST-only actions that redirect to a page the walk covers.
    "import-confirm": "POST, then the import's page",
    "monitor-feed-renew": "POST, then the monitor's page",
    "team-feed-renew": "POST, then the Team page",
    "team-feeds-switch": "POST, then the Team page",
    "team-retention": "POST, then the Team page",
    "team-time-zone": "POST, then the Team page",
    "team-second-factor": "POST, then the Team page",
    "invitation-revoke": "POST, then the Team page",
    "invitation-renew": "POST, then the Team page",
    "channel-test": "POST, then the channel list",
    "two-factor-off": "POST, then the second factor's page",
}


def dashboard_routes() -> set[str]:
    """The names of every route the dashboard's two URL modules declare."""

    def names(patterns) -> Iterator[str]:
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                yield from names(pattern.url_patterns)
            elif pattern.name:
                yield pattern.name

    found: set[str] = set()
    for module in ("monitors.dashboard.urls", "teams.urls"):
        found |= set(names(import_module(module).urlpatterns))
    return found


class AxeWalk:
    """A browser page walked through the dashboard: axe runs at each state,
    and every route that answered the page is noted: with what it shows, or
    for a form sent, with where it leads (a GET sent on elsewhere is not)."""

    def __init__(self, page) -> None:
        self.page = page
        self.problems: list[str] = []
        self.reached: set[str] = set()
        page.on("response", self._note)

    def _note(self, response) -> None:
        if response.status >= 300 and response.request.method != "POST":
            return
        try:
            match = resolve(urlsplit(response.url).path)
        except Resolver404:
            return
        if match.url_name:
            self.reached.add(match.url_name)

    def check(self, what: str) -> None:
        self.page.wait_for_load_state()
        self.problems += axe_problems(self.page, what)

    def open(self, what: str, path: str) -> None:
        response = self.page.goto(path)
        assert response is not None and response.status < 500, what
        self.check(what)


@pytest.fixture
def whole_team(dashboard, team, member, django_user_model, settings, monkeypatch):
    """The dashboard fixture and all the rest a team can have: tags, another
    member and an invitation, a channel, an import, AI use (and its allowance
    used up), suggested lines to ignore, an outside address for e-mails, and
    a second team with nothing in it."""
    settings.LLM_BASE_URL = "http://127.0.0.1:9/v1"
    settings.LLM_MONTHLY_TOKENS_PER_TEAM = 100
    pricing = dashboard["pricing"]
    pricing.tags.set(Tag.objects.named(team, ["Competitors", "Shop"]))
    dashboard["blog"].tags.set(Tag.objects.named(team, ["Competitors"]))
    AIUse.objects.create(
        team=team,
        monitor=pricing,
        kind=AIUse.Kind.JUDGMENT,
        requests=2,
        prompt_tokens=120,
        completion_tokens=30,
    )
    line = "Last updated: 01:03 UTC"
    entry = r"/^\s*Last updated: \d+:\d+ UTC\s*$/"
    monkeypatch.setattr(
        ignore_suggestions,
        "suggestions_for",
        lambda monitor: [Suggestion(line, entry)] if monitor == pricing else [],
    )
    eddie = django_user_model.objects.create_user(
        "eddie", "eddie@example.com", first_name="Eddie", last_name="Berg"
    )
    Membership.objects.create(team=team, user=eddie, role=Membership.Role.EDITOR)
    ApiKey.issue(team, name="eddie's CI", created_by=eddie)
    _, invited = Invitation.issue(
        team, "sam@example.com", "viewer", member, timezone.now()
    )
    channel = Channel.objects.create(
        team=team,
        name="Ops room",
        kind="team_email",
        settings={"recipients": [member.pk]},
    )
    recipient = EmailRecipient.objects.create(
        monitor=pricing, email="ext@partner.example", status="pending", source="api"
    )
    run = ImportRun.objects.create(
        team=team,
        created_by=member,
        source="changedetection",
        status=ImportRun.Status.DONE,
        total=1,
        done=1,
        report={
            "created": 1,
            "duplicates": 0,
            "items": [
                {"name": "Prices", "result": "created", "monitorId": str(pricing.pk)}
                | {"notes": ["Its CSS filter became a part of the page to watch."]}
            ],
        },
        finished_at=timezone.now(),
    )
    empty = Team.objects.create(name="Empty", slug="empty")
    Membership.objects.create(team=empty, user=member, role=Membership.Role.OWNER)
    return dashboard | {
        "eddie": eddie,
        "invited": invited,
        "channel": channel,
        "recipient": recipient,
        "run": run,
        "empty": empty,
    }


@pytest.mark.parametrize("viewport", [PHONE, DESKTOP], ids=["phone", "desktop"])
def test_no_dashboard_page_breaks_an_axe_rule_in_the_states_that_matter(
    browser_page, whole_team, member, queued, viewport, screenshot
):
    axe = _require_axe()
    page = browser_page
    # An init script, as the Content-Security-Policy refuses injected <script> tags.
    page.context.add_init_script(path=str(axe))
    page.set_viewport_size(viewport)
    walk = AxeWalk(page)
    size = viewport["width"]
    team = whole_team
    pricing, news, blog = team["pricing"], team["news"], team["blog"]

    walk.open("sign-in", "/accounts/login/")
    page.get_by_label("User name").fill("olive")
    page.get_by_label("Password").fill("not the password")
    page.get_by_role("button", name="Sign in").click()
    page.get_by_text("did not match").wait_for()
    walk.check("sign-in that failed")
    sign_in(page)

    # The monitor list: tags, the bulk bar with boxes ticked, a filter by tag,
    # a search that finds nothing, a row paused in place.
    walk.check("monitor list")
    page.get_by_label("Select Competitor pricing").check()
    page.get_by_label("Select Blog").check()
    screenshot(page, f"a11y-bulk-ticked-{size}", full_page=False)
    walk.check("monitor list, two ticked")
    with page.expect_response(lambda r: "tag=Competitors" in r.url):
        page.locator("#id_tag").select_option("Competitors")
    walk.check("monitor list, filtered by a tag")
    walk.open("monitor list, nothing found", "/?q=nothing-like-this")
    walk.open("monitor list", "/")
    page.get_by_label("Select Competitor pricing").check()
    page.locator("#bulk").get_by_role("button", name="Delete…").click()
    page.get_by_role("heading", name="Delete 1 monitor?").wait_for()
    walk.check("delete ticked monitors")
    page.get_by_role("link", name="Keep them").click()
    row = page.locator(f"#monitor-{blog.pk}")
    with page.expect_response(lambda r: "/toggle/" in r.url):
        row.get_by_role("button", name="Pause Blog").click()
    row.get_by_role("button", name="Resume Blog").wait_for()
    walk.check("monitor list, a row paused")

    # A new monitor: a target row added, the schedule read as it is typed,
    # then sent empty.
    walk.open("new monitor", "/monitors/new/")
    with page.expect_response(lambda r: "/target-row/" in r.url):
        page.locator(".add-targets button").first.click()
    # Typed as a person types, straight after the click: the added row may
    # still be settling, and must not take the keyboard from the schedule.
    with page.expect_response(lambda r: "/schedule-preview/" in r.url):
        page.get_by_label("Schedule").press_sequentially("every banana")
    page.locator("#err-schedule p").wait_for()
    walk.check("new monitor, an error while typing")
    page.get_by_role("button", name="Create monitor").click()
    page.locator("#error-summary").wait_for()
    screenshot(page, f"a11y-form-errors-{size}")
    walk.check("new monitor with errors")
    walk.open("edit monitor", f"/monitors/{pricing.pk}/edit/")
    with page.expect_response(lambda r: "/edit/validate/" in r.url):
        page.get_by_label("Schedule").fill("every banana")
    walk.check("edit monitor, an error while typing")

    # A monitor with checks, a diff, tags, AI use held by its allowance and
    # suggested lines to ignore; a check run from it.
    walk.open("monitor of pages", pricing.get_absolute_url())
    screenshot(page, f"a11y-monitor-{size}")
    page.get_by_role("button", name="Run now").click()
    page.locator("#run-status").get_by_text("Waiting for a worker").wait_for()
    page.wait_for_event("response", lambda r: "/progress/" in r.url)
    walk.check("monitor of pages, a check waiting")
    page.locator("#noise-suggestions").get_by_role(
        "button", name="Ignore these lines"
    ).click()
    page.get_by_text("Those lines are ignored").wait_for()
    walk.check("monitor of pages, lines ignored")
    page.get_by_label("Mute notifications").select_option(index=0)
    page.get_by_role("button", name="Mute", exact=True).click()
    page.get_by_role("button", name="Unmute", exact=True).wait_for()
    walk.check("monitor of pages, notifications muted")
    pages = {
        "monitor of a crawl": blog.get_absolute_url(),
        "monitor of a web search": news.get_absolute_url(),
        "check": team["check"].get_absolute_url(),
        "check of a web search": team["found"].get_absolute_url(),
        "check whose web search failed": team["search_failed"].get_absolute_url(),
        "what changed": team["changed"].get_absolute_url(),
        "what changed, inline": team["changed"].get_absolute_url() + "?view=inline",
        "a new page": team["new"].get_absolute_url(),
        "pages of a crawl": f"/monitors/{blog.pk}/sites/{team['crawl'].pk}/",
        "web search results": f"/monitors/{news.pk}/results/?show=all",
        "history": "/history/",
        "history of a monitor": f"/history/?monitor={pricing.pk}",
        "delete a monitor": f"/monitors/{pricing.pk}/delete/",
        "deliveries": f"/monitors/{pricing.pk}/deliveries/",
    }
    for what, path in pages.items():
        walk.open(what, path)
    with page.expect_response(lambda r: "/retry/" in r.url):
        page.get_by_role("button", name="Retry now").first.click()
    walk.check("deliveries, one retried")
    with page.expect_response(lambda r: "/deliveries/test/" in r.url):
        page.get_by_role("button", name=re.compile("test message", re.I)).click()
    walk.check("deliveries, a test message sent")

    # Import, channels, keys, the signing secret.
    walk.open("import", "/import/")
    walk.open("an import done", f"/import/{team['run'].pk}/")
    channel = team["channel"].pk
    walk.open("channels", "/channels/")
    walk.open("new channel: its kinds", "/channels/new/")
    walk.open("new webhook channel", "/channels/new/?kind=webhook")
    walk.open("edit a channel", f"/channels/{channel}/")
    walk.open("delete a channel", f"/channels/{channel}/delete/")
    walk.open("API keys", "/settings/api-keys/")
    key = ApiKey.objects.filter(name="Zapier").get().pk
    walk.open("revoke an API key", f"/settings/api-keys/{key}/revoke/")
    walk.open("show the signing secret?", "/settings/team/webhook-secret/")
    page.get_by_role("button", name=re.compile("^Show")).click()
    page.locator("#main code, #main input[readonly]").first.wait_for()
    walk.check("the signing secret shown")
    walk.open("a new signing secret?", "/settings/team/webhook-secret/rotate/")

    # The team: AI use over its allowance, a member, an invitation; a refused
    # invitation, a role's question in its row, removing someone.
    walk.open("team", "/settings/team/")
    page.get_by_label("Role of eddie").select_option("viewer")
    page.get_by_role("button", name="Change the role of eddie").click()
    page.get_by_role("group", name="Make Eddie Berg a viewer?").wait_for()
    walk.check("team, a role's question")
    page.get_by_label("E-mail address").fill("olive at example")
    page.get_by_role("button", name="Send invitation").click()
    page.locator("#err-invite-email p").wait_for()
    walk.check("team, a refused invitation")
    eddie = Membership.objects.get(user=team["eddie"]).pk
    walk.open("remove someone", f"/settings/team/members/{eddie}/remove/")
    walk.open("activity", "/activity/")
    walk.open("second factor", "/accounts/two-factor/")
    walk.open("set up a second factor", "/accounts/two-factor/setup/")
    walk.open("a second factor's code", "/accounts/two-factor/verify/")
    walk.open("an invitation for someone else", f"/invitations/{team['invited']}/")

    # The e-mails' links, as someone outside the team opens them.
    recipient = team["recipient"]
    walk.open("confirm e-mails", f"/email/confirm/{consent.confirm_token(recipient)}/")
    unsubscribe = consent.unsubscribe_token(recipient)
    walk.open("unsubscribe", f"/email/unsubscribe/{unsubscribe}/")
    leave = consent.channel_token(channel, [member.pk])
    walk.open("leave a channel's e-mails", f"/email/channel/{leave}/")

    # An empty team, reached with the team switch.
    page.goto("/")
    page.get_by_label("Team").select_option(label="Empty")
    page.get_by_role("button", name="Switch").click()
    page.get_by_role("heading", name="Nothing is being watched yet").wait_for()
    walk.check("monitor list of an empty team")
    walk.open("history of an empty team", "/history/")
    walk.open("team page of an empty team", "/settings/team/")

    # Passwords: a reset asked for and chosen, then a change; then signing out.
    walk.open("forgot password", "/accounts/password_reset/")
    page.get_by_label(re.compile("e-mail", re.I)).fill("olive@example.com")
    page.get_by_role("button", name="Send the link").click()
    page.wait_for_url("**/password_reset/done/")
    walk.check("reset e-mail sent")
    uid = urlsafe_base64_encode(force_bytes(member.pk))
    member.refresh_from_db()  # its last sign-in is in the token
    token = default_token_generator.make_token(member)
    walk.open("choose a new password", f"/accounts/reset/{uid}/{token}/")
    new_password = "a-new-horse-battery-staple"
    for field in page.locator("input[type=password]").all():
        field.fill(new_password)
    page.locator("#main form button[type=submit]").last.click()
    page.wait_for_url("**/reset/done/")
    walk.check("password chosen")
    sign_in_with(page, new_password)
    walk.open("change password", "/accounts/password_change/")
    page.get_by_label("Old password").fill(new_password)
    for field in page.locator("input[type=password][name^=new_password]").all():
        field.fill(PASSWORD)
    page.locator("#main form button[type=submit]").last.click()
    page.wait_for_url("**/password_change/done/")
    walk.check("password changed")
    with page.expect_navigation():
        page.get_by_role("button", name=re.compile("^Sign out")).click()
    walk.check("signed out")

    assert walk.problems == [], "\n".join(walk.problems)
    missing = dashboard_routes() - set(NOT_PAGES) - walk.reached
    assert missing == set(), f"dashboard routes axe never saw: {sorted(missing)}"
    assert set(NOT_PAGES) <= dashboard_routes(), "NOT_PAGES names a gone route"


def sign_in_with(page, password: str) -> None:
    page.goto("/accounts/login/")
    page.get_by_label("User name").fill("olive")
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(re.compile(r"/$"))


# Where the focus ring of the focused element reaches, and the box of the
# nearest ancestor that clips what overflows it (else the page).
_FOCUS_RING = """() => {
  const el = document.activeElement;
  const style = getComputedStyle(el);
  const outline = parseFloat(style.outlineWidth) + parseFloat(style.outlineOffset);
  const reach = Math.max(0, outline);
  const box = el.getBoundingClientRect();
  let clip = el.parentElement;
  while (clip && getComputedStyle(clip).overflow === 'visible') {
    clip = clip.parentElement;
  }
  const page = {left: 0, top: 0, right: window.innerWidth,
                bottom: document.documentElement.scrollHeight};
  const edge = clip ? clip.getBoundingClientRect() : page;
  return {
    outline: style.outlineStyle, reach,
    ring: {left: box.left - reach, right: box.right + reach,
           top: box.top - reach, bottom: box.bottom + reach},
    clip: {left: edge.left, right: edge.right, top: edge.top, bottom: edge.bottom},
  };
}"""


def assert_whole_focus_ring(page, what: str) -> None:
    ring = page.evaluate(_FOCUS_RING)
    assert ring["outline"] != "none", f"{what} shows no focus ring"
    inside = ring["ring"]
    edge = ring["clip"]
    assert (
        inside["left"] >= edge["left"] - 0.5
        and inside["right"] <= edge["right"] + 0.5
        and inside["top"] >= edge["top"] - 0.5
        and inside["bottom"] <= edge["bottom"] + 0.5
    ), f"{what}: its focus ring {inside} is cut off at {edge}"


def test_the_diff_layout_switch_and_the_current_change_show_their_whole_focus_ring(
    browser_page, dashboard, screenshot
):
    page = browser_page
    sign_in(page)
    page.goto(dashboard["changed"].get_absolute_url() + "?view=split")
    for layout in ("Page text", "Side by side", "One column"):
        page.keyboard.press("Tab")
        while page.evaluate("document.activeElement.textContent.trim()") != layout:
            page.keyboard.press("Tab")
        assert_whole_focus_ring(page, f"the “{layout}” switch")
    screenshot(page, "a11y-layout-switch-focus", full_page=False)
    page.keyboard.press("Enter")
    page.locator("#diff-region[data-layout='inline']").wait_for()

    page.get_by_role("link", name="Next change →").focus()
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.id") == "change-1"
    assert_whole_focus_ring(page, "the change the keyboard moved to")


# The contrast ratio of WCAG 2 between two computed colours.
_CONTRAST = """([one, two]) => {
  const rgb = (color) => color.match(/[\\d.]+/g).slice(0, 3).map(Number);
  const lum = (color) => {
    const [r, g, b] = rgb(color).map((c) => {
      c /= 255;
      return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const [hi, lo] = [lum(one), lum(two)].sort((a, b) => b - a);
  return (hi + 0.05) / (lo + 0.05);
}"""


def contrast(page, one: str, two: str) -> float:
    return page.evaluate(_CONTRAST, [one, two])


def backdrop(locator) -> str:
    """The colour behind an element: its nearest ancestor's that has one."""
    return locator.evaluate(
        """(el) => {
          for (let p = el.parentElement; p; p = p.parentElement) {
            const bg = getComputedStyle(p).backgroundColor;
            if (bg !== 'rgba(0, 0, 0, 0)') return bg;
          }
          return 'rgb(255, 255, 255)';
        }"""
    )


def test_field_borders_and_chart_bars_stand_out_three_to_one_from_their_background(
    browser_page, dashboard
):
    """WCAG 1.4.11: the edge of a text box is all that shows where to type,
    and the bars are the chart."""
    page = browser_page
    sign_in(page)
    page.goto("/monitors/new/")
    for field in ("#id_name", "textarea[name$='-urls']", "#id_schedule"):
        box = page.locator(field).first
        border = box.evaluate("(el) => getComputedStyle(el).borderTopColor")
        ratio = contrast(page, border, backdrop(box))
        assert ratio >= 3, f"the border of {field} stands out only {ratio:.2f}:1"

    page.goto(f"/history/?monitor={dashboard['pricing'].pk}")
    for swatch in ("bar-changed", "bar-errors", "bar-none"):
        fill = page.locator(f".legend .swatch.{swatch}").evaluate(
            "(el) => getComputedStyle(el).backgroundColor"
        )
        chart = page.locator(".check-chart")
        ratio = contrast(page, fill, backdrop(chart))
        assert ratio >= 3, f"{swatch} stands out only {ratio:.2f}:1 from the chart"


# Everything the page's live region says, and every redraw of the run status.
_LISTEN = """() => {
  window.__said = [];
  window.__redrawn = 0;
  window.__polls = 0;
  new MutationObserver(() => {
    const words = document.getElementById('announcer').textContent.trim();
    if (words) window.__said.push(words);
  }).observe(document.getElementById('announcer'), {childList: true, subtree: true});
  new MutationObserver((changes) => { window.__redrawn += changes.length; })
    .observe(document.querySelector('section.run'), {childList: true, subtree: true});
  document.addEventListener('htmx:afterRequest', (event) => {
    if (event.detail.pathInfo.requestPath.includes('/progress/')) window.__polls += 1;
  });
}"""


def polls_answered(page, more: int) -> None:
    """Wait until the run status has been polled `more` more times."""
    now = page.evaluate("window.__polls")
    page.wait_for_function("(count) => window.__polls >= count", arg=now + more)


def focus_in_run_section(page) -> bool:
    return page.evaluate(
        "document.activeElement.closest('section.run') !== null"
        " && document.activeElement !== document.body"
    )


def test_run_now_from_the_keyboard_keeps_focus_in_the_run_section_until_the_end(
    browser_page, dashboard, queued, screenshot
):
    page = browser_page
    sign_in(page)
    page.goto(dashboard["pricing"].get_absolute_url())
    page.locator("#run-now").focus()
    page.keyboard.press("Enter")
    page.locator("#run-status").get_by_text("Waiting for a worker").wait_for()
    assert focus_in_run_section(page), "Run now left the keyboard at the top"
    screenshot(page, "a11y-run-now-focus", full_page=False)

    check = Check.objects.get(pk=queued[0])
    Check.objects.filter(pk=check.pk).update(
        status=Check.Status.COMPLETED,
        started_at=timezone.now(),
        finished_at=timezone.now(),
        summary={"totalPages": 2, "same": 2},
    )
    page.get_by_text("See the results").wait_for()
    assert focus_in_run_section(page)
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "See the results"
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "run-now"


def test_a_running_check_is_read_out_once_per_stage_and_not_redrawn_at_every_poll(
    browser_page, dashboard, queued
):
    page = browser_page
    sign_in(page)
    page.goto(dashboard["pricing"].get_absolute_url())
    page.evaluate(_LISTEN)
    page.get_by_role("button", name="Run now").click()
    page.locator("#run-status").get_by_text("Waiting for a worker").wait_for()
    redrawn = page.evaluate("window.__redrawn")
    polls_answered(page, 2)
    assert page.evaluate("window.__redrawn") == redrawn, "redrawn with nothing new"

    check = Check.objects.get(pk=queued[0])
    Check.objects.filter(pk=check.pk).update(
        status=Check.Status.RUNNING,
        started_at=timezone.now(),
        pages_total=3,
        pages_done=1,
    )
    page.get_by_text("1 of 3 pages done").wait_for()
    Check.objects.filter(pk=check.pk).update(pages_done=2)
    page.get_by_text("2 of 3 pages done").wait_for()
    polls_answered(page, 2)
    Check.objects.filter(pk=check.pk).update(
        status=Check.Status.COMPLETED,
        pages_done=3,
        finished_at=timezone.now(),
        summary={"totalPages": 3, "same": 2, "changed": 1},
    )
    page.get_by_text("See the results").wait_for()
    page.wait_for_function("() => window.__said.length >= 3")
    assert page.evaluate("window.__said") == [
        "Waiting for a worker to start the check…",
        "Checking pages…",
        "Completed, 1 changed, 2 unchanged",
    ]


def described_by(field) -> str:
    """The words a screen reader adds to a field: its aria-describedby."""
    return field.evaluate(
        """(el) => (el.getAttribute('aria-describedby') || '').split(' ')
          .map((id) => document.getElementById(id))
          .filter(Boolean).map((words) => words.textContent.trim()).join(' ')"""
    )


def test_a_failed_sign_in_and_a_refused_key_name_mark_their_fields_invalid(
    browser_page, member
):
    page = browser_page
    page.goto("/accounts/login/")
    page.get_by_label("User name").fill("olive")
    page.get_by_label("Password").fill("not the password")
    page.get_by_role("button", name="Sign in").click()
    page.get_by_text("did not match").wait_for()
    for label in ("User name", "Password"):
        field = page.get_by_label(label)
        assert field.get_attribute("aria-invalid") == "true", label
        assert "did not match" in described_by(field), label

    sign_in(page)
    page.goto("/settings/api-keys/")
    name = page.get_by_label("Name (optional)")
    assert name.get_attribute("aria-invalid") is None
    # Longer than a key's name may be: the browser's own limit taken off, as
    # a pasted name in an older browser would get past it.
    name.evaluate("(el) => el.removeAttribute('maxlength')")
    name.fill("k" * 101)
    page.get_by_role("button", name="Create key").click()
    page.locator("#err-key-name p").wait_for()
    name = page.get_by_label("Name (optional)")
    assert name.get_attribute("aria-invalid") == "true"
    assert "at most 100 characters" in described_by(name)


def test_long_copies_of_a_page_can_be_scrolled_from_the_keyboard(
    browser_page, dashboard
):
    axe = _require_axe()
    page = browser_page
    page.context.add_init_script(path=str(axe))
    sign_in(page)
    page.goto(dashboard["changed"].get_absolute_url())
    # A long page's copies overflow their boxes; the sample page is short, so
    # its copies are made as long as a real page's before axe looks.
    page.evaluate(
        """() => document.querySelectorAll('.snapshot-text, .snapshot-raw')
             .forEach((box) => {
               box.textContent = 'A line of the page\\n'.repeat(400);
             })"""
    )
    problems = axe_problems(page, "what changed, long copies")
    assert problems == [], "\n".join(problems)
    first = page.locator(".snapshot-text").first
    first.focus()
    page.keyboard.press("PageDown")
    # Chromium animates a scroll from the keyboard, so the box moves over a few
    # frames after the key: wait for it to have moved (this times out if it never does).
    page.wait_for_function("(box) => box.scrollTop > 0", arg=first.element_handle())
    assert first.evaluate("(box) => box.scrollTop") > 0


def focused_id(page) -> str:
    return page.evaluate("document.activeElement.id")


def test_a_refused_channel_is_read_out_first_and_its_error_belongs_to_its_field(
    browser_page, member, team
):
    page = browser_page
    page.context.add_init_script(path=str(_require_axe()))
    sign_in(page)
    page.goto("/channels/new/?kind=webhook")
    page.get_by_label("Name").fill("Ops room")
    page.get_by_label("URL").fill("ftp://hooks.example.com/pagewatch")
    page.get_by_role("button", name="Save channel").click()

    summary = page.locator("#error-summary")
    summary.get_by_text("Please fix the fields marked below").wait_for()
    # The keyboard starts at the refusal, which names the field and leads to it.
    assert focused_id(page) == "error-summary"
    summary.get_by_role("link", name="URL: Only http:// and https://").click()
    assert focused_id(page) == "setting-url"
    address = page.get_by_label("URL")
    assert address.get_attribute("aria-invalid") == "true"
    assert "Only http:// and https:// URLs are allowed" in described_by(address)
    assert axe_problems(page, "refused channel") == []
    assert not Channel.objects.filter(team=team).exists()


def test_a_refused_invitation_puts_the_keyboard_on_the_address_and_reads_why(
    browser_page, member, team
):
    page = browser_page
    sign_in(page)
    page.set_viewport_size(PHONE)  # the form is far below the top of the page
    page.goto("/settings/team/")
    page.get_by_label("E-mail address").fill("olive at example")
    page.get_by_role("button", name="Send invitation").click()
    page.locator("#err-invite-email p").wait_for()

    address = page.get_by_label("E-mail address")
    assert focused_id(page) == address.get_attribute("id")
    assert "valid email address" in described_by(address)
    assert address.evaluate(
        "(el) => { const box = el.getBoundingClientRect();"
        " return box.top >= 0 && box.bottom <= window.innerHeight; }"
    ), "the refused field is out of sight"
    assert not Invitation.objects.filter(team=team).exists()


def test_each_retry_button_and_attempt_list_of_the_notifications_says_which_it_is(
    browser_page, dashboard
):
    pricing = dashboard["pricing"]
    earlier = Delivery.objects.create(
        kind=Delivery.Kind.WEBHOOK,
        monitor=pricing,
        check_run=dashboard["check"],
        event="monitor.page",
        url="https://hooks.example.com/pagewatch",
        body="{}",
        attempts=2,
        status=Delivery.Status.FAILED,
        last_status_code=502,
        last_error="Answered 502.",
    )
    Delivery.objects.filter(pk=earlier.pk).update(
        created_at=timezone.now() - timedelta(hours=3)
    )
    page = browser_page
    sign_in(page)
    page.goto(f"/monitors/{pricing.pk}/deliveries/")

    retries = page.get_by_role("button", name="Retry now")
    names = [" ".join(name.split()) for name in retries.all_text_contents()]
    hook = "to https://hooks.example.com/pagewatch"
    assert names == [
        f"Retry now the “Check finished” message of just now {hook}",
        f"Retry now the “Each page's result” message of 3 hours ago {hook}",
    ]
    # The list of its attempts opens on more than a bare number.
    attempts = page.locator("details:has(ol.attempts) > summary")
    assert " ".join(attempts.text_content().split()) == (
        "1 attempt to send the “Check finished” message of just now"
    )


def test_each_see_the_check_link_says_which_message_and_each_time_its_full_time(
    browser_page, dashboard
):
    pricing = dashboard["pricing"]
    Monitor.objects.filter(pk=pricing.pk).update(schedule_timezone="Asia/Tokyo")
    earlier = Delivery.objects.create(
        kind=Delivery.Kind.WEBHOOK,
        monitor=pricing,
        check_run=dashboard["check"],
        event="monitor.page",
        url="https://hooks.example.com/pagewatch",
        body="{}",
        status=Delivery.Status.DELIVERED,
    )
    Delivery.objects.filter(pk=earlier.pk).update(
        created_at=timezone.now() - timedelta(hours=3)
    )
    page = browser_page
    sign_in(page)
    page.goto(f"/monitors/{pricing.pk}/deliveries/")

    links = page.get_by_role("link", name="see the check")
    hook = "to https://hooks.example.com/pagewatch"
    names = [" ".join(name.split()) for name in links.all_text_contents()]
    assert len(names) > 2 and len(set(names)) == len(names)
    assert names[-1] == (
        f"see the check behind the “Each page's result” message of 3 hours ago {hook}"
    )
    # What a screen reader reads of a time: its words and its full time, in
    # the monitor's zone; the screen shows only the words, as before.
    created = page.locator("td[data-label=Created] time").last
    assert re.fullmatch(
        r"3 hours ago \(\w{3} \d\d \w{3} \d{4}, \d\d:\d\d JST\)",
        created.text_content(),
    )
    full = created.locator(".visually-hidden").bounding_box()
    assert full["width"] <= 1 and full["height"] <= 1
    assert created.get_attribute("title") in created.text_content()


def test_the_links_to_each_pages_change_name_the_page_they_open(
    browser_page, dashboard
):
    page = browser_page
    sign_in(page)
    page.goto(dashboard["check"].get_absolute_url())

    changed = page.get_by_role("link", name="See what changed on Pricing", exact=True)
    new = page.get_by_role("link", name="First copy of this page (Terms)", exact=True)
    assert changed.get_attribute("href") == dashboard["changed"].get_absolute_url()
    assert new.get_attribute("href") == dashboard["new"].get_absolute_url()


def test_an_error_found_while_typing_is_read_out_once_and_not_again_when_fixed(
    browser_page, member
):
    page = browser_page
    sign_in(page)
    page.goto("/monitors/new/")
    announcer = page.locator("#announcer")
    schedule = page.get_by_label("Schedule")

    schedule.fill("every banana")
    expect(announcer).to_have_text(re.compile(r"^We could not read this schedule"))
    # More of the same mistake: the error is unchanged, so it is not said again.
    page.evaluate("document.getElementById('announcer').textContent = ''")
    with page.expect_response(lambda r: r.request.method == "POST"):
        schedule.press_sequentially(" split")
    page.locator("#err-schedule p").wait_for()
    page.wait_for_timeout(300)  # past the announcer's own short delay
    expect(announcer).to_have_text("")

    with page.expect_response(lambda r: r.request.method == "POST"):
        schedule.fill("every 30 minutes")
    expect(page.locator("#err-schedule")).to_be_empty()
    page.wait_for_timeout(300)
    expect(announcer).to_have_text("")


def test_a_new_api_key_has_the_keyboard_as_the_page_opens(browser_page, member):
    page = browser_page
    sign_in(page)
    page.goto("/settings/api-keys/")
    page.get_by_label("Name (optional)").fill("Zapier")
    page.get_by_role("button", name="Create key").click()
    page.locator("#new-key").wait_for()

    # A screen reader starts at the key, named, rather than at the page's top.
    assert focused_id(page) == "new-key"
    assert page.get_by_label("New API key").input_value().startswith("pw_")


def test_each_problem_of_a_refused_channel_leads_from_the_summary_to_its_field(
    browser_page, member, team
):
    page = browser_page
    sign_in(page)
    page.goto("/channels/new/?kind=webhook")
    page.get_by_label("Name").fill("Ops room")
    page.get_by_label("URL").fill("https://hooks.example.com/pagewatch")
    failing = page.get_by_label("A monitor is failing after")
    # Past the browser's own limit, as an older browser would let it be sent.
    failing.evaluate("(el) => el.removeAttribute('min')")
    failing.fill("0")
    page.get_by_role("button", name="Save channel").click()

    summary = page.locator("#error-summary")
    summary.get_by_role("link", name="Enter a number of failed checks").click()
    assert focused_id(page) == "channel-failing-after"
    failing = page.get_by_label("A monitor is failing after")
    assert failing.get_attribute("aria-invalid") == "true"
    assert "from 1 to 100" in described_by(failing)
    assert not Channel.objects.filter(team=team).exists()


def test_a_check_ending_while_the_keyboard_is_in_the_check_history_keeps_its_place(
    browser_page, dashboard, queued
):
    page = browser_page
    sign_in(page)
    page.goto(dashboard["pricing"].get_absolute_url())
    page.get_by_role("button", name="Run now").click()
    page.locator("#run-status").get_by_text("Waiting for a worker").wait_for()
    rows = page.locator("#check-history table.checks tbody tr")
    expect(rows).to_have_count(4)  # redrawn as the check started
    # The keyboard goes on down the page while the check runs.
    chip = page.get_by_role("link", name="Meaningful changes only")
    chip.focus()
    before = chip.element_handle()

    check = Check.objects.get(pk=queued[0])
    Check.objects.filter(pk=check.pk).update(
        status=Check.Status.COMPLETED,
        started_at=timezone.now(),
        finished_at=timezone.now(),
        summary={"totalPages": 2, "same": 2},
    )
    # The check history is redrawn with the check's outcome.
    page.wait_for_function("(chip) => !chip.isConnected", arg=before)

    assert page.evaluate("document.activeElement.textContent") == (
        "Meaningful changes only"
    ), "the keyboard fell back to the top of the page"
    page.keyboard.press("Shift+Tab")
    assert page.evaluate("document.activeElement.textContent") == "All checks"


# The words a screen reader gives the focused element: its label's, else its own.
_FOCUSED_NAME = """() => {
  const el = document.activeElement;
  const label = el.labels && el.labels.length ? el.labels[0] : el;
  const words = el.getAttribute('aria-label') || label.textContent;
  return words.replace(/\\s+/g, ' ').trim();
}"""


def tab_to(page, name: str, *, back: bool = False, most: int = 60) -> None:
    """Press Tab (Shift+Tab going back) until the focus is on `name`."""
    for _ in range(most):
        if page.evaluate(_FOCUSED_NAME) == name:
            return
        page.keyboard.press("Shift+Tab" if back else "Tab")
    raise AssertionError(f"Tab never reached “{name}”")


def test_monitors_ticked_and_paused_from_the_keyboard_leave_it_at_the_outcome(
    browser_page, member, team, screenshot
):
    page = browser_page
    prices = make_tagged(team, "Rival prices", ["Competitors"])
    news = make_tagged(team, "Rival news", ["Competitors"])
    shop = make_tagged(team, "Our own shop")
    sign_in(page)

    tab_to(page, "Select Rival news")
    page.keyboard.press("Space")
    tab_to(page, "Select Rival prices")
    page.keyboard.press("Space")
    assert page.get_by_label("Select Rival news").is_checked()
    # The bar that acts on the ticked monitors is above the list.
    tab_to(page, "Pause", back=True)
    assert page.evaluate("document.activeElement.closest('#bulk') !== null")
    with page.expect_navigation():
        page.keyboard.press("Enter")

    # The keyboard is at what was done, which is read out as it gets focus,
    # and goes on from there to the bar it used, not from the page's top.
    outcome = page.evaluate(
        "[document.activeElement.getAttribute('role'),"
        " document.activeElement.textContent.trim()]"
    )
    assert outcome == ["status", "2 monitors paused."]
    screenshot(page, "a11y-bulk-paused-focus", full_page=False)
    page.keyboard.press("Tab")
    assert page.evaluate(_FOCUSED_NAME) == "Pause"
    assert page.evaluate("document.activeElement.closest('#bulk') !== null")
    statuses = {m.name: m.status for m in Monitor.objects.filter(team=team)}
    assert statuses == {prices.name: "paused", news.name: "paused", shop.name: "active"}


def test_monitors_deleted_from_the_keyboard_leave_it_at_the_outcome(
    browser_page, member, team
):
    page = browser_page
    make_tagged(team, "Rival prices")
    make_tagged(team, "Our own shop")
    sign_in(page)

    tab_to(page, "Select all shown")
    page.keyboard.press("Space")
    tab_to(page, "Delete…", back=True)
    with page.expect_navigation():
        page.keyboard.press("Enter")
    tab_to(page, "Delete 2 monitors")
    with page.expect_navigation():
        page.keyboard.press("Enter")

    outcome = page.evaluate(
        "[document.activeElement.getAttribute('role'),"
        " document.activeElement.textContent.trim()]"
    )
    assert outcome == ["status", "2 monitors deleted."]
    assert not Monitor.objects.filter(team=team, deleted_at__isnull=True).exists()
    page.get_by_role("heading", name="Nothing is being watched yet").wait_for()


def test_lines_ignored_from_the_keyboard_leave_it_at_the_outcome(
    browser_page, member, team, monkeypatch
):
    page = browser_page
    monitor = make_tagged(team, "News")
    entry = r"/^\s*Last updated: \d+:\d+ UTC\s*$/"
    offered = [Suggestion("Last updated: 01:03 UTC", entry)]
    monkeypatch.setattr(
        ignore_suggestions,
        "suggestions_for",
        lambda shown: [] if shown.ignore_lines else offered,
    )
    sign_in(page)
    page.goto(monitor.get_absolute_url())

    tab_to(page, "Ignore these lines")
    with page.expect_navigation():
        page.keyboard.press("Enter")

    # Read out where the offer was, rather than at the top of a long page.
    outcome = page.evaluate(
        "[document.activeElement.getAttribute('role'),"
        " document.activeElement.textContent.trim()]"
    )
    assert outcome == ["status", "Those lines are ignored from the next check on."]
    assert page.locator("#noise-suggestions").count() == 0
    monitor.refresh_from_db()
    assert monitor.ignore_lines == [entry]
