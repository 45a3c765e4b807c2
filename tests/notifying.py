"""Builders and fixtures shared by the notification tests (webhooks, e-mail,
the outbox). Check and page rows are written directly, the way the runner
writes them, and announced through checks.notify inside a transaction, so
these tests do not depend on the runner.

A test module registers the fixtures (site, receiver, queued, scenario) with
`pytest_plugins = ["tests.notifying"]` and imports the plain helpers.
PYTEST_DONT_REWRITE: no assertions live here, and test modules import the
helpers before pytest registers the plugin.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import uuid
from collections import deque
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import pytest
from django.db import transaction
from django.utils import timezone

from checks import notify
from checks.models import Check, PageResult
from checks.notify import deliveries, outbox
from checks.notify.tasks import deliver_task
from monitors.models import Monitor, Team
from tests.sites import Request, Site

ALL_EVENTS = ["monitor.page", "monitor.check.completed"]


# --- Signature checks, written the way docs/webhooks.md tells receivers ------------


def firecrawl_signature_ok(secret: str, request: Request) -> bool:
    header = request.header("X-Firecrawl-Signature") or ""
    algorithm, _, received = header.partition("=")
    expected = hmac.new(secret.encode(), request.body, hashlib.sha256).hexdigest()
    return algorithm == "sha256" and hmac.compare_digest(expected, received)


def standard_signature_ok(secret: str, request: Request) -> bool:
    msg_id = request.header("webhook-id")
    timestamp = request.header("webhook-timestamp")
    key = base64.b64decode(secret.removeprefix("whsec_"))
    signed = f"{msg_id}.{timestamp}.".encode() + request.body
    expected = "v1," + base64.b64encode(
        hmac.new(key, signed, hashlib.sha256).digest()
    ).decode("ascii")
    signatures = (request.header("webhook-signature") or "").split()
    return any(hmac.compare_digest(expected, s) for s in signatures)


# --- A webhook receiver on 127.0.0.1 --------------------------------------------


class Receiver:
    """A webhook endpoint that answers from a script (then 200) and keeps every
    request's raw bytes and headers (tests.sites records them)."""

    def __init__(self, site: Site, path: str = "/hook") -> None:
        self.site = site
        self.path = path
        self.script: deque[tuple[int, dict[str, str], bytes]] = deque()
        site.handle(path, self._answer)

    def then(
        self, status: int, headers: dict[str, str] | None = None, body: bytes = b""
    ) -> Receiver:
        self.script.append((status, dict(headers or {}), body))
        return self

    def _answer(self, request: Request) -> tuple[int, dict[str, str], bytes]:
        if self.script:
            return self.script.popleft()
        return 200, {"Content-Type": "text/plain"}, b"ok"

    @property
    def url(self) -> str:
        return self.site.url(self.path)

    @property
    def requests(self) -> list[Request]:
        return self.site.requests_to(self.path)

    def payloads(self) -> list[dict[str, Any]]:
        return [json.loads(r.body) for r in self.requests]


@pytest.fixture
def receiver(site: Site, settings: Any) -> Receiver:
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True
    return Receiver(site)


class Queued(list[int]):
    """Delivery ids handed to the broker, in order (no broker involved)."""

    def __init__(self, capture: Callable[..., AbstractContextManager[Any]]) -> None:
        super().__init__()
        self._capture = capture

    def run(self) -> int:
        """Be the worker: deliver_task for every queued id, newly queued ones too.

        Each task runs like in a worker (autocommit), so rows it creates on the
        way (a 410's notice e-mails) are queued after its commit."""
        ran = 0
        while self:
            with self._capture(execute=True):
                deliver_task(self.pop(0))
            ran += 1
        return ran


@pytest.fixture
def queued(
    monkeypatch: pytest.MonkeyPatch, django_capture_on_commit_callbacks: Any
) -> Queued:
    ids = Queued(django_capture_on_commit_callbacks)
    monkeypatch.setattr(outbox, "enqueue", ids.append)
    # A finished check's rows go as one drain task; here they run one by one.
    monkeypatch.setattr(outbox, "enqueue_many", ids.extend)
    return ids


def run_queued(queued: Queued) -> int:
    return queued.run()


# --- Monitors, checks and pages -----------------------------------------------------


def webhook_config(url: str, **extra: Any) -> dict[str, Any]:
    return {"url": url, "headers": {}, "metadata": {}, "events": ALL_EVENTS} | extra


def make_monitor(
    team: Team,
    *,
    webhook: dict[str, Any] | None = None,
    email: dict[str, Any] | None = None,
    name: str = "Pricing page",
    goal: str | None = None,
) -> Monitor:
    monitor = Monitor.objects.create(
        team=team,
        name=name,
        schedule_cron="*/30 * * * *",
        webhook=webhook,
        notification={"email": email} if email is not None else {},
        goal=goal,
        judge_enabled=bool(goal),
    )
    monitor.sync_email_recipients()
    deliveries.queue_confirmations(monitor)
    return monitor


def judged(meaningful: bool) -> dict[str, Any]:
    return {
        "meaningful": meaningful,
        "confidence": "high",
        "reason": "The price went up." if meaningful else "Only a timestamp moved.",
        "meaningfulChanges": [
            {"type": "changed", "before": "$19", "after": "$24", "reason": "price"}
        ]
        if meaningful
        else [],
    }


def markdown_diff(before: str = "$19", after: str = "$24") -> dict[str, Any]:
    text = (
        "--- previous\n+++ current\n@@ -1,2 +1,2 @@\n # Plans\n"
        f"-Pro {before}/mo\n+Pro {after}/mo\n"
    )
    return {"text": text, "json": {"files": [{"from": "previous", "chunks": []}]}}


class Scenario:
    """Writes checks and pages like the runner and announces them through
    checks.notify inside a transaction, running the on-commit hooks."""

    def __init__(
        self, capture: Callable[..., AbstractContextManager[list[Callable]]]
    ) -> None:
        self._capture = capture

    def start(self, monitor: Monitor) -> Check:
        return Check.objects.create(
            monitor=monitor,
            trigger=Check.Trigger.MANUAL,
            status=Check.Status.RUNNING,
            started_at=timezone.now(),
            # As Check.claim decides it when a check starts.
            notifications_muted=monitor.is_muted(timezone.now()),
        )

    def page(self, check: Check, url: str, status: str, **fields: Any) -> PageResult:
        if status in ("changed", "same"):
            fields.setdefault("previous_scrape_id", uuid.uuid4())
        if status != "error" and status != "removed":
            fields.setdefault("current_scrape_id", uuid.uuid4())
        if status == "changed":
            fields.setdefault("diff", markdown_diff())
        with self._capture(execute=True), transaction.atomic():
            page = PageResult.objects.create(
                check_run=check,
                target_id=uuid.uuid4(),
                url=url,
                status=status,
                **fields,
            )
            notify.on_page_result(page)
        return page

    def finish(
        self, check: Check, status: str | None = None, error: str | None = None
    ) -> Check:
        statuses = list(check.pages.values_list("status", flat=True))
        summary = {s: statuses.count(s) for s in PageResult.Status.values}
        summary["totalPages"] = len(statuses)
        if status is None:
            status = Check.outcome(summary)[0]
        with self._capture(execute=True), transaction.atomic():
            check.status = status
            check.error = error
            check.summary = summary
            check.finished_at = timezone.now()
            check.save(
                update_fields=[
                    "status",
                    "error",
                    "summary",
                    "finished_at",
                    "updated_at",
                ]
            )
            notify.on_check_finished(check)
        check.refresh_from_db()
        return check

    def run(
        self, monitor: Monitor, pages: list[tuple[str, str] | tuple[str, str, dict]]
    ) -> Check:
        """A whole check: one page per (url, status[, fields]), then the finish."""
        check = self.start(monitor)
        for url, status, *rest in pages:
            self.page(check, url, status, **(rest[0] if rest else {}))
        return self.finish(check)


@pytest.fixture
def scenario(django_capture_on_commit_callbacks: Any) -> Scenario:
    return Scenario(django_capture_on_commit_callbacks)
