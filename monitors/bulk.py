"""Acting on many monitors at once: pause, resume, mute or unmute their
notifications, add or remove a tag, delete, start a check now. One workflow
for the monitor list's tick boxes and for POST /v2/monitor/bulk: each action
is one query over the chosen monitors of the team (MonitorQuerySet), and one
activity entry per monitor it changed, written in one INSERT, as a single
edit writes one. Starting checks (run) is not one query: it is the single
"Run now"'s workflow (monitors.running), monitor by monitor, one transaction
each, with the entries of those started written after them in one INSERT."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from checks import deleting
from monitors import rules, running
from monitors.models import Monitor, MonitorQuerySet, Tag, Team
from teams.activity import Actor, Kind, record_each, record_mute

# The most monitors one request may name: a page of the API's list.
IDS_MAX = 100


class Action(StrEnum):
    PAUSE = "pause"
    RESUME = "resume"
    ADD_TAG = "add_tag"
    REMOVE_TAG = "remove_tag"
    DELETE = "delete"
    MUTE = "mute"
    UNMUTE = "unmute"
    RUN = "run"

    @property
    def takes_tag(self) -> bool:
        return self in (Action.ADD_TAG, Action.REMOVE_TAG)


@dataclass
class Outcome:
    # The monitors the action changed (and the activity log names).
    done: list[Monitor] = field(default_factory=list)
    # add_tag: those left without the tag, as they have the most tags already
    # (one more and every later edit of them would be refused).
    full: list[Monitor] = field(default_factory=list)
    # run: what became of each monitor (started, or left alone and why).
    runs: running.Runs | None = None


def tag_problem(raw: str) -> tuple[list[str], str | None]:
    """The tag named for add_tag or remove_tag, cleaned as the form and the
    API clean tags (rules.clean_tags), and what is wrong with it, if anything."""
    name = rules.clean_tags([raw])
    if not name:
        return name, "Enter the tag's name."
    return name, rules.tags_error(name)


def act(
    chosen: MonitorQuerySet,
    action: Action,
    actor: Actor,
    team: Team,
    now: datetime,
    tag: list[str] | None = None,
    until: datetime | None = None,
) -> Outcome:
    """Do `action` to the `chosen` monitors of `team` (already scoped to it)
    and log it; `tag` is tag_problem's clean name, for the tag actions;
    `until` the mute's end, for mute (passing rules.mute_rule, cleaned by
    rules.clean_muted_until)."""
    if action == Action.RUN:
        runs = running.run_each(chosen.order_by("name", "pk"), actor)
        return Outcome(list(runs.started), runs=runs)
    if action == Action.DELETE:
        done = deleting.soft_delete_monitors(chosen, now)
        record_each(actor, team, Kind.MONITOR_DELETED, done)
        return Outcome(done)
    if action == Action.PAUSE:
        done = chosen.pause()
        record_each(actor, team, Kind.MONITOR_PAUSED, done)
        return Outcome(done)
    if action == Action.RESUME:
        done = chosen.resume(now)
        record_each(actor, team, Kind.MONITOR_RESUMED, done)
        return Outcome(done)
    if action == Action.MUTE:
        if until is None:
            raise ValueError("mute needs its end")
        done = chosen.mute(until, now)
        record_mute(actor, team, done, until)
        return Outcome(done)
    if action == Action.UNMUTE:
        done = chosen.unmute(now)
        record_mute(actor, team, done, None)
        return Outcome(done)
    if not tag:
        raise ValueError(f"{action} needs a tag")
    full: list[Monitor] = []
    if action == Action.ADD_TAG:
        done, full = chosen.add_tag(Tag.objects.named(team, tag)[0])
    else:
        found = Tag.objects.find(team, tag[0])
        done = chosen.remove_tag(found) if found else []
    record_each(actor, team, Kind.MONITOR_EDITED, done, fields=["tags"])
    return Outcome(done, full)
