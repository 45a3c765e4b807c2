"""The one set of monitor rules. The REST serializers and the dashboard forms
both call these (and monitors.rules_monitor, the rules about a monitor as a
whole), so the browser and the API can never disagree.

A rule of our own that a person can break is a `Rule`, worded twice from one
place: for API clients, in the contract's field names, and for the dashboard,
in the words of its form (monitors.dashboard.forms.words words every other
problem, by its code, with the limits below)."""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import idna
import re2
from selectolax.lexbor import LexborHTMLParser, SelectolaxError

from monitors.rules_problems import unstorable_problem

NAME_MAX = 256
GOAL_MAX = 2000
SCHEDULE_MAX, TIMEZONE_MAX = 128, 64
TARGETS_MIN, TARGETS_MAX = 1, 50
URLS_PER_TARGET_MAX = 500
URL_MAX = 2048
RETENTION_MIN, RETENTION_MAX, RETENTION_DEFAULT = 1, 365, 30
CRAWL_LIMIT_MIN, CRAWL_LIMIT_MAX, CRAWL_DEPTH_MAX = 1, 10_000, 100
PATHS_MAX, PATH_MAX = 100, 512
TAGS_MAX, TAG_MAX = 100, 256
TIMEOUT_MIN, TIMEOUT_MAX, WAIT_FOR_MAX = 1000, 300_000, 60_000
DOMAIN_MAX, EMAIL_MAX = 253, 254
RECIPIENTS_MAX = 25
CHANNELS_MAX = 50
QUERIES_MAX, QUERY_MAX = 12, 256
MAX_RESULTS_MIN, MAX_RESULTS_MAX, MAX_RESULTS_DEFAULT = 1, 50, 10
DOMAINS_MAX = 50
SEARCH_WINDOWS = ("5m", "15m", "1h", "6h", "24h", "7d")
SEARCH_WINDOW_DEFAULT = "24h"
# How the dashboard says each window.
SEARCH_WINDOW_LABELS = {
    "5m": "Last 5 minutes",
    "15m": "Last 15 minutes",
    "1h": "Last hour",
    "6h": "Last 6 hours",
    "24h": "Last 24 hours",
    "7d": "Last 7 days",
}
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
SCREENSHOT_WIDTH_MAX, SCREENSHOT_HEIGHT_MAX = 7680, 4320
# "Until I unmute": a mute with no end is stored as this far-future moment,
# so "is it muted?" stays one comparison (muted_until > now) everywhere; a
# later moment asked for is this one.
MUTED_FOREVER = datetime(9999, 12, 31, tzinfo=UTC)


@dataclass(frozen=True)
class Rule:
    """One rule, worded for API clients (`api`, which names fields as the
    contract does) and for people using the dashboard (`plain`). `code` is
    what travels with the API's error, so the form can find the rule again."""

    code: str
    api: str
    plain: str

    def api_message(self, **values: object) -> str:
        """The API's words, with the `{name}` fields its text names filled in."""
        return self.api.format(**values) if values else self.api


GOAL_REQUIRED_FOR_JUDGE = Rule(
    "goal_required_for_judge",
    "judgeEnabled requires a non-empty goal.",
    "Write a goal for the AI to judge changes against, or choose "
    "“No, report every change”.",
)
GOAL_REQUIRED_FOR_SEARCH = Rule(
    "goal_required_for_search",
    "A search target requires a non-empty goal (or set judgeEnabled to false).",
    "A web search needs a goal that says what you are looking for (or choose "
    "“No, report every change”).",
)
DOMAINS_EXCLUSIVE = Rule(
    "domains_exclusive",
    "includeDomains and excludeDomains are mutually exclusive.",
    "Fill in either “Only these sites” or “Never these sites”, not both.",
)
TARGET_IDS_UNIQUE = Rule(
    "duplicate_target_id",
    "Target ids must be unique within a monitor.",
    "The same target is in the form twice: remove one of them.",
)
SCHEDULE_MISSING = Rule(
    "schedule_missing",
    "Schedule must include either cron or text.",
    "Enter a schedule, for example “every 30 minutes” or “daily at 9:00”.",
)
# A schedule nobody can read. The API keeps saying exactly what is wrong with
# the cron or the phrase; the form says what to type instead, the same way for
# every one of them, since the people using it never chose to write cron.
SCHEDULE_UNREADABLE_PLAIN = (
    "We could not read this schedule. Try “every 30 minutes”, “every weekday at "
    "9am” or “daily at 6pm”."
)
SCHEDULE_TEXT_UNSUPPORTED = Rule(
    "schedule_text_unsupported",
    "Unsupported schedule text. Try phrases like 'every 30 minutes', 'hourly', "
    "'every 2 hours', 'daily at 9:00', 'every weekday at 9am' or 'weekly'.",
    SCHEDULE_UNREADABLE_PLAIN,
)
CRON_FIELD_COUNT = Rule(
    "cron_field_count",
    "Cron expression must contain five fields",
    SCHEDULE_UNREADABLE_PLAIN,
)
# {cron} and {reason} are filled in by monitors.schedule.
CRON_INVALID = Rule(
    "cron_invalid",
    "Invalid cron expression '{cron}': {reason}.",
    SCHEDULE_UNREADABLE_PLAIN,
)
CRON_NEVER_RUNS = Rule(
    "cron_never_runs",
    "Cron expression '{cron}' does not run within the next {years} years, the "
    "longest wait Pagewatch accepts.",
    "This schedule would not run for years, if ever: check its day and month.",
)
# {unit} is "minute" or "5 minutes" (MIN_SCHEDULE_INTERVAL_MINUTES).
SCHEDULE_TOO_OFTEN = Rule(
    "schedule_too_often",
    "Schedule must not run more often than every {unit}",
    "Checks can run at most once every {unit}: choose a longer gap.",
)
# {zone} is the name as the person typed it (the form's own value); {hint}
# names the zones it may have meant (schedule.timezone_hint), or is empty.
TIMEZONE_UNKNOWN = Rule(
    "timezone_unknown",
    "Invalid schedule timezone: {zone}",
    "“{zone}” is not a time zone we know: {hint}pick one from the list.",
)
TOO_MANY_ACTIONS = Rule(
    "too_many_actions",
    f"Number of actions cannot exceed {ACTIONS_MAX}.",
    f"A page can have at most {ACTIONS_MAX} steps to perform.",
)
TOO_MUCH_WAITING = Rule(
    "too_much_waiting",
    "Total wait time (waitFor + wait actions) cannot exceed "
    f"{WAIT_TOTAL_MAX_MS // 1000} seconds.",
    "Waiting before reading the page and the waits among its steps may add up "
    f"to {WAIT_TOTAL_MAX_MS // 1000} seconds at most: wait less.",
)
BROWSER_NEEDED = Rule(
    "browser_needed",
    '"http" never opens a browser, and a target asks for what only a browser '
    "can do (waitFor, actions, screenshots, mobile, location.languages): use "
    '"auto" or "browser".',
    "Some pages ask to wait, to perform steps, for a screenshot or to look like "
    "a phone, and only a browser can do that: choose “Automatically” or "
    "“Always in a real browser”.",
)
MUTE_IN_THE_PAST = Rule(
    "mute_in_the_past",
    "mutedUntil must be in the future; send null to unmute.",
    "That moment has passed: choose how long to mute, or unmute.",
)
RULES = {
    rule.code: rule
    for rule in (
        MUTE_IN_THE_PAST,
        BROWSER_NEEDED,
        GOAL_REQUIRED_FOR_JUDGE,
        GOAL_REQUIRED_FOR_SEARCH,
        DOMAINS_EXCLUSIVE,
        TARGET_IDS_UNIQUE,
        SCHEDULE_MISSING,
        SCHEDULE_TEXT_UNSUPPORTED,
        CRON_FIELD_COUNT,
        CRON_INVALID,
        CRON_NEVER_RUNS,
        SCHEDULE_TOO_OFTEN,
        TIMEZONE_UNKNOWN,
        TOO_MANY_ACTIONS,
        TOO_MUCH_WAITING,
    )
}

_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}")
# Visible ASCII, space and tab: what a header value can hold unencoded.
_HEADER_VALUE = re.compile(r"[\t\x20-\x7e]*")
_DOMAIN = re.compile(
    r"^(?=.{1,253}$)(?!-)[a-z0-9-]{1,63}(?<!-)(\.(?!-)[a-z0-9-]{1,63}(?<!-))+$"
)

# What a search query may not hold: control characters (C0, DEL, C1), which
# no one searches for and providers read each their own way; the line and
# paragraph separators, which split a query into lines in the form's box (and
# for some providers) but not in the API; and the bidirectional embeddings,
# overrides and isolates, which make a query read on screen other than what
# is searched for. The direction marks (U+200E, U+200F, U+061C) stay allowed:
# ordinary in right-to-left text, they only place a neutral character.
_QUERY_REFUSED = re.compile(
    r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
)


def mute_rule(until: datetime | None, now: datetime) -> Rule | None:
    """A mute ends after now (None unmutes): one already over would
    look saved and mute nothing."""
    if until is not None and until <= now:
        return MUTE_IN_THE_PAST
    return None


def clean_muted_until(until: datetime | None) -> datetime | None:
    """The moment stored: one past MUTED_FOREVER is MUTED_FOREVER."""
    return None if until is None else min(until, MUTED_FOREVER)


def clean_ignore_lines(entries: Iterable[str]) -> list[str]:
    """Entries trimmed, blank ones dropped, each kept once (in order)."""
    return list(dict.fromkeys(e.strip() for e in entries if e.strip()))


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
    needs_goal: bool,
    *,
    search_opt_out: bool,
) -> tuple[str, Rule] | None:
    """Rules 2 and 3 of the contract; returns (field, rule) or None.
    `needs_goal`: a target's kind needs one (a web search)."""
    if judge_enabled and not goal:
        return "judgeEnabled", GOAL_REQUIRED_FOR_JUDGE
    if needs_goal and not goal and not search_opt_out:
        return "goal", GOAL_REQUIRED_FOR_SEARCH
    return None


def ascii_domain(domain: str) -> str:
    """A host name written in letters (bücher.de) in its ASCII form
    (xn--bcher-kva.de): the one form domain rules are kept and compared in,
    as a search result's host is (checks.search.canonical.host_of, which
    calls this). A name IDNA cannot read (an overlong label, a symbol) is
    kept as given, for domain_error to refuse. IDNA 2008 with UTS 46, as
    httpx and browsers read names: Python's "idna" codec (IDNA 2003) writes
    faß.example as fass.example, another site."""
    if domain.isascii():
        return domain
    try:
        return idna.encode(domain, uts46=True).decode("ascii")
    except UnicodeError:  # idna.IDNAError is one
        return domain


def unicode_domain(domain: str) -> str:
    """A host name as people write it (bücher.de), from the ASCII form it is
    kept in (xn--bcher-kva.de): what the dashboard shows. A name IDNA 2008
    cannot read back is shown as it is kept, and so is each label whose
    letters mix scripts, as browsers do: xn--pple-43d.com read in letters
    would be "apple.com" with a Cyrillic "а". So too a label wholly of
    letters of another script that look Latin, under a TLD that is not that
    script's: xn--80ak6aa92e.com would read "аррӏе.com", xn--vxaj.com
    "οκ.com"."""
    if "xn--" not in domain.lower():
        return domain
    try:
        decoded = idna.decode(domain)
    except UnicodeError:  # idna.IDNAError is one
        return domain
    labels, shown = domain.split("."), decoded.split(".")
    if len(labels) != len(shown):
        return domain
    return ".".join(
        letters
        if _one_script(letters) and not _reads_as_latin(letters, shown[-1])
        else label
        for label, letters in zip(labels, shown, strict=True)
    )


# Letters of a script that look like Latin ones, and the TLDs of the
# countries that write it, as Chrome's IDN display policy has them (its
# whole-script confusables; ց, which reads "g", added): a label written
# wholly in one script's such letters ("аррӏе", "οκ", "ցօօց") reads as a
# Latin word ("apple", "ok", "google" without its l and e) with no other
# script beside it to give it away, so under any other TLD it is shown in
# its xn-- form. Under a TLD written in that script (.рф, .ελ, .հայ) or of
# those countries it is a real name, shown in letters.
_LATIN_LOOKALIKES = {
    "CYRILLIC": (
        frozenset("асԁеһіјӏорԛѕԝхуъьҽпгѵѡ"),
        frozenset({"bg", "by", "kz", "pyc", "ru", "su", "ua", "uz"}),
    ),
    "GREEK": (frozenset("αικνρυωηοτ"), frozenset({"gr"})),
    "ARMENIAN": (frozenset("ագզէլհյոսւօՙց"), frozenset({"am"})),
}


def _reads_as_latin(label: str, tld: str) -> bool:
    """Whether every letter of `label` is one of a script's that look Latin
    (digits and hyphens, common to all scripts, aside), under a TLD that is
    not of that script."""
    letters = [char for char in label if unicodedata.category(char).startswith("L")]
    if not letters:
        return False
    script = _script_of(letters[0])
    lookalikes, tlds = _LATIN_LOOKALIKES.get(script, (frozenset(), frozenset()))
    if not all(char in lookalikes for char in letters):
        return False
    in_its_script = any(
        _script_of(char) == script
        for char in tld
        if unicodedata.category(char).startswith("L")
    )
    return not in_its_script and tld.lower() not in tlds


# Scripts written together in one word (Unicode's "highly restrictive" level,
# UTS 39): Japanese mixes Han, hiragana and katakana; Chinese uses bopomofo,
# Korean hangul with Han; any of them Latin. Any other mix is refused.
_SCRIPTS_WRITTEN_TOGETHER = (
    frozenset({"LATIN", "HAN", "HIRAGANA", "KATAKANA"}),
    frozenset({"LATIN", "HAN", "BOPOMOFO"}),
    frozenset({"LATIN", "HAN", "HANGUL"}),
)
# Words that start the Unicode names of letters of a script named otherwise:
# Han ideographs and marks, and the long vowel mark of both kana.
_SCRIPT_OF_NAME = {"CJK": "HAN", "IDEOGRAPHIC": "HAN", "KATAKANA-HIRAGANA": "KATAKANA"}


def _one_script(label: str) -> bool:
    """Whether every letter of `label` is of one script (or of scripts
    written together, see above). Digits, hyphens and other non-letters are
    common to all scripts, and combining marks take their letter's. A
    letter's script is the first word of its Unicode name ("CYRILLIC SMALL
    LETTER A"): the standard library has no script property, and a letter
    named otherwise ("MODIFIER LETTER …") counts as a script of its own, so
    a doubt keeps the ASCII form."""
    scripts = {
        _script_of(char) for char in label if unicodedata.category(char).startswith("L")
    }
    return len(scripts) <= 1 or any(
        scripts <= together for together in _SCRIPTS_WRITTEN_TOGETHER
    )


def _script_of(letter: str) -> str:
    word = unicodedata.name(letter, "UNNAMED").split()[0]
    return _SCRIPT_OF_NAME.get(word, word)


def domain_error(domain: str) -> str | None:
    if not _DOMAIN.match(ascii_domain(domain)):
        return (
            f"'{domain}' is not a hostname (give e.g. example.com, no scheme or path)."
        )
    return None


def query_error(query: str) -> str | None:
    """Why a search query cannot be searched for, naming the character by
    its place (counted from 1, as people count), or None."""
    found = _QUERY_REFUSED.search(query)
    if found is None:
        return None
    return (
        f"Character {found.start() + 1} of this search is an invisible control "
        f"character (U+{ord(found[0]):04X}): remove it."
    )


def header_name_error(name: str) -> str | None:
    """The one rule for a header name a user gives (scrapeOptions.headers and
    webhook.headers alike): an HTTP token, so it cannot smuggle a line break
    or a second header into the request."""
    if not _HEADER_NAME.fullmatch(name):
        return (
            f"{_shown(name)} is not a valid header name: use letters, digits and "
            "hyphens, e.g. X-Team."
        )
    return None


def webhook_header_name_error(name: str) -> str | None:
    """header_name_error, plus the headers Pagewatch sets on every delivery."""
    problem = header_name_error(name)
    if problem:
        return problem
    lowered = name.lower()
    if lowered in RESERVED_HEADERS or lowered.startswith(RESERVED_HEADER_PREFIXES):
        return f"Header '{name}' is set by Pagewatch and cannot be overridden."
    return None


def header_value_error(name: str, value: str) -> str | None:
    """The one rule for a header value: something HTTP can carry as it is.
    Outside printable ASCII a value cannot be encoded (httpx, like browsers'
    fetch(), refuses it), so every request with it would fail later."""
    if len(value) > HEADER_VALUE_MAX:
        return (
            f"The value of header {_shown(name)} must be at most "
            f"{HEADER_VALUE_MAX} characters."
        )
    if any(ch in value for ch in "\r\n\0"):
        return f"The value of header {_shown(name)} must not contain line breaks."
    if not _HEADER_VALUE.fullmatch(value):
        odd = next(ch for ch in value if not _HEADER_VALUE.fullmatch(ch))
        return (
            f"The value of header {_shown(name)} cannot be sent: {odd!r} is not "
            "a plain ASCII character."
        )
    return None


def css_selector_error(selector: str) -> str | None:
    """Why an includeTags/excludeTags entry cannot be used, or None. Read by
    the parser that applies it on every check (checks.content.clean), so a
    selector it cannot read is refused when saved rather than failing every
    check. Blank entries are skipped when applied, so they pass."""
    if not selector.strip():
        return None
    try:
        LexborHTMLParser("<p></p>").css(selector)
    except SelectolaxError:
        return (
            f"{_shown(selector)} is not a CSS selector Pagewatch can read "
            "(e.g. main, .price, #content, article p)."
        )
    return None


# --- JSON Schemas of extraction formats -------------------------------------------

_REFERENCE_KEYS = ("$ref", "$dynamicRef", "$recursiveRef")


def schema_reference_error(schema: Any, path: str = "schema") -> str | None:
    """Why a JSON Schema given for extraction points outside itself, or None.

    A reference to another document would make the validator fetch it with a
    client of its own, past the address policy; only references inside the
    schema (`#/$defs/price`) are kept, and `$schema` may only name a JSON
    Schema dialect the validator knows (it is never fetched either)."""
    for where, key, value in _schema_items(schema, path):
        if not isinstance(value, str):
            continue
        if key in _REFERENCE_KEYS and not value.startswith("#"):
            return (
                f"{where} must point inside the schema (e.g. #/$defs/name): "
                "references to other documents are not fetched."
            )
        if key == "$schema" and not _known_dialect(value):
            return (
                f"{where} {value[:200]!r} is not a JSON Schema draft we know: name "
                "one (draft-04, draft-06, draft-07, 2019-09 or 2020-12, e.g. "
                "https://json-schema.org/draft/2020-12/schema) or leave it out."
            )
    return None


def _schema_items(
    value: Any, path: str, parents: set[int] | None = None
) -> Iterator[tuple[str, str, Any]]:
    """Every key of a schema at any depth, in order, as (path, key, value);
    with `parents` (id()s, see _schemas_read) only the keys of those objects."""
    if isinstance(value, list):
        for index, item in enumerate(value):
            yield from _schema_items(item, f"{path}[{index}]", parents)
    elif isinstance(value, Mapping):
        for key, item in value.items():
            where = f"{path}.{key}"
            if parents is None or id(value) in parents:
                yield where, key, item
            yield from _schema_items(item, where, parents)


SCHEMA_ID_UNREADABLE = (
    "the schema's $id/$schema cannot be read: an $id (or, under an older $schema, "
    "an id) must be an address such as https://example.com/price.json, or be "
    "left out."
)
# What the referencing library raises, besides Unresolvable, for an address
# it cannot read: urllib's ValueError for "http://[::1", int()'s for a JSON
# pointer that steps into a list by a word ("#/enum/x"), AttributeError or
# TypeError for a draft-4 `id` that is no string. jsonschema's check_schema
# (the 2020-12 meta-schema) lets each of these through.
_ADDRESS_ERRORS = (ValueError, AttributeError, TypeError)


class _IdUnreadable(Exception):
    """An $id (or id) of the schema cannot be read as an address."""


def _refusing_unreadable_ids[**P](
    check: Callable[P, str | None],
) -> Callable[P, str | None]:
    """A schema check that says SCHEMA_ID_UNREADABLE, rather than crash, for a
    schema whose references cannot be followed from its $id."""

    @functools.wraps(check)
    def checked(*args: P.args, **kwargs: P.kwargs) -> str | None:
        try:
            return check(*args, **kwargs)
        except _IdUnreadable:
            return SCHEMA_ID_UNREADABLE

    return checked


def _resolving(schema: Mapping[str, Any]) -> tuple[Any, Any, Any]:
    """(the schema's dialect, its root resource, a resolver at the root) for
    following its references as the validator does, with an empty registry:
    nothing is ever fetched. Raises _IdUnreadable."""
    import referencing
    from referencing.jsonschema import DRAFT202012, specification_with

    dialect = schema.get("$schema")
    specification = specification_with(
        dialect if isinstance(dialect, str) else "", default=DRAFT202012
    )
    base = "urn:pagewatch:extraction-schema"
    root = specification.create_resource(schema)
    try:
        registry = referencing.Registry().with_resource(base, root).crawl()
    except _ADDRESS_ERRORS as exc:
        raise _IdUnreadable from exc
    return specification, root, registry.resolver(base_uri=base)


def _entering(resolver: Any, resource: Any) -> Any:
    """The resolver inside `resource` (its $id, if any, moves the base).
    Raises _IdUnreadable."""
    try:
        return resolver.in_subresource(resource)
    except _ADDRESS_ERRORS as exc:
        raise _IdUnreadable from exc


def _lookup(resolver: Any, reference: str) -> Any:
    """What `reference` points to, as the validator finds it, or None when it
    points to nothing in the schema (or is no address that could)."""
    import referencing.exceptions

    try:
        return resolver.lookup(reference)
    except (referencing.exceptions.Unresolvable, *_ADDRESS_ERRORS):
        return None


@_refusing_unreadable_ids
def schema_dangling_reference_error(schema: Mapping[str, Any]) -> str | None:
    """Why a JSON Schema's reference inside itself leads nowhere, or None.

    Answers are validated against the schema on every check; a reference to a
    definition that is not there fails each of them, so no answer could ever
    fit. Resolved as the validator resolves them (a nested $id moves the base),
    with an empty registry: nothing is ever fetched. Call it on a valid schema
    without references to other documents (schema_reference_error)."""
    _, root, resolver = _resolving(schema)
    waiting = [(root, resolver)]
    while waiting:
        resource, resolver = waiting.pop()
        for key in _REFERENCE_KEYS:
            reference = (
                resource.contents.get(key)
                if isinstance(resource.contents, Mapping)
                else None
            )
            if isinstance(reference, str) and _lookup(resolver, reference) is None:
                return (
                    f"schema.{key} {reference[:200]!r} points to nothing inside the "
                    "schema (no answer could fit it)."
                )
        waiting.extend(
            (sub, _entering(resolver, sub)) for sub in resource.subresources()
        )
    return None


@_refusing_unreadable_ids
def schema_pattern_error(schema: Any, path: str = "schema") -> str | None:
    """Why a regex of a JSON Schema given for extraction cannot be used, or
    None. Answers are checked with RE2 (checks.ai.patterns), which matches in
    linear time and has no look-arounds or backreferences. Only where the
    validator reads keywords: a field named patternProperties (a key under
    `properties`) holds no patterns."""
    read = _schemas_read(schema) if isinstance(schema, Mapping) else set()
    for where, key, value in _schema_items(schema, path, parents=read):
        found = (
            [value]
            if key == "pattern" and isinstance(value, str)
            else list(value)
            if key == "patternProperties" and isinstance(value, Mapping)
            else []
        )
        for pattern in found:
            try:
                path_pattern(pattern)
            except ValueError as exc:
                return f"{where}: {exc}"
    return None


@_refusing_unreadable_ids
def schema_unevaluated_properties_error(schema: Any) -> str | None:
    """Why a JSON Schema given for extraction combines `unevaluatedProperties`
    with `patternProperties`, or None.

    To find the keys `patternProperties` took, jsonschema matches its
    patterns with Python's backtracking `re`, which an answer (steered by the
    page read) can hold for hours; answers' patterns are matched with RE2
    only (checks.ai.patterns). Anywhere in the schema counts, as references,
    allOf, if/then and the rest can bring the two together; but only where
    the validator reads keywords, so a field named unevaluatedProperties
    (a key under `properties`) is no keyword."""
    if not isinstance(schema, Mapping):
        return None
    read = _schemas_read(schema)
    # The first of each in the schema's own order, for the message.
    found: dict[str, str] = {}
    for where, key, _ in _schema_items(schema, "schema", parents=read):
        if key in ("unevaluatedProperties", "patternProperties"):
            found.setdefault(key, where)
    if "patternProperties" not in found or "unevaluatedProperties" not in found:
        return None
    return (
        f"{found['unevaluatedProperties']} cannot be used in a schema with "
        "patternProperties (checking which keys those patterns took could take "
        "hours on some answers); use additionalProperties instead."
    )


def _schemas_read(schema: Mapping[str, Any]) -> set[int]:
    """The id() of every object in `schema` the validator may read as a
    schema: its subschemas, as the dialect places them, and whatever a
    reference points to, which can be any part of it (`#/properties`,
    `#/enum/0`) and the subschemas of that. Resolved as
    schema_dangling_reference_error resolves them (nothing is fetched); a
    reference that leads nowhere is never read. Raises _IdUnreadable."""
    specification, root, resolver = _resolving(schema)
    read: set[int] = set()
    waiting = [(root, resolver)]
    while waiting:
        resource, resolver = waiting.pop()
        contents = resource.contents
        if not isinstance(contents, Mapping) or id(contents) in read:
            continue
        read.add(id(contents))
        for key in _REFERENCE_KEYS:
            reference = contents.get(key)
            resolved = (
                _lookup(resolver, reference) if isinstance(reference, str) else None
            )
            if resolved is None:
                continue
            # A lookup's resolver stands in its target already.
            target = specification.create_resource(resolved.contents)
            waiting.append((target, resolved.resolver))
        waiting.extend(
            (sub, _entering(resolver, sub)) for sub in resource.subresources()
        )
    return read


# Keywords that apply a schema to the same value, not to a part of it: a loop
# of references through them alone never reaches the end of any answer.
_IN_PLACE_ONE = ("not", "if", "then", "else")
_IN_PLACE_MANY = ("allOf", "anyOf", "oneOf")
# Far more than any real schema chains, far less than Python's stack holds.
IN_PLACE_STEPS_MAX = 50


@_refusing_unreadable_ids
def schema_reference_loop_error(schema: Mapping[str, Any]) -> str | None:
    """Why a JSON Schema's references lead back where they started without
    reading any part of the answer (`{"$ref": "#"}`), or None.

    The validator would follow such a loop until Python's recursion limit on
    every answer. A reference reached again one level down the answer (a
    tree's `children`) is no loop. Resolved as schema_dangling_reference_error
    resolves them (nothing is ever fetched); call it after that one."""
    specification, root, root_resolver = _resolving(schema)
    # id() of each schema on the current path of in-place steps, and the
    # longest in-place path from each schema whose every path ends.
    on_path: set[int] = set()
    longest: dict[int, int] = {}
    too_many = (
        f"schema's references lead from one to the next more than "
        f"{IN_PLACE_STEPS_MAX} times in a row (no answer could be checked against "
        "it)."
    )

    def steps_from(contents: Any, resolver: Any, entered: bool) -> int:
        """The longest in-place path from here; raises ValueError when one
        never ends or is longer than the validator can follow."""
        if not isinstance(contents, Mapping):
            return 0
        if id(contents) in longest:
            return longest[id(contents)]
        if len(on_path) > IN_PLACE_STEPS_MAX:
            raise ValueError(too_many)
        if not entered:  # a lookup's resolver stands in its target already
            resolver = _entering(resolver, specification.create_resource(contents))
        on_path.add(id(contents))
        most = 0
        for target, its_resolver, reference in _in_place(contents, resolver):
            if reference is not None and id(target) in on_path:
                # Only a reference can lead back up the schema.
                raise ValueError(
                    f"schema.{reference} leads back to itself without reading "
                    "any part of the answer (no answer could be checked "
                    "against it)."
                )
            most = max(most, 1 + steps_from(target, its_resolver, bool(reference)))
        if most > IN_PLACE_STEPS_MAX:
            raise ValueError(too_many)
        on_path.discard(id(contents))
        longest[id(contents)] = most
        return most

    waiting = [(root, root_resolver)]
    while waiting:
        resource, its_resolver = waiting.pop()
        try:
            steps_from(resource.contents, its_resolver, True)
        except ValueError as unusable:
            return str(unusable)
        waiting.extend(
            (sub, _entering(its_resolver, sub)) for sub in resource.subresources()
        )
    return None


def _in_place(
    contents: Mapping[str, Any], resolver: Any
) -> list[tuple[Any, Any, str | None]]:
    """The schemas `contents` applies to the same value: (schema, its
    resolver, the reference that leads to it or None for a subschema)."""
    steps: list[tuple[Any, Any, str | None]] = []
    for key in _REFERENCE_KEYS:
        reference = contents.get(key)
        found = _lookup(resolver, reference) if isinstance(reference, str) else None
        # One that leads nowhere is said by schema_dangling_reference_error.
        if found is not None:
            steps.append((found.contents, found.resolver, f"{key} {reference[:200]!r}"))
    subschemas = [contents.get(key) for key in _IN_PLACE_ONE]
    for key in _IN_PLACE_MANY:
        many = contents.get(key)
        subschemas += many if isinstance(many, list) else []
    dependent = contents.get("dependentSchemas")
    if isinstance(dependent, Mapping):
        subschemas += list(dependent.values())
    steps += [(sub, resolver, None) for sub in subschemas if isinstance(sub, Mapping)]
    return steps


def _known_dialect(uri: str) -> bool:
    from referencing.jsonschema import UnknownDialect, specification_with

    try:
        specification_with(uri)
    except UnknownDialect:
        return False
    return True


# --- Crawl path patterns ----------------------------------------------------------

# What path_pattern says before RE2's own reason ("missing ]: [abc"), which
# the dashboard says in plain words (monitors.dashboard.forms.words).
PATTERN_UNUSABLE = "Not a pattern we can use: "
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
        raise ValueError(f"{PATTERN_UNUSABLE}{reason}.") from None


# --- The noise rule (a monitor's ignoreLines) -------------------------------------
# Applied by checks.content.noise: a page line matching an entry is left out
# before comparing and judging. An entry is plain text, matched anywhere in a
# line whatever its case, or an RE2 pattern between slashes: /^\d+ views$/.

IGNORE_LINES_MAX = 50
IGNORE_LINE_MAX = 300


def ignore_line_regex(entry: str) -> str | None:
    """The pattern of a ``/.../`` entry, None for plain text."""
    entry = entry.strip()
    if len(entry) >= 3 and entry.startswith("/") and entry.endswith("/"):
        return entry[1:-1]
    return None


def ignore_line_error(entry: str) -> str | None:
    """Why an ignoreLines entry cannot be used (fit to show a user), or None."""
    if not entry.strip():
        return "Empty entries are not allowed."
    if (problem := unstorable_problem(entry)) is not None:
        return problem.message
    if len(entry) > IGNORE_LINE_MAX:
        return f"Each entry must be at most {IGNORE_LINE_MAX} characters."
    pattern = ignore_line_regex(entry)
    if pattern is None:
        return None
    try:
        path_pattern(pattern)
    except ValueError as exc:
        return str(exc)
    return None


def ignore_lines_with(entries: list[str], added: Iterable[str]) -> list[str]:
    """`entries` with `added` after them, by the rules the form and the API
    apply to the whole list; raises ValueError with words fit to show."""
    for entry in added:
        if (problem := ignore_line_error(entry)) is not None:
            raise ValueError(problem)
    combined = clean_ignore_lines([*entries, *added])
    if len(combined) > IGNORE_LINES_MAX:
        raise ValueError(f"At most {IGNORE_LINES_MAX} lines to ignore.")
    return combined


# ---------------------------------------------------------------- tags

# How many tags one monitor has at most, and how long one is.
MONITOR_TAGS_MAX = 20
TAG_NAME_MAX = 40
_WHITESPACE_RUN = re.compile(r"\s+")


def tag_error(tag: str) -> str | None:
    """Why a tag cannot be used (fit to show a user), or None. A comma is
    refused because the dashboard's form separates tags with commas."""
    name = tag.strip()
    if not name:
        return "Empty tags are not allowed."
    if len(name) > TAG_NAME_MAX:
        return f"A tag can be at most {TAG_NAME_MAX} characters long."
    if "," in name:
        return "A tag cannot contain a comma."
    if any(unicodedata.category(char)[0] == "C" for char in name):
        return "A tag cannot contain line breaks or other control characters."
    return None


def tags_error(tags: list[str]) -> str | None:
    """Why a monitor's tags cannot be used, or None: each one by tag_error,
    then how many."""
    for tag in tags:
        if problem := tag_error(tag):
            return f"{problem} ({_shown(tag)})"
    if len(clean_tags(tags)) > MONITOR_TAGS_MAX:
        return f"A monitor can have at most {MONITOR_TAGS_MAX} tags."
    return None


def clean_tags(tags: Iterable[str]) -> list[str]:
    """Tags as stored: trimmed, inner spaces made one, empty ones dropped,
    the first spelling of a name kept whatever its case, in order."""
    seen: dict[str, str] = {}
    for tag in tags:
        name = _WHITESPACE_RUN.sub(" ", tag).strip()
        if name and name.lower() not in seen:
            seen[name.lower()] = name
    return list(seen.values())


def _shown(name: str) -> str:
    # repr() shows a line break in a name as \r\n instead of breaking the message.
    return repr(name[:64])


_QUOTED = re.compile(r"""(?<!\w)(['"])([^'"\n]+?)\1(?!\w)""")


def curly_quotes(message: str) -> str:
    """The API's 'Host' as “Host”, as the dashboard quotes everything else."""
    return _QUOTED.sub(r"“\2”", message)


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


def actions_error(wait_for: Any, actions: Any) -> tuple[str, Rule] | None:
    """(option, rule) when the actions, with waitFor, pass Firecrawl's
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


# --- What only a browser can do -------------------------------------------------


def screenshot_format(options: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The screenshot format's options ({} for the plain "screenshot"), or None."""
    formats = options.get("formats")
    for fmt in formats if isinstance(formats, list) else []:
        if fmt == "screenshot":
            return {}
        if isinstance(fmt, Mapping) and fmt.get("type") == "screenshot":
            return fmt
    return None


def languages(options: Mapping[str, Any]) -> list[str]:
    location = options.get("location")
    raw = location.get("languages") if isinstance(location, Mapping) else None
    return [str(item) for item in raw if str(item).strip()] if raw else []


def browser_options(options: Mapping[str, Any]) -> list[str]:
    """The options only a browser can honour, named as in `notApplied`."""
    needed = []
    if options.get("waitFor"):
        needed.append("waitFor")
    if options.get("actions"):
        needed.append("actions")
    if screenshot_format(options) is not None:
        needed.append("formats.screenshot")
    if options.get("mobile") is True:
        needed.append("mobile")
    if languages(options):
        needed.append("location.languages")
    return needed


def fetch_with_error(
    fetch_with: str, scrape_options: Iterable[Mapping[str, Any] | None]
) -> Rule | None:
    """A monitor that never opens a browser cannot have pages whose options
    need one: refused when saved rather than failing on every check."""
    if fetch_with != "http":
        return None
    if any(browser_options(options or {}) for options in scrape_options):
        return BROWSER_NEEDED
    return None
