"""The models of the app `monitors`: teams and their members (teams.py), API
keys (keys.py), monitors and their targets (monitors.py), channels
(channels.py), tags (tags.py) and imports (imports.py).

Django finds an app's models by importing this package, and
`from monitors.models import X` works for every one of them.
"""

from monitors.models.channels import Channel, ChannelQuerySet, MonitorChannel
from monitors.models.imports import ImportRun, ImportRunQuerySet
from monitors.models.keys import KEY_LOOKUP_LENGTH, KEY_PREFIX, ApiKey, ApiKeyQuerySet
from monitors.models.monitors import (
    EmailRecipient,
    Monitor,
    MonitorQuerySet,
    Target,
)
from monitors.models.tags import Tag, TagQuerySet
from monitors.models.teams import (
    FEED_TOKEN_BYTES,
    FEED_TOKEN_MAX_LENGTH,
    ROLE_ACTIONS,
    SECRET_VISIBLE_TAIL,
    WEBHOOK_SECRET_GRACE,
    LastOwnerError,
    Membership,
    Team,
    TeamQuerySet,
    feed_link,
    new_feed_token,
)

__all__ = [
    "FEED_TOKEN_BYTES",
    "FEED_TOKEN_MAX_LENGTH",
    "KEY_LOOKUP_LENGTH",
    "KEY_PREFIX",
    "ROLE_ACTIONS",
    "SECRET_VISIBLE_TAIL",
    "WEBHOOK_SECRET_GRACE",
    "ApiKey",
    "ApiKeyQuerySet",
    "Channel",
    "ChannelQuerySet",
    "EmailRecipient",
    "ImportRun",
    "ImportRunQuerySet",
    "LastOwnerError",
    "Membership",
    "Monitor",
    "MonitorChannel",
    "MonitorQuerySet",
    "Target",
    "Tag",
    "TagQuerySet",
    "Team",
    "TeamQuerySet",
    "feed_link",
    "new_feed_token",
]
