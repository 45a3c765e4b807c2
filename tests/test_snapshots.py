"""Snapshot rows: content-addressed, compressed, readable across formats."""

from __future__ import annotations

import zlib

import pytest

from checks.content import SOURCE_HTML, extract, pack_snapshot, snapshot_hash, unpack
from checks.models import Snapshot

pytestmark = pytest.mark.django_db

PAGE = b"<html><body><main><h1>Plans</h1><p>Starter: $19</p></main></body></html>"


def html_source() -> str:
    return extract(
        PAGE, content_type="text/html", url="https://shop.example/", options={}
    ).source


def test_an_html_snapshot_reads_as_the_markdown_of_its_source():
    snapshot = Snapshot.store(html_source(), SOURCE_HTML)

    stored = Snapshot.objects.get(pk=snapshot.pk)

    assert stored.format == Snapshot.Format.HTML
    assert stored.source == html_source()
    assert stored.text == "# Plans\n\nStarter: $19\n"


def test_the_same_content_is_stored_once_per_format():
    source = html_source()

    first = Snapshot.store(source, SOURCE_HTML)
    again = Snapshot.store(source, SOURCE_HTML)
    as_markdown = Snapshot.store(source)  # the same text, meant as Markdown

    assert first.pk == again.pk != as_markdown.pk
    assert Snapshot.objects.count() == 2
    assert Snapshot.objects.get(pk=as_markdown.pk).text == source


def test_snapshots_compressed_with_zlib_by_earlier_versions_stay_readable():
    row = Snapshot.objects.create(
        content_hash=snapshot_hash("Old text\n"),
        data=zlib.compress(b"Old text\n"),
        size=9,
    )

    assert Snapshot.objects.get(pk=row.pk).text == "Old text\n"


def test_new_snapshots_are_zstandard_and_round_trip():
    digest, data, size, source_format = pack_snapshot("Crème brûlée – 5 €\n")

    assert data[:4] == b"\x28\xb5\x2f\xfd"  # the Zstandard frame magic
    assert unpack(data) == "Crème brûlée – 5 €\n"
    assert (size, source_format) == (len("Crème brûlée – 5 €\n".encode()), "markdown")
    assert digest == snapshot_hash("Crème brûlée – 5 €\n")


@pytest.mark.parametrize("data", [b"\x28\xb5\x2f\xfdgarbage", b"not compressed"])
def test_damaged_snapshot_data_is_a_value_error_not_a_crash(data):
    with pytest.raises(ValueError, match="damaged snapshot data"):
        unpack(data)
