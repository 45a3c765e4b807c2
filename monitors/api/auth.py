"""Bearer API keys for the REST API."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from redis import RedisError
from rest_framework import authentication, exceptions, permissions, throttling
from rest_framework.request import Request

from monitors.models import KEY_LOOKUP_LENGTH, KEY_PREFIX, ApiKey, Team

logger = logging.getLogger(__name__)


@dataclass
class ApiClient:
    """request.user for API calls: the team behind the key."""

    key: ApiKey

    is_authenticated = True
    is_anonymous = False

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
        if key is None:
            raise exceptions.AuthenticationFailed("Unauthorized: Invalid token")
        key.touch(timezone.now())
        return ApiClient(key), key

    def authenticate_header(self, request: Request) -> str:
        return self.keyword

    @staticmethod
    def _find(raw: str) -> ApiKey | None:
        if not raw.startswith(KEY_PREFIX) or len(raw) > 200:
            return None
        prefix = raw[len(KEY_PREFIX) : len(KEY_PREFIX) + KEY_LOOKUP_LENGTH]
        key = (
            ApiKey.objects.active().select_related("team").filter(prefix=prefix).first()
        )
        if key is None or not key.matches(raw):
            return None
        return key


READ_ONLY_KEY = (
    "This API key can only read (scope read): it cannot create, change, run "
    "or delete anything. Use a key with the write scope."
)


class KeyScopeAllows(permissions.BasePermission):
    """A read key reads: every method that may change something (POST, PUT,
    PATCH, DELETE) needs a key with the write scope, whatever the endpoint,
    so a new writing endpoint is covered without being listed."""

    message = READ_ONLY_KEY

    def has_permission(self, request: Request, view: object) -> bool:
        if request.method in permissions.SAFE_METHODS:
            return True
        client = request.user
        return not isinstance(client, ApiClient) or client.key.can_write


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
    """Per-key request rate (API_RATE_LIMIT). Approximate by design: hard quotas
    belong in the database, not in a cache-backed throttle.

    The count lives in the cache (Redis in production). While the cache is
    unreachable requests are let through uncounted: the limit guards against
    runaway clients, and a Redis outage must not turn every API request,
    reads included, into an error."""

    scope = "api_key"

    def allow_request(self, request: Request, view: object) -> bool:
        try:
            return super().allow_request(request, view)
        except (RedisError, OSError) as exc:  # Redis, or the file cache's folder
            # One line per request, not a traceback: the outage is the news.
            logger.warning("Rate limit not counted, the cache is unreachable: %s", exc)
            return True

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
