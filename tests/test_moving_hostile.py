"""Hostile imports: bombs, climbing paths, oversize and malformed files. Each
is a clear error or a "not imported" row; nothing is written anywhere."""

from __future__ import annotations

import brotli
import pytest

from monitors import moving
from monitors.moving import archive
from monitors.moving.base import ImportRefused
from tests.moving import backup_files, zip_files


def test_a_zip_bomb_entry_is_refused_by_what_it_inflates_to():
    bomb = zip_files(
        backup_files() | {"changedetection.json": b" " * (archive.MAX_ENTRY_BYTES + 1)}
    )
    assert len(bomb) < 200_000  # small on disk, huge unpacked
    with pytest.raises(ImportRefused, match="unpacks to more than 16 MB"):
        moving.read("changedetection", data=bomb)


def test_a_brotli_bomb_snapshot_is_refused_too():
    files = backup_files()
    name = next(n for n in files if n.endswith(".txt.br"))
    files[name] = brotli.compress(b"0" * (archive.MAX_ENTRY_BYTES + 1))
    with pytest.raises(ImportRefused, match="unpacks to more than"):
        moving.read("changedetection", data=zip_files(files))


def test_the_total_unpacked_size_is_capped(monkeypatch):
    monkeypatch.setattr(archive, "MAX_TOTAL_BYTES", 100)
    with pytest.raises(ImportRefused, match="The archive unpacks to more than"):
        moving.read("changedetection", data=zip_files(backup_files()))


def test_an_archive_of_too_many_files_is_refused(monkeypatch):
    monkeypatch.setattr(archive, "MAX_ENTRIES", 5)
    with pytest.raises(ImportRefused, match="at most 5 are read"):
        moving.read("changedetection", data=zip_files(backup_files()))


@pytest.mark.parametrize(
    "name", ["../../etc/cron.d/evil", "/etc/passwd", "watch/../../x.txt", "..\\..\\x"]
)
def test_a_zip_with_paths_leading_outside_it_is_refused(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    hostile = zip_files(backup_files() | {name: b"owned"})
    with pytest.raises(ImportRefused, match="leads outside it"):
        moving.read("changedetection", data=hostile)
    assert list(tmp_path.rglob("*")) == []


def test_a_file_that_is_not_a_zip_is_a_clear_error():
    with pytest.raises(ImportRefused, match="not a zip archive"):
        moving.read("changedetection", data=b"PK\x03\x04 not really")


def test_a_backup_cut_short_asks_for_it_again():
    from tests.moving import backup_zip

    whole = backup_zip()
    with pytest.raises(ImportRefused) as refused:
        moving.read("changedetection", data=whole[: len(whole) // 2])
    assert refused.value.message == (
        "The file is not a zip archive, or it is damaged (a download cut short?): "
        "download the backup again."
    )


def test_a_file_over_the_import_cap_is_refused_before_reading(settings):
    settings.IMPORT_MAX_BYTES = 1024
    with pytest.raises(ImportRefused) as refused:
        moving.read("csv", data=b"https://a.example/\n" * 100)
    assert refused.value.status == 413


@pytest.mark.parametrize(
    "data",
    [b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", b"https://a.test/\x81\x8d", b"\xff\xfeh"],
)
def test_a_file_that_is_not_text_is_a_clear_error(data):
    with pytest.raises(ImportRefused, match="not text in an encoding Pagewatch reads"):
        moving.read("csv", data=data)


def test_snapshots_past_the_baseline_budget_are_noted_not_kept(monkeypatch):
    from monitors.moving import changedetection

    monkeypatch.setattr(changedetection, "BASELINES_MAX_BYTES", 45)
    items = {
        i.ref: i for i in moving.read("changedetection", data=zip_files(backup_files()))
    }
    kept = [i for i in items.values() if i.baselines]
    dropped = [i for i in items.values() if any("not kept" in n for n in i.notes)]
    assert len(kept) == 1 and len(dropped) == 1
