"""Atom feeds of changes, one per monitor and one per team, for feed readers;
and the dashboard's buttons that make a new feed link or turn feeds off.

A feed's address holds a random token (Monitor/Team.feed_token), the only
credential a feed reader can send: the feed views are public, find their
object by that unique, indexed token, and answer 404 for any other token, for
a link made new since, for a deleted monitor and while the team has feeds
off. The XML is Django's syndication framework's (Atom1Feed); each entry's
HTML comes from templates/feeds/ through autoescaping, as the dashboard's."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_not_required
from django.contrib.syndication.views import Feed
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.feedgenerator import Atom1Feed
from django.views.decorators.http import require_POST, require_safe

from checks.models import Check, PageResult
from checks.notify.reports import diff_excerpt, judge_reason
from checks.notify.texts import http_href
from monitors import history
from monitors.dashboard.base import Action, DashboardRequest, get_monitor_for, team_view
from monitors.links import public_url
from monitors.models import Monitor, Team
from teams.activity import Actor, Kind, record
from teams.members import renew_feed_links

# What new_feed_token makes; anything else is refused before any query.
TOKEN_SHAPE = re.compile(r"[A-Za-z0-9_-]{20,64}")
# The control characters XML 1.0 cannot hold (all but tab and line breaks),
# as Django's XML writer refuses them.
NOT_IN_XML = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")
QUOTES_SHOWN = 3


@dataclass(frozen=True)
class Change:
    """One entry of a feed: a page a check found changed, new or removed,
    with what the reader is told of it."""

    page: PageResult
    label: str
    categories: tuple[str, ...]
    reason: str = ""
    quotes: tuple[tuple[str, str], ...] = ()
    diff: tuple[tuple[str, str], ...] = ()  # (ins | del | "", line)
    diff_cut: bool = False

    @classmethod
    def of(cls, page: PageResult) -> Change:
        label, categories = cls._mark(page)
        judgment = page.judgment if isinstance(page.judgment, dict) else {}
        judged = page.is_judged
        text = (page.diff or {}).get("text") if isinstance(page.diff, dict) else None
        lines, cut = diff_excerpt(text) if isinstance(text, str) else ([], False)
        return cls(
            page=page,
            label=label,
            categories=categories,
            reason=judge_reason(judgment) if judged else "",
            quotes=_quotes(judgment) if judged else (),
            diff=tuple((_line_kind(line), line) for line in lines),
            diff_cut=cut,
        )

    @staticmethod
    def _mark(page: PageResult) -> tuple[str, tuple[str, ...]]:
        if page.status == PageResult.Status.NEW:
            # A web search's new result, called a match as messages and the
            # dashboard call it.
            # (search_status: annotated by history.atom_changes)
            if page.search_status == "alert":
                return "New match", ("new",)
            return "New page", ("new",)
        if page.status == PageResult.Status.REMOVED:
            return "Page removed", ("removed",)
        if not page.counts_as_meaningful:
            # The dashboard's words; the category term stays, for feed readers'
            # filters.
            if page.set_aside_by_rules:
                return "Change set aside by the rules", ("changed", "not-meaningful")
            return "Change judged unimportant", ("changed", "not-meaningful")
        if page.verdict == PageResult.Verdict.NOT_JUDGED:
            return "Change (not judged)", ("changed", "meaningful", "not-judged")
        return "Meaningful change", ("changed", "meaningful")

    @property
    def check(self) -> Check:
        return self.page.check_run

    @property
    def monitor(self) -> Monitor:
        return self.page.check_run.monitor

    @property
    def judging_off(self) -> bool:
        """No verdict because the monitor does not judge: every change counts."""
        page = self.page
        return (
            page.status == PageResult.Status.CHANGED
            and page.verdict == PageResult.Verdict.NONE
        )

    @property
    def not_judged(self) -> bool:
        return self.page.verdict == PageResult.Verdict.NOT_JUDGED

    @property
    def href(self) -> str | None:
        return http_href(self.page.url)

    @property
    def has_diff(self) -> bool:
        """Only a changed page has earlier text to compare with."""
        return self.page.status == PageResult.Status.CHANGED

    @property
    def diff_url(self) -> str:
        return public_url(self.page.get_absolute_url())

    @property
    def check_url(self) -> str:
        return public_url(self.check.get_absolute_url())

    @property
    def more_in_check(self) -> int:
        """Changes of its check beyond the ones a feed lists."""
        summary = self.check.summary or {}
        total = sum(int(summary.get(s) or 0) for s in history.FEED_STATUSES)
        return total if total > history.ATOM_PAGES_PER_CHECK else 0

    @property
    def at(self) -> datetime:
        return self.check.finished_at or self.page.created_at


def _quotes(judgment: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    cited = judgment.get("meaningfulChanges") or []
    return tuple(
        (str(c.get("before") or ""), str(c.get("after") or ""))
        for c in cited[:QUOTES_SHOWN]
        if isinstance(c, dict)
    )


def _xml_safe(value: Any) -> Any:
    if isinstance(value, str):
        return NOT_IN_XML.sub("", value)
    if isinstance(value, list | tuple):
        return type(value)(_xml_safe(part) for part in value)
    return value


def _line_kind(line: str) -> str:
    if line.startswith("+"):
        return "ins"
    if line.startswith("-"):
        return "del"
    return ""


class ChangeFeed(Feed):
    """What both feeds share: their entries, each one page's change."""

    feed_type = Atom1Feed
    description_template = "feeds/change.html"
    author_name = "Pagewatch"

    def get_object(self, request: HttpRequest, token: str) -> Any:
        found = self.find(token) if TOKEN_SHAPE.fullmatch(token) else None
        if found is None:
            raise Http404("No such feed.")
        return found

    def find(self, token: str) -> Any:
        raise NotImplementedError

    def __call__(self, request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        response = super().__call__(request, *args, **kwargs)
        # The address is a credential: not for search engines.
        response["X-Robots-Tag"] = "noindex"
        return response

    def get_feed(self, obj: Any, request: HttpRequest) -> Any:
        """The feed with the control characters XML cannot hold left out of
        every text: a page's text (a PDF's form feeds), a quote or a name
        holding one made the whole feed an error for every reader."""
        feed = super().get_feed(obj, request)
        feed.feed = {key: _xml_safe(value) for key, value in feed.feed.items()}
        feed.items = [
            {key: _xml_safe(value) for key, value in item.items()}
            for item in feed.items
        ]
        return feed

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        return {"change": kwargs["item"], "obj": kwargs["obj"]}

    def item_title(self, item: Change) -> str:
        # Atom titles are text: the XML writer escapes them, nothing else.
        return f"{item.label}: {item.page.url}"

    def item_link(self, item: Change) -> str:
        return item.diff_url

    def item_guid(self, item: Change) -> str:
        return f"urn:uuid:{item.page.pk}"

    def item_pubdate(self, item: Change) -> datetime:
        return item.at

    def item_updateddate(self, item: Change) -> datetime:
        return item.at

    def item_categories(self, item: Change) -> tuple[str, ...]:
        return item.categories


class MonitorChangeFeed(ChangeFeed):
    def find(self, token: str) -> Monitor | None:
        return Monitor.objects.with_feed(token)

    def title(self, obj: Monitor) -> str:
        return f"{obj.name}: changes found by Pagewatch"

    def subtitle(self, obj: Monitor) -> str:
        return (
            f"Pages of the monitor {obj.name} ({obj.team.name}) found changed, "
            "new or removed, newest first; meaningful changes are marked."
        )

    def link(self, obj: Monitor) -> str:
        return public_url(obj.get_absolute_url())

    def feed_url(self, obj: Monitor) -> str | None:
        return obj.feed_url

    def items(self, obj: Monitor) -> list[Change]:
        return [Change.of(page) for page in history.atom_changes(obj.team, obj)]


class TeamChangeFeed(ChangeFeed):
    def find(self, token: str) -> Team | None:
        return Team.objects.with_feed(token)

    def title(self, obj: Team) -> str:
        return f"{obj.name}: changes found by Pagewatch"

    def subtitle(self, obj: Team) -> str:
        return (
            f"Pages of every monitor of {obj.name} found changed, new or "
            "removed, newest first; meaningful changes are marked."
        )

    def link(self, obj: Team) -> str:
        return public_url(reverse("team-history"))

    def feed_url(self, obj: Team) -> str | None:
        return obj.feed_url

    def items(self, obj: Team) -> list[Change]:
        return [Change.of(page) for page in history.atom_changes(obj)]

    def item_title(self, item: Change) -> str:
        return f"{item.monitor.name} · {super().item_title(item)}"


monitor_feed = login_not_required(require_safe(MonitorChangeFeed()))
team_feed = login_not_required(require_safe(TeamChangeFeed()))


# ---------------------------------------------------------------- dashboard

RENEWED = (
    "A new feed link was made. The old link no longer works: give the new "
    "one to anyone who followed the feed."
)
RENEWED_ALL = (
    "New feed links were made, the team's and each monitor's. The old links "
    "no longer work: give the new ones to everyone who follows the feeds."
)


@require_POST
@team_view(needs=Action.EDIT)
@transaction.atomic  # the new link and its log entry, or neither
def monitor_feed_renew(request: DashboardRequest, pk: uuid.UUID) -> HttpResponse:
    monitor = get_monitor_for(request, pk)
    monitor.renew_feed_token()
    record(Actor.of(request), request.team, Kind.FEED_RENEWED, monitor)
    messages.success(request, RENEWED, extra_tags="feed")
    return redirect(monitor.get_absolute_url() + "#feed")


@require_POST
@team_view(needs=Action.MANAGE)
@transaction.atomic  # the new link and its log entry, or neither
def team_feed_renew(request: DashboardRequest) -> HttpResponse:
    """The team's feed link; with links=all (the notice after someone left),
    each monitor's too."""
    if request.POST.get("links") == "all":
        renew_feed_links(Actor.of(request), request.team)
        messages.success(request, RENEWED_ALL, extra_tags="feed")
        return redirect(reverse("team-members") + "#feeds")
    request.team.renew_feed_token()
    record(Actor.of(request), request.team, Kind.FEED_RENEWED)
    messages.success(request, RENEWED, extra_tags="feed")
    return redirect(reverse("team-members") + "#feeds")


@require_POST
@team_view(needs=Action.MANAGE)
def team_feeds_switch(request: DashboardRequest) -> HttpResponse:
    """Feeds on or off for the whole team. The button says which, so a
    double click is harmless."""
    wanted = request.POST.get("feeds") == "on"
    if request.team.set_feeds_enabled(wanted):
        record(Actor.of(request), request.team, Kind.TEAM_EDITED,
               setting="feeds_enabled", value=wanted, was=not wanted)  # fmt: skip
    if wanted:
        messages.success(
            request, "Feeds are on: their links work again.", extra_tags="feed"
        )
    else:
        messages.success(
            request,
            "Feeds are off: every feed link of this team stops working.",
            extra_tags="feed",
        )
    return redirect(reverse("team-members") + "#feeds")
