"""An attempt once the database has been read, and what a drain sends it with.

A kind's `prepare(delivery)` reads what it needs (settings, secrets, consent)
in the drain's own thread and returns an Attempt: the network part alone. The
drain (checks.notify.drain) awaits many attempts on one event loop, with one
Outbound: one client of the outbound door (checks.fetch) for HTTP, a small
bounded thread pool for clients that block (SMTP, Apprise's `requests`), and,
when a kind asks for it, one filtering proxy for the batch. Nothing here
touches the database: Django refuses the ORM inside an event loop anyway, and
a send's thread has no business opening a connection of its own. What an
attempt must record before it ends (a team e-mail's people, one by one) the
drain's own thread writes (`Outbound.done_with`).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

from checks.browser.proxy import GuardProxy
from checks.errors import ErrorKind
from checks.fetch import FetchError, FetchResult, OutboundClient, system_resolver
from checks.notify.transports import DeliveryError, Sent

T = TypeVar("T")
# Has the drain record, before the attempt ends, that a row is done with
# these accounts; the future says whether it was written.
Keeper = Callable[[int, tuple[int, ...]], Future[bool]]

# Sends of one drain waiting on a blocking client at once.
BLOCKING_SENDS = 4
# One drain's HTTP sends at once, overall and to one host: a receiver that
# hangs holds one slot until its own time-out, not the batch.
CONCURRENCY = 32
PER_HOST = 8
_NEVER_RETRIED = frozenset({ErrorKind.BLOCKED_ADDRESS, ErrorKind.INVALID_URL})


class Attempt:
    """One send, ready to go: `run` does only the network part."""

    async def run(self, outbound: Outbound) -> Sent:
        raise NotImplementedError


@dataclass
class Done(Attempt):
    """Decided without the network (a kind that sent while preparing, or a
    row that cannot be sent)."""

    outcome: Sent | DeliveryError

    async def run(self, outbound: Outbound) -> Sent:
        if isinstance(self.outcome, DeliveryError):
            raise self.outcome
        return self.outcome


@dataclass
class Blocking(Attempt):
    """A client that blocks (SMTP, Apprise), run in the drain's thread pool."""

    call: Callable[[], Sent]
    timeout: float
    late: str = "The service did not answer within {seconds:.0f} seconds."

    async def run(self, outbound: Outbound) -> Sent:
        try:
            return await outbound.blocking(self.call, self.timeout)
        except TimeoutError as exc:
            raise DeliveryError(self.late.format(seconds=self.timeout)) from exc


class Outbound:
    """What one drain's attempts share, inside its event loop:
    `async with Outbound() as outbound`."""

    def __init__(self, keep: Keeper | None = None) -> None:
        self._keep = keep
        self._client = OutboundClient(
            concurrency=CONCURRENCY, per_host_concurrency=PER_HOST
        )
        self._pool = ThreadPoolExecutor(BLOCKING_SENDS, thread_name_prefix="send")
        self._proxy: GuardProxy | None = None
        self._proxy_lock = asyncio.Lock()
        # How many sends were given the proxy (see apprise._refusals_of).
        self.proxy_users = 0

    async def __aenter__(self) -> Outbound:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self._client.aclose()
        if self._proxy is not None:
            await self._proxy.close()
        # A send that outlived its time-out keeps its thread; never wait for it.
        self._pool.shutdown(wait=False, cancel_futures=True)

    async def fetch(
        self, url: str, method: str, body: bytes | None, headers: dict[str, str],
        *, timeout: float, max_bytes: int,
    ) -> FetchResult:  # fmt: skip
        """One request through the outbound door: the address policy, the
        time-out, no redirects. A failure is a DeliveryError."""
        try:
            return await self._client.fetch(
                url,
                method=method,
                headers=headers,
                content=body,
                timeout=timeout,
                max_bytes=max_bytes,
                follow_redirects=False,
            )
        except FetchError as exc:
            raise DeliveryError(
                exc.message, permanent=exc.kind in _NEVER_RETRIED
            ) from exc

    async def blocking(self, call: Callable[[], T], timeout: float) -> T:
        """`call()` in the pool; TimeoutError after `timeout` seconds (the
        thread is left to finish on its own)."""
        loop = asyncio.get_running_loop()
        context = contextvars.copy_context()
        future = loop.run_in_executor(self._pool, functools.partial(context.run, call))
        return await asyncio.wait_for(future, timeout)

    def done_with(self, delivery_id: int, accounts: Sequence[int]) -> Future[bool]:
        """Have the drain's thread record now that the row is done with
        `accounts` (people a team e-mail went to), so that its retry leaves
        them out even if this worker is killed before the attempt ends. From
        any thread; the future is True once written, False when the row is
        no longer this attempt's (deleted, or its claim was lost).
        RuntimeError outside a drain (see `records`)."""
        if self._keep is None:
            raise RuntimeError(
                "Only a drain records what an attempt is done with: send this "
                "row with checks.notify.drain.deliver."
            )
        return self._keep(delivery_id, tuple(accounts))

    @property
    def records(self) -> bool:
        """Whether `done_with` writes anywhere: only in a drain. An attempt
        that must record as it goes (a team e-mail) checks this before it
        sends anything, so no send outside a drain can leave e-mails sent
        and nobody written down."""
        return self._keep is not None

    async def proxy(self, max_bytes: int) -> GuardProxy:
        """The batch's filtering proxy (checks.browser.proxy), started on first
        use; each user adds its own byte budget to the proxy's cap."""
        async with self._proxy_lock:
            if self._proxy is None:
                self._proxy = GuardProxy(system_resolver, max_bytes=0)
                await self._proxy.start()
            self._proxy.max_bytes += max_bytes
            self.proxy_users += 1
            return self._proxy


def run_one(attempt: Attempt) -> Sent:
    """One attempt on an event loop of its own (a send outside a drain)."""

    async def go() -> Sent:
        async with Outbound() as outbound:
            return await attempt.run(outbound)

    return asyncio.run(go())
