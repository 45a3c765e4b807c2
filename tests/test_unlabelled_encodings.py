"""Pages in a legacy encoding that name no charset anywhere (no Content-Type
charset, no <meta charset>, no BOM), as many sites in Japan, China, Korea,
Taiwan, Russia, Greece, Israel, the Arab world, Thailand, Central Europe,
Turkey and the Baltic states still serve them: each is checked as a monitor
checks it, against real bytes served on 127.0.0.1 (tests/sites.py)."""

from __future__ import annotations

import hashlib
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import charset_normalizer
import httpx
import pytest

from checks import runner
from checks.content.guess import GUESS_TEXT_BYTES, guessed_encoding
from checks.content.sniff import decode
from checks.crawl.canonical import declared_canonical
from checks.fetch.client import FetchResult
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
    "windows_1253": (
        "cp1253",
        "Δήμος Αθηναίων Ανακοινώσεις",
        [
            "Ο Δήμος Αθηναίων ανακοινώνει ότι από τη Δευτέρα θα ξεκινήσουν"
            " εργασίες συντήρησης στο οδικό δίκτυο της περιοχής.",
            "Οι δημότες παρακαλούνται να ακολουθούν τις οδηγίες της Τροχαίας."
            " Άδειες στάθμευσης εκδίδονται από το Δημαρχείο.",
        ],
        "Το γραφείο είναι ανοιχτό από τις οκτώ έως τις τρεις.",
        "Το γραφείο είναι ανοιχτό από τις εννέα έως τις δύο.",
    ),
    "iso8859_7": (
        "iso8859_7",
        "Βιβλιοθήκη Πειραιά",
        [
            "Άνοιξε η νέα αίθουσα μελέτης στον πρώτο όροφο της βιβλιοθήκης."
            " Η είσοδος είναι ελεύθερη για όλους τους αναγνώστες.",
            "Οι δανεισμοί επιστρέφονται μέσα σε δεκαπέντε ημέρες.",
        ],
        "Νέα βιβλία αυτόν τον μήνα: σαράντα δύο.",
        "Νέα βιβλία αυτόν τον μήνα: πενήντα.",
    ),
    "windows_1255": (
        "cp1255",
        "עיריית חיפה הודעות",
        [
            "עיריית חיפה מודיעה כי החל מיום ראשון הקרוב יתבצעו עבודות תחזוקה"
            " ברחוב הרצל. התושבים מתבקשים להימנע מחניה באזור.",
            "לפרטים נוספים ניתן לפנות למוקד העירוני בטלפון או באתר העירייה.",
        ],
        "המוקד פתוח משמונה בבוקר עד ארבע אחר הצהריים.",
        "המוקד פתוח מתשע בבוקר עד שלוש אחר הצהריים.",
    ),
    "windows_1256": (
        "cp1256",
        "بلدية عمان الإعلانات",
        [
            "تعلن بلدية عمان عن بدء أعمال الصيانة في الشوارع الرئيسية اعتبارا"
            " من يوم الأحد القادم. يرجى من المواطنين الالتزام بتعليمات السير.",
            "للمزيد من المعلومات يرجى الاتصال بمركز خدمة المواطنين.",
        ],
        "السعر خمسة دنانير.",
        "السعر ستة دنانير.",
    ),
    "windows_874": (
        "cp874",
        "เทศบาลนครเชียงใหม่ ประกาศ",
        [
            "เทศบาลนครเชียงใหม่ขอแจ้งให้ประชาชนทราบว่า"
            " จะมีการปิดถนนเพื่อซ่อมแซมท่อระบายน้ำ ตั้งแต่วันจันทร์เป็นต้นไป",
            "ขออภัยในความไม่สะดวก สอบถามข้อมูลเพิ่มเติมได้ที่สำนักงานเทศบาล",
        ],
        "ราคาห้าร้อยบาท",
        "ราคาหกร้อยบาท",
    ),
    "windows_1250_polish": (
        "cp1250",
        "Urząd Miasta Krakowa",
        [
            "Urząd Miasta Krakowa informuje, że od poniedziałku rozpoczną się"
            " prace remontowe na ulicy Długiej. Mieszkańców prosimy o korzystanie"
            " z objazdów.",
            "Szczegółowe informacje można uzyskać w Biurze Obsługi Mieszkańców.",
        ],
        "Biuro jest czynne od godziny ósmej do szesnastej.",
        "Biuro jest czynne od godziny dziewiątej do piętnastej.",
    ),
    "iso8859_2_polish": (
        "iso8859_2",
        "Gminna Biblioteka Publiczna",
        [
            "Zapraszamy na spotkanie autorskie, które odbędzie się w czytelni"
            " w środę o godzinie siedemnastej. Wstęp wolny.",
            "Książki wypożyczone przed świętami można oddać do końca stycznia.",
        ],
        "Nowych książek w tym miesiącu: czterdzieści dwie.",
        "Nowych książek w tym miesiącu: pięćdziesiąt.",
    ),
    "windows_1250_czech": (
        "cp1250",
        "Městský úřad Brno",
        [
            "Městský úřad Brno oznamuje, že od pondělí začne oprava silnice"
            " v ulici Údolní. Řidiče žádáme, aby využívali objížďku.",
            "Podrobné informace získáte na podatelně úřadu, která je otevřena"
            " každý všední den.",
        ],
        "Podatelna je otevřena od osmi do šestnácti hodin.",
        "Podatelna je otevřena od devíti do patnácti hodin.",
    ),
    "iso8859_2_czech": (
        "iso8859_2",
        "Obecní knihovna",
        [
            "Knihovna oznamuje, že v měsíci září bude otevřena jen ve středu"
            " a ve čtvrtek. Děkujeme za pochopení.",
            "Vrácení knih je možné také do schránky u vchodu do budovy.",
        ],
        "Nových knih tento měsíc: čtyřicet dva.",
        "Nových knih tento měsíc: padesát.",
    ),
    "windows_1254": (
        "cp1254",
        "Belediye Duyuruları",
        [
            "Belediyemiz, pazartesi gününden itibaren Atatürk Caddesi'nde yol"
            " bakım çalışmalarına başlayacağını duyurur.",
            "Sürücülerin alternatif güzergâhları kullanmaları rica olunur."
            " Ayrıntılı bilgi için danışma masasına başvurabilirsiniz.",
        ],
        "Danışma masası sabah sekizden akşam beşe kadar açıktır.",
        "Danışma masası sabah dokuzdan akşam dörde kadar açıktır.",
    ),
    "windows_1257": (
        "cp1257",
        "Vilniaus miesto savivaldybė",
        [
            "Vilniaus miesto savivaldybė praneša, kad nuo pirmadienio Gedimino"
            " prospekte prasidės kelio remonto darbai.",
            "Vairuotojai prašomi naudotis apylankomis. Išsamesnės informacijos"
            " galima gauti savivaldybės klientų aptarnavimo skyriuje.",
        ],
        "Skyrius dirba nuo aštuntos iki septynioliktos valandos.",
        "Skyrius dirba nuo devintos iki šešioliktos valandos.",
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
from checks.crawl.canonical import declared_canonical
from checks.fetch.client import FetchResult
body = sys.stdin.buffer.read()
sys.stdout.buffer.write(decode(body, "text/html", html=True).encode("utf-8"))
"""


@pytest.mark.parametrize(
    "name", ["euc_jp", "koi8_r", "latin1_french", "iso8859_7", "iso8859_2_czech"]
)
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
        "Appartement 3 pièces, 75 m², 2ème étage, 19 °C. Prix : 250 000 €."
        " Marque Acme® et Widget™. Réf. nº 1234. Déjà vu © 2009.",
        "Lösung: 3×4 m, ½ Liter, ¼ Stunde, ± 5 %. Öffnungszeiten Mo–Fr.",
        "Grüezi in Zürich! Bienvenue à Genève, où le lac est très beau."
        " Benvenuti a Lugano, città più bella. Größe, Grüße.",
    ],
)
def test_an_unlabelled_page_in_latin_letters_stays_windows_1252(text):
    body = f"<html><body><p>{text}</p></body></html>".encode("cp1252")

    assert f"<p>{text}</p>" in decode(body, "text/html", html=True)


# A title and one sentence: the least text a guess may have to go on.
SHORT_PAGES = {
    "windows_1253": ("cp1253", "Ανακοίνωση", "Το γραφείο κλείνει την Παρασκευή."),
    "iso8859_7": ("iso8859_7", "Άδειες στάθμευσης", "Άνοιξε η νέα αίθουσα."),
    "windows_1255": ("cp1255", "הודעה לתושבים", "המשרד יהיה סגור ביום שישי."),
    "windows_1256": ("cp1256", "إعلان", "سيكون المكتب مغلقا يوم الجمعة."),
    "windows_874": ("cp874", "ประกาศ", "สำนักงานปิดทำการในวันศุกร์นี้"),
    "windows_1250_polish": ("cp1250", "Ogłoszenie", "Urząd będzie nieczynny w piątek."),
    "windows_1250_czech": ("cp1250", "Oznámení", "Úřad bude v pátek zavřený."),
    "iso8859_2_czech": ("iso8859_2", "Oznámení", "Úřad bude v pátek zavřený."),
    "windows_1250_hungarian": ("cp1250", "Közlemény", "Hétfőtől a hivatal zárva tart."),
    "windows_1254": ("cp1254", "Duyuru", "Ofisimiz cuma günü kapalı olacaktır."),
}


def short_page_bytes(name: str) -> bytes:
    codec, title, sentence = SHORT_PAGES[name]
    html = (
        f"<html><head><title>{title}</title></head>"
        f"<body><h1>{title}</h1><p>{sentence}</p></body></html>"
    )
    return html.encode(codec)


@pytest.mark.parametrize("name", SHORT_PAGES)
def test_a_short_unlabelled_page_is_read_in_its_own_letters_check_after_check(
    team, site, name
):
    _, title, sentence = SHORT_PAGES[name]
    url = site.page(f"/{name}", short_page_bytes(name), content_type="text/html")
    monitor = make_monitor(team, url)

    first = run_check(monitor)
    again = run_check(monitor)

    assert title in first.current_snapshot.text
    assert sentence in first.current_snapshot.text
    assert again.status == PageResult.Status.SAME


@pytest.fixture
def named_host(monkeypatch):
    """Makes a host name under a country's domain (www.vilnius.lt) lead to
    the test site on 127.0.0.1, as its DNS would lead to the real one."""
    real = socket.getaddrinfo

    def resolve(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(host, str) and host.startswith("www."):
            host = "127.0.0.1"
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr("socket.getaddrinfo", resolve)

    def url_at(url: str, host: str) -> str:
        return url.replace("127.0.0.1", host)

    return url_at


@pytest.mark.parametrize(
    ("host", "codec", "title", "sentence"),
    [
        ("www.vilnius.lt", "cp1257", "Pranešimas", "Penktadienį skyrius nedirbs."),
        ("www.riga.lv", "cp1257", "Paziņojums", "Piektdien birojs būs slēgts."),
        ("www.kadikoy.tr", "cp1254", "Duyuru", "Şube cuma günü kapalı."),
    ],
)
def test_a_page_letters_cannot_place_is_read_as_its_country_domain_suggests(
    team, site, named_host, host, codec, title, sentence
):
    # "Praneðimas" is as much Icelandic letters as "Pranešimas" is Lithuanian:
    # the address settles it, as it does in browsers.
    html = f"<html><body><h1>{title}</h1><p>{sentence}</p></body></html>"
    served = site.page("/notice", html.encode(codec), content_type="text/html")
    url = named_host(served, host)

    page = run_check(make_monitor(team, url))

    assert page.url == url
    assert title in page.current_snapshot.text
    assert sentence in page.current_snapshot.text


def test_a_labelled_or_utf8_page_is_never_handed_to_the_guess(monkeypatch):
    asked: list[bytes] = []

    def spy(body: bytes, url: str = "") -> str:
        asked.append(body)
        return guessed_encoding(body, url)

    monkeypatch.setattr("checks.content.sniff.guessed_encoding", spy)
    greek = "<p>Το γραφείο θα είναι κλειστό την Παρασκευή.</p>"

    labelled = decode(
        greek.encode("cp1253"), "text/html; charset=windows-1253", html=True
    )
    in_meta = decode(
        b'<meta charset="windows-1253">' + greek.encode("cp1253"), "", html=True
    )
    utf8 = decode(greek.encode("utf-8"), "text/html", html=True)

    assert asked == []
    assert greek in labelled and greek in in_meta and greek in utf8


def test_a_guess_reads_a_sample_of_a_large_page_not_all_of_it(monkeypatch):
    handed: list[int] = []
    real = charset_normalizer.from_bytes

    def counted(sequences: bytes, **kwargs: Any) -> Any:
        handed.append(len(sequences))
        return real(sequences, **kwargs)

    monkeypatch.setattr(charset_normalizer, "from_bytes", counted)
    paragraph = "<p>Ο Δήμος Αθηναίων ανακοινώνει εργασίες συντήρησης στο δίκτυο.</p>\n"
    body = ("<html><body>" + paragraph * 80_000 + "</body></html>").encode("cp1253")

    text = decode(body, "text/html", html=True)

    assert len(body) > 5_000_000
    assert handed and all(size <= GUESS_TEXT_BYTES for size in handed)
    assert text.endswith(paragraph + "</body></html>")


def test_a_greek_page_the_last_release_read_as_windows_1252_is_read_again_quietly(
    team, site
):
    # The release before read unlabelled Greek as windows-1252 and kept that
    # as the baseline, under its reading number (5).
    served = page_bytes("windows_1253")
    url = site.page("/gr", served.decode("cp1252", errors="replace"))
    monitor = make_monitor(team, url)
    run_check(monitor)
    last_release_hash = hashlib.sha256(
        url.encode() + b"\0text/html\0" + served + b"\0reading 5"
    ).hexdigest()
    PageState.objects.update(body_hash=last_release_hash)
    site.page("/gr", served, content_type="text/html")

    upgraded = run_check(monitor)

    assert upgraded.status == PageResult.Status.SAME
    assert PAGES["windows_1253"][3] in upgraded.current_snapshot.text


@pytest.mark.parametrize(
    "text",
    [
        "Rua São João, nº 12, 2º andar – Lisboa",
        "Horário: 2ª a 6ª feira. Av. São João nº 45",
        "Calle Mayor nº 3, 1º izquierda, 2ª planta. Teléfono: 91 555 0100",
    ],
)
def test_an_unlabelled_address_with_ordinal_signs_stays_windows_1252(text):
    # "º" and "ª" are no letter of any alphabet: counted as one, they made
    # windows-1250's "ş" look the better reading ("Săo Joăo, nş 12").
    body = f"<html><body><p>{text}</p></body></html>".encode("cp1252")

    read = decode(body, "text/html", html=True, url="https://loja.example.com/")

    assert f"<p>{text}</p>" in read


def test_a_small_edit_does_not_flip_the_reading_of_the_whole_page():
    page = "<p>Horário: 2ª a 6ª feira. Av. São João nº 45</p>"
    edited = page + "<p>Preço: 5 €, promoção</p>"

    before, after = (
        decode(p.encode("cp1252"), "text/html", html=True, url="https://x.com/")
        for p in (page, edited)
    )

    assert page in before
    assert edited in after


# Western words from several languages, as menus, shops and news pages mix
# them (names, dishes, places).
WESTERN_WORDS = [
    "crème",
    "Ørsted",
    "più",
    "Müller",
    "São Paulo",
    "Ålborg",
    "señor",
    "Björk",
    "façade",
    "Þórsmörk",
    "Zürich",
    "città",
    "déjà",
    "Æbleskiver",
    "smørrebrød",
    "jalapeño",
    "Göteborg",
    "naïve",
]


def western_mixes() -> list[str]:
    """Every pair of the words, and some threes."""
    pairs = [
        f"Menu: {a}, {b}"
        for i, a in enumerate(WESTERN_WORDS)
        for b in WESTERN_WORDS[i + 1 :]
    ]
    threes = [
        "Menu: crème, Ørsted, più",
        "Menu: Müller, São Paulo, Ålborg",
        "Menu: señor, Björk, façade",
        "Menu: Þórsmörk, Zürich, città",
        "Menu: déjà, Æbleskiver, jalapeño",
        "Menu: Göteborg, naïve, crème",
    ]
    return pairs + threes


def test_unlabelled_western_pages_mixing_languages_stay_windows_1252():
    # A mix of Western names reads as letters of no one Western language,
    # and often as some Central European one's ("crčme, Řsted, pců" is all
    # Czech letters): that alone is no reason to leave windows-1252.
    misread = [
        text
        for text in western_mixes()
        if text
        not in decode(
            f"<html><body><p>{text}</p></body></html>".encode("cp1252"),
            "text/html",
            html=True,
            url="https://example.com/",
        )
    ]

    assert misread == []


def test_an_unlabelled_page_is_guessed_once_per_check(team, site, monkeypatch):
    # Its text, the scripts question and a crawl's links and canonical
    # address all read the same response: one guess serves them all.
    guesses: list[int] = []
    real = charset_normalizer.from_bytes

    def counted(sequences: bytes, **kwargs: Any) -> Any:
        guesses.append(len(sequences))
        return real(sequences, **kwargs)

    monkeypatch.setattr(charset_normalizer, "from_bytes", counted)
    _, title, paragraphs, line, _ = PAGES["windows_1250_polish"]
    html = (
        f'<html><head><title>{title}</title><link rel="canonical" href="/">'
        "<script>var shop = 1;</script></head><body>"
        + "".join(f"<p>{text}</p>" for text in [*paragraphs, line])
        + "</body></html>"
    )
    url = site.page("/", html.encode("cp1250"), content_type="text/html")
    monitor = Monitor.objects.create(team=team, name="Site", schedule_cron="0 * * * *")
    Target.objects.create(monitor=monitor, type="crawl", url=url, crawl_options={})
    check = runner.run(Check.objects.create(monitor=monitor, trigger="manual"))

    page = check.pages.get()

    assert line in page.current_snapshot.text
    assert len(guesses) == 1


def test_a_crawl_reads_a_canonical_link_as_its_country_domain_suggests():
    # The same bytes at the same address read the same for every reader:
    # "Pranešimas" on a .lt site, not the Icelandic-looking "Praneðimas".
    html = (
        '<html><head><link rel="canonical" href="/pranešimas"></head>'
        "<body><h1>Pranešimas</h1><p>Penktadienį skyrius nedirbs.</p></body></html>"
    )
    fetched = FetchResult(
        url="https://www.vilnius.lt/p",
        final_url="https://www.vilnius.lt/p",
        status_code=200,
        headers=httpx.Headers({"content-type": "text/html"}),
        content=html.encode("cp1257"),
    )

    assert declared_canonical(fetched) == "https://www.vilnius.lt/pranešimas"
