"""urlwatch: its urls.yaml, one YAML document per job. Read with the safe
loader only: a tag that would construct a Python object is an error, never
run."""

from __future__ import annotations

from typing import Any

import yaml

from monitors import rules
from monitors.moving.base import (
    MAX_ITEMS,
    Draft,
    ImportRefused,
    Planned,
    Source,
    not_imported,
    plain_regex,
    split_tags,
)

# Filters that only turn the page into text: Pagewatch always does that.
_TEXT_FILTERS = {"html2text", "strip", "beautify", "pdf2text", "ical2text"}
_ELEMENT_FILTERS = {
    "element-by-id": "#{}",
    "element-by-class": ".{}",
    "element-by-tag": "{}",
}
_IGNORED_OPTIONS = {
    "max_tries": "Retries (max_tries)",
    "ignore_connection_errors": "Ignoring connection errors",
    "ignore_http_error_codes": "Ignoring HTTP error codes",
    "ignore_timeout_errors": "Ignoring time-outs",
    "ignore_too_many_redirects": "Ignoring redirect loops",
    "ignore_cached": "Ignoring cached answers",
    "diff_filter": "Diff filters",
    "cookies": "Cookies",
    "method": "The request method",
    "data": "Request data",
    "ssl_no_verify": "Skipping TLS verification",
    "http_proxy": "The proxy (http_proxy)",
    "https_proxy": "The proxy (https_proxy)",
    "ignore_incomplete_reads": "Ignoring incomplete reads",
    "encoding": "The page's encoding (encoding)",
    "timeout": "The time-out (timeout)",
    "wait_for": "Waiting for an element (wait_for)",
    "wait_until": "Waiting for an event (wait_until)",
    "useragent": "The user agent (useragent)",
    "diff_tool": "The diff tool (diff_tool)",
    "compared_versions": "Comparing with several versions (compared_versions)",
    "treat_new_as_changed": "Treating new lines as changes (treat_new_as_changed)",
    "user_visible_url": "The address shown in reports (user_visible_url)",
}


def _steps(spec: Any) -> list[tuple[str, Any]]:
    """A job's filter chain as (name, argument) pairs, from either of
    urlwatch's spellings: "css:main,html2text" or a list of names/mappings."""
    if isinstance(spec, str):
        steps = []
        for part in spec.split(","):
            name, _, arg = part.strip().partition(":")
            if name:
                steps.append((name.strip(), arg.strip() or None))
        return steps
    if isinstance(spec, list):
        steps = []
        for item in spec:
            if isinstance(item, str):
                steps.append((item, None))
            elif isinstance(item, dict):
                steps += [(str(k), v) for k, v in item.items()]
        return steps
    return []


def _filter(name: str, arg: Any, draft: Draft) -> None:
    notes = draft.notes
    if name in _TEXT_FILTERS:
        return
    if name == "css":
        selector = arg.get("selector") if isinstance(arg, dict) else arg
        exclude = arg.get("exclude") if isinstance(arg, dict) else None
        for value, into in (
            (selector, draft.include_tags),
            (exclude, draft.exclude_tags),
        ):
            if not value:
                continue
            if rules.css_selector_error(str(value)):
                notes.append(
                    f"CSS filter “{value}” not imported: Pagewatch cannot read it."
                )
            else:
                into.append(str(value))
        return
    if name in _ELEMENT_FILTERS and isinstance(arg, str | int):
        draft.include_tags.append(_ELEMENT_FILTERS[name].format(arg))
        return
    if name == "grepi" and arg:
        pattern = arg.get("re") if isinstance(arg, dict) else arg
        entry = plain_regex(str(pattern))
        if entry:
            draft.ignore_lines.append(entry)
            return
        notes.append(
            f"grepi “{pattern}” not imported, because Pagewatch's line rules use "
            "RE2, which cannot read that pattern."
        )
        return
    why = {
        "xpath": "Pagewatch selects parts of pages with CSS selectors only",
        "grep": "Pagewatch compares the whole page, not only matching lines "
        "(say in a goal what matters)",
        "jq": "Pagewatch compares a page's text, not a path into JSON",
        "shellpipe": "Pagewatch runs no shell commands",
    }.get(name, "Pagewatch has no equal")
    notes.append(f"Filter {name} not imported, because {why}.")


def _draft(number: int, job: dict[str, Any]) -> Draft | Planned:
    ref = f"job {number}"
    name = str(job.get("name") or "")
    if "command" in job:
        return not_imported(
            ref,
            name or str(job["command"])[:80],
            [],
            "A shell command job: Pagewatch watches web pages and runs no commands.",
        )
    url = job.get("url") or job.get("navigate")
    if not isinstance(url, str) or not url.strip():
        return not_imported(ref, name, [], "It has no URL.")
    draft = Draft(ref=ref, url=url, name=name)
    tags = job.get("tags")
    if isinstance(tags, list | str):
        draft.tags = split_tags(tags)
    draft.browser = bool(job.get("use_browser")) or "navigate" in job
    for step, arg in _steps(job.get("filter")):
        _filter(step, arg, draft)
    headers = job.get("headers")
    for key, value in headers.items() if isinstance(headers, dict) else []:
        key, value = str(key), str(value)
        problem = rules.header_name_error(key) or rules.header_value_error(key, value)
        if problem:
            draft.notes.append(f"Request header not imported: {problem}")
        else:
            draft.headers[key] = value
    for option, words in _IGNORED_OPTIONS.items():
        if option in job and not (
            option == "method" and str(job[option]).upper() == "GET"
        ):
            draft.notes.append(f"{words} not imported, because Pagewatch has no equal.")
    if job.get("enabled") is False:
        draft.paused = True
    return draft


# A urlwatch job names one of these: what it watches.
_JOB_KEYS = {"url", "navigate", "command"}


class Urlwatch(Source):
    name = "urlwatch"
    label = "urlwatch"
    steps = "Upload urlwatch's urls.yaml (urlwatch --edit shows where it is)."

    def read_file(self, data: bytes, filename: str = "") -> list[Planned]:
        try:
            jobs = list(yaml.safe_load_all(data.decode("utf-8-sig")))
        except UnicodeDecodeError:
            raise ImportRefused("The file is not UTF-8 text.") from None
        except yaml.YAMLError as exc:
            where = getattr(exc, "problem_mark", None)
            line = f" (line {where.line + 1})" if where is not None else ""
            raise ImportRefused(
                f"The file is not YAML urlwatch could read{line}: "
                f"{getattr(exc, 'problem', None) or 'malformed'}."
            ) from None
        except RecursionError:
            raise ImportRefused(
                "The file nests too deeply to be a urls.yaml."
            ) from None
        items: list[Planned] = []
        jobs = [job for job in jobs if job is not None]
        if jobs and not any(
            isinstance(job, dict) and _JOB_KEYS & job.keys() for job in jobs
        ):
            # Another tool's file that YAML reads too (JSON is YAML).
            raise ImportRefused(
                "The file holds no urlwatch jobs: it is not a urls.yaml."
            )
        for number, job in enumerate(jobs[: MAX_ITEMS + 1], start=1):
            if not isinstance(job, dict):
                items.append(not_imported(f"job {number}", "", [], "Not a job."))
                continue
            draft = _draft(number, job)
            items.append(draft.plan() if isinstance(draft, Draft) else draft)
        return items
