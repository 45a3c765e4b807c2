"""Tavily: POST /search with a bearer key.

time_range "day" serves windows up to 24 h, "week" the 7-day one; Tavily
applies include_domains / exclude_domains itself (and Pagewatch again). At
most 20 results a request; published_date, when given, is enforced."""

from __future__ import annotations

from typing import Any

from checks.search.providers.base import (
    Hit,
    KeyedProvider,
    Query,
    SearchError,
    hit,
    hits,
)

ENDPOINT = "https://api.tavily.com/search"
MAX_RESULTS = 20


class TavilyProvider(KeyedProvider):
    name = "tavily"
    label = "Tavily"
    key_setting = "TAVILY_API_KEY"
    default_endpoint = ENDPOINT

    async def search(self, query: Query) -> list[Hit]:
        body: dict[str, Any] = {
            "query": query.text,
            "max_results": min(query.limit, MAX_RESULTS),
            "time_range": "week" if query.window == "7d" else "day",
            "search_depth": "basic",
            "topic": "general",
        }
        if query.include_domains:
            body["include_domains"] = list(query.include_domains)
        if query.exclude_domains:
            body["exclude_domains"] = list(query.exclude_domains)
        answer = await self._json(
            self.endpoint,
            method="POST",
            headers={"Authorization": f"Bearer {self._key}"},
            body=body,
        )
        if not isinstance(answer, dict):
            raise SearchError("Tavily's answer was not a JSON object.")
        if not isinstance(answer.get("results"), list):
            # Tavily always sends the list, empty when nothing was found.
            raise SearchError("Tavily's answer held no list of results.")
        return hits(answer.get("results"), query.limit, _hit)


def _hit(row: dict[str, Any], position: int) -> Hit | None:
    return hit(
        row,
        position,
        title=row.get("title"),
        snippet=row.get("content"),
        date=row.get("published_date"),
    )
