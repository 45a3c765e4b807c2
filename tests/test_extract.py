from __future__ import annotations

import json

import pytest

from checks.content import (
    SOURCE_HTML,
    SOURCE_MARKDOWN,
    ExtractionError,
    extract,
    markdown_of,
)
from checks.content.clean import main_root
from checks.content.sniff import decode

URL = "https://shop.example/products/widget"


def html_page(body: str, head: str = "", lang: str = "en") -> bytes:
    return (
        f'<!doctype html><html lang="{lang}"><head><meta charset="utf-8">'
        f"{head}</head><body>{body}</body></html>"
    ).encode()


def run(body: bytes, content_type: str = "text/html; charset=utf-8", **options):
    return extract(body, content_type=content_type, url=URL, options=options)


def minimal_pdf(*pages: str, title: str = "Price list") -> bytes:
    """A small valid PDF (Helvetica text, one line per page), xref computed."""
    kids = " ".join(f"{4 + 2 * n} 0 R" for n in range(len(pages)))
    objects = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>",
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    for n, text in enumerate(pages):
        content = f"BT /F1 12 Tf 20 150 Td ({text}) Tj ET"
        objects.append(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 300 200] "
            f"/Resources << /Font << /F1 3 0 R >> >> /Contents {5 + 2 * n} 0 R >>"
        )
        objects.append(f"<< /Length {len(content)} >>\nstream\n{content}\nendstream")
    objects.append(f"<< /Title ({title}) >>")
    out = b"%PDF-1.4\n"
    offsets = []
    for number, obj in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{obj}\nendobj\n".encode()
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{offset:010d} 00000 n \n".encode() for offset in offsets)
    out += (
        f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R "
        f"/Info {len(objects)} 0 R >>\nstartxref\n{xref}\n%%EOF\n"
    ).encode()
    return out


CHROME_PAGE = html_page(
    """
    <header class="site-header"><a href="/">Shop logo</a></header>
    <nav><a href="/a">Menu link</a></nav>
    <div id="cookie-banner">We use cookies <button>Accept</button></div>
    <main>
      <h1>Widget</h1>
      <p>Price: <strong>$19</strong></p>
    </main>
    <aside>Related products</aside>
    <footer class="site-footer">Copyright 2026</footer>
    """
)


# -- main content -----------------------------------------------------------


def test_main_element_is_picked_over_nav_header_and_footer():
    result = run(CHROME_PAGE)

    assert result.markdown == "# Widget\n\nPrice: **$19**\n"


def test_without_main_element_chrome_is_stripped_from_the_body():
    page = html_page(
        """
        <div class="top-navbar"><a href="/x">Products</a></div>
        <div class="breadcrumbs">Home / Widgets</div>
        <div class="layout with-sidebar">
          <div class="sidebar-left">Categories</div>
          <div class="content"><h1>Widget</h1><p>In stock</p>
            <div class="social-share">Share on Mastodon</div>
          </div>
        </div>
        <div role="contentinfo">Legal</div>
        """
    )

    result = run(page)

    assert result.markdown == "# Widget\n\nIn stock\n"


def test_chrome_and_ad_words_need_a_chrome_context_to_remove_content():
    page = html_page(
        '<main><p class="share-price">Share price: 104.20</p>'
        '<p class="promo-price">Sale: $15</p><div class="share-buttons">Share</div>'
        '<div class="promo">Get 10% off</div></main>'
    )

    assert run(page).markdown == "Share price: 104.20\n\nSale: $15\n"


@pytest.mark.parametrize(
    "generated",
    ["css-1ad2x3", "jsx-3ad9", "e1dfp2a", "css-nav3x", "sc-AdBcDe", "sc-bNavQk"],
)
def test_class_names_a_build_tool_made_up_are_no_chrome_or_ad_words(generated: str):
    # CSS-in-JS names are hashes, new at each deploy (or each load): one that
    # happens to spell "ad" or "nav" must not make a price vanish.
    page = html_page(
        f"<main><h1>Plans</h1><p>{'Every plan has every feature. ' * 3}</p>"
        f'<div class="{generated}" id="p-{generated}">'
        "<p>Starter costs $19 a month.</p></div></main>"
    )

    assert "Starter costs $19 a month." in run(page).markdown


@pytest.mark.parametrize(
    "name",
    [
        *("ad-300x250", "ad728", "mainNav", "siteNavBar", "adBox", "navUL"),
        *("ad300x250", "ad728x90", "adslot300x250", "navbar2x"),
    ],
)
def test_chrome_and_ad_names_with_numbers_or_capitals_are_still_found(name: str):
    page = html_page(f'<main><h1>Plans</h1><div class="{name}">Buy now</div></main>')

    assert run(page).markdown == "# Plans\n"


def test_a_lone_article_is_the_main_content():
    page = html_page(
        "<div>Teaser rail</div><article><h2>Story</h2><p>Body text</p></article>"
    )

    assert run(page).markdown == "## Story\n\nBody text\n"


@pytest.mark.parametrize(
    "empty",
    [
        "<main>\n  \u00a0 </main>",  # a skeleton filled in by script
        "<main hidden><p>Old layout</p></main>",
        "<article> </article>",
    ],
)
def test_an_empty_or_hidden_main_region_falls_back_to_the_body(empty: str):
    page = html_page(f"{empty}<div><h1>Widget</h1><p>In stock</p></div>")

    assert run(page).markdown == "# Widget\n\nIn stock\n"


class _Part:
    def __init__(self, tag: str, text: str | None) -> None:
        self.tag, self.text_content = tag, text


class _Region:
    """A <main> of many text nodes, as main_root sees it through lexbor's
    node API: counts the nodes read and refuses to join its whole text."""

    tag = "main"
    attributes: dict[str, str | None] = {}

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts
        self.read = 0

    def css(self, selector: str) -> list[_Region]:
        return [self] if selector == "main, [role=main]" else []

    def traverse(self, include_text: bool = False):
        for part in [_Part("main", None)] + [_Part("-text", t) for t in self.texts]:
            self.read += 1
            yield part

    def text(self, *args, **kwargs) -> str:
        raise AssertionError("the region's whole text was joined")


def test_finding_the_main_region_reads_its_text_only_up_to_the_first_words():
    region = _Region(["\n  ", "\u00a0", "Widget", *["In stock"] * 1000])

    assert main_root(region) is region  # the body's only region
    assert region.read == 4  # itself, two blank text nodes, the first words


def test_a_header_inside_the_article_keeps_its_title():
    page = html_page(
        "<header>Site banner</header><article><header><h1>Release 2.0</h1>"
        "<p>by Ada</p></header><p>Notes</p></article>"
    )

    assert run(page).markdown == "# Release 2.0\n\nby Ada\n\nNotes\n"


def test_only_main_content_false_keeps_navigation_and_footer():
    result = run(CHROME_PAGE, onlyMainContent=False)

    assert "Menu link" in result.markdown
    assert "Copyright 2026" in result.markdown
    assert "Related products" in result.markdown
    assert "# Widget" in result.markdown


def test_scripts_styles_and_templates_never_reach_the_markdown():
    page = html_page(
        "<main><p>Visible</p><script>var secret = 1;</script><style>p{}</style>"
        "<noscript>Enable JS</noscript><template><p>Later</p></template></main>"
    )

    assert run(page, onlyMainContent=False).markdown == "Visible\n"


# -- includeTags / excludeTags ----------------------------------------------


def test_include_tags_keep_only_matching_elements_in_document_order():
    page = html_page(
        '<nav id="menu"><a href="/a">Menu</a></nav><main><p class="price">$19</p>'
        '<p>Ignored</p><p class="stock">In stock</p></main>'
    )

    result = run(page, includeTags=[".stock", "#menu", ".price"])

    assert result.markdown == f"[Menu]({'https://shop.example/a'})\n\n$19\n\nIn stock\n"


def test_exclude_tags_remove_matching_elements():
    page = html_page(
        '<main><p>Keep</p><p class="timestamp">Updated 10:02</p><p>Also keep</p></main>'
    )

    result = run(page, excludeTags=[".timestamp"])

    assert result.markdown == "Keep\n\nAlso keep\n"


def test_an_invalid_selector_is_an_extraction_error_that_names_it():
    with pytest.raises(ExtractionError) as caught:
        run(CHROME_PAGE, excludeTags=["div["])

    assert caught.value.message == "excludeTags: 'div[' is not a valid CSS selector"


# -- images and ads -----------------------------------------------------------


BASE64_PAGE = html_page(
    '<main><p>Logo:</p><img src="data:image/png;base64,iVBORw0KGgo=" alt="inline">'
    '<img src="/photo.jpg" alt="photo"></main>'
)


def test_base64_images_are_removed_by_default():
    result = run(BASE64_PAGE, formats=["markdown", "html"])

    assert "data:" not in result.markdown
    assert "data:" not in result.html
    assert "![photo](https://shop.example/photo.jpg)" in result.markdown


def test_base64_images_stay_when_remove_base64_images_is_false():
    result = run(BASE64_PAGE, removeBase64Images=False)

    assert "data:image/png;base64,iVBORw0KGgo=" in result.markdown


ADS_PAGE = html_page(
    """
    <main>
      <p>Article text</p>
      <div class="ad-slot">BUY NOW</div>
      <ins class="adsbygoogle" data-ad-client="ca-pub-1">Google ad</ins>
      <div id="div-gpt-ad-123">GPT ad</div>
      <div class="sponsored-content">Sponsored post</div>
      <iframe src="https://googleads.g.doubleclick.net/pagead/ads"></iframe>
      <img src="https://tracker.example/p.gif" width="1" height="1" alt="">
      <p class="header-shadow">Not an ad: shadow and header contain "ad"</p>
    </main>
    """
)


def test_ads_and_tracking_pixels_are_removed_by_default():
    result = run(ADS_PAGE)

    assert result.markdown == (
        'Article text\n\nNot an ad: shadow and header contain "ad"\n'
    )


def test_ads_stay_when_block_ads_is_false():
    result = run(ADS_PAGE, blockAds=False)

    for text in ("BUY NOW", "Google ad", "GPT ad", "Sponsored post", "doubleclick"):
        assert text in result.markdown


def test_each_ad_marker_is_removed_on_its_own():
    # The ad <ins> keeps its other markers out, so its class alone must do.
    page = html_page(
        """
        <main>
          <p>Article text</p>
          <ins class="adsbygoogle">AdSense</ins>
          <div id="div-gpt-ad-9">GPT</div>
          <div id="google_ads_iframe_1">Google ads</div>
          <div data-ad-slot="1">Slot</div>
          <div data-google-query-id="q">Query</div>
          <amp-ad type="x">AMP</amp-ad>
          <p id="div-gpt">Only the ad-slot prefixes count: kept</p>
        </main>
        """
    )

    result = run(page)

    assert result.markdown == (
        "Article text\n\nOnly the ad-slot prefixes count: kept\n"
    )


def test_chrome_roles_and_form_controls_go_but_role_values_must_match_exactly():
    # An ASP.NET-style page: one <form> around everything, main content inside.
    page = html_page(
        """
        <form action="/postback">
          <div role="navigation">Menu</div>
          <div role="search">Search box</div>
          <main>
            <h1>Report</h1>
            <p>Figures for May</p>
            <label>Name</label><input name="q"><button>Go</button>
            <div role="dialog">Cookie dialog</div>
            <div aria-modal="true">Modal</div>
            <div role="Navigation">Role values are case-sensitive: kept</div>
            <div role="note">A note stays</div>
          </main>
        </form>
        """
    )

    result = run(page)

    assert result.markdown == (
        "# Report\n\nFigures for May\n\n"
        "Role values are case-sensitive: kept\n\nA note stays\n"
    )


# -- metadata and decoding ----------------------------------------------------


def test_title_description_and_language_are_in_the_metadata():
    page = html_page(
        "<main><p>x</p></main>",
        head=(
            "<title>  Widget &amp; Co  </title>"
            '<meta name="Description" content="The best widget">'
            '<meta property="og:image" content="https://cdn.example/w.png">'
        ),
        lang="de-CH",
    )

    metadata = run(page).metadata

    assert metadata == {
        "title": "Widget & Co",
        "description": "The best widget",
        "language": "de-CH",
        "contentType": "text/html; charset=utf-8",
        "sourceURL": URL,
        "ogImage": "https://cdn.example/w.png",
    }


def test_a_latin1_page_is_decoded_with_the_charset_from_the_content_type():
    body = "<html><body><main><p>Crème brûlée – 5 €</p></main></body></html>"

    result = run(body.encode("cp1252"), content_type="text/html; charset=ISO-8859-1")

    assert result.markdown == "Crème brûlée – 5 €\n"


def test_a_meta_charset_is_used_when_the_header_has_none():
    body = (
        '<html><head><meta charset="iso-8859-1"></head><body><p>Grüße</p></body></html>'
    )

    result = run(body.encode("latin-1"), content_type="text/html")

    assert result.markdown == "Grüße\n"


def test_a_stray_byte_in_a_utf8_page_is_replaced_rather_than_failing():
    body = "<p>naïve café – déjà vu \xe9 ok</p>".encode().replace(
        b"\xc3\xa9 ok", b"\xe9 ok"
    )

    result = run(body, content_type="text/html; charset=utf-8")

    assert result.markdown == "naïve café – déjà vu \ufffd ok\n"


def stray_bytes_page(strays: int) -> bytes:
    """A UTF-8 page with three real non-ASCII letters and `strays` Latin-1
    bytes pasted in (each "é" of "cafe" written as one byte)."""
    pasted = b" ".join([b"caf\xe9"] * strays)
    return "<html><body><main><p>Café ’q’</p><p>".encode() + pasted + b"</p>"


@pytest.mark.parametrize("strays", [2, 4, 12])
def test_a_utf8_page_with_more_stray_bytes_than_letters_stays_utf8(strays):
    result = run(stray_bytes_page(strays), content_type="text/html; charset=utf-8")

    pasted = " ".join(["caf\ufffd"] * strays)
    assert result.markdown == f"Café ’q’\n\n{pasted}\n"


def test_latin1_bytes_under_a_utf8_header_keep_their_accented_letters():
    body = "<html><body><main><p>Café à 5 € – “voilà”</p></main></body></html>"

    result = run(body.encode("cp1252"), content_type="text/html; charset=utf-8")

    assert result.markdown == "Café à 5 € – “voilà”\n"


def test_a_utf8_header_on_a_shift_jis_page_gives_way_to_its_meta_charset():
    body = '<html><head><meta charset="Shift_JIS"></head><body><p>価格：五千円</p>'

    result = run(body.encode("shift_jis"), content_type="text/html; charset=utf-8")

    assert result.markdown == "価格：五千円\n"


def test_utf8_bytes_under_a_latin1_header_are_read_as_utf8():
    body = "<html><body><p>Crème brûlée – 5 €</p></body></html>"

    result = run(body.encode(), content_type="text/html; charset=ISO-8859-1")

    assert result.markdown == "Crème brûlée – 5 €\n"


@pytest.mark.parametrize(
    ("label", "codec", "text"),
    [
        ("Shift_JIS", "cp932", "①㈱ 髙橋さん"),
        ("x-sjis", "cp932", "価格：五千円"),
        ("windows-31j", "cp932", "価格：五千円"),
        ("gb2312", "gb18030", "朱镕基"),
        ("GBK", "gb18030", "价格 𠀀"),
        ("euc-kr", "cp949", "똠방각하"),
        ("ks_c_5601-1987", "cp949", "가격"),
        ("big5", "big5hkscs", "香港𥚃"),
        ("iso-8859-9", "cp1254", "İstanbul ‘quoted’"),
        ("us-ascii", "cp1252", "café “quoted”"),
        ("tis-620", "cp874", "ราคา “quoted”"),
    ],
)
def test_a_charset_label_means_what_browsers_read_it_as(label, codec, text):
    body = f"<html><body><p>{text}</p></body></html>".encode(codec)

    by_header = run(body, content_type=f"text/html; charset={label}")
    by_meta = run(f'<meta charset="{label}">'.encode() + body, content_type="text/html")

    assert (by_header.markdown, by_meta.markdown) == (f"{text}\n", f"{text}\n")


class CountedBytes(bytes):
    """A body that counts how often it is decoded."""

    decodes = 0

    def decode(self, *args, **kwargs) -> str:  # type: ignore[override]
        type(self).decodes += 1
        return super().decode(*args, **kwargs)


@pytest.mark.parametrize(
    ("text", "codec", "content_type"),
    [
        ("Crème brûlée – 5 € 価格", "utf-8", "text/html; charset=utf-8"),
        ("Crème brûlée – 5 €", "utf-8", "text/html; charset=ISO-8859-1"),
        ("Price: 5 EUR", "ascii", "text/html; charset=utf-8"),
        ("Crème brûlée – 5 €", "utf-8", "text/html"),
    ],
    ids=["utf-8 label", "latin-1 label", "ascii", "no label"],
)
def test_a_page_whose_bytes_are_utf8_is_decoded_once(
    text, codec, content_type, monkeypatch
):
    monkeypatch.setattr(CountedBytes, "decodes", 0)
    body = CountedBytes(f"<html><body><p>{text}</p></body></html>".encode(codec))

    decoded = decode(body, content_type, html=True)

    assert decoded == f"<html><body><p>{text}</p></body></html>"
    assert CountedBytes.decodes == 1


@pytest.mark.parametrize(
    "label", ["zlib", "hex", "rot13", "base64", "no-such", "undefined"]
)
def test_a_charset_that_names_no_text_encoding_is_ignored(label):
    body = "<html><body><p>Price: 5 EUR</p></body></html>"

    by_header = run(body.encode(), content_type=f"text/html; charset={label}")
    by_meta = run(f"<meta charset={label}>{body}".encode(), content_type="text/html")

    assert (by_header.markdown, by_meta.markdown) == ("Price: 5 EUR\n",) * 2


def test_text_under_a_utf8_header_in_windows_1252_keeps_its_letters():
    result = run(
        "Grüße “aus” Köln".encode("cp1252"), content_type="text/plain; charset=utf-8"
    )

    assert result.markdown == "Grüße “aus” Köln"


def test_a_latin1_page_that_declares_no_charset_keeps_its_accented_letters():
    body = "<html><body><main><p>Café à 5 € – voilà</p></main></body></html>"

    result = run(body.encode("cp1252"), content_type="text/html")

    assert result.markdown == "Café à 5 € – voilà\n"


@pytest.mark.parametrize(
    ("label", "codec", "text"),
    [("Shift_JIS", "cp932", "新着情報"), ("GB2312", "gb18030", "最新消息")],
)
def test_a_feed_is_decoded_with_the_encoding_its_xml_declaration_names(
    label, codec, text
):
    feed = (
        f'<?xml version="1.0" encoding="{label}"?>'
        f"<rss><channel><item><title>{text}</title></item></channel></rss>"
    )

    result = run(feed.encode(codec), content_type="application/rss+xml")

    assert f"<title>{text}</title>" in result.markdown


def test_latin1_text_without_a_charset_keeps_its_accented_letters():
    result = run("Grüße aus Köln".encode("latin-1"), content_type="text/plain")

    assert result.markdown == "Grüße aus Köln"


def test_a_meta_charset_of_utf8_on_latin1_bytes_is_read_as_windows_1252():
    body = '<html><head><meta charset="utf-8"></head><body><p>naïve</p></body></html>'

    result = run(body.encode("latin-1"), content_type="text/html")

    assert result.markdown == "naïve\n"


def test_a_meta_charset_of_latin1_on_utf8_bytes_is_read_as_utf8():
    body = (
        '<html><head><meta charset="iso-8859-1"></head><body><p>naïve ünïcode</p>'
        "</body></html>"
    )

    result = run(body.encode(), content_type="text/html")

    assert result.markdown == "naïve ünïcode\n"


# -- links, images, html formats ---------------------------------------------


LINKS_PAGE = html_page(
    """
    <main>
      <a href="/docs#install">Docs</a> <a href="/docs#usage">Docs again</a>
      <a href="../cart?x=1">Cart</a> <a href="https://other.example/">Other</a>
      <a href="mailto:a@b.example">Mail</a> <a href="javascript:alert(1)">JS</a>
      <a href="#top">Top</a> <a href="ftp://files.example/">FTP</a>
      <img src="img/w.png" alt="w"> <img src="img/w.png" alt="again">
    </main>
    """,
    head='<base href="https://shop.example/store/">',
)


def test_links_are_absolute_deduplicated_and_http_only():
    result = run(LINKS_PAGE, formats=["markdown", "links"])

    assert result.links == [
        "https://shop.example/docs",
        "https://shop.example/cart?x=1",
        "https://other.example/",
    ]


def test_images_format_lists_absolute_image_urls():
    result = run(LINKS_PAGE, formats=["images"])

    assert result.images == ["https://shop.example/store/img/w.png"]


def test_formats_that_were_not_asked_for_are_none():
    result = run(LINKS_PAGE)

    assert (result.html, result.raw_html, result.links, result.images) == (
        None,
        None,
        None,
        None,
    )
    assert result.markdown


def test_html_format_is_the_cleaned_main_content_with_absolute_urls():
    result = run(CHROME_PAGE.replace(b"<h1>", b'<h1><a href="/w">'), formats=["html"])

    assert result.html.startswith("<main>")
    assert '<a href="https://shop.example/w">' in result.html
    assert "Menu link" not in result.html


def test_raw_html_format_is_the_decoded_original():
    result = run(CHROME_PAGE, formats=[{"type": "rawHtml"}])

    assert result.raw_html == CHROME_PAGE.decode()


def test_markdown_uses_atx_headings_dash_bullets_and_long_lines():
    long_text = "word " * 60
    page = html_page(
        f"<main><h2>Plans</h2><ul><li>Basic</li><li>Pro<ul><li>SSO</li></ul></li></ul>"
        f"<p>{long_text}</p><p>a<br>b</p></main>"
    )

    result = run(page)

    assert result.markdown == (
        f"## Plans\n\n- Basic\n- Pro\n  - SSO\n\n{long_text.strip()}\n\na\\\nb\n"
    )


# -- other content types ------------------------------------------------------


def test_a_pdf_becomes_text_with_its_page_count():
    result = run(
        minimal_pdf("Basic 19 EUR", "Pro 49 EUR"), content_type="application/pdf"
    )

    assert result.markdown == "Basic 19 EUR\n\nPro 49 EUR\n"
    assert result.metadata["numPages"] == 2
    assert result.metadata["title"] == "Price list"
    assert result.metadata["contentType"] == "application/pdf"


def test_a_pdf_is_recognised_by_its_magic_bytes():
    result = run(minimal_pdf("Hello"), content_type="application/octet-stream")

    assert result.markdown == "Hello\n"


def test_a_pdf_with_pdf_parsing_turned_off_is_an_extraction_error():
    with pytest.raises(ExtractionError, match="PDF parsing is turned off"):
        run(minimal_pdf("Hello"), content_type="application/pdf", parsers=[])


def test_pdf_parser_given_as_an_object_is_understood():
    result = run(
        minimal_pdf("Hello"), content_type="application/pdf", parsers=[{"type": "pdf"}]
    )

    assert result.markdown == "Hello\n"


def test_a_pdf_without_text_and_no_ocr_engine_is_an_error_that_says_why(settings):
    settings.OCR_EXECUTABLE = "/nowhere/tesseract"
    with pytest.raises(ExtractionError) as caught:
        run(minimal_pdf("", ""), content_type="application/pdf")

    assert caught.value.message == (
        "The PDF has no text in it: its pages are pictures (a scan), and they are "
        "not read because OCR_EXECUTABLE (/nowhere/tesseract) was not found: "
        "install tesseract-ocr (and tesseract-ocr-<language> packs) or set "
        "OCR_EXECUTABLE; nothing to compare"
    )


def test_a_pdf_parser_with_max_pages_reads_only_the_first_pages():
    result = run(
        minimal_pdf("Basic 19 EUR", "Pro 49 EUR", "Team 99 EUR"),
        content_type="application/pdf",
        parsers=[{"type": "pdf", "maxPages": 2}],
    )

    assert result.markdown == "Basic 19 EUR\n\nPro 49 EUR\n"
    assert result.metadata["numPages"] == 3


def test_a_damaged_pdf_is_an_extraction_error_with_the_reason():
    with pytest.raises(ExtractionError) as caught:
        run(b"%PDF-1.4\nthis is not really a pdf", content_type="application/pdf")

    assert caught.value.message.startswith("PDF could not be read: ")


def test_an_html_error_page_served_as_pdf_is_read_as_html():
    result = run(html_page("<main><p>Please log in</p></main>"), "application/pdf")

    assert result.markdown == "Please log in\n"


def test_an_image_is_an_extraction_error():
    with pytest.raises(ExtractionError) as caught:
        run(b"\x89PNG\r\n\x1a\n\x00\x00", content_type="image/png")

    assert (
        caught.value.message == "The page is an image (image/png); nothing to compare"
    )


def test_unknown_binary_content_is_an_extraction_error():
    with pytest.raises(ExtractionError, match="binary content"):
        run(b"PK\x03\x04\x00\x00\x08\x00", content_type="application/octet-stream")


def test_plain_text_passes_through():
    result = run(b"Status: all good\r\nNext line\n", content_type="text/plain")

    assert result.markdown == "Status: all good\nNext line\n"
    assert result.metadata["title"] is None


def test_json_is_pretty_printed_so_each_field_diffs_on_its_own_line():
    body = json.dumps({"plan": "pro", "price": 19, "name": "Über"}).encode()

    result = run(body, content_type="application/json")

    assert (
        result.markdown == '{\n  "name": "Über",\n  "plan": "pro",\n  "price": 19\n}\n'
    )


@pytest.mark.parametrize(
    "media_type", ["application/rss+xml", "application/atom+xml", "text/xml"]
)
def test_a_feed_on_one_line_is_read_one_element_a_line(media_type):
    feed = (
        b'<?xml version="1.0"?><rss><channel><title>Blog</title>'
        b"<item><title>A &amp; B</title><description><![CDATA[<p>Hi</p>]]>"
        b"</description></item></channel></rss>"
    )

    result = run(feed, content_type=media_type)

    assert result.markdown.splitlines() == [
        '<?xml version="1.0"?>',
        "<rss>",
        "<channel>",
        "<title>Blog</title>",
        "<item>",
        "<title>A &amp; B</title>",
        "<description><![CDATA[<p>Hi</p>]]></description>",
        "</item>",
        "</channel>",
        "</rss>",
    ]


def test_a_feed_already_on_many_lines_is_read_as_it_is():
    feed = "<rss>\n  <channel>\n    <title>Blog</title>\n  </channel>\n</rss>\n"

    result = run(feed.encode(), content_type="application/rss+xml")

    assert result.markdown == feed


def test_json_whose_keys_come_in_another_order_reads_the_same():
    first = b'{"price": 19, "plans": [{"b": 2, "a": 1}, 3]}'
    reordered = b'{"plans": [{"a": 1, "b": 2}, 3], "price": 19}'

    texts = {
        run(body, "application/vnd.api+json").markdown for body in (first, reordered)
    }

    assert len(texts) == 1


def test_json_nested_too_deeply_to_read_is_kept_as_the_text_it_is():
    # Python's JSON parser gives up on such nesting with a RecursionError.
    body = "[" * 100_000 + "]" * 100_000

    result = run(body.encode(), content_type="application/json")

    assert result.markdown == body


def test_json_read_but_nested_too_deeply_to_indent_is_kept_as_the_text_it_is():
    # 1200 levels: the parser reads them, json.dumps(indent=2) cannot write them.
    body = "[" * 1200 + "]" * 1200

    result = run(body.encode(), content_type="application/json")

    assert result.markdown == body


def test_html_without_a_content_type_is_sniffed():
    result = run(b"<!DOCTYPE html><html><body><main><p>Hi</p></main></body></html>", "")

    assert result.markdown == "Hi\n"


def test_rewrapped_html_source_gives_the_same_markdown() -> None:
    narrow = (
        b"<main><p>Prices start\nat $19 per\nmonth.</p><pre>keep\n  this</pre></main>"
    )
    wide = b"<main><p>Prices start at $19 per month.</p><pre>keep\n  this</pre></main>"
    first = extract(narrow, content_type="text/html", url="https://a.test/", options={})
    second = extract(wide, content_type="text/html", url="https://a.test/", options={})
    assert first.markdown == second.markdown
    assert "Prices start at $19 per month." in first.markdown
    assert "keep\n  this" in first.markdown


def _metadata_by_selectors(html: str) -> dict:
    """The metadata as one css_first() per selector finds it (the reference
    the one-pass index must match)."""
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser(html)

    def meta(selector: str):
        node = tree.css_first(selector)
        value = (node.attributes.get("content") or "").strip() if node else ""
        return value or None

    out = {
        "title": meta('meta[property="og:title" i]'),
        "description": meta('meta[name="description" i]')
        or meta('meta[property="og:description" i]'),
        "language": meta('meta[http-equiv="content-language" i]'),
    }
    for key, selector in (
        ("keywords", 'meta[name="keywords" i]'),
        ("ogTitle", 'meta[property="og:title" i]'),
        ("ogDescription", 'meta[property="og:description" i]'),
        ("ogImage", 'meta[property="og:image" i]'),
        ("ogSiteName", 'meta[property="og:site_name" i]'),
    ):
        value = meta(selector)
        if value:
            out[key] = value
    return out


@pytest.mark.parametrize(
    "head",
    [
        '<meta property="og:title" content="A"><meta property="OG:Title" content="B">',
        '<meta property="og:title" content="  "><meta property="og:title" content="B">',
        '<meta name="Description" content="d1">'
        '<meta property="og:description" content="d2">',
        '<meta property="og:description" content="d2"><meta name="description">',
        '<meta name="description" content="">'
        '<meta property="og:description" content="d2">',
        '<meta HTTP-EQUIV="Content-Language" content=" fr ">'
        '<meta name="keywords" property="og:image" content="both">',
        '<meta name="keywords " content="trailing space">'
        '<meta name="KEYWORDS" content="k">',
        '<meta name="\u212aeywords" content="kelvin">'
        '<meta property="og:site_name" content="S">',
        '<meta name="description" content="d"><svg><meta name="keywords" content="svg">'
        "</svg>",
        "",
    ],
)
def test_meta_lookup_matches_one_selector_per_field(head):
    html = f"<html><head>{head}</head><body><p>x</p></body></html>"
    metadata = extract(
        html.encode(), content_type="text/html", url="https://e.example/", options={}
    ).metadata
    for key, value in _metadata_by_selectors(html).items():
        assert metadata.get(key) == value, key
    for key in ("keywords", "ogTitle", "ogDescription", "ogImage", "ogSiteName"):
        assert (key in metadata) == (key in _metadata_by_selectors(html)), key


# -- sources: what a check stores and compares -----------------------------------


def test_an_html_page_source_is_cleaned_html_that_converts_to_its_markdown():
    page = html_page(
        '<nav><a href="/">Home</a></nav><main><h1>Widget</h1>'
        '<p>Price: <a href="/price">$19</a></p></main>'
    )

    result = run(page)

    assert result.source_format == SOURCE_HTML
    assert "<nav" not in result.source and "$19" in result.source
    assert markdown_of(result.source_format, result.source) == result.markdown
    assert result.markdown == ("# Widget\n\nPrice: [$19](https://shop.example/price)\n")


def test_a_stored_source_converts_with_the_base_and_options_it_was_made_with():
    page = html_page(
        '<p><a href="pricing">Plans</a><img src="data:image/png;base64,AAAA"></p>'
    )

    dropped = run(page, removeBase64Images=True)
    kept = run(page, removeBase64Images=False)

    # Read back later (another process, another check): same Markdown.
    assert markdown_of(SOURCE_HTML, dropped.source) == (
        "[Plans](https://shop.example/products/pricing)\n"
    )
    assert "data:image/png" in markdown_of(SOURCE_HTML, kept.source)


def test_a_text_page_source_is_its_markdown():
    result = run(b"Price: 19\r\n", content_type="text/plain")

    assert (result.source_format, result.source) == (SOURCE_MARKDOWN, "Price: 19\n")
    assert markdown_of(SOURCE_MARKDOWN, result.source) == result.markdown
