"""Moving monitors in and out of Pagewatch.

In: a source (one class per kind: changedetection.io's backup or API,
urlwatch's urls.yaml, a Distill export, any /v2/monitor API, a Pagewatch
export, a list of addresses) is read into planned items; `plan.prepare`
validates each through the API's own serializer and flags duplicates;
`importing.run_import` creates them, one transaction per monitor.
Out: `exporting.export_document`.

Interfaces (the /v2/import and /v2/export endpoints, the dashboard's Import
page, the importmonitors and exportmonitors commands) call `read` and the
modules above; nothing here imports a view.
"""

from __future__ import annotations

from monitors.moving import changedetection, distill, lists, monitorapi, urlwatch
from monitors.moving.base import (
    ImportRefused,
    Planned,
    Source,
    capped,
    max_bytes,
    recognise,
)
from monitors.moving.remote import Bounds, Progress

__all__ = [
    "ImportRefused",
    "Planned",
    "Source",
    "max_bytes",
    "guess_source",
    "read",
    "read_remote",
    "recognise",
    "sources",
]

# Imported for their classes, which register themselves as sources.
_READERS = (changedetection, distill, lists, monitorapi, urlwatch)


def sources() -> dict[str, type[Source]]:
    return dict(Source.registry)


def source(name: str) -> Source:
    found = Source.registry.get(name)
    if found is None:
        names = ", ".join(sorted(Source.registry))
        raise ImportRefused(f"Unknown source {name!r}: use one of {names}.")
    return found()


def guess_source(filename: str, data: bytes) -> str:
    """Which source a file is, from its name and first bytes."""
    if found := recognise(filename, data):
        return found
    if filename.lower().endswith(".json") or data.lstrip()[:1] in (b"{", b"["):
        return "distill"
    return "csv"


def read(
    name: str,
    *,
    data: bytes | None = None,
    filename: str = "",
    url: str = "",
    api_key: str = "",
    progress: Progress | None = None,
    bounds: Bounds | None = None,
) -> list[Planned]:
    """The planned items of a source, from a file's bytes or an address (read
    within `bounds`: a worker's when not given)."""
    reader = source(name)
    if data is not None:
        if len(data) > max_bytes():
            raise ImportRefused(
                f"The file is larger than {max_bytes() // 2**20} MB, the most "
                "Pagewatch reads (IMPORT_MAX_BYTES).",
                status=413,
            )
        try:
            return capped(reader.read_file(data, filename))
        except ImportRefused as refused:
            other = recognise(filename, data)
            if other is None or other == name:
                raise
            # The usual mistake: the right file under the wrong tool.
            raise ImportRefused(
                f"{refused.message} It looks like a file for "
                f"“{Source.registry[other].label}”: choose that instead.",
                refused.status,
            ) from None
    return read_remote(name, url, api_key, progress, bounds)


def read_remote(
    name: str,
    url: str,
    api_key: str,
    progress: Progress | None = None,
    bounds: Bounds | None = None,
) -> list[Planned]:
    """The planned items of a service read by its address and API key, one
    or two requests per watch (the dashboard does it in its preview task)."""
    return capped(source(name).read_remote(url, api_key, progress, bounds))
