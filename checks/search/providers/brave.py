"""Brave Search's web search API: GET /res/v1/web/search, key in a header.

freshness "pd" (past day) serves windows up to 24 h, "pw" the 7-day one;
`page_age` is the publish time the window is enforced on. At most 20 results
a request. No domain parameter: domains are filtered after."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from checks.search.providers.base import (
    Hit,
    KeyedProvider,
    Query,
    SearchError,
    hit,
    hits,
)

ENDPOINT = "https://api.search.brave.com/res/v1/web/search"
MAX_COUNT = 20


class BraveProvider(KeyedProvider):
    name = "brave"
    label = "Brave Search"
    key_setting = "BRAVE_API_KEY"
    default_endpoint = ENDPOINT

    async def search(self, query: Query) -> list[Hit]:
        params = {
            "q": query.text,
            "count": min(query.limit, MAX_COUNT),
            "freshness": "pw" if query.window == "7d" else "pd",
        }
        answer = await self._json(
            f"{self.endpoint}?{urlencode(params)}",
            headers={"X-Subscription-Token": self._key},
        )
        if not isinstance(answer, dict):
            raise SearchError("Brave Search's answer was not a JSON object.")
        web = answer.get("web")
        rows = web.get("results") if isinstance(web, dict) else []
        return hits(rows, query.limit, _hit)


def _hit(row: dict[str, Any], position: int) -> Hit | None:
    return hit(
        row,
        position,
        title=row.get("title"),
        snippet=row.get("description"),
        date=row.get("page_age"),
    )
