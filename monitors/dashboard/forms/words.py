"""Plain words for the dashboard form: what each rule says to someone who has
never seen the API's field names.

The form is checked by the rules the API runs (monitors.dashboard.forms.checking),
and the API words what they find for programmers ("judgeEnabled requires a
non-empty goal.", "Ensure this field has at least 1 elements."). The form
shows, for the same problem (monitors.rules_problems.Problem):

* a rule of our own (monitors.rules.Rule): its `plain` wording, found by the
  problem's code — one rule, worded twice in one place; a schedule the API
  calls an invalid cron or unsupported text is, to the form, one it could not
  read, with phrases to try;
* a bound broken (blank, too long, too many, a number out of range, not a
  choice; the codes DRF gives the same failures): this module's words for
  that form field, with the limits from monitors.rules, so the numbers cannot
  drift apart;
* a pattern the pattern engine cannot read: what is wrong and where, in
  words, instead of the engine's reason ("missing ]: [abc");
* anything else (a URL, header or domain problem, a time of day that does not
  exist): the message as it is, which those rules already write in plain words,
  with the API's straight quotes around a name made “ ” as on the rest of the
  page.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from monitors import rules, rules_changes
from monitors.rules_problems import Problem
from monitors.schedule import ScheduleError

# DRF's codes for "nothing given" (a blank text, an empty list, a list shorter
# than its minimum), "too long" and "not a whole number in range".
_MISSING = frozenset({"required", "null", "blank", "empty", "min_length"})
_NUMBER = frozenset({"invalid", "min_value", "max_value", "max_string_length"})


@dataclass(frozen=True)
class Words:
    """What to say about one form field. `too_many` is for the list as a
    whole; `too_long` for one text (the field's, or one line of a list)."""

    missing: str = "Fill this in."
    too_many: str | None = None
    too_long: str = "This is too long."
    number: str | None = None
    choice: str = "Choose one of the listed options."


def _chars(limit: int, what: str = "This") -> str:
    return f"{what} can be at most {limit:,} characters long."


def _whole(unit: str, low: int, high: int, *, optional: bool = True) -> str:
    tail = ", or leave it empty." if optional else "."
    return f"Enter a whole number of {unit} from {low:,} to {high:,}{tail}"


_ADDRESS_TOO_LONG = _chars(rules.URL_MAX, "An address")

WORDS: dict[str, Words] = {
    # The monitor's own fields.
    "name": Words(
        missing="Give the monitor a name.",
        too_long=_chars(rules.NAME_MAX, "The name"),
    ),
    "targets": Words(
        missing="Add at least one thing to watch: pages, a website crawl or a "
        "web search.",
        too_many=f"A monitor can watch at most {rules.TARGETS_MAX} targets: "
        "spread them over several monitors.",
    ),
    # Its rule (rules.tags_error) words its problems plainly already.
    "tags": Words(
        too_many=f"A monitor can have at most {rules.MONITOR_TAGS_MAX} tags.",
        too_long=_chars(rules.TAG_NAME_MAX, "A tag"),
    ),
    "goal": Words(too_long=_chars(rules.GOAL_MAX, "The goal")),
    "ignore_lines": Words(
        too_many=f"At most {rules.IGNORE_LINES_MAX} lines to ignore.",
        too_long=_chars(rules.IGNORE_LINE_MAX, "A line to ignore"),
    ),
    "change_lines": Words(
        choice="Choose which lines count: added or removed, only added, or only "
        "removed."
    ),
    "change_containing": Words(
        too_many=f"At most {rules_changes.CONTAINING_MAX} words or phrases.",
        too_long=_chars(rules_changes.TEXT_MAX, "A word or phrase"),
    ),
    "change_appears": Words(too_long=_chars(rules_changes.TEXT_MAX, "The text")),
    "change_disappears": Words(too_long=_chars(rules_changes.TEXT_MAX, "The text")),
    "fetch_with": Words(
        choice="Choose how pages are loaded: automatically, always plainly or "
        "always in a browser."
    ),
    "channels": Words(
        too_many=f"A monitor can send to at most {rules.CHANNELS_MAX} channels.",
        choice="Choose from the team's channels.",
    ),
    "retention_days": Words(
        number=_whole("days", rules.RETENTION_MIN, rules.RETENTION_MAX)
    ),
    "webhook_url": Words(
        missing="Enter the address that should receive the webhook (or clear "
        "its headers and metadata).",
        too_long=_ADDRESS_TOO_LONG,
    ),
    "webhook_events": Words(
        missing="Choose at least one kind of message to send.",
        choice="Choose from the listed messages.",
    ),
    "webhook_headers": Words(too_long=_chars(rules.HEADER_VALUE_MAX, "A value")),
    "webhook_metadata": Words(too_long=_chars(rules.HEADER_VALUE_MAX, "A value")),
    "email_recipients": Words(
        too_many=f"At most {rules.RECIPIENTS_MAX} recipients.",
        too_long=_chars(rules.EMAIL_MAX, "An address"),
    ),
    # A target row's fields.
    "urls": Words(
        missing="Enter at least one page address.",
        too_many=f"At most {rules.URLS_PER_TARGET_MAX} addresses in one “Pages” "
        "target: add another one for more.",
        too_long=_ADDRESS_TOO_LONG,
    ),
    "url": Words(
        missing="Enter the address to start from.", too_long=_ADDRESS_TOO_LONG
    ),
    "limit": Words(
        number=_whole("pages", rules.CRAWL_LIMIT_MIN, rules.CRAWL_LIMIT_MAX)
    ),
    "depth": Words(number=_whole("clicks", 0, rules.CRAWL_DEPTH_MAX)),
    "include_paths": Words(
        too_many=f"At most {rules.PATHS_MAX} patterns.",
        too_long=_chars(rules.PATH_MAX, "A pattern"),
    ),
    "exclude_paths": Words(
        too_many=f"At most {rules.PATHS_MAX} patterns.",
        too_long=_chars(rules.PATH_MAX, "A pattern"),
    ),
    "queries": Words(
        missing="Enter at least one search.",
        too_many=f"At most {rules.QUERIES_MAX} searches.",
        too_long=_chars(rules.QUERY_MAX, "A search"),
    ),
    "search_window": Words(choice="Choose one of the listed time spans."),
    "max_results": Words(
        number=_whole(
            "results", rules.MAX_RESULTS_MIN, rules.MAX_RESULTS_MAX, optional=False
        )
    ),
    "include_domains": Words(
        too_many=f"At most {rules.DOMAINS_MAX} sites.",
        too_long=_chars(rules.DOMAIN_MAX, "A host name"),
    ),
    "exclude_domains": Words(
        too_many=f"At most {rules.DOMAINS_MAX} sites.",
        too_long=_chars(rules.DOMAIN_MAX, "A host name"),
    ),
    "include_tags": Words(
        too_many=f"At most {rules.TAGS_MAX} tags or selectors.",
        too_long=_chars(rules.TAG_MAX, "A tag or selector"),
    ),
    "exclude_tags": Words(
        too_many=f"At most {rules.TAGS_MAX} tags or selectors.",
        too_long=_chars(rules.TAG_MAX, "A tag or selector"),
    ),
    "headers": Words(too_long=_chars(rules.HEADER_VALUE_MAX, "A value")),
    "timeout": Words(
        number=_whole("milliseconds", rules.TIMEOUT_MIN, rules.TIMEOUT_MAX)
    ),
    "wait_for": Words(number=_whole("milliseconds", 0, rules.WAIT_FOR_MAX)),
}


class _Quoted(dict[str, str]):
    """What a person typed, for a rule's words; a name it lacks is left out."""

    def __missing__(self, key: str) -> str:
        return ""


def plain(field: str, issue: Problem, typed: Mapping[str, str] | None = None) -> str:
    """The form's words for a problem that landed on `field`. `typed` holds
    what the person typed that a rule's words quote (the schedule's `zone`)."""
    code, message = issue.code, issue.message
    rule = rules.RULES.get(code)
    if rule is not None:
        return rule.plain.format_map(_Quoted(typed or {}))
    words = WORDS.get(field, Words())
    if code in _NUMBER and words.number:
        return words.number
    if code in _MISSING:
        return words.missing
    if code == "max_length":
        path = issue.path
        one_line = bool(path) and isinstance(path[-1], int)
        return words.too_many if words.too_many and not one_line else words.too_long
    if code == "invalid_choice":
        return words.choice
    if code in ("null_characters_not_allowed", "surrogate_characters_not_allowed"):
        return "This contains a character that cannot be used here."
    if message.startswith(rules.PATTERN_UNUSABLE):
        return pattern_problem(message.removeprefix(rules.PATTERN_UNUSABLE))
    return rules.curly_quotes(message)


# RE2's reasons, by what comes before the piece of pattern it points at.
_PATTERN_WORDS = {
    "missing ]": "“{where}” opens a “[” that is never closed",
    "missing )": "“{where}” opens a “(” that is never closed",
    "unexpected )": "a “)” in “{where}” closes nothing",
    "invalid perl operator": (
        "“{where}” is not supported here (no look-arounds or back-references)"
    ),
    "invalid escape sequence": "“{where}” is not a backslash sequence we know",
    "invalid repetition size": "the count in “{where}” is not possible",
    "bad repetition operator": "“{where}” repeats a repeat",
    "no argument for repetition operator": "“{where}” has nothing before it to repeat",
    "invalid character class range": "“{where}” is not a range of characters we know",
    "invalid character class": "“{where}” is not a set of characters we know",
}


def pattern_problem(reason: str) -> str:
    """A pattern the engine could not read: that it is not valid, and where."""
    reason = reason.removesuffix(".")
    kind, _, where = reason.partition(": ")
    if kind == "invalid escape sequence" and re.fullmatch(r"\\\d", where):
        detail = f"“{where}” is not supported here (no back-references)"
    elif kind == "trailing \\":
        detail = "it ends with a lone “\\”"
    elif kind in _PATTERN_WORDS and where:
        detail = _PATTERN_WORDS[kind].format(where=where)
    else:
        detail = f"it cannot be read ({reason})"
    return f"This pattern is not valid: {detail}."


# 'Host' or "it's" around a name, not an apostrophe inside a word.
def schedule_problem(error: ScheduleError) -> str:
    """The form's words for a schedule that could not be used, with what the
    person typed that the rule's words quote."""
    issue = Problem(("schedule",), error.code, error.message)
    return plain("schedule", issue, error.values)
