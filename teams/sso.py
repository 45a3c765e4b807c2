"""Single sign-on with OpenID Connect, through mozilla-django-oidc.

Configured by environment (config.settings: OIDC_ISSUER, OIDC_CLIENT_ID,
OIDC_CLIENT_SECRET, OIDC_PROVIDER_NAME, OIDC_TEAMS_CLAIM). The provider's
endpoints come from its discovery document, read once per process.

The provider's addresses are not users' input: the operator names the issuer,
as they name the database or the SMTP server, so its requests (discovery here,
tokens, keys and user info in the library, all with OIDC_TIMEOUT_SECONDS) do
not go through the monitored-page door in checks.fetch, whose private-address
policy is for addresses strangers choose. An identity provider on the
company's own network is the usual case.
"""

from __future__ import annotations

import functools
import json
import logging
from typing import Any

import requests
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction
from django.urls import reverse
from django.utils import timezone
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.utils import import_from_settings
from mozilla_django_oidc.views import (
    OIDCAuthenticationCallbackView,
    OIDCAuthenticationRequestView,
)

from monitors.models import LastOwnerError, Membership, Team
from teams.activity import Actor, Via
from teams.members import member_joined, role_changed
from teams.models import Invitation

logger = logging.getLogger(__name__)

# Largest discovery document read: a real one is a few kilobytes.
DISCOVERY_MAX_BYTES = 256 * 1024


def enabled() -> bool:
    return bool(settings.OIDC_ISSUER)


@functools.cache
def _discovery(issuer: str) -> dict[str, Any]:
    url = issuer.rstrip("/") + "/.well-known/openid-configuration"
    response = requests.get(
        url, timeout=settings.OIDC_TIMEOUT_SECONDS, stream=True, allow_redirects=False
    )
    response.raise_for_status()
    body = response.raw.read(DISCOVERY_MAX_BYTES + 1, decode_content=True)
    if len(body) > DISCOVERY_MAX_BYTES:
        raise ImproperlyConfigured(f"The discovery document at {url} is too large.")
    document = json.loads(body)
    if document.get("issuer", "").rstrip("/") != issuer.rstrip("/"):
        raise ImproperlyConfigured(
            f"OIDC_ISSUER is {issuer}, but its discovery document names "
            f"{document.get('issuer')!r} as the issuer."
        )
    return document


# mozilla-django-oidc's setting names, answered from ours and the discovery
# document instead of its own OIDC_OP_* settings.
_FROM_DISCOVERY = {
    "OIDC_OP_AUTHORIZATION_ENDPOINT": "authorization_endpoint",
    "OIDC_OP_TOKEN_ENDPOINT": "token_endpoint",
    "OIDC_OP_USER_ENDPOINT": "userinfo_endpoint",
    "OIDC_OP_JWKS_ENDPOINT": "jwks_uri",
}


def setting(name: str, *default: Any) -> Any:
    if name in _FROM_DISCOVERY:
        return _discovery(settings.OIDC_ISSUER)[_FROM_DISCOVERY[name]]
    ours = {
        "OIDC_RP_CLIENT_ID": settings.OIDC_CLIENT_ID,
        "OIDC_RP_CLIENT_SECRET": settings.OIDC_CLIENT_SECRET,
        "OIDC_RP_SIGN_ALGO": "RS256",
        "OIDC_RP_SCOPES": settings.OIDC_SCOPES,
        "OIDC_TIMEOUT": settings.OIDC_TIMEOUT_SECONDS,
        "OIDC_USE_PKCE": True,
        "LOGIN_REDIRECT_URL_FAILURE": reverse("login") + "?sso=failed",
    }
    if name in ours:
        return ours[name]
    return import_from_settings(name, *default)


class SignInRequest(OIDCAuthenticationRequestView):
    """ "Sign in with …": off to the provider."""

    get_settings = staticmethod(setting)


class SignInCallback(OIDCAuthenticationCallbackView):
    """Back from the provider."""

    get_settings = staticmethod(setting)


class Backend(OIDCAuthenticationBackend):
    """Accounts are found, or made, by the e-mail address the provider has
    verified; never by an address it has not. With OIDC_TEAMS_CLAIM, the
    claim's "team-slug:role" entries give teams and roles at every sign-in."""

    get_settings = staticmethod(setting)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Django makes a backend for every request of a signed-in session
        # (to load its user): the provider's endpoints are read when a
        # sign-in needs them, so an unreachable provider costs nothing here.
        self.UserModel = get_user_model()

    OIDC_OP_TOKEN_ENDPOINT = property(lambda self: setting("OIDC_OP_TOKEN_ENDPOINT"))
    OIDC_OP_USER_ENDPOINT = property(lambda self: setting("OIDC_OP_USER_ENDPOINT"))
    OIDC_OP_JWKS_ENDPOINT = property(lambda self: setting("OIDC_OP_JWKS_ENDPOINT"))
    OIDC_RP_CLIENT_ID = property(lambda self: setting("OIDC_RP_CLIENT_ID"))
    OIDC_RP_CLIENT_SECRET = property(lambda self: setting("OIDC_RP_CLIENT_SECRET"))
    OIDC_RP_SIGN_ALGO = property(lambda self: setting("OIDC_RP_SIGN_ALGO"))
    OIDC_RP_IDP_SIGN_KEY = None

    def verify_claims(self, claims: dict[str, Any]) -> bool:
        return bool(claims.get("email")) and claims.get("email_verified") is True

    def create_user(self, claims: dict[str, Any]) -> Any:
        user = super().create_user(claims)
        user.set_unusable_password()
        user.first_name = str(claims.get("given_name") or "")[:150]
        user.last_name = str(claims.get("family_name") or "")[:150]
        user.save()
        self.update_user(user, claims)
        return user

    def update_user(self, user: Any, claims: dict[str, Any]) -> Any:
        if settings.OIDC_TEAMS_CLAIM:
            sync_teams(user, claims.get(settings.OIDC_TEAMS_CLAIM))
        return user


def parse_teams_claim(value: Any) -> dict[str, str]:
    """{"acme": "editor"} from ["acme:editor", "globex"] (no role: the
    OIDC_DEFAULT_ROLE). Entries naming no known role are ignored."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        return {}
    wanted: dict[str, str] = {}
    for entry in value:
        if not isinstance(entry, str):
            continue
        slug, _, role = entry.strip().partition(":")
        role = role or settings.OIDC_DEFAULT_ROLE
        if slug and role in Membership.Role.values:
            wanted[slug] = role
    return wanted


def sync_teams(user: Any, claim: Any) -> None:
    """Join the teams the claim names with the roles it gives (existing teams
    only; teams it does not name are left as they are). A team's last owner
    keeps that role even when the claim says otherwise."""
    for slug, role in parse_teams_claim(claim).items():
        team = Team.objects.filter(slug=slug).first()
        if team is None:
            logger.info("Sign-in claim names no team %r; ignored", slug)
            continue
        with transaction.atomic():
            membership, created = Membership.objects.get_or_create(
                team=team, user=user, defaults={"role": role}
            )
            if created:
                member_joined(Actor(Via.DASHBOARD, user=user), team, user,
                              role=role, through="single sign-on")  # fmt: skip
                Invitation.objects.spend_for(team, user, timezone.now())
            if created or membership.role == role:
                continue
            was = membership.role
            try:
                membership.change_role(role)
            except LastOwnerError:
                logger.info("%s stays owner of %s: the last one", user, slug)
            else:
                role_changed(Actor(Via.DASHBOARD, user=user), membership, was,
                             through="single sign-on")  # fmt: skip
