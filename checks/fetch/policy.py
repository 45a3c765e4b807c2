"""Which addresses Pagewatch may connect to.

Pure rules, no network: the guarded transport (checks.fetch.transport) applies
the address policy to every address it connects to. Which URLs may be fetched
at all is a domain rule (monitors.url_rule), shared by the API, the forms and
every fetch hop.
"""

from __future__ import annotations

import contextlib
import ipaddress
import re

from django.conf import settings

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def allow_private_targets() -> bool:
    # Read on every call, never at import: tests flip it with pytest-django's
    # `settings` fixture.
    return bool(getattr(settings, "ALLOW_PRIVATE_NETWORK_TARGETS", False))


# --- Address policy -------------------------------------------------------------

# Blocked even when ALLOW_PRIVATE_NETWORK_TARGETS is on: a self-hoster who wants
# to watch their NAS must not also hand out the cloud instance's credentials.
_METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",  # AWS, GCP, Azure, DigitalOcean, OpenStack...
        "169.254.170.2",  # AWS ECS task credentials
        "169.254.170.23",  # AWS EKS Pod Identity Agent (pod credentials)
        "100.100.100.200",  # Alibaba Cloud
        "fd00:ec2::254",  # AWS IMDS over IPv6
        "fd00:ec2::23",  # AWS EKS Pod Identity Agent over IPv6
        "168.63.129.16",  # Azure WireServer (not private, but never a web page)
    )
)

# (network, what it is, may ALLOW_PRIVATE_NETWORK_TARGETS open it?). Ordered:
# more specific networks before the ones containing them. Python's `is_global`
# misses several of these (192.0.0.0/24, multicast, 3fff::/20...), hence a list.
_RANGES: tuple[tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, str, bool], ...] = (
    tuple(
        (ipaddress.ip_network(net), label, allowable)
        for net, label, allowable in (
            ("0.0.0.0/8", "a 'this network' address", False),
            ("10.0.0.0/8", "a private address", True),
            # CGNAT is allowable because Tailscale and similar VPNs live here.
            ("100.64.0.0/10", "a carrier-grade NAT address", True),
            ("127.0.0.0/8", "a loopback address", True),
            ("169.254.0.0/16", "a link-local address", True),
            ("172.16.0.0/12", "a private address", True),
            ("192.0.0.0/24", "an IETF protocol assignment address", False),
            ("192.0.2.0/24", "a documentation address", False),
            ("192.88.99.0/24", "a 6to4 relay address", False),
            ("192.168.0.0/16", "a private address", True),
            ("198.18.0.0/15", "a benchmarking address", False),
            ("198.51.100.0/24", "a documentation address", False),
            ("203.0.113.0/24", "a documentation address", False),
            ("224.0.0.0/4", "a multicast address", False),
            ("255.255.255.255/32", "the broadcast address", False),
            ("240.0.0.0/4", "a reserved address", False),
            ("::/128", "the unspecified address", False),
            ("::1/128", "a loopback address", True),
            ("::/96", "a deprecated IPv4-compatible address", False),
            ("64:ff9b:1::/48", "a local-use NAT64 address", False),
            ("100::/64", "a discard-only address", False),
            ("2001::/32", "a Teredo tunnel address", False),
            ("2001::/23", "an IETF protocol assignment address", False),
            ("2001:db8::/32", "a documentation address", False),
            ("3fff::/20", "a documentation address", False),
            ("fc00::/7", "a private address", True),
            ("fe80::/10", "a link-local address", True),
            ("fec0::/10", "a deprecated site-local address", False),
            ("ff00::/8", "a multicast address", False),
        )
    )
)

_NAT64 = ipaddress.ip_network("64:ff9b::/96")


def address_block_reason(ip: IPAddress, allow_private: bool) -> str | None:
    """Why Pagewatch must not connect to `ip`, or None when it may.

    `allow_private` opens loopback, private, link-local and CGNAT ranges (for
    self-hosters and tests); metadata addresses and everything else stay shut.
    """
    label = _forbidden_label(ip, allow_private)
    return None if label is None else f"{ip} is {label}"


def _forbidden_label(ip: IPAddress, allow_private: bool) -> str | None:
    if ip in _METADATA_ADDRESSES:
        return "a cloud metadata address"
    if isinstance(ip, ipaddress.IPv6Address):
        wrapped = _wrapped_ipv4(ip)
        if wrapped is not None:
            # Packets really go to (or are translated to) the IPv4 inside, so
            # that address is what we judge.
            kind, v4 = wrapped
            inner = _forbidden_label(v4, allow_private)
            return None if inner is None else f"{kind} for {v4}, which is {inner}"
    for network, label, allowable in _RANGES:
        if ip in network:
            return None if allowable and allow_private else label
    if not ip.is_global or ip.is_reserved or ip.is_multicast:
        return "not a public address"
    return None


def _wrapped_ipv4(
    ip: ipaddress.IPv6Address,
) -> tuple[str, ipaddress.IPv4Address] | None:
    """The IPv4 address carried inside an IPv4-mapped, NAT64 or 6to4 address."""
    if ip.ipv4_mapped is not None:
        return "an IPv4-mapped address", ip.ipv4_mapped
    if ip in _NAT64:
        return "a NAT64 address", ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip.sixtofour is not None:
        return "a 6to4 address", ip.sixtofour
    return None


_LOOPBACK = ipaddress.ip_address("127.0.0.1")


def host_block_reason(host: str, allow_private: bool) -> str | None:
    """Why a URL's host can never be fetched, judged without DNS, or None.

    IP literals get the address policy here, and so does `localhost`, which is
    loopback by definition (RFC 6761) whatever a resolver says. Any other host
    name is judged when connecting, by the address it resolves to then.
    """
    lowered = host.lower().rstrip(".")
    if lowered == "localhost" or lowered.endswith(".localhost"):
        label = _forbidden_label(_LOOPBACK, allow_private)
        return None if label is None else f"{host} is {label}"
    ip = ip_literal(host)
    return None if ip is None else address_block_reason(ip, allow_private)


def ip_literal(host: str) -> IPAddress | None:
    """The address `host` denotes if it is an IP literal, the way a resolver reads it.

    Besides dotted quads and IPv6 this accepts the inet_aton(3) forms that
    getaddrinfo also accepts (`2130706433`, `0x7f.1`, `0177.0.0.1`, `127.1`), so
    they are judged as the loopback address they are, not as host names.
    """
    bare = host.removeprefix("[").removesuffix("]")
    with contextlib.suppress(ValueError):
        return ipaddress.ip_address(bare)
    return _inet_aton(bare)


def _inet_aton(host: str) -> ipaddress.IPv4Address | None:
    parts = host.split(".")
    if len(parts) > 1 and parts[-1] == "":
        parts.pop()  # "127.1." is still 127.0.0.1 to most resolvers
    if not 1 <= len(parts) <= 4:
        return None
    numbers = [_inet_number(part) for part in parts]
    if any(n is None for n in numbers):
        return None
    *head, last = (n for n in numbers if n is not None)
    # The last part fills all the bytes the earlier parts did not: 127.1 -> 127.0.0.1.
    if any(n > 255 for n in head) or last >= 256 ** (4 - len(head)):
        return None
    value = sum(n << (8 * (3 - i)) for i, n in enumerate(head)) + last
    return ipaddress.IPv4Address(value)


def _inet_number(part: str) -> int | None:
    if re.fullmatch(r"0[xX][0-9a-fA-F]*", part):
        return int(part[2:] or "0", 16)
    if re.fullmatch(r"0[0-7]*", part):
        return int(part, 8)
    if re.fullmatch(r"[1-9][0-9]*", part):
        return int(part)
    return None
