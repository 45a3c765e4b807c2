"""Firecrawl's own search: POST /v2/search with a bearer key (FIRECRAWL_API_URL
points at a self-hosted Firecrawl as well).

tbs "qdr:h" (past hour) serves windows up to 1 h, "qdr:d" up to 24 h and
"qdr:w" the 7-day one; includeDomains / excludeDomains are sent as they are.
Its web results carry no publish time, so the window rests on tbs."""

from __future__ import annotations

from typing import Any

from checks.fetch import Resolver
from checks.search.providers.base import (
    Hit,
    KeyedProvider,
    Query,
    SearchError,
    hit,
    hits,
    plain,
)

SEARCH_PATH = "/v2/search"
MAX_LIMIT = 100
_TBS = {"5m": "qdr:h", "15m": "qdr:h", "1h": "qdr:h", "7d": "qdr:w"}


class FirecrawlProvider(KeyedProvider):
    name = "firecrawl"
    label = "Firecrawl"
    key_setting = "FIRECRAWL_API_KEY"

    def __init__(
        self, api_key: str, base_url: str, *, resolver: Resolver | None = None
    ) -> None:
        super().__init__(api_key, base_url.rstrip("/") + SEARCH_PATH, resolver=resolver)

    async def search(self, query: Query) -> list[Hit]:
        body: dict[str, Any] = {
            "query": query.text,
            "limit": min(query.limit, MAX_LIMIT),
            "tbs": _TBS.get(query.window, "qdr:d"),
            "sources": ["web"],
        }
        if query.include_domains:
            body["includeDomains"] = list(query.include_domains)
        if query.exclude_domains:
            body["excludeDomains"] = list(query.exclude_domains)
        answer = await self._json(
            self.endpoint,
            method="POST",
            headers={"Authorization": f"Bearer {self._key}"},
            body=body,
        )
        if not isinstance(answer, dict) or answer.get("success") is False:
            detail = answer.get("error") if isinstance(answer, dict) else None
            raise SearchError(
                "Firecrawl's search failed"
                + (f": {plain(detail, 300)}." if isinstance(detail, str) else ".")
            )
        data = answer.get("data")
        # /v2 groups results by source; /v1 answered a plain list.
        rows = data.get("web") if isinstance(data, dict) else data
        return hits(rows, query.limit, _hit)


def _hit(row: dict[str, Any], position: int) -> Hit | None:
    metadata = row.get("metadata") if isinstance(row.get("metadata"), dict) else {}
    return hit(
        row,
        position,
        title=row.get("title") or metadata.get("title"),
        snippet=row.get("description") or row.get("snippet"),
        date=row.get("date") or metadata.get("publishedTime"),
    )
