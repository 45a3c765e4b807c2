"""The kinds of channel, looked up by name.

The registry is built from the classes: adding a kind is one module with one
ChannelKind subclass and one line in KIND_CLASSES. The outbox, the API, the
dashboard and the admin ask `kind_for` / `all_kinds` and never name a kind.
"""

from __future__ import annotations

from checks.notify.kinds.apprise import AppriseKind
from checks.notify.kinds.base import ChannelKind, DeliveryError, Sent, SettingsError
from checks.notify.kinds.slack import SlackKind, SlackWebhookKind
from checks.notify.kinds.webhook import WebhookKind

__all__ = [
    "ChannelKind",
    "DeliveryError",
    "Sent",
    "SettingsError",
    "all_kinds",
    "kind_for",
    "register",
]

KIND_CLASSES: tuple[type[ChannelKind], ...] = (
    WebhookKind,
    SlackKind,
    SlackWebhookKind,
    AppriseKind,
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


def all_kinds() -> list[ChannelKind]:
    return list(_REGISTRY.values())
