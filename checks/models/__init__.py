"""The models of the app `checks`, each in the package it belongs to.

A check (check.py) runs in batches (batches.py) and records a result per page
against the page's baseline (pages.py), whose content is stored once per
distinct content (snapshots.py); crawls, searches and the notification outbox
keep their rows beside their code (checks.crawl.models, checks.search.models,
checks.notify.models). All of them are imported here: Django finds an app's
models by importing this package, and `from checks.models import X` works for
every one of them.
"""

from checks.crawl.models import Crawl, CrawlPage
from checks.models.ai_use import AIUse, AIUseQuerySet
from checks.models.batches import CheckBatch, CheckBatchQuerySet
from checks.models.check import (
    SEARCH_KEY,
    SUMMARY_KEYS,
    Check,
    CheckQuerySet,
    Tally,
    empty_summary,
    month_start,
)
from checks.models.heartbeat import Heartbeat
from checks.models.pages import (
    CHANGES_FIRST,
    PageResult,
    PageResultQuerySet,
    PageState,
)
from checks.models.snapshots import Capture, Snapshot
from checks.notify.models import (
    ChannelDelivery,
    Delivery,
    DeliveryAttempt,
    DeliveryQuerySet,
    EmailDelivery,
    WebhookDelivery,
)
from checks.search.models import (
    SearchResultState,
    SearchResultStateQuerySet,
    SearchRun,
)

__all__ = [
    "AIUse",
    "AIUseQuerySet",
    "CHANGES_FIRST",
    "SEARCH_KEY",
    "SUMMARY_KEYS",
    "Capture",
    "ChannelDelivery",
    "Check",
    "CheckBatch",
    "CheckBatchQuerySet",
    "CheckQuerySet",
    "Crawl",
    "CrawlPage",
    "Delivery",
    "DeliveryAttempt",
    "DeliveryQuerySet",
    "EmailDelivery",
    "Heartbeat",
    "PageResult",
    "PageResultQuerySet",
    "PageState",
    "SearchResultState",
    "SearchResultStateQuerySet",
    "SearchRun",
    "Snapshot",
    "Tally",
    "WebhookDelivery",
    "empty_summary",
    "month_start",
]
