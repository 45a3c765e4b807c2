"""A bot-protection challenge page ("Just a moment…", a captcha) answered in
place of the page: the site blocked the check, and its text is not the page's.

Judged conservatively, so that a page that merely mentions Cloudflare is never
taken for one: a header the protection sets on its challenges (Cloudflare's
`cf-mitigated`; AWS WAF's `x-amzn-waf-action`, whose challenge is a 202
Accepted, a success status), or, on an answer that refused us (403, 429, 503),
one of the few markers of the well-known challenge pages near the start of its
body. Pure: reads what it is given."""

from __future__ import annotations

from collections.abc import Mapping

# Statuses the protections answer their challenges with.
CHALLENGE_STATUSES = frozenset({403, 429, 503})
# Where the markers are: a challenge page is small, and says so early.
_HEAD_BYTES = 32 * 1024
_MARKERS = (
    b"<title>just a moment...</title>",  # Cloudflare's managed challenge
    b"<title>attention required! | cloudflare</title>",  # Cloudflare's block
    b"/cdn-cgi/challenge-platform/",  # Cloudflare's challenge script
    b"captcha-delivery.com",  # DataDome's captcha
    b"px-captcha",  # PerimeterX (HUMAN)
    b"/_incapsula_resource",  # Imperva
)

# Header and the values a protection marks its challenges with.
_HEADERS = (
    ("cf-mitigated", frozenset({"challenge"})),
    ("x-amzn-waf-action", frozenset({"challenge", "captcha"})),
)


def is_challenge(status: int, headers: Mapping[str, str], body: bytes) -> bool:
    for name, values in _HEADERS:
        if headers.get(name, "").strip().lower() in values:
            return True
    if status not in CHALLENGE_STATUSES:
        return False
    head = body[:_HEAD_BYTES].lower()
    return any(marker in head for marker in _MARKERS)
