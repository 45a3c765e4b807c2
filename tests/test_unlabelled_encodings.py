"""Pages in a legacy encoding that name no charset anywhere (no Content-Type
charset, no <meta charset>, no BOM), as many sites in Japan, China, Korea,
Taiwan and Russia still serve them: each is checked as a monitor checks it,
against real bytes served on 127.0.0.1 (tests/sites.py)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from checks import runner
from checks.content.sniff import decode
from checks.models import Check, PageResult, PageState
from monitors.models import Monitor, Target, Team

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parent.parent

# (codec the bytes are written in, title, paragraphs, a line that changes
# and what it changes to), each page long enough to be a page.
PAGES = {
    "shift_jis": (
        "shift_jis",
        "さくら商店 お知らせ",
        [
            "当店は年末年始も営業しております。営業時間は午前十時から午後八時までです。",
            "新商品のご案内：北海道産の小豆を使った最中を発売しました。",
        ],
        "価格は一個二百円です。",
        "価格は一個二百五十円です。",
    ),
    "euc_jp": (
        "euc_jp",
        "東京書店 新着情報",
        [
            "今月の新刊をご紹介します。詳しくは店頭でお問い合わせください。",
            "送料について：五千円以上お買い上げのお客様は送料無料となります。",
        ],
        "在庫は残り三冊です。",
        "在庫は残り一冊です。",
    ),
    "gbk": (
        "gbk",
        "产品价格 最新消息",
        [
            "本店新年期间照常营业，欢迎各位顾客光临。",
            "详情请联系我们的客服人员，我们将竭诚为您服务。",
        ],
        "价格：五千元。",
        "价格：六千元。",
    ),
    "big5": (
        "big5",
        "產品價格 最新消息",
        [
            "本店新年期間照常營業，歡迎各位顧客光臨。",
            "詳情請聯繫我們的客服人員，我們將竭誠為您服務。",
        ],
        "價格：五千元。",
        "價格：六千元。",
    ),
    "euc_kr": (
        "euc_kr",
        "서울 가게 최신 소식",
        [
            "저희 가게는 연말연시에도 영업합니다.",
            "영업시간은 오전 열 시부터 오후 여덟 시까지입니다.",
        ],
        "가격은 오천 원입니다.",
        "가격은 육천 원입니다.",
    ),
    "windows_1251": (
        "cp1251",
        "Новости магазина",
        [
            "Наш магазин работает в праздничные дни без перерыва.",
            "Доставка по Москве бесплатно при заказе от пяти тысяч рублей.",
        ],
        "Цена: пять тысяч рублей.",
        "Цена: шесть тысяч рублей.",
    ),
    "koi8_r": (
        "koi8_r",
        "Новости библиотеки",
        [
            "Библиотека открыта ежедневно с десяти часов утра.",
            "Читальный зал закрыт на ремонт до конца месяца.",
        ],
        "Новых книг: сорок две.",
        "Новых книг: пятьдесят.",
    ),
    "latin1_french": (
        "cp1252",
        "Le café du coin",
        [
            "Ouvert tous les jours, même à Noël. Réservez à l’avance.",
            "Spécialités : crème brûlée, thé à la menthe, déjà célèbres.",
        ],
        "Prix : café crème 5 €.",
        "Prix : café crème 6 €.",
    ),
}


@pytest.fixture(autouse=True)
def private_targets_allowed(settings):
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True


def page_bytes(name: str, line: str | None = None) -> bytes:
    codec, title, paragraphs, first_line, _ = PAGES[name]
    body = "".join(f"<p>{text}</p>\n" for text in [*paragraphs, line or first_line])
    html = (
        f"<!DOCTYPE html>\n<html><head><title>{title}</title>\n"
        f"</head><body><main><h1>{title}</h1>\n{body}</main></body></html>\n"
    )
    return html.encode(codec)


def make_monitor(team: Team, url: str) -> Monitor:
    monitor = Monitor.objects.create(team=team, name="Shop", schedule_cron="0 * * * *")
    Target.objects.create(monitor=monitor, type="scrape", urls=[url])
    return monitor


def run_check(monitor: Monitor) -> PageResult:
    return runner.run(
        Check.objects.create(monitor=monitor, trigger="manual")
    ).pages.get()


@pytest.mark.parametrize("name", PAGES)
def test_an_unlabelled_page_is_read_in_its_own_letters_and_diffs_in_them(
    team, site, name
):
    _, title, paragraphs, line, changed_line = PAGES[name]
    url = site.page(f"/{name}", page_bytes(name), content_type="text/html")
    monitor = make_monitor(team, url)

    first = run_check(monitor)
    again = run_check(monitor)
    site.page(f"/{name}", page_bytes(name, changed_line), content_type="text/html")
    changed = run_check(monitor)

    stored = first.current_snapshot.text
    assert all(text in stored for text in [title, *paragraphs, line])
    assert again.status == PageResult.Status.SAME
    assert changed.status == PageResult.Status.CHANGED
    assert f"-{line}\n+{changed_line}" in changed.diff["text"]
    assert changed_line in changed.current_snapshot.text


def test_an_unlabelled_shift_jis_page_as_plain_text_is_read_in_japanese(team, site):
    _, title, paragraphs, line, _ = PAGES["shift_jis"]
    text = "\n".join([title, *paragraphs, line]) + "\n"
    url = site.page("/notes.txt", text.encode("shift_jis"), content_type="text/plain")

    page = run_check(make_monitor(team, url))

    assert page.current_snapshot.text.strip() == text.strip()


def test_a_koi8_r_page_under_a_utf8_header_it_plainly_is_not_is_guessed(team, site):
    # A server's default label that the bytes contradict is as good as none.
    url = site.page(
        "/ru", page_bytes("koi8_r"), content_type="text/html; charset=utf-8"
    )

    page = run_check(make_monitor(team, url))

    assert "Новых книг: сорок две." in page.current_snapshot.text


def test_a_page_labelled_latin1_is_read_as_labelled_not_guessed(team, site):
    # Cyrillic bytes under an explicit legacy label: the label is obeyed.
    url = site.page(
        "/ru",
        page_bytes("windows_1251"),
        content_type="text/html; charset=iso-8859-1",
    )

    page = run_check(make_monitor(team, url))

    assert "Öåíà: ïÿòü òûñÿ÷ ðóáëåé." in page.current_snapshot.text


READ_IN_A_FRESH_PROCESS = """
import sys
from checks.content.sniff import decode
body = sys.stdin.buffer.read()
sys.stdout.buffer.write(decode(body, "text/html", html=True).encode("utf-8"))
"""


@pytest.mark.parametrize("name", ["euc_jp", "koi8_r", "latin1_french"])
def test_the_same_bytes_read_the_same_in_every_worker_process(name):
    # Workers are separate processes, each with its own string hash seed:
    # a guess that depended on it would make an unchanged page a change.
    body = page_bytes(name)
    readings = {
        subprocess.run(
            [sys.executable, "-c", READ_IN_A_FRESH_PROCESS],
            input=body,
            capture_output=True,
            check=True,
            cwd=ROOT,
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
        ).stdout.decode("utf-8")
        for seed in (1, 2, 3)
    }

    assert readings == {decode(body, "text/html", html=True)}


def test_a_page_the_last_release_read_as_windows_1252_is_read_again_quietly(team, site):
    # The release before read an unlabelled Shift_JIS page as windows-1252 and
    # kept that as the baseline, with the hash of its very bytes as it did.
    served = page_bytes("shift_jis")
    url = site.page("/jp", served.decode("cp1252", errors="replace"))
    monitor = make_monitor(team, url)
    run_check(monitor)
    last_release_hash = hashlib.sha256(
        url.encode() + b"\0text/html\0" + served + b"\0reading 3"
    ).hexdigest()
    PageState.objects.update(body_hash=last_release_hash)
    site.page("/jp", served, content_type="text/html")

    upgraded = run_check(monitor)
    changed_line = PAGES["shift_jis"][4]
    site.page("/jp", page_bytes("shift_jis", changed_line), content_type="text/html")
    changed = run_check(monitor)

    assert upgraded.status == PageResult.Status.SAME
    assert "価格は一個二百円です。" in upgraded.current_snapshot.text
    assert changed.status == PageResult.Status.CHANGED
    assert f"-価格は一個二百円です。\n+{changed_line}" in changed.diff["text"]
    assert "さくら商店" not in changed.diff["text"]  # the unchanged title


def test_text_after_a_script_longer_than_the_guess_reads_is_still_guessed():
    # A minified script on one line, longer than the bytes a guess reads.
    script = "<script>" + "var a=1;" * 40_000 + "</script>"
    html = f"<html><head>{script}</head><body><p>Цена: пять тысяч рублей.</p>"

    text = decode(html.encode("cp1251"), "text/html", html=True)

    assert "<p>Цена: пять тысяч рублей.</p>" in text


@pytest.mark.parametrize(
    "text",
    [
        "Prix : café crème 5 €, thé à la menthe. Déjà vu, “voilà”.",
        "Öffnungszeiten: Montag bis Freitag. Straße 5, Größe: groß. Grüße!",
        "Año nuevo: la señora pidió un café con leche, ¿verdad? ¡Olé!",
        "Atenção: promoção válida até sábado. Preço: R$ 5,00. Não perca!",
        "Perché è così? La città è più bella d'inverno. Caffè: 2 €.",
        "Öppettider: måndag till fredag. Välkommen till vår butik i Göteborg!",
        "Prix: café 5 €",
    ],
)
def test_an_unlabelled_page_in_latin_letters_stays_windows_1252(text):
    body = f"<html><body><p>{text}</p></body></html>".encode("cp1252")

    assert f"<p>{text}</p>" in decode(body, "text/html", html=True)
