"""The kinds of channel, looked up by name.

The registry is built from the classes: adding a kind is one module with one
ChannelKind subclass and one line in KIND_CLASSES. The outbox, the API, the
dashboard and the admin ask `kind_for` / `all_kinds` and never name a kind.
The monitor's own Firecrawl webhook and e-mail are kinds here too (`own_only`:
made from the monitor's fields, not offered as team channels).
"""

from __future__ import annotations

from checks.notify.kinds.apprise import AppriseKind
from checks.notify.kinds.base import ChannelKind, DeliveryError, Sent, SettingsError
from checks.notify.kinds.email import EmailKind
from checks.notify.kinds.firecrawl_webhook import FirecrawlWebhookKind
from checks.notify.kinds.slack import SlackKind, SlackWebhookKind
from checks.notify.kinds.team_email import TeamEmailKind
from checks.notify.kinds.webhook import WebhookKind

__all__ = [
    "ChannelKind",
    "DeliveryError",
    "Sent",
    "SettingsError",
    "all_kinds",
    "kind_for",
    "offered",
    "own_kinds",
    "register",
]

KIND_CLASSES: tuple[type[ChannelKind], ...] = (
    WebhookKind,
    SlackKind,
    SlackWebhookKind,
    AppriseKind,
    TeamEmailKind,
    FirecrawlWebhookKind,
    EmailKind,
)

_REGISTRY: dict[str, ChannelKind] = {cls.name: cls() for cls in KIND_CLASSES}


def register(cls: type[ChannelKind]) -> type[ChannelKind]:
    """Add a kind at run time (a plugin, or a test's throwaway kind)."""
    _REGISTRY[cls.name] = cls()
    return cls


def unregister(name: str) -> None:
    _REGISTRY.pop(name, None)


def kind_for(name: str) -> ChannelKind | None:
    return _REGISTRY.get(name)


def offered(name: str) -> ChannelKind | None:
    """The kind `name` if a team may make a channel of it."""
    kind = _REGISTRY.get(name)
    return None if kind is None or kind.own_only else kind


def own_kinds() -> list[ChannelKind]:
    """The kinds of a monitor's own Firecrawl fields (webhook, e-mail)."""
    return [kind for kind in _REGISTRY.values() if kind.own_only]


def all_kinds() -> list[ChannelKind]:
    """The kinds a team may add as channels (not the monitor-only ones)."""
    return [kind for kind in _REGISTRY.values() if not kind.own_only]
