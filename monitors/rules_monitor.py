"""The rules about a monitor as a whole, as plain functions over its edit in
the API's JSON shape: its schedule against the stored one, its channels
against its team's, its targets' kinds and ids, judging against the goal,
and how pages are loaded against what its pages ask for.

The API's serializers (monitors.wire.monitor) and the dashboard's form
(monitors.dashboard.forms) both call these, so the browser and the API can
never disagree; each side words what they find its own way.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from monitors import rules
from monitors.models import Channel, Monitor, Team
from monitors.rules import Rule
from monitors.schedule import Schedule, normalize_schedule
from monitors.target_kinds import all_kinds, kind_for

# The database's bigint: a larger channel id is refused, never an overflow.
CHANNEL_ID_MAX = 2**63 - 1


def schedule_for(
    cron: str | None, text: str | None, zone: str | None, monitor: Monitor | None
) -> Schedule:
    """The schedule an edit sets (raises monitors.schedule.ScheduleError).

    Without a zone an edit keeps the monitor's (Firecrawl resets to UTC);
    with only a zone (`firecrawl monitor update --timezone X` sends
    {"schedule": {"timezone": X}}) the current cron moves to that zone."""
    if monitor is not None and zone and not (cron or text):
        cron = monitor.schedule_cron
    current = monitor.schedule_timezone if monitor is not None else None
    return normalize_schedule(cron, text, zone or current or "UTC")


def channel_problem(team: Team | None, ids: Iterable[int]) -> str | None:
    """Why the channels cannot be the monitor's: one that is not a channel
    its team shares (another team's looks exactly like a missing one)."""
    ids = list(dict.fromkeys(ids))
    found = (
        set(
            Channel.objects.for_team(team)
            .shared()
            .filter(pk__in=[i for i in ids if i <= CHANNEL_ID_MAX])
            .values_list("pk", flat=True)
        )
        if team is not None
        else set()
    )
    missing = [i for i in ids if i not in found]
    if missing:
        return f"No channel of this team has the id {missing[0]}."
    return None


def target_type_problem(data: Mapping[str, Any]) -> str | None:
    """Why a target's `type` names no kind, listing the kinds there are."""
    if kind_for(str(data.get("type"))) is not None:
        return None
    names = [known.name for known in all_kinds()]
    listed = ", ".join(names[:-1]) + " or " + names[-1]
    return f"Target type must be {listed}."


def target_ids_rule(targets: Iterable[Mapping[str, Any]]) -> Rule | None:
    ids = [t["id"] for t in targets if t.get("id")]
    return rules.TARGET_IDS_UNIQUE if len(ids) != len(set(ids)) else None


def judging(
    edit: Mapping[str, Any], monitor: Monitor | None
) -> tuple[bool, tuple[str, Rule] | None]:
    """Whether the edited monitor judges changes, and the goal rule it
    breaks as (field, rule), if any. `edit["goal"]` is already cleaned
    (rules.clean_goal); a key left out keeps the monitor's value."""
    goal_given = "goal" in edit
    goal = edit["goal"] if goal_given else (monitor.goal if monitor else None)
    explicit = edit.get("judgeEnabled")
    judge = rules.resolve_judge_enabled(
        goal_given=goal_given,
        goal=goal,
        judge_enabled=explicit,
        current=monitor.judge_enabled if monitor else False,
    )
    # The search rule yields only to judging switched off on purpose: in this
    # edit, or already off on a monitor whose goal is untouched.
    search_opt_out = explicit is False or (
        monitor is not None and explicit is None and not goal_given and not judge
    )
    if "targets" in edit:
        types = [t["type"] for t in edit["targets"]]
    else:
        types = list(monitor.targets.values_list("type", flat=True)) if monitor else []
    needs_goal = any(
        kind.needs_goal for name in types if (kind := kind_for(name)) is not None
    )
    problem = rules.goal_rule_error(
        goal, judge, needs_goal, search_opt_out=search_opt_out
    )
    return judge, problem


def fetch_with_rule(edit: Mapping[str, Any], monitor: Monitor | None) -> Rule | None:
    """rules.fetch_with_error for the edited monitor: its choice and its
    targets' page options, each as edited or else as stored."""
    fetch_with = edit.get("fetchWith") or (
        monitor.fetch_with if monitor else Monitor.FetchWith.AUTO
    )
    if "targets" in edit:
        options = [t.get("scrapeOptions") for t in edit["targets"]]
    elif monitor is not None:
        options = list(monitor.targets.values_list("scrape_options", flat=True))
    else:
        options = []
    return rules.fetch_with_error(fetch_with, options)
