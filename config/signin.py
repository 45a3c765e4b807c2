"""Who is signing in from where, and the page for a locked-out sign-in: the
sign-in throttle's (django-axes, configured in config.settings) two hooks;
the limit per address whatever the user names (axes counts per name and
address together, which a password sprayer never reaches), never applied to
a proxy's address, and lifted by `manage.py signin_unblock`; and the counter
in fixed clock windows that it shares with the password-reset throttle."""

from __future__ import annotations

import functools
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
    address (client_ip) as counted_address gives it."""
    return counted_address(client_ip(request))


def counted_address(address: str | None) -> str | None:
    """An address as the throttles count it: itself, or for IPv6 its /64
    network (as the network's first address), since a client given a /64
    could otherwise use a fresh address for every try and never reach the
    limit."""
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


# --- Counting in fixed windows -----------------------------------------------


def window_key(key: str, window_seconds: int) -> str:
    """`key` in the window of `window_seconds` the clock is in now. Windows are
    fixed, numbered by the clock, so the cache's expiry only tidies up and a
    clock moved on (in tests as in life) starts a fresh count."""
    return f"{key}:{int(time.time()) // window_seconds}"


def count_in_window(key: str, window_seconds: int) -> int | None:
    """Count one more use of `key` in this window and return the count; None
    while the cache is unreachable (then callers let the request through, as
    the API's rate limit does: an outage must not lock everyone out)."""
    counted = window_key(key, window_seconds)
    try:
        cache.add(counted, 0, timeout=window_seconds)
        return cache.incr(counted)
    except ValueError:  # expired between add and incr: a fresh window
        cache.set(counted, 1, timeout=window_seconds)
        return 1
    except (RedisError, OSError) as exc:
        # The kind of count only: no client's address in the log for this.
        kind = key.partition(":")[0]
        logger.warning("%s not counted, the cache is unreachable: %s", kind, exc)
        return None


def _count_so_far(key: str, window_seconds: int) -> int | None:
    try:
        return cache.get(window_key(key, window_seconds)) or 0
    except (RedisError, OSError) as exc:
        kind = key.partition(":")[0]
        logger.warning("%s not read, the cache is unreachable: %s", kind, exc)
        return None


# --- The limit per address, whatever the names ----------------------------------

# Addresses no client on the internet has: seen as the client, they are a
# proxy's (or a load balancer's, a container network's), so one count would be
# everyone's. Written out because ipaddress's is_private also holds the
# documentation ranges (192.0.2.0/24 and its kin), which are not proxies.
PROXY_NETWORKS = tuple(
    ipaddress.ip_network(network)
    for network in (
        "127.0.0.0/8",
        "10.0.0.0/8",
        "172.16.0.0/12",
        "192.168.0.0/16",
        "100.64.0.0/10",  # shared address space: carrier NAT, cloud balancers
        "169.254.0.0/16",
        "::1/128",
        "fc00::/7",
        "fe80::/10",
    )
)


@functools.cache
def warn_untrusted_proxy() -> None:
    """Once per process: the throttle cannot tell clients apart here."""
    logger.warning(
        "Sign-ins come from a loopback or private address, a proxy's: the "
        "limit of failed sign-ins per address is not applied, since it would "
        "lock everyone out at once. Behind your own proxy set "
        "TRUST_PROXY_HEADERS=true (and have it append the client's address to "
        "X-Forwarded-For) so each client is counted by its own address."
    )


def is_proxy_address(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Whether an address is a proxy's (PROXY_NETWORKS): never limited."""
    return any(ip in network for network in PROXY_NETWORKS)


def address_key(address: str | None) -> str | None:
    """The count's key for an address as counted_address gives it, or None
    when it is a proxy's (PROXY_NETWORKS), or none at all (a proxy on a Unix
    socket): no limit per address then, only axes' per name and address."""
    try:
        ip = ipaddress.ip_address(address or "")
    except ValueError:
        ip = None
    if ip is None or is_proxy_address(ip):
        warn_untrusted_proxy()
        return None
    return f"signin-failures:address:{ip}"


def _window_seconds() -> int:
    return int(settings.AXES_COOLOFF_TIME.total_seconds())


def address_failed(
    sender: Any, credentials: Any = None, request: HttpRequest | None = None, **_: Any
) -> None:
    """On user_login_failed: one more failure from this address, whatever the
    name, in this window. The address is logged once it reaches the limit, so
    an administrator can lift the block (manage.py signin_unblock)."""
    address = throttled_address(request) if request is not None else None
    key = address_key(address)
    if key is None:
        return
    failures = count_in_window(key, _window_seconds())
    if failures == settings.SIGNIN_FAILURES_PER_ADDRESS:
        logger.warning(
            "Password sign-ins from %s refused for the rest of this window after "
            "%d failures (lift with: manage.py signin_unblock %s)",
            address,
            failures,
            address,
        )


def address_refused(request: HttpRequest) -> HttpResponse | None:
    """The 429 page when this address has failed too often across names in
    this window; None to let the sign-in go on (to axes' per-name check).

    Refused before the password is checked, a right one included: were a right
    password let through, the limit would stop nothing, since a sprayer past it
    would still learn which of their guesses is right. What that costs (people
    sharing the sprayer's address, an office's or a carrier NAT's, wait for the
    window's end) is bounded: never for a proxy's address, at most one window,
    and an administrator can lift it at once (manage.py signin_unblock)."""
    key = address_key(throttled_address(request))
    failures = _count_so_far(key, _window_seconds()) if key else None
    if failures is None or failures < settings.SIGNIN_FAILURES_PER_ADDRESS:
        return None
    context = {"minutes": _window_seconds() // 60, "whole_address": True}
    return render(request, "registration/locked_out.html", context, status=429)


def lift_address_block(address: str) -> str | None:
    """Forget this window's failures of `address` (any address of an IPv6
    /64 names the whole network); the address as counted, or None when its
    failures are not counted (a proxy's address)."""
    counted = counted_address(address) or address
    key = address_key(counted)
    if key is None:
        return None
    cache.delete(window_key(key, _window_seconds()))
    return counted
