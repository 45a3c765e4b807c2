"""Lift every sign-in block on an address: the limit for the whole address
(config.signin) and django-axes' lockouts of each name tried from it."""

from __future__ import annotations

import ipaddress
from typing import Any

from axes.utils import reset
from django.core.management.base import BaseCommand, CommandError, CommandParser

from config import signin


class Command(BaseCommand):
    help = (
        "Let password sign-ins from these addresses in again at once: forget "
        "their failed sign-ins, for the whole address and for each user name. "
        "An IPv6 address lifts its whole /64 network, as it is counted."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("address", nargs="+")

    def handle(self, *args: Any, **options: Any) -> None:
        # Every address checked before any is lifted: a mistyped one would
        # otherwise be reported as let in while nothing was lifted.
        for address in options["address"]:
            try:
                ip = ipaddress.ip_address(address)
            except ValueError:
                raise CommandError(f"{address} is not an address") from None
            if signin.is_proxy_address(ip):
                raise CommandError(
                    f"{address} is a proxy's or private address, never limited"
                )
        for address in options["address"]:
            counted = signin.counted_address(address) or address
            signin.lift_address_block(counted)
            # axes keeps the address as counted (AXES_CLIENT_IP_CALLABLE).
            names = reset(ip=counted)
            self.stdout.write(
                f"{counted}: sign-ins let in again, the failures of "
                f"{names} user names from it forgotten"
            )
