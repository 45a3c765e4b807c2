"""SearXNG (self-hosted, keyless): GET /search?format=json.

Its time ranges are a day, a week, a month or a year, so windows up to 24 h
ask for a day and 7d for a week; the window is then enforced on each
result's publish time (checks.search.gather). It has no domain parameter:
domains are filtered after. Its JSON lists the engines that did not answer;
an answer with no results while engines failed is a failed search, never
"no results"."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from checks.search.providers.base import (
    Hit,
    Provider,
    Query,
    SearchError,
    hit,
    hits,
    plain,
)
from monitors.search_provider import REFUSED


class SearxngProvider(Provider):
    name = "searxng"
    label = "SearXNG"

    def request_url(self, query: Query) -> str:
        time_range = "week" if query.window == "7d" else "day"
        params = {"q": query.text, "format": "json", "time_range": time_range}
        return f"{self.endpoint}/search?{urlencode(params)}"

    async def search(self, query: Query) -> list[Hit]:
        answer = await self._json(self.request_url(query))
        if not isinstance(answer, dict):
            raise SearchError("SearXNG's answer was not a JSON object.")
        if not isinstance(answer.get("results"), list):
            # SearXNG always sends the list, empty when nothing was found:
            # without it the JSON is someone else's, never "no results".
            raise SearchError("SearXNG's answer held no list of results.")
        found = hits(answer.get("results"), query.limit, _hit)
        failed = _unresponsive(answer.get("unresponsive_engines"))
        if not found and failed:
            raise SearchError(
                "None of SearXNG's search engines gave results; these did not "
                f"answer: {', '.join(failed)}."
            )
        return found

    def refused(self, answer: Any) -> str:
        refusal = _REFUSALS.get(answer.status_code)
        if refusal is None:
            return super().refused(answer)
        what, fix = refusal
        return REFUSED.format(
            provider="SearXNG", what=what, code=answer.status_code, fix=fix
        )


# What SearXNG refuses with a status of its own set-up, and what fixes it.
_REFUSALS = {
    403: (
        "to answer in JSON",
        "allow the format in its settings.yml (search: formats: [html, json]).",
    ),
    # Its search page is always there: the address is not the instance's
    # own, most often the search page's pasted whole.
    404: (
        "the search",
        "SEARXNG_URL must be the instance's base address without /search, "
        "which Pagewatch adds itself.",
    ),
    429: (
        "the request",
        "its limiter (bot protection) must let Pagewatch's address through.",
    ),
}


def _hit(row: dict[str, Any], position: int) -> Hit | None:
    return hit(
        row,
        position,
        title=row.get("title"),
        snippet=row.get("content"),
        date=row.get("publishedDate"),
    )


def _unresponsive(engines: Any) -> list[str]:
    """["google (timeout)", ...] from SearXNG's [[name, reason], ...]."""
    named = []
    for entry in engines if isinstance(engines, list) else []:
        if isinstance(entry, list | tuple) and entry:
            name = plain(str(entry[0]), 60)
            why = plain(str(entry[1]), 80) if len(entry) > 1 else ""
            named.append(f"{name} ({why})" if why else name)
    return named[:10]
