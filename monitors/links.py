"""Links given out (e-mails, feeds, webhooks, API results) start at
PUBLIC_BASE_URL, never at the host a request names. A reversed path already
carries PUBLIC_BASE_URL's sub-path (FORCE_SCRIPT_NAME), so only its scheme
and host go in front of it."""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings


def public_origin() -> str:
    parts = urlsplit(settings.PUBLIC_BASE_URL)
    return f"{parts.scheme}://{parts.netloc}"


def public_url(path: str) -> str:
    """A site-absolute path (from reverse(), so with any sub-path) as a link."""
    return public_origin() + path
