"""The one set of monitor rules. The REST serializers and the dashboard forms
both validate through monitors.api.serializers, which calls these, so the
browser and the API can never disagree."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import re2

from monitors.url_rule import url_syntax_error

NAME_MAX = 256
GOAL_MAX = 2000
TARGETS_MIN, TARGETS_MAX = 1, 50
URLS_PER_TARGET_MAX = 500
URL_MAX = 2048
RETENTION_MIN, RETENTION_MAX, RETENTION_DEFAULT = 1, 365, 30
RECIPIENTS_MAX = 25
QUERIES_MAX, QUERY_MAX = 12, 256
MAX_RESULTS_MIN, MAX_RESULTS_MAX, MAX_RESULTS_DEFAULT = 1, 50, 10
DOMAINS_MAX = 50
SEARCH_WINDOWS = ("5m", "15m", "1h", "6h", "24h", "7d")
SEARCH_WINDOW_DEFAULT = "24h"
WEBHOOK_EVENTS = ("monitor.page", "monitor.check.completed")
WEBHOOK_HEADERS_MAX = 50
WEBHOOK_METADATA_MAX = 50
HEADER_VALUE_MAX = 4096
# Headers Pagewatch sets itself on every delivery; a user value would forge them.
RESERVED_HEADER_PREFIXES = ("x-firecrawl-", "webhook-")
RESERVED_HEADERS = {"host", "content-length", "content-type", "transfer-encoding"}

# Page actions (Firecrawl's limits): how many, and how much waiting in all
# (waitFor plus wait actions, a selector wait counting as one second).
ACTIONS_MAX = 50
WAIT_TOTAL_MAX_MS = 60_000
SELECTOR_WAIT_MS = 1000
TOO_MANY_ACTIONS = f"Number of actions cannot exceed {ACTIONS_MAX}."
TOO_MUCH_WAITING = (
    "Total wait time (waitFor + wait actions) cannot exceed "
    f"{WAIT_TOTAL_MAX_MS // 1000} seconds."
)
SCREENSHOT_WIDTH_MAX, SCREENSHOT_HEIGHT_MAX = 7680, 4320

GOAL_REQUIRED_FOR_JUDGE = "judgeEnabled requires a non-empty goal."
GOAL_REQUIRED_FOR_SEARCH = (
    "A search target requires a non-empty goal (or set judgeEnabled to false)."
)

_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$")
_DOMAIN = re.compile(
    r"^(?=.{1,253}$)(?!-)[a-z0-9-]{1,63}(?<!-)(\.(?!-)[a-z0-9-]{1,63}(?<!-))+$"
)


def url_error(url: str) -> str | None:
    """Syntax of a URL we may fetch or post to; addresses are judged at connect."""
    return url_syntax_error(url)


def clean_goal(goal: str | None) -> str | None:
    goal = (goal or "").strip()
    return goal or None


def resolve_judge_enabled(
    *, goal_given: bool, goal: str | None, judge_enabled: bool | None, current: bool
) -> bool:
    """Rule 1: a goal given without judgeEnabled turns judging on. Giving an
    empty goal without judgeEnabled turns it off rather than failing rule 2."""
    if judge_enabled is not None:
        return judge_enabled
    if goal_given:
        return bool(goal)
    return current


def goal_rule_error(
    goal: str | None,
    judge_enabled: bool,
    target_types: Iterable[str],
    *,
    search_opt_out: bool,
) -> tuple[str, str] | None:
    """Rules 2 and 3 of the contract; returns (field, message) or None."""
    if judge_enabled and not goal:
        return "judgeEnabled", GOAL_REQUIRED_FOR_JUDGE
    if "search" in set(target_types) and not goal and not search_opt_out:
        return "goal", GOAL_REQUIRED_FOR_SEARCH
    return None


def domain_error(domain: str) -> str | None:
    if not _DOMAIN.match(domain):
        return (
            f"'{domain}' is not a hostname (give e.g. example.com, no scheme or path)."
        )
    return None


def header_name_error(name: str) -> str | None:
    if not _HEADER_NAME.match(name):
        return f"'{name[:64]}' is not a valid header name."
    lowered = name.lower()
    if lowered in RESERVED_HEADERS or lowered.startswith(RESERVED_HEADER_PREFIXES):
        return f"Header '{name}' is set by Pagewatch and cannot be overridden."
    return None


def header_value_error(value: str) -> str | None:
    if len(value) > HEADER_VALUE_MAX:
        return f"Header values must be at most {HEADER_VALUE_MAX} characters."
    if any(ch in value for ch in "\r\n\0"):
        return "Header values must not contain line breaks."
    return None


# --- Crawl path patterns ----------------------------------------------------------

_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False


def path_pattern(pattern: str) -> Any:
    """A crawl's includePaths/excludePaths entry, compiled with RE2 (linear
    time: no pattern can hang a worker). Raises ValueError with the reason for
    syntax RE2 does not have (backreferences, look-arounds)."""
    try:
        return re2.compile(pattern, _RE2_OPTIONS)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        if isinstance(reason, bytes):
            reason = reason.decode(errors="replace")
        raise ValueError(f"Not a pattern we can use: {reason}.") from None


# --- Page actions -------------------------------------------------------------------


def declared_wait_ms(wait_for: Any, actions: Any) -> int:
    """waitFor plus every wait action, in milliseconds, as Firecrawl counts
    them: a wait for a selector counts as SELECTOR_WAIT_MS."""
    total = _milliseconds(wait_for)
    for action in actions if isinstance(actions, list) else []:
        if not isinstance(action, dict) or action.get("type") != "wait":
            continue
        if action.get("milliseconds") is not None:
            total += _milliseconds(action.get("milliseconds"))
        elif action.get("selector"):
            total += SELECTOR_WAIT_MS
    return total


def actions_error(wait_for: Any, actions: Any) -> tuple[str, str] | None:
    """(option, message) when the actions, with waitFor, pass Firecrawl's
    limits: blamed on waitFor when it is what tips the total over."""
    actions = actions if isinstance(actions, list) else []
    if len(actions) > ACTIONS_MAX:
        return "actions", TOO_MANY_ACTIONS
    if declared_wait_ms(wait_for, actions) <= WAIT_TOTAL_MAX_MS:
        return None
    if declared_wait_ms(None, actions) > WAIT_TOTAL_MAX_MS:
        return "actions", TOO_MUCH_WAITING
    return "waitFor", TOO_MUCH_WAITING


def _milliseconds(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    return max(int(value), 0)
