#!/usr/bin/env python
from __future__ import annotations

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from django.core.management import execute_from_command_line
    from django.db import OperationalError

    try:
        execute_from_command_line(sys.argv)
    except OperationalError as exc:
        # The database refused, cannot be reached, or cannot write (a full
        # disk): the operator's to fix, so one line saying what it answered,
        # not a traceback through Django (`--traceback` still shows it).
        if "--traceback" in sys.argv:
            raise
        sys.exit(f"Database error: {' '.join(str(exc).split())}")


if __name__ == "__main__":
    main()
