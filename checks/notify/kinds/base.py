"""What every kind of channel is: a class with its name, label, help, the
settings it takes (validated here for the API and the dashboard alike), which
of them are secrets, and how it sends: `send(delivery)` (one blocking
attempt), or `prepare(delivery)`, whose Attempt a drain awaits beside the
others (checks.notify.kinds.outbound). A kind defines either; a kind with only
`send` sends while the drain prepares, one after the other."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple
from urllib.parse import parse_qsl, urlsplit

from checks.notify.kinds.outbound import Attempt, Done, run_one
from checks.notify.transports import DeliveryError, Sent

if TYPE_CHECKING:
    from checks.notify.models import Delivery
    from monitors.models import Monitor, Team

__all__ = ["ChannelKind", "DeliveryError", "SettingsError", "Sent"]

MASK = "••••"
# A path segment shown as it is: a plain lower-case word ("services",
# "api", "webhooks"). Ids and tokens (digits, mixed case, long) are masked.
_PLAIN_SEGMENT = re.compile(r"[a-z][a-z._-]{0,23}")


class SettingsError(ValueError):
    """Settings a kind cannot take: {field: message}."""

    def __init__(self, errors: dict[str, str]) -> None:
        super().__init__("; ".join(f"{k}: {v}" for k, v in errors.items()))
        self.errors = errors


class Notice(NamedTuple):
    """Why a kind cannot send here, for the dashboard."""

    plain: str  # for staff: what they cannot do, in plain words
    setting: str  # said after "For the administrator:", as on a monitor's page


class ChannelKind:
    name: ClassVar[str]
    label: ClassVar[str]
    help: ClassVar[str] = ""
    # {setting: (label, help)}: what the dashboard's form asks for.
    fields: ClassVar[dict[str, tuple[str, str]]] = {}
    # Settings that are never shown again once written.
    secrets: ClassVar[tuple[str, ...]] = ()
    # The environment variable this kind needs, when it needs one.
    needs_setting: ClassVar[str | None] = None
    # A kind made only from a monitor's Firecrawl fields (`webhook`,
    # `notification.email`): its deliveries make up the check's
    # notificationStatus, and teams cannot add it on the Channels page.
    own_only: ClassVar[bool] = False
    # Its messages are signed with the team's webhook secret, which is then
    # made with the channel, so it can be shown before the first message.
    signed: ClassVar[bool] = False

    def from_monitor(self, monitor: Monitor) -> dict[str, Any]:
        """An own-only kind's settings, read from the monitor's Firecrawl
        field ({} when the field is unset)."""
        return {}

    def unavailable(self) -> str | None:
        """Why this kind cannot send here (a setting is missing), or None:
        said to integrators, naming the setting."""
        return None

    def unavailable_notice(self) -> Notice | None:
        """unavailable() for the dashboard, or None."""
        return None

    def clean(self, settings: dict[str, Any]) -> dict[str, Any]:
        """Validated settings; raises SettingsError naming each bad field."""
        unknown = sorted(set(settings) - set(self.fields))
        if unknown:
            raise SettingsError({unknown[0]: "Not a setting of this kind."})
        cleaned = {}
        for key in self.fields:
            value = settings.get(key)
            if not isinstance(value, str) or not value.strip():
                raise SettingsError({key: "Required."})
            cleaned[key] = value.strip()
        return cleaned

    def choices(self, team: Team) -> dict[str, list[tuple[str, str]]]:
        """Settings picked from the team's own things rather than typed:
        {setting: [(value, words shown)]}. The form shows them as checkboxes
        and such a setting is a list of the values picked."""
        return {}

    def clean_for(self, team: Team, settings: dict[str, Any]) -> dict[str, Any]:
        """`clean`, then the rules that need the channel's team (settings
        picked from its members). What the API and the form validate with."""
        return self.clean(settings)

    def clean_change(
        self, team: Team, stored: dict[str, Any], settings: dict[str, Any]
    ) -> dict[str, Any]:
        """`clean_for`, for an edit of a channel whose settings were `stored`
        (`settings` merged with them already): a kind whose rules grew since
        may let a value the edit leaves as it was pass (SlackWebhookKind)."""
        return self.clean_for(team, settings)

    def shown_for(self, team: Team, settings: dict[str, Any]) -> dict[str, Any]:
        """The settings as the API, the form and the admin show them: secrets
        masked, and settings kept as the team's own things (its members'
        accounts) named as `clean_for` takes them."""
        return self.masked(settings)

    def shown_in_shape(self, team: Team, settings: dict[str, Any]) -> dict[str, Any]:
        """`shown_for`, for who may read the channel but not change it (a
        read-only API key, the admin's list): an address the kind does not
        keep secret (a webhook's) in shape only, as a monitor's own webhook
        is shown to them, since hook URLs are often their receivers'
        credentials (mask_url)."""
        shown = self.shown_for(team, settings)
        if isinstance(shown.get("url"), str) and "url" not in self.secrets:
            shown["url"] = mask_url(shown["url"])
        return shown

    def sends_to(self, team: Team, settings: dict[str, Any]) -> list[str]:
        """Who gets the channel's messages, by name, for the Channels page
        and a monitor's page; empty when its kind and name say enough."""
        return []

    def reaches_nobody(self, team: Team, settings: dict[str, Any]) -> bool:
        """Whether nobody is left to get the channel's messages (its people
        all left), so they are cancelled: the Channels page says so."""
        return False

    def merge(self, stored: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
        """New settings from an edit: a secret left out (or sent back masked)
        keeps its stored value, so clients can send what they were shown."""
        merged = dict(given)
        for key in self.secrets:
            value = merged.get(key)
            if (
                value is None or (isinstance(value, str) and MASK in value)
            ) and key in stored:
                merged[key] = stored[key]
        return merged

    def masked(self, settings: dict[str, Any]) -> dict[str, Any]:
        return {
            key: mask(value) if key in self.secrets else value
            for key, value in settings.items()
        }

    def prepare(self, delivery: Delivery) -> Attempt:
        """Read what the attempt needs from the database, now; the Attempt
        does the network part on the drain's event loop. Raises
        DeliveryError when the row cannot be sent at all."""
        if type(self).send is ChannelKind.send:
            raise NotImplementedError(f"{type(self).__name__} defines no way to send.")
        return Done(self.send(delivery))

    def send(self, delivery: Delivery) -> Sent:
        """One attempt, blocking (a kind that only prepares: on a loop of its own)."""
        return run_one(self.prepare(delivery))

    @staticmethod
    def message(delivery: Delivery) -> dict[str, Any]:
        return json.loads(delivery.body)


def mask_url(url: str) -> str:
    """A receiver's address as someone who may not change it sees it: its
    scheme, host and the plain words of its path, enough to recognise it,
    without what may be its secret (credentials, ids and tokens in the path,
    query values, the fragment): Slack's, Discord's and Zapier's hook URLs
    are themselves the credential."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return MASK
    if not parts.scheme or not parts.hostname:
        return MASK
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    netloc = (f"{MASK}@" if parts.username or parts.password else "") + host
    netloc += f":{port}" if port else ""
    path = "/".join(
        part if not part or _PLAIN_SEGMENT.fullmatch(part) else MASK
        for part in parts.path.split("/")
    )
    query = "&".join(
        f"{name}={MASK}" for name, _ in parse_qsl(parts.query, keep_blank_values=True)
    )
    return (
        f"{parts.scheme}://{netloc}{path}"
        + (f"?{query}" if query else "")
        + (f"#{MASK}" if parts.fragment else "")
    )


def mask(value: Any) -> str:
    """A secret shown as its kind and last characters only."""
    text = str(value)
    scheme = text.split("://", 1)[0] + "://" if "://" in text else ""
    return f"{scheme}{MASK}{text[-4:] if len(text) > 12 else ''}"
