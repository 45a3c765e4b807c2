"""The monitor form's values checked by the rules the API runs, called
directly: the bounds of monitors.rules_problems with the limits of
monitors.rules, the rules about a monitor as a whole (monitors.rules_monitor),
each target kind's own `check`, the URL rule and the address policy
(checks.targets.options.url_problem).

Values come in the API's JSON shape, which is what the form edits and what
monitors.editing saves; every problem is found at its API path, where the
form's slots and words (monitors.dashboard.forms.words) pick it up.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import validate_email

from checks.targets.options import url_problem
from monitors import rules, rules_changes, rules_monitor
from monitors.models import Monitor, Team
from monitors.rules_problems import (
    Problem,
    choice_problems,
    count_problems,
    items_problems,
    map_problems,
    text_problems,
    whole_problems,
)
from monitors.schedule import ScheduleError
from monitors.target_kinds import kind_for

# Problems at these paths stop the rules about the monitor as a whole, which
# would only repeat them.
_CROSS_FIELD_PATHS = frozenset({"goal", "judgeEnabled", "fetchWith"})


class EditCheck:
    """One check of the form's edit: `cleaned` is what monitors.editing
    saves (as the API's serializers would have given it), `problems` what
    stands in the way."""

    def __init__(
        self, edit: dict[str, Any], *, monitor: Monitor | None, team: Team | None
    ) -> None:
        self.edit = edit
        self.monitor = monitor
        self.team = monitor.team if monitor is not None else team
        self.problems: list[Problem] = []
        self.cleaned: dict[str, Any] = {}
        self._monitor_fields()
        self._schedule(edit["schedule"])
        self._targets(edit["targets"])
        self._webhook(edit["webhook"])
        self._notification(edit["notification"])
        self._channels(edit["channels"])
        if not _CROSS_FIELD_PATHS & {p.path[0] for p in self.problems if p.path}:
            self._whole_monitor()

    def _monitor_fields(self) -> None:
        edit, cleaned = self.edit, self.cleaned
        self.problems += text_problems(("name",), edit["name"], rules.NAME_MAX)
        cleaned["name"] = edit["name"].strip()
        if "tags" in edit:
            if problem := rules.tags_error(edit["tags"]):
                self.problems.append(Problem(("tags",), "invalid", problem))
            cleaned["tags"] = rules.clean_tags(edit["tags"])
        goal = edit["goal"]
        self.problems += text_problems(("goal",), goal, rules.GOAL_MAX, blank=True)
        cleaned["goal"] = rules.clean_goal(goal)
        lines = edit["ignoreLines"]
        self.problems += items_problems(
            ("ignoreLines",),
            lines,
            most=rules.IGNORE_LINES_MAX,
            longest=rules.IGNORE_LINE_MAX,
            each=rules.ignore_line_error,
        )
        cleaned["ignoreLines"] = rules.clean_ignore_lines(lines)
        changes = edit["changeRules"]
        self.problems += [
            problem.under("changeRules") for problem in rules_changes.problems(changes)
        ]
        cleaned["changeRules"] = rules_changes.clean(changes)
        self.problems += choice_problems(
            ("fetchWith",), edit["fetchWith"], Monitor.FetchWith.values
        )
        cleaned["fetchWith"] = edit["fetchWith"]
        if "retentionDays" in edit:
            self.problems += whole_problems(
                ("retentionDays",),
                edit["retentionDays"],
                rules.RETENTION_MIN,
                rules.RETENTION_MAX,
            )
            cleaned["retentionDays"] = edit["retentionDays"]

    def _schedule(self, schedule: dict[str, str]) -> None:
        typed = {key: value.strip() for key, value in schedule.items()}
        found = []
        for key, most in (
            ("cron", rules.SCHEDULE_MAX),
            ("text", rules.SCHEDULE_MAX),
            ("timezone", rules.TIMEZONE_MAX),
        ):
            if key in typed:
                found += text_problems(("schedule", key), typed[key], most)
        if not found:
            try:
                checked = rules_monitor.schedule_for(
                    typed.get("cron"),
                    typed.get("text"),
                    typed["timezone"],
                    self.monitor,
                )
            except ScheduleError as exc:
                found.append(Problem(("schedule",), exc.code, exc.message))
            else:
                self.cleaned["schedule"] = {
                    "cron": checked.cron,
                    "timezone": checked.timezone,
                }
        self.problems += found

    def _targets(self, targets: list[dict[str, Any]]) -> None:
        found: list[Problem] = []
        cleaned = []
        for index, data in enumerate(targets):
            kind = kind_for(str(data.get("type")))
            if kind is None:
                message = rules_monitor.target_type_problem(data) or ""
                found.append(Problem(("targets", index, "type"), "invalid", message))
                continue
            target, problems = kind.check(data)
            found += [problem.under("targets", index) for problem in problems]
            cleaned.append(target)
        if not found:
            found = count_problems(
                ("targets",), targets, least=rules.TARGETS_MIN, most=rules.TARGETS_MAX
            )
        if not found and (rule := rules_monitor.target_ids_rule(cleaned)):
            found.append(Problem(("targets",), rule.code, rule.api))
        self.problems += found
        self.cleaned["targets"] = cleaned

    def _webhook(self, webhook: dict[str, Any] | None) -> None:
        if webhook is None:
            self.cleaned["webhook"] = None
            return
        url = webhook["url"].strip()
        if not url:
            self.problems.append(Problem(("webhook", "url"), "blank", "Enter a URL."))
        elif problem := url_problem(url):
            self.problems.append(Problem(("webhook", "url"), *problem))
        self.problems += _pairs_problems(
            ("webhook", "headers"),
            webhook["headers"],
            most=rules.WEBHOOK_HEADERS_MAX,
            key_error=rules.webhook_header_name_error,
            value_error=rules.header_value_error,
        )
        self.problems += _pairs_problems(
            ("webhook", "metadata"),
            webhook["metadata"],
            most=rules.WEBHOOK_METADATA_MAX,
        )
        events = webhook["events"]
        if not events:
            self.problems.append(
                Problem(("webhook", "events"), "empty", "Choose at least one.")
            )
        for index, event in enumerate(events):
            self.problems += choice_problems(
                ("webhook", "events", index), event, rules.WEBHOOK_EVENTS
            )
        self.problems += count_problems(
            ("webhook", "events"), events, most=len(rules.WEBHOOK_EVENTS)
        )
        self.cleaned["webhook"] = {
            "url": url,
            "headers": webhook["headers"],
            "metadata": webhook["metadata"],
            "events": list(dict.fromkeys(events or rules.WEBHOOK_EVENTS)),
        }

    def _notification(self, notification: dict[str, Any]) -> None:
        """The e-mail the form shows; other channels (set through the API,
        checked there) are kept as they are."""
        email = notification["email"]
        path = ("notification", "email", "recipients")
        recipients = [address.strip() for address in email["recipients"]]
        for index, address in enumerate(recipients):
            self.problems += text_problems((*path, index), address, rules.EMAIL_MAX)
            try:
                validate_email(address)
            except ValidationError:
                self.problems.append(
                    Problem((*path, index), "invalid", "Enter a valid email address.")
                )
        self.problems += count_problems(path, recipients, most=rules.RECIPIENTS_MAX)
        self.cleaned["notification"] = notification | {
            "email": {
                "enabled": email["enabled"],
                "recipients": list(dict.fromkeys(a.lower() for a in recipients)),
                "includeDiffs": email["includeDiffs"],
            }
        }

    def _channels(self, ids: list[int]) -> None:
        found = count_problems(("channels",), ids, most=rules.CHANNELS_MAX)
        if not found and (message := rules_monitor.channel_problem(self.team, ids)):
            found.append(Problem(("channels",), "invalid", message))
        self.problems += found
        self.cleaned["channels"] = list(dict.fromkeys(ids))

    def _whole_monitor(self) -> None:
        """Judging against the goal, and how pages are loaded against what
        they ask for: checked even while other fields are wrong, so a person
        sees every problem at once, on the targets as typed."""
        edit: dict[str, Any] = {
            "targets": [
                {"type": target["type"], "scrapeOptions": target.get("scrapeOptions")}
                for target in self.edit["targets"]
                if kind_for(str(target.get("type"))) is not None
            ],
            "goal": self.cleaned["goal"],
            "fetchWith": self.edit["fetchWith"],
        }
        if "judgeEnabled" in self.edit:
            edit["judgeEnabled"] = self.edit["judgeEnabled"]
        self.cleaned["judgeEnabled"], problem = rules_monitor.judging(
            edit, self.monitor
        )
        if problem is not None:
            field, rule = problem
            self.problems.append(Problem((field,), rule.code, rule.api))
        if rule := rules_monitor.fetch_with_rule(edit, self.monitor):
            self.problems.append(Problem(("fetchWith",), rule.code, rule.api))


def _pairs_problems(
    path: tuple[str, ...], pairs: dict[str, str], **rule: Any
) -> list[Problem]:
    """Names and values: each value's length, then the pairs' rules."""
    found = [
        problem
        for name, value in pairs.items()
        for problem in text_problems(
            (*path, name), value, rules.HEADER_VALUE_MAX, blank=True
        )
    ]
    return found or map_problems(path, pairs, **rule)
