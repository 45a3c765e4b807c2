from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django_application = get_wsgi_application()


def application(
    environ: dict[str, Any], start_response: Callable[..., Any]
) -> Iterable[bytes]:
    """Django under PUBLIC_BASE_URL's sub-path, whichever way the proxy
    passes it: a proxy that strips /pagewatch sends /monitors/, one that
    keeps it sends /pagewatch/monitors/; Django (FORCE_SCRIPT_NAME) wants the
    first. Probes that ask the machine directly (/healthz) come without it."""
    from django.conf import settings

    prefix = settings.FORCE_SCRIPT_NAME
    path = environ.get("PATH_INFO", "")
    if prefix and (path == prefix or path.startswith(prefix + "/")):
        environ["PATH_INFO"] = path[len(prefix) :] or "/"
    return django_application(environ, start_response)
