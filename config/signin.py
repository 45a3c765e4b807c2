"""Who is signing in from where, and the page for a locked-out sign-in: the
sign-in throttle's (django-axes, configured in config.settings) two hooks;
and the limit per address whatever the user names (axes counts per name and
address together, which a password sprayer never reaches)."""

from __future__ import annotations

import ipaddress
import logging
import time
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from redis.exceptions import RedisError

logger = logging.getLogger(__name__)


def client_ip(request: HttpRequest) -> str | None:
    """The address the failed sign-ins of a user name are counted under.

    Behind our own proxy (TRUST_PROXY_HEADERS) every connection comes from the
    proxy, so the client is the last X-Forwarded-For entry: the one the proxy
    added (nginx's `$proxy_add_x_forwarded_for`). Entries before it come from
    the client and prove nothing. Without a trusted proxy, the peer itself."""
    if settings.TRUST_PROXY_HEADERS:
        forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
        hops = [hop.strip() for hop in forwarded.split(",") if hop.strip()]
        if hops:
            return hops[-1]
    return request.META.get("REMOTE_ADDR")


# A network that is one machine (or one customer) on IPv6: providers hand out
# a /64 at least, so each try could come from an address of its own.
IPV6_CLIENT_PREFIX = 64


def throttled_address(request: HttpRequest) -> str | None:
    """What failed sign-ins and reset requests are counted under: the client's
    address (client_ip), or for IPv6 its /64 network (as the network's first
    address), since a client given a /64 could otherwise use a fresh address
    for every try and never reach the limit."""
    address = client_ip(request)
    try:
        ip = ipaddress.ip_address(address or "")
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv4Address):
        return str(ip)
    if ip.ipv4_mapped is not None:  # an IPv4 client on a dual-stack socket
        return str(ip.ipv4_mapped)
    # The network's first address: axes keeps an address, not a network.
    network = ipaddress.ip_network(f"{ip}/{IPV6_CLIENT_PREFIX}", strict=False)
    return str(network.network_address)


def locked_out(
    request: HttpRequest, response: HttpResponse | None, credentials: Any
) -> HttpResponse:
    """429 with a page that says how long to wait; the same for the admin's
    sign-in, and for scripts (axes' own JSON answer allows every origin)."""
    minutes = int(settings.AXES_COOLOFF_TIME.total_seconds() // 60)
    context = {"minutes": minutes}
    return render(request, "registration/locked_out.html", context, status=429)


def _failures_key(request: HttpRequest) -> str:
    """The count's key names its window of one cool-off, numbered by the
    clock, as the password-reset counts do: the cache's expiry only tidies
    up, and a clock moved on (in tests as in life) starts a fresh count."""
    window = int(settings.AXES_COOLOFF_TIME.total_seconds())
    number = int(time.time()) // window
    return f"signin-failures:address:{throttled_address(request)}:{number}"


def address_failed(
    sender: Any, credentials: Any = None, request: HttpRequest | None = None, **_: Any
) -> None:
    """On user_login_failed: one more failure from this address, whatever the
    name, in this cool-off's window. While the cache is unreachable nothing
    is counted: an outage must not lock everyone out."""
    if request is None:
        return
    key = _failures_key(request)
    try:
        cache.add(key, 0, timeout=int(settings.AXES_COOLOFF_TIME.total_seconds()))
        cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.set(key, 1, timeout=int(settings.AXES_COOLOFF_TIME.total_seconds()))
    except (RedisError, OSError) as exc:
        logger.warning("Sign-in failure not counted, the cache is unreachable: %s", exc)


def address_refused(request: HttpRequest) -> HttpResponse | None:
    """The 429 page when this address has failed too often across names in
    this window; None to let the sign-in go on (to axes' per-name check)."""
    try:
        failures = cache.get(_failures_key(request)) or 0
    except (RedisError, OSError) as exc:
        logger.warning("Sign-in failures not read, the cache is unreachable: %s", exc)
        return None
    if failures < settings.SIGNIN_FAILURES_PER_ADDRESS:
        return None
    minutes = int(settings.AXES_COOLOFF_TIME.total_seconds() // 60)
    context = {"minutes": minutes, "whole_address": True}
    return render(request, "registration/locked_out.html", context, status=429)
