"""Which Chromium the browser runs, and whether there is one. Light on
purpose (no Playwright): the web process asks too, to say so in the
dashboard."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

DEFAULT_EXECUTABLES = ("/usr/bin/chromium",)
PATH_NAMES = ("chromium", "chromium-browser")


def executable() -> str | None:
    """The Chromium to run: BROWSER_EXECUTABLE (a path or a name on PATH), else
    Debian's /usr/bin/chromium or `chromium` on PATH; None when there is none."""
    return find_executable(_configured())


def _configured() -> str:
    # Imported here, not at the top: make run's process manager imports this
    # module and loads neither Django nor anything it would bring.
    from django.conf import settings

    return str(getattr(settings, "BROWSER_EXECUTABLE", "") or "")


def find_executable(configured: str) -> str | None:
    """executable() for a given BROWSER_EXECUTABLE (config.run asks before
    Django is set up)."""
    configured = configured.strip()
    candidates = [configured] if configured else [*DEFAULT_EXECUTABLES, *PATH_NAMES]
    for candidate in candidates:
        path = Path(candidate)
        if path.is_absolute():
            if path.is_file() and os.access(path, os.X_OK):
                return str(path)
            continue
        found = shutil.which(candidate)
        if found:
            return found
    return None


def available() -> bool:
    return executable() is not None


def unavailable_message() -> str:
    configured = _configured().strip()
    if not configured:
        where = (
            "no Chromium was found (install Debian's chromium package, or set "
            "BROWSER_EXECUTABLE to a Chromium binary)"
        )
    elif Path(configured).is_absolute() and Path(configured).exists():
        where = (
            f"BROWSER_EXECUTABLE ({configured}) is not a program this server "
            "can run (it must name a Chromium binary)"
        )
    else:
        where = f"BROWSER_EXECUTABLE ({configured}) was not found"
    return f"This page needs a browser, but none is available: {where}."
