"""Bearer API keys for the REST API."""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass

from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from redis import RedisError
from rest_framework import authentication, exceptions, permissions, throttling
from rest_framework.request import Request

from monitors.models import KEY_LOOKUP_LENGTH, KEY_PREFIX, ApiKey, Membership, Team

logger = logging.getLogger(__name__)


@dataclass
class ApiClient:
    """request.user for API calls: the team behind the key, and the member
    it acts as now (ApiKey.acting_as: its maker's current role, capped by
    its scope), whose role decides what it may read and do as the
    dashboard's does for a person."""

    key: ApiKey
    membership: Membership | None = None

    is_authenticated = True
    is_anonymous = False

    def can(self, action: str) -> bool:
        return self.membership is not None and self.membership.can(action)

    @property
    def team(self) -> Team:
        return self.key.team

    @property
    def pk(self) -> int:
        return self.key.pk


class ApiKeyAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[ApiClient, ApiKey] | None:
        header = authentication.get_authorization_header(request).decode(
            "latin-1", errors="replace"
        )
        if not header:
            return None
        scheme, _, raw = header.partition(" ")
        raw = raw.strip()
        if scheme.lower() != "bearer" or not raw:
            raise exceptions.AuthenticationFailed(
                "Unauthorized: use the header 'Authorization: Bearer <API key>'."
            )
        key = self._find(raw)
        membership = key.acting_as() if key is not None else None
        if key is None or membership is None:
            raise exceptions.AuthenticationFailed("Unauthorized: Invalid token")
        key.touch(timezone.now())
        return ApiClient(key, membership), key

    def authenticate_header(self, request: Request) -> str:
        return self.keyword

    @staticmethod
    def _find(raw: str) -> ApiKey | None:
        if not raw.startswith(KEY_PREFIX) or len(raw) > 200:
            return None
        prefix = raw[len(KEY_PREFIX) : len(KEY_PREFIX) + KEY_LOOKUP_LENGTH]
        key = (
            ApiKey.objects.active()
            .with_makers_role()
            .select_related("team", "created_by")
            .filter(prefix=prefix)
            .first()
        )
        if key is None or not key.matches(raw):
            return None
        if key.created_by is not None and not key.created_by.is_active:
            return None  # its maker's account is switched off: so are their keys
        return key


READ_ONLY_KEY = (
    "This API key can only read (scope read): it cannot create, change, run "
    "or delete anything. Use a key with the write scope."
)


def sees_hooks_whole(request: Request) -> bool:
    """Whether the caller gets webhooks' addresses and credential-like header
    values whole: only a key that may change them (the dashboard shows them
    whole only in the forms of those who may). A read key, or one whose maker
    is now a viewer, reads them in shape only, as a viewer does."""
    client = request.user
    return not isinstance(client, ApiClient) or client.can(Membership.Action.EDIT)


def role_refusal(membership: Membership) -> str:
    return (
        f"The person who made this API key is now {membership.role_words} in "
        "the team: it cannot create, change, run or delete anything."
    )


class KeyScopeAllows(permissions.BasePermission):
    """A read key reads: every method that may change something (POST, PUT,
    PATCH, DELETE) needs a key that may edit (the write scope, made by
    someone who is still an editor or an owner), whatever the endpoint, so
    a new writing endpoint is covered without being listed."""

    message = READ_ONLY_KEY

    def has_permission(self, request: Request, view: object) -> bool:
        if request.method in permissions.SAFE_METHODS:
            return True
        client = request.user
        if not isinstance(client, ApiClient) or client.can(Membership.Action.EDIT):
            return True
        if client.key.can_write and client.membership is not None:
            self.message = role_refusal(client.membership)
        return False


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    """Describes ApiKeyAuthentication in /v2/openapi.json (a Bearer scheme)."""

    target_class = ApiKeyAuthentication
    name = "BearerApiKey"

    def get_security_definition(self, auto_schema: object) -> dict[str, str]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An API key: `Authorization: Bearer pw_...`. Create one "
            "with `manage.py createapikey --team <slug>` or in the dashboard.",
        }


class ApiKeyRateThrottle(throttling.SimpleRateThrottle):
    """Per-key request rate (API_RATE_LIMIT). A guard against runaway clients,
    not a quota: hard quotas belong in the database.

    One counter per key in the cache (Redis, or the embedded Valkey), raised
    with an atomic INCR: DRF's own throttle reads a list of timestamps and
    writes it back, so requests arriving together in several web processes
    each read the same list and a parallel burst got about twice the limit
    through. Windows are fixed (each minute of the clock for `/min`), so a
    client may get up to twice the limit through across a window's end.
    While the cache is unreachable requests are let through uncounted: a
    Redis outage must not turn every API request, reads included, into an
    error."""

    scope = "api_key"

    def allow_request(self, request: Request, view: object) -> bool:
        if self.rate is None:
            return True
        self.key = self.get_cache_key(request, view)
        if self.key is None:
            return True
        self.now = self.timer()
        try:
            return self._count() <= self.num_requests
        except (RedisError, OSError) as exc:
            # One line per request, not a traceback: the outage is the news.
            logger.warning("Rate limit not counted, the cache is unreachable: %s", exc)
            return True

    def charge(self, request: Request, view: object, tokens: int) -> None:
        """Count `tokens` more requests against the key in this window, for
        one request that does the work of many (a bulk run: one per check);
        raises Throttled, as for any request, when that passes the limit."""
        if self.rate is None or tokens <= 0:
            return
        self.key = self.get_cache_key(request, view)
        if self.key is None:
            return
        self.now = self.timer()
        try:
            allowed = self._count(tokens) <= self.num_requests
        except (RedisError, OSError) as exc:
            logger.warning("Rate limit not counted, the cache is unreachable: %s", exc)
            return
        if not allowed:
            # Refused, it starts nothing: the tokens go back, or the key's
            # plain requests would be refused for the rest of the window.
            self._uncount(tokens)
            raise exceptions.Throttled(self.wait())

    def _count(self, tokens: int = 1) -> int:
        """This request's number in its key's current window."""
        counter = f"{self.key}:{self._window()}"
        # Kept a little past the window's end, then dropped by the cache.
        self.cache.add(counter, 0, self.duration + 1)
        try:
            return self.cache.incr(counter, tokens)
        except ValueError:
            # Gone between add and incr (Redis evicts keys with a time-to-live
            # first under the volatile-* policies; or a flush): Django's incr
            # raises. This request starts the window's count again.
            self.cache.set(counter, tokens, self.duration + 1)
            return tokens

    def _uncount(self, tokens: int) -> None:
        # A window's count that is gone (or a cache away) has nothing to give back.
        with contextlib.suppress(ValueError, RedisError, OSError):
            self.cache.decr(f"{self.key}:{self._window()}", tokens)

    def _window(self) -> int:
        return int(self.now // self.duration)

    def wait(self) -> float:
        return max(1.0, (self._window() + 1) * self.duration - self.now)

    def get_cache_key(self, request: Request, view: object) -> str | None:
        if isinstance(request.user, ApiClient):
            # The key's random prefix, not its pk: SQLite hands out a rolled-back
            # row id again, and a new key must not inherit another's count.
            ident = request.user.key.prefix
            return self.cache_format % {"scope": self.scope, "ident": ident}
        return self.cache_format % {
            "scope": self.scope,
            "ident": self.get_ident(request),
        }
