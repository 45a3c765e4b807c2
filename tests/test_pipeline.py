"""checks.pipeline: a page moves forward through its stages, against real pages
served on 127.0.0.1 (tests/sites.py)."""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from checks import runner
from checks.content import content_hash
from checks.errors import plain_error
from checks.models import Check, PageResult, PageState, Snapshot
from monitors.models import Monitor, Target, Team

pytestmark = pytest.mark.django_db

PIPELINE = Path(__file__).resolve().parent.parent / "checks" / "pipeline"
STAGES = ("plan", "fetch", "extract", "compare", "judge", "record")
# What a stage may import from the pipeline: the types the stages hand each
# other, and (for the plan) where pages come from.
SHARED = {"checks.pipeline.outcome", "checks.pipeline.sources"}
JSON = "application/json"


@pytest.fixture(autouse=True)
def private_targets_allowed(settings):
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True


def make_monitor(team: Team, urls: list[str]) -> Monitor:
    monitor = Monitor.objects.create(
        team=team, name="Prices", schedule_cron="0 * * * *"
    )
    Target.objects.create(monitor=monitor, type="scrape", urls=urls)
    return monitor


def run_check(monitor: Monitor) -> Check:
    return runner.run(Check.objects.create(monitor=monitor, trigger="manual"))


def pipeline_imports(stage: str) -> set[str]:
    tree = ast.parse((PIPELINE / f"{stage}.py").read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "checks.pipeline":
                names |= {f"checks.pipeline.{alias.name}" for alias in node.names}
            elif node.module.startswith("checks.pipeline."):
                names.add(node.module)
    return names


@pytest.mark.parametrize("stage", STAGES)
def test_no_stage_imports_another_stage(stage):
    assert pipeline_imports(stage) <= SHARED


def counted_reads(monkeypatch) -> list[int]:
    """The baselines whose text the check reads, one entry per read."""
    reads: list[int] = []
    real_packed = Snapshot.packed.__func__  # type: ignore[attr-defined]

    def counting(cls: type[Snapshot], ids: Iterable[int]) -> Any:
        wanted = set(ids)
        reads.extend(wanted)
        return real_packed(cls, wanted)

    monkeypatch.setattr(Snapshot, "packed", classmethod(counting))
    return reads


def test_each_changed_page_is_compared_with_its_baselines_text_read_once(
    team, site, monkeypatch
):
    urls = [site.html(f"/p{i}", f"P{i}", f"<p>Costs ${i}.</p>") for i in range(3)]
    monitor = make_monitor(team, urls)
    first = run_check(monitor)
    for i in range(3):
        site.html(f"/p{i}", f"P{i}", f"<p>Costs ${i + 10}.</p>")
    reads = counted_reads(monkeypatch)

    check = run_check(monitor)

    assert [page.status for page in check.pages.all()] == ["changed"] * 3
    baselines = {page.current_snapshot_id for page in first.pages.all()}
    assert sorted(reads) == sorted(baselines)  # each once, none twice
    page = check.pages.get(url=urls[0])
    assert "+Costs $10." in page.diff["text"]
    assert page.previous_snapshot_id != page.current_snapshot_id


def test_new_markup_around_text_whose_hash_is_known_reads_no_baseline(
    team, site, monkeypatch
):
    url = site.html("/p", "P", "<p>Costs $5.</p>")
    monitor = make_monitor(team, [url])
    run_check(monitor)
    site.html("/p", "P", '<p id="a1">Costs $5.</p>')
    run_check(monitor)  # compared once: the text's hash is stored since
    site.html("/p", "P", '<p id="b2">Costs $5.</p>')
    reads = counted_reads(monkeypatch)

    page = run_check(monitor).pages.get()

    assert (page.status, reads) == (PageResult.Status.SAME, [])
    assert page.current_snapshot_id == page.previous_snapshot_id


def test_an_accent_changed_on_a_latin1_page_without_a_charset_is_a_change(team, site):
    page = "<html><body><main><p>Prix: {} 5 €</p></main></body></html>"
    url = site.page(
        "/fr", page.format("café").encode("cp1252"), content_type="text/html"
    )
    monitor = make_monitor(team, [url])
    run_check(monitor)
    site.page("/fr", page.format("cafè").encode("cp1252"), content_type="text/html")

    result = run_check(monitor).pages.get()

    assert result.status == PageResult.Status.CHANGED
    assert "+Prix: cafè 5 €" in result.diff["text"]


def test_a_latin1_page_under_a_utf8_header_shows_its_accent_changed(team, site):
    page = "<html><body><main><p>Prix: {} 5 €</p></main></body></html>"
    headed = "text/html; charset=utf-8"
    url = site.page("/fr", page.format("café").encode("cp1252"), content_type=headed)
    monitor = make_monitor(team, [url])
    run_check(monitor)
    unchanged = run_check(monitor).pages.get()
    site.page("/fr", page.format("cafè").encode("cp1252"), content_type=headed)

    result = run_check(monitor).pages.get()

    assert unchanged.status == PageResult.Status.SAME
    assert result.status == PageResult.Status.CHANGED
    assert "-Prix: café 5 €\n+Prix: cafè 5 €" in result.diff["text"]


def test_a_utf8_page_gaining_stray_bytes_keeps_its_letters_between_checks(team, site):
    def menu(strays: int) -> bytes:
        # The "é" of each pasted "cafe" is a Latin-1 byte, the rest UTF-8.
        pasted = b" ".join([b"caf\xe9"] * strays)
        html = "<html><body><main><p>Café ’q’</p><p>Ref {}</p></main></body></html>"
        return html.encode().replace(b"{}", pasted)

    url = site.page("/menu", menu(2), content_type="text/html; charset=utf-8")
    monitor = make_monitor(team, [url])
    run_check(monitor)
    site.page("/menu", menu(4), content_type="text/html; charset=utf-8")

    result = run_check(monitor).pages.get()

    assert result.status == PageResult.Status.CHANGED
    assert " Café ’q’\n" in result.diff["text"]  # the same line both times
    assert "-Ref caf\ufffd caf\ufffd\n" in result.diff["text"]
    assert "+Ref caf\ufffd caf\ufffd caf\ufffd caf\ufffd" in result.diff["text"]


def test_a_page_labelled_with_an_encoding_that_reads_nothing_is_read(team, site):
    # Python knows "undefined" as a codec that refuses to decode anything.
    page = "<html><body><main><p>Prix: {} 5 €</p></main></body></html>"
    headed = "text/html; charset=undefined"
    url = site.page("/fr", page.format("café").encode(), content_type=headed)
    monitor = make_monitor(team, [url])
    first = run_check(monitor).pages.get()
    site.page("/fr", page.format("thé").encode(), content_type=headed)

    result = run_check(monitor).pages.get()

    assert (first.status, first.error) == (PageResult.Status.NEW, None)
    assert result.status == PageResult.Status.CHANGED
    assert "-Prix: café 5 €\n+Prix: thé 5 €" in result.diff["text"]


def test_a_shift_jis_page_declared_by_its_meta_tag_diffs_in_japanese(team, site):
    page = '<html><head><meta charset="Shift_JIS"></head><body><p>{}</p></body></html>'
    url = site.page(
        "/jp", page.format("①価格：五千円").encode("cp932"), content_type="text/html"
    )
    monitor = make_monitor(team, [url])
    run_check(monitor)
    site.page(
        "/jp", page.format("①価格：六千円").encode("cp932"), content_type="text/html"
    )

    result = run_check(monitor).pages.get()

    assert result.status == PageResult.Status.CHANGED
    assert "-①価格：五千円\n+①価格：六千円" in result.diff["text"]


def test_a_json_api_whose_keys_reorder_is_the_same_and_a_new_value_one_line(team, site):
    url = site.page("/api", b'{"price": 19, "plan": "pro"}', content_type=JSON)
    monitor = make_monitor(team, [url])
    run_check(monitor)
    site.page("/api", b'{"plan": "pro", "price": 19}', content_type=JSON)
    reordered = run_check(monitor).pages.get()
    site.page("/api", b'{"plan": "pro", "price": 24}', content_type=JSON)

    changed = run_check(monitor).pages.get()

    assert reordered.status == PageResult.Status.SAME
    assert changed.status == PageResult.Status.CHANGED
    assert '-  "price": 19\n+  "price": 24' in changed.diff["text"]
    assert "plan" not in changed.diff["text"].replace('"plan": "pro",', "")


def test_a_json_baseline_stored_in_its_server_order_is_the_same_reordered(team, site):
    url = site.page("/api", b'{"price": 19, "plan": "pro"}', content_type=JSON)
    monitor = make_monitor(team, [url])
    run_check(monitor)
    # What an earlier version stored: the server's key order, indented.
    state = PageState.objects.get()
    unsorted = '{\n  "price": 19,\n  "plan": "pro"\n}\n'
    old = Snapshot.store(unsorted)
    PageState.objects.filter(pk=state.pk).update(
        snapshot=old, normalized_hash=content_hash(unsorted), body_hash=""
    )
    site.page("/api", b'{"plan": "pro", "price": 19}', content_type=JSON)

    result = run_check(monitor).pages.get()

    assert result.status == PageResult.Status.SAME


def test_a_baseline_an_older_release_misread_is_read_again_before_the_next_change(
    team, site
):
    # Latin-1 bytes under a UTF-8 label: releases before the encoding fixes
    # read every accented letter as U+FFFD and kept that text as the baseline,
    # with the hash of the very bytes it came from, computed as they did.
    html = "<html><head><title>Menu</title></head><body><p>{}</p>{}</body></html>"
    label = "text/html; charset=utf-8"
    url = site.page("/menu", html.format("Caf\ufffd cr\ufffdme \ufffd3", "").encode(),
                    content_type=label)  # fmt: skip
    monitor = make_monitor(team, [url])
    run_check(monitor)
    served = html.format("Caf\xe9 cr\xe8me \xa33", "").encode("latin-1")
    older_release_hash = hashlib.sha256(
        url.encode() + b"\0" + label.encode() + b"\0" + served
    ).hexdigest()
    PageState.objects.update(body_hash=older_release_hash)
    site.page("/menu", served, content_type=label)

    upgraded = run_check(monitor).pages.get()
    with_tea = html.format("Caf\xe9 cr\xe8me \xa33", "<p>Tea</p>").encode("latin-1")
    site.page("/menu", with_tea, content_type=label)
    changed = run_check(monitor).pages.get()

    assert upgraded.status == PageResult.Status.SAME
    assert changed.status == PageResult.Status.CHANGED
    assert "+Tea" in changed.diff["text"]
    assert "\ufffd" not in changed.diff["text"]
    assert "-Caf" not in changed.diff["text"]  # the unchanged line is no change


def test_a_baseline_missing_an_element_whose_made_up_class_read_as_an_ad_is_mended(
    team, site
):
    # Releases before it took "css-1ad2x3" for an ad and dropped the plans'
    # box; the baseline kept that text, with the hash of the very bytes.
    html = "<html><body><main><h1>Plans</h1><p>{}</p>{}<p>{}</p></main></body></html>"
    words = "Every plan comes with every feature and a friendly team."
    box = '<div class="css-1ad2x3"><p>Starter costs $19 a month.</p></div>'
    label = "text/html; charset=utf-8"
    url = site.page("/plans", html.format(words, "", "Ask us"), content_type=label)
    monitor = make_monitor(team, [url])
    run_check(monitor)
    served = html.format(words, box, "Ask us").encode()
    older_release_hash = hashlib.sha256(
        url.encode() + b"\0" + label.encode() + b"\0" + served + b"\0reading 3"
    ).hexdigest()
    PageState.objects.update(body_hash=older_release_hash)
    site.page("/plans", served, content_type=label)

    upgraded = run_check(monitor).pages.get()
    site.page("/plans", html.format(words, box, "Call us"), content_type=label)
    changed = run_check(monitor).pages.get()

    assert upgraded.status == PageResult.Status.SAME
    assert changed.status == PageResult.Status.CHANGED
    assert "+Call us" in changed.diff["text"]
    assert "+Starter costs" not in changed.diff["text"]  # no change of the page


def test_a_utf8_page_the_last_release_read_as_windows_1252_is_read_again_quietly(
    team, site
):
    # A UTF-8 page with more pasted Latin-1 bytes than letters of its own:
    # the release before read it as windows-1252 and kept that as the
    # baseline, with the hash of its very bytes computed as it did.
    html = "<html><body><main><p>Café ’q’</p><p>Ref {}</p>{}</main></body></html>"
    label = "text/html; charset=utf-8"
    served = html.format("caf\0 caf\0 caf\0 caf\0", "").encode()
    served = served.replace(b"\0", b"\xe9")
    url = site.page("/menu", served.decode("cp1252"), content_type=label)
    monitor = make_monitor(team, [url])
    run_check(monitor)
    last_release_hash = hashlib.sha256(
        url.encode() + b"\0" + label.encode() + b"\0" + served + b"\0reading 2"
    ).hexdigest()
    PageState.objects.update(body_hash=last_release_hash)
    site.page("/menu", served, content_type=label)

    upgraded = run_check(monitor).pages.get()
    site.page(
        "/menu", served.replace(b"</main>", b"<p>Tea</p></main>"), content_type=label
    )
    changed = run_check(monitor).pages.get()

    assert upgraded.status == PageResult.Status.SAME
    assert changed.status == PageResult.Status.CHANGED
    assert "+Tea" in changed.diff["text"]
    assert "-Caf" not in changed.diff["text"]  # the unchanged line is no change


@pytest.mark.parametrize(
    ("status", "body"), [(200, b""), (200, b" \r\n"), (204, b"")], ids=str
)
def test_an_empty_answer_from_a_page_with_text_is_an_error_not_a_change(
    team, site, status, body
):
    url = site.html("/news", "News", "<p>Sale ends Friday</p>")
    monitor = make_monitor(team, [url])
    run_check(monitor)
    site.page("/news", body, status=status)
    empty = run_check(monitor).pages.get()
    site.html("/news", "News", "<p>Sale ends Friday</p>")

    back = run_check(monitor).pages.get()

    assert (empty.status, empty.error_kind) == (PageResult.Status.ERROR, "empty")
    assert empty.error == (
        f"The page answered HTTP {status} with nothing in it, so there was nothing "
        "to compare; its last content is kept."
    )
    assert plain_error(empty.error_kind, empty.status_code, empty.error) == (
        "The page answered with nothing in it this time; the last content is kept."
    )
    assert back.status == PageResult.Status.SAME


FEED = '<?xml version="1.0"?><rss><channel><title>Blog</title>{}</channel></rss>'
ITEM = "<item><title>{0}</title><link>https://blog.example/{0}</link></item>"


def test_a_feed_on_one_line_shows_a_new_post_as_its_own_lines(team, site):
    rss = "application/rss+xml"
    posts = "".join(ITEM.format(n) for n in ("one", "two"))
    url = site.page("/feed", FEED.format(posts), content_type=rss)
    monitor = make_monitor(team, [url])
    run_check(monitor)
    site.page("/feed", FEED.format(ITEM.format("new") + posts), content_type=rss)

    result = run_check(monitor).pages.get()

    added = [line for line in result.diff["text"].splitlines() if line[:1] == "+"]
    removed = [line for line in result.diff["text"].splitlines() if line[:1] == "-"]
    assert result.status == PageResult.Status.CHANGED
    assert "+<title>new</title>" in added
    assert removed == ["--- previous"]


def test_a_feed_baseline_stored_on_one_line_is_the_same_read_a_line_an_element(
    team, site
):
    rss = "application/rss+xml"
    feed = FEED.format(ITEM.format("one"))
    url = site.page("/feed", feed, content_type=rss)
    monitor = make_monitor(team, [url])
    run_check(monitor)
    # What an earlier version stored: the feed as it came, on one line.
    old = Snapshot.store(feed)
    PageState.objects.update(
        snapshot=old, normalized_hash=content_hash(feed), body_hash=""
    )

    result = run_check(monitor).pages.get()

    assert result.status == PageResult.Status.SAME


def test_a_page_too_large_to_read_keeps_the_status_it_answered_with(
    team, site, settings
):
    settings.FETCH_MAX_BYTES = 1024
    url = site.page("/big", b"<p>" + b"a" * 4096 + b"</p>")
    monitor = make_monitor(team, [url])

    result = run_check(monitor).pages.get()

    assert (result.status, result.error_kind) == (PageResult.Status.ERROR, "too_large")
    assert (result.status_code, result.metadata["statusCode"]) == (200, 200)
