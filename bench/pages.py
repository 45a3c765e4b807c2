"""Article-like HTML pages (~50 KB) and ~1 MB Markdown texts for the benchmarks.

Pages look like a news or blog article on a commercial site: a head with CSS,
JSON-LD and analytics scripts, a header with a large navigation menu, a cookie
banner, a sidebar, the article itself (headings, paragraphs with links and
emphasis, lists, a pricing table, quotes, figures, code) with ad slots in it,
share buttons, a big footer, ad iframes and tracking pixels. So extraction does
the work a real page asks of it: most of the bytes are chrome to drop.

Everything is deterministic: a page is a function of (generation, index,
variant, edited). The article's text comes from (generation, index); `edited`
rewrites parts of it (reworded sentences, a new price, a paragraph added and one
removed), as a real update of the article would. The *chrome* (ad ids, the
sidebar's order, the footer's timestamp, script nonces) differs per `variant`,
as it does on the real web between two fetches, and must not count as a change.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from html import escape

PAGE_BYTES = 50_000
# The head, navigation, sidebar and footer (~28 KB), and the markup the
# article's text gets on top of the estimate below.
CHROME_BYTES = 31_000


def _listed(text: str, sep: str | None = None) -> tuple[str, ...]:
    return tuple(text.split(sep))


_WORDS = _listed(
    "account action agency amount analysis annual answer approach area argument "
    "article audience balance bank basis benefit board budget building business "
    "campaign capital career center century chance change choice city client "
    "committee community company condition contract control council country "
    "culture customer data deal decision demand design detail development "
    "difference director discussion district economy education effect election "
    "energy environment evidence experience expert factor family feature figure "
    "finance focus force future game government group growth health history "
    "house idea impact income industry information interest investment issue "
    "job knowledge language law leader level library light line list market "
    "material measure media meeting member method minute model moment money "
    "month morning movement music nation nature network news number offer "
    "office official operation opinion option order organization owner page "
    "paper part partner party patient pattern payment people percent period "
    "person picture plan plant player point policy position power practice "
    "pressure price problem process product program project property public "
    "quality question range rate reason record region report research resource "
    "response result risk road role rule safety sale scene school science season "
    "sector security series service share side site situation size skill "
    "society source space staff stage standard state station step story "
    "strategy street structure student study style subject success summer "
    "support surface system table task team technology term test theory thing "
    "time total trade training travel treatment trend truth type unit user value "
    "version view village voice water week weight window winter woman word work "
    "worker world year young platform release update feature pricing monitor "
    "review launch customer engineer server browser request response latency"
)
_VERBS = _listed(
    "announced reported confirmed suggested argued explained noted described "
    "revealed estimated expected planned launched increased reduced improved "
    "changed supported approved rejected reviewed measured tracked compared"
)
_NAMES = _listed(
    "Alice Martin|Bruno Costa|Chen Wei|Dana Okafor|Elena Petrova|Farid Haddad|"
    "Grace Lee|Hugo Lambert|Ines Moreau|Jonas Weber|Keiko Tanaka|Liam Murphy",
    "|",
)
_SECTIONS = _listed(
    "World Politics Business Technology Science Health Sports Culture Travel "
    "Opinion Climate Markets Education Media Style Food Books Music Film Podcasts"
)


def _sentence(rng: random.Random) -> str:
    words = [rng.choice(_WORDS) for _ in range(rng.randint(7, 22))]
    words.insert(rng.randint(1, len(words) - 1), rng.choice(_VERBS))
    if rng.random() < 0.3:
        words.insert(rng.randint(1, len(words) - 1), str(rng.randint(2, 98_000)))
    text = " ".join(words)
    return text[0].upper() + text[1:] + rng.choice(".....?!")


def _paragraph_html(
    rng: random.Random, sentences: list[str], topics: bool = True
) -> str:
    """Sentences with some links (to /topics/ pages, or none without
    `topics`) and emphasis around words."""
    out = []
    for sentence in sentences:
        words = sentence.split(" ")
        roll = rng.random()
        if roll < 0.25 and len(words) > 4:
            k = rng.randint(1, len(words) - 3)
            slug = words[k].lower().strip(".?!")
            words[k] = (
                f'<a href="/topics/{slug}">{words[k]}</a>'
                if topics
                else f"<b>{words[k]}</b>"
            )
        elif roll < 0.35 and len(words) > 4:
            k = rng.randint(1, len(words) - 3)
            words[k] = f"<strong>{words[k]}</strong>"
        elif roll < 0.42 and len(words) > 4:
            k = rng.randint(1, len(words) - 3)
            words[k] = f"<em>{words[k]}</em>"
        out.append(" ".join(words))
    return " ".join(out)


# --- The article as blocks, so edits are structural and scattered -------------


@dataclass
class _Block:
    kind: str  # h2 p ul table quote figure code ad
    text: list[str] = field(default_factory=list)  # sentences / items / lines
    rows: list[list[str]] = field(default_factory=list)
    seed: int = 0  # stable per-block randomness for links/emphasis


def _section(rng: random.Random) -> list[_Block]:
    blocks = [_Block("h2", [_sentence(rng).rstrip(".?!")])]
    for _ in range(rng.randint(3, 6)):
        blocks.append(
            _Block(
                "p",
                [_sentence(rng) for _ in range(rng.randint(3, 7))],
                seed=rng.getrandbits(32),
            )
        )
        roll = rng.random()
        if roll < 0.12:
            items = [_sentence(rng) for _ in range(rng.randint(3, 7))]
            blocks.append(_Block("ul", items))
        elif roll < 0.18:
            rows = [["Plan", "Monthly", "Yearly", "Pages"]]
            for name in ("Starter", "Team", "Business", "Enterprise"):
                rows.append(
                    [
                        name,
                        f"${rng.randint(9, 499)}",
                        f"${rng.randint(90, 4990)}",
                        str(rng.randint(10, 100_000)),
                    ]
                )
            blocks.append(_Block("table", rows=rows))
        elif roll < 0.23:
            blocks.append(_Block("quote", [_sentence(rng)]))
        elif roll < 0.28:
            blocks.append(_Block("figure", [_sentence(rng)], seed=rng.getrandbits(32)))
        elif roll < 0.31:
            lines = [
                f"{rng.choice(_WORDS)}_{i} = compute({rng.choice(_WORDS)!r}, {i})"
                for i in range(rng.randint(3, 8))
            ]
            blocks.append(_Block("code", lines))
        elif roll < 0.36:
            blocks.append(_Block("ad", seed=rng.getrandbits(32)))
    return blocks


def _edit(blocks: list[_Block], rng: random.Random) -> list[_Block]:
    """Scattered content edits: reworded sentences, a changed price, one
    paragraph added and one removed, as a real page update would have."""
    blocks = [
        _Block(b.kind, list(b.text), [list(r) for r in b.rows], b.seed) for b in blocks
    ]
    paragraphs = [b for b in blocks if b.kind == "p"]
    for block in rng.sample(paragraphs, min(6, len(paragraphs))):
        k = rng.randrange(len(block.text))
        words = block.text[k].split(" ")
        for _ in range(rng.randint(1, 3)):
            words[rng.randrange(len(words))] = rng.choice(_WORDS)
        block.text[k] = " ".join(words)
    for block in blocks:
        if block.kind == "table":
            block.rows[2][1] = f"${rng.randint(500, 999)}"
            break
    doomed = rng.choice(paragraphs[1:] or paragraphs)
    blocks.remove(doomed)
    at = rng.randrange(1, len(blocks))
    blocks.insert(at, _Block("p", [_sentence(rng) for _ in range(4)], seed=1))
    return blocks


def _render_block(block: _Block, chrome: random.Random, topics: bool = True) -> str:
    if block.kind == "h2":
        return f"<h2>{escape(block.text[0])}</h2>\n"
    if block.kind == "p":
        text = _paragraph_html(random.Random(block.seed), block.text, topics)
        return f"<p>{text}</p>\n"
    if block.kind == "ul":
        items = "".join(f"<li>{escape(item)}</li>" for item in block.text)
        return f"<ul>{items}</ul>\n"
    if block.kind == "table":
        head, *body = block.rows
        ths = "".join(f"<th>{escape(c)}</th>" for c in head)
        trs = "".join(
            "<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>"
            for row in body
        )
        return f"<table><thead><tr>{ths}</tr></thead><tbody>{trs}</tbody></table>\n"
    if block.kind == "quote":
        return f"<blockquote><p>{escape(block.text[0])}</p></blockquote>\n"
    if block.kind == "figure":
        return (
            f'<figure><img src="/media/{block.seed:x}.jpg" alt="" width="800" '
            f'height="450" loading="lazy"><figcaption>{escape(block.text[0])}'
            "</figcaption></figure>\n"
        )
    if block.kind == "code":
        return f"<pre><code>{escape(chr(10).join(block.text))}</code></pre>\n"
    # An in-article ad: its ids rotate on every fetch.
    slot = chrome.getrandbits(40)
    return (
        f'<div class="ad-container"><ins class="adsbygoogle" data-ad-client='
        f'"ca-pub-{slot % 10**10}" data-ad-slot="{slot}"></ins><div class="promo-'
        f'banner"><a href="https://ads.example/{slot:x}">Sponsored: '
        f"{escape(_sentence(chrome))}</a></div></div>\n"
    )


# --- Chrome ---------------------------------------------------------------------

_CSS = "".join(
    f".c{i}{{margin:{i % 7}px;padding:{i % 5}px;color:#{i * 2654435761 % 16**6:06x}}}"
    for i in range(120)
)


def _head(title: str, description: str, chrome: random.Random) -> str:
    nonce = f"{chrome.getrandbits(64):x}"
    tracking = "".join(
        f"window.dl.push({{e:'ev{i}',v:{chrome.randint(0, 10**6)}}});"
        for i in range(60)
    )
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title>"
        f'<meta name="description" content="{escape(description)}">'
        f'<meta property="og:title" content="{escape(title)}">'
        '<meta property="og:type" content="article">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<link rel="stylesheet" href="/static/site.css">'
        f"<style>{_CSS}</style>"
        '<script type="application/ld+json">{"@context":"https://schema.org",'
        f'"@type":"NewsArticle","headline":"{escape(title)}"}}</script>'
        f'<script nonce="{nonce}">window.dl=window.dl||[];{tracking}</script>'
        '<script async src="https://www.googletagservices.com/tag/js/gpt.js">'
        "</script></head>\n"
    )


def _nav(chrome: random.Random) -> str:
    menus = []
    for section in _SECTIONS:
        links = "".join(
            f'<li><a href="/{section.lower()}/{w}">{w.title()}</a></li>'
            for w in random.Random(section).sample(_WORDS, 8)
        )
        menus.append(
            f'<li class="menu-item"><a href="/{section.lower()}">{section}</a>'
            f'<ul class="sub-menu">{links}</ul></li>'
        )
    return (
        '<header class="site-header"><div class="logo"><a href="/">The Daily '
        'Example</a></div><nav class="main-nav" aria-label="Main"><ul>'
        + "".join(menus)
        + '</ul></nav><form class="search-form" action="/search"><label>Search '
        '<input type="search" name="q"></label><button>Go</button></form>'
        f'<div class="edition">Edition {chrome.randint(1000, 9999)}</div></header>\n'
        '<div class="cookie-consent" role="dialog"><p>We use cookies to improve '
        "your experience and to show you personalised ads.</p><button>Accept all"
        "</button><button>Manage</button></div>\n"
    )


def _sidebar(chrome: random.Random) -> str:
    trending = [_sentence(random.Random(i)) for i in range(20)]
    chrome.shuffle(trending)
    items = "".join(
        f'<li><a href="/trending/{i}">{escape(t)}</a></li>'
        for i, t in enumerate(trending)
    )
    return (
        '<aside class="sidebar"><h3>Trending</h3><ol>'
        + items
        + '</ol><div class="newsletter-signup"><h3>Get the newsletter</h3><form>'
        '<input type="email" placeholder="you@example.com"><button>Sign up'
        "</button></form></div></aside>\n"
    )


def _footer(chrome: random.Random, variant: int) -> str:
    columns = "".join(
        f'<div class="footer-column"><h4>{section}</h4><ul>'
        + "".join(
            f'<li><a href="/{section.lower()}/{w}">{w.title()}</a></li>'
            for w in random.Random(section + "f").sample(_WORDS, 10)
        )
        + "</ul></div>"
        for section in _SECTIONS[:12]
    )
    pixel = chrome.getrandbits(48)
    return (
        '<div class="share-buttons"><a href="https://twitter.example/share">Share'
        '</a><a href="https://facebook.example/share">Post</a></div>\n'
        f'<footer class="site-footer">{columns}<p>&copy; 2025 The Daily Example. '
        f"Page rendered at 2025-11-22T0{variant}:{chrome.randint(10, 59)}:00Z by "
        f"node {chrome.randint(1, 64)}.</p></footer>\n"
        '<iframe src="https://googleads.g.doubleclick.net/pagead/ads?slot='
        f'{pixel:x}" width="300" height="250"></iframe>'
        f'<img src="https://bat.bing.com/action/0?ti={pixel}" width="1" height="1">'
        '<script>(function(){var s=document.createElement("script");'
        's.src="https://cdn.example/analytics.js";document.body.appendChild(s)})();'
        "</script>\n"
    )


def article_page(
    generation: int, index: int, variant: int = 0, edited: bool = False
) -> str:
    """One ~PAGE_BYTES article page: its text changes when `edited`, its
    chrome with every `variant`."""
    rng = random.Random(f"content-{generation}-{index}")
    chrome = random.Random(f"chrome-{generation}-{index}-{variant}")
    title = _sentence(rng).rstrip(".?!")
    author = rng.choice(_NAMES)
    blocks: list[_Block] = []
    budget = PAGE_BYTES - CHROME_BYTES
    size = 0
    while size < budget:
        section = _section(rng)
        blocks.extend(section)
        size += sum(
            sum(len(s) + 1 for s in b.text) + 40 * len(b.rows) + 60 for b in section
        )
    if edited:
        blocks = _edit(blocks, random.Random(f"edit-{generation}-{index}"))
    article = "".join(_render_block(block, chrome) for block in blocks)
    related = "".join(
        f'<li><a href="/articles/{generation}-{(index + k) % 997}">'
        f"{escape(_sentence(random.Random(index * 31 + k)))}</a></li>"
        for k in range(1, 9)
    )
    return (
        _head(title, _sentence(rng), chrome)
        + "<body>\n"
        + _nav(chrome)
        + '<div class="page-wrapper">'
        + _sidebar(chrome)
        + f'<main id="content"><article><header><h1>{escape(title)}</h1>'
        f'<p class="byline">By {author} &middot; {_SECTIONS[index % 20]}</p>'
        f"</header>\n{article}</article>\n"
        f'<section class="related-articles"><h2>Related</h2><ul>{related}</ul>'
        "</section></main></div>\n" + _footer(chrome, variant) + "</body></html>\n"
    )


def app_page(
    generation: int, index: int, variant: int = 0, edited: bool = False
) -> str:
    """The same article as a single-page app serves it: an empty root that a
    script fills in the browser, the article travelling as JSON in the page
    (as server-side data of React or Vue apps does). A plain fetch sees no
    text; a browser sees the article."""
    article = article_page(generation, index, variant, edited)
    start, end = article.index("<body>"), article.rindex("</body>")
    payload = json.dumps(article[start + len("<body>") : end]).replace("</", "<\\/")
    return (
        article[:start]
        + '<body><div id="root"></div>\n'
        + f'<script id="__DATA__" type="application/json">{payload}</script>\n'
        + "<script>document.getElementById('root').innerHTML ="
        " JSON.parse(document.getElementById('__DATA__').textContent);</script>\n"
        + "</body></html>\n"
    )


# --- Pages of a crawlable site -------------------------------------------------

Link = tuple[str, str]  # (href, text)


def _links(links: list[Link]) -> str:
    return "".join(
        f'<li><a href="{href}">{escape(text)}</a></li>' for href, text in links
    )


def site_page(
    generation: int,
    index: int,
    title: str | None,
    nav: list[Link],
    sidebar: list[Link],
    listing: tuple[str, list[Link]],
) -> str:
    """A ~PAGE_BYTES page like article_page whose only links into its site
    are the given ones: the site's navigation, a "most read" box and a
    listing (a section's articles, an article's neighbours). Its article
    text comes from (generation, index); the rest links out (ads, share
    buttons), which a crawl of the site does not follow. Without a title, an
    article's headline is made up."""
    rng = random.Random(f"content-{generation}-{index}")
    chrome = random.Random(f"chrome-{generation}-{index}-0")
    title = title or _sentence(rng).rstrip(".?!")
    heading, items = listing
    top = (
        _head(title, _sentence(rng), chrome)
        + '<body>\n<header class="site-header"><div class="logo"><a href="/">The'
        ' Daily Example</a></div><nav class="main-nav" aria-label="Main"><ul>'
        + _links(nav)
        + "</ul></nav></header>\n"
        '<div class="cookie-consent" role="dialog"><p>We use cookies to improve '
        "your experience and to show you personalised ads.</p><button>Accept all"
        '</button></div>\n<div class="page-wrapper"><aside class="sidebar">'
        f"<h3>Most read</h3><ol>{_links(sidebar)}</ol></aside>\n"
        f'<main id="content"><article><header><h1>{escape(title)}</h1>'
        f'<p class="byline">By {rng.choice(_NAMES)}</p></header>\n'
    )
    pixel = chrome.getrandbits(48)
    bottom = (
        f'</article>\n<section class="related-articles"><h2>{escape(heading)}</h2>'
        f"<ul>{_links(items)}</ul></section></main></div>\n"
        '<div class="share-buttons"><a href="https://twitter.example/share">Share'
        '</a><a href="https://facebook.example/share">Post</a></div>\n'
        '<footer class="site-footer"><p>&copy; 2025 The Daily Example.</p></footer>'
        '<iframe src="https://googleads.g.doubleclick.net/pagead/ads?slot='
        f'{pixel:x}" width="300" height="250"></iframe></body></html>\n'
    )
    article: list[str] = []
    size = len(top) + len(bottom)
    while size < PAGE_BYTES:
        for block in _section(rng):
            article.append(_render_block(block, chrome, topics=False))
            size += len(article[-1])
    return top + "".join(article) + bottom


# --- ~1 MB Markdown for the diff benchmark ---------------------------------------


def markdown_document(target_bytes: int, seed: int = 7) -> str:
    """Markdown as extraction produces it: headings, paragraphs one per line,
    lists, tables, quotes, code, blank lines between blocks."""
    rng = random.Random(seed)
    out: list[str] = []
    size = 0
    section = 0
    while size < target_bytes:
        section += 1
        chunk = [f"## {section}. {_sentence(rng).rstrip('.?!')}", ""]
        for _ in range(rng.randint(3, 7)):
            chunk += [" ".join(_sentence(rng) for _ in range(rng.randint(2, 5))), ""]
            roll = rng.random()
            if roll < 0.15:
                chunk += [f"- {_sentence(rng)}" for _ in range(rng.randint(3, 6))]
                chunk.append("")
            elif roll < 0.22:
                chunk += ["| Plan | Monthly | Pages |", "| --- | --- | --- |"]
                chunk += [
                    f"| {rng.choice(_WORDS).title()} | ${rng.randint(9, 499)} | "
                    f"{rng.randint(10, 9999)} |"
                    for _ in range(4)
                ]
                chunk.append("")
            elif roll < 0.27:
                chunk += [f"> {_sentence(rng)}", ""]
        out += chunk
        size += sum(len(line) + 1 for line in chunk)
    return "\n".join(out) + "\n"


def scattered_edits(text: str, edits: int, seed: int = 11) -> str:
    """`edits` changes spread evenly through `text`: reworded lines (most),
    inserted and deleted lines, and one block moved from the start to the end."""
    rng = random.Random(seed)
    lines = text.split("\n")
    step = max(1, len(lines) // (edits + 1))
    out: list[str] = []
    for start in range(0, len(lines), step):
        chunk = lines[start : start + step]
        k = rng.randrange(len(chunk))
        roll = rng.random()
        if not chunk[k].strip():
            pass  # a blank line: leave it, the next chunk gets its edit
        elif roll < 0.7:
            words = chunk[k].split(" ")
            for _ in range(rng.randint(1, 3)):
                words[rng.randrange(len(words))] = rng.choice(_WORDS)
            chunk[k] = " ".join(words)
        elif roll < 0.85:
            chunk.insert(k, _sentence(rng))
        else:
            del chunk[k]
        out += chunk
    moved = out[10:40]
    del out[10:40]
    out[-1:-1] = moved
    return "\n".join(out)
