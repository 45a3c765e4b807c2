"""The one door for outbound HTTP in Pagewatch.

Page fetches, the crawler, robots/sitemaps, webhooks, the search backend and the
LLM judge all call `afetch` / `OutboundClient` here, never httpx directly, so
every request gets the same guarantees:

* the address policy (policy.py) is applied to the address actually connected
  to: the guarded transport (transport.py) resolves the host once, refuses if
  any answer is forbidden and connects to that exact IP (TLS still verifies the
  hostname), so DNS rebinding cannot slip a second, private answer past it;
* redirects are followed hop by hop (hops.py), each target re-validated, with
  credentials and caller headers dropped when the origin changes; a page
  fetch also follows a page that is only a short <meta> refresh (refresh.py)
  as one of them;
* connect/read timeouts plus an overall deadline, a cap on the *decoded* body
  (body.py: gzip bombs), one limiter bounding concurrency overall and per host
  (client.py), `trust_env=False`, no cookie jar, a fixed User-Agent;
* every failure is a FetchError with an ErrorKind and a message from one table
  (errors.py).

Synchronous callers (a Celery task) use `asyncio.run(afetch(...))`.

Settings (read per call, so tests can override them): ALLOW_PRIVATE_NETWORK_TARGETS,
FETCH_TIMEOUT_SECONDS, FETCH_MAX_BYTES, FETCH_CONCURRENCY,
FETCH_PER_HOST_CONCURRENCY, OUTBOUND_USER_AGENT.
"""

from __future__ import annotations

from checks.fetch.client import FetchResult, OutboundClient, afetch
from checks.fetch.errors import FetchError
from checks.fetch.pace import Pace
from checks.fetch.policy import address_block_reason, host_block_reason, ip_literal
from checks.fetch.transport import Resolver, system_resolver
from monitors.url_rule import url_syntax_error

__all__ = [
    "FetchError",
    "FetchResult",
    "OutboundClient",
    "Pace",
    "Resolver",
    "address_block_reason",
    "afetch",
    "host_block_reason",
    "ip_literal",
    "system_resolver",
    "url_syntax_error",
]
