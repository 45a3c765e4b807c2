"""Benchmark: importing 1,000 watches from a changedetection.io backup, against
creating the same monitors one by one through the API, in the same run.

The backup is made here to changedetection.io's layout: WATCHES watches, each
with a CSS filter, an element to remove, a request header, two lines to
ignore and a last snapshot (Brotli), so the import does all it does for real
backups (reading the zip, mapping, validating with the API's serializer,
creating the monitors in batches with their first baselines).

The baseline posts the very bodies the import plans, one `POST /v2/monitor`
each through Django's test client in this process (middleware, key
authentication, the serializer, the same create workflow, the answer
rendered; no socket). Each side starts on an empty team.

CPU is counted in every process that works: this one (the Python side) and
the PostgreSQL backend serving its connection (read from /proc), divided by
the monitors made.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

WATCHES = 1000


@dataclass
class ImportResult:
    watches: int = WATCHES
    created: dict[str, int] = field(default_factory=dict)
    cpu_s: dict[str, float] = field(default_factory=dict)  # all processes
    wall_s: dict[str, float] = field(default_factory=dict)
    backend_s: dict[str, float] = field(default_factory=dict)
    zip_bytes: int = 0


def backup(count: int = WATCHES) -> bytes:
    import io
    import zipfile

    import brotli

    watching = {}
    files: dict[str, bytes] = {}
    for i in range(count):
        uuid_ = str(uuid.UUID(int=i + 1))
        url = f"https://shop-{i:05d}.example.com/pricing"
        watching[uuid_] = {
            "url": url,
            "title": f"Shop {i} pricing",
            "time_between_check_use_default": False,
            "time_between_check": {"minutes": 30},
            "include_filters": ["#prices"],
            "subtractive_selectors": [".ads"],
            "ignore_text": ["Last updated", "/\\d+ people viewing/"],
            "headers": {"Accept-Language": "en"},
        }
        files[f"{uuid_}/history.txt"] = b"1700000000,snap.txt.br\n"
        text = f"Shop {i}\nBasic plan {i % 50} EUR\nPro plan {i % 90} EUR\n" * 20
        files[f"{uuid_}/snap.txt.br"] = brotli.compress(text.encode())
    datastore = {"settings": {"application": {}}, "watching": watching}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("changedetection.json", json.dumps(datastore))
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def _backend_cpu() -> float:
    """CPU seconds of the PostgreSQL backend serving this connection."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class _Meter:
    def __init__(self, result: ImportResult, name: str) -> None:
        self.result, self.name = result, name

    def __enter__(self) -> _Meter:
        self.cpu, self.wall = time.process_time(), time.perf_counter()
        self.backend = _backend_cpu()
        return self

    def __exit__(self, *exc_info: object) -> None:
        backend = _backend_cpu() - self.backend
        python = time.process_time() - self.cpu
        self.result.cpu_s[self.name] = python + backend
        self.result.backend_s[self.name] = backend
        self.result.wall_s[self.name] = time.perf_counter() - self.wall


def measure() -> ImportResult:
    from django.utils import timezone
    from rest_framework.test import APIClient

    from monitors import moving
    from monitors.api.auth import ApiKeyRateThrottle
    from monitors.models import ApiKey, Monitor, Team
    from monitors.moving import importing, plan

    result = ImportResult()
    data = backup()
    result.zip_bytes = len(data)

    # The bodies the API side posts: what the import plans for each watch.
    bodies = [
        {k: v for k, v in item.payload.items() if k != "status"}
        for item in moving.read("changedetection", data=data)
        if item.payload is not None
    ]
    api_team = Team.objects.create(name="API", slug="bench-api")
    _, raw = ApiKey.issue(api_team)
    client = APIClient(HTTP_HOST="127.0.0.1")
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    # A thousand posts in a minute pass API_RATE_LIMIT: the throttle still
    # counts each request (its cost stays in the figure), at a rate they fit.
    ApiKeyRateThrottle.rate = f"{10 * WATCHES}/min"
    try:
        client.post("/v2/monitor", bodies[0], format="json")  # warm the stack
        Monitor.objects.filter(team=api_team).delete()
        with _Meter(result, "api"):
            for body in bodies:
                response = client.post("/v2/monitor", body, format="json")
                assert response.status_code == 200, response.content[:300]
    finally:
        del ApiKeyRateThrottle.rate
    result.created["api"] = Monitor.objects.filter(team=api_team).count()

    import_team = Team.objects.create(name="Import", slug="bench-import")
    with _Meter(result, "import"):
        items = plan.prepare(import_team, moving.read("changedetection", data=data))
        report = importing.run_import(import_team, items, timezone.now())
    result.created["import"] = report.created
    return result
