"""A news site for the crawl benchmark: an index, section pages, articles.

    /                         the front page: every section's latest article
    /<section>/               a section: all its articles
    /<section>/story-<j>      an article: the stories next to it in its section

Every page also carries the site's navigation (all sections) and a "most
read" box (the same few articles everywhere), as real sites do, so most links
a crawler meets are ones it has seen already. Pages are ~50 KB
(bench.pages.site_page) and link nowhere else on the site. robots.txt names
no sitemap: a crawl finds every page by following links, the deepest two
hops from the front page.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from bench.pages import Link, site_page

ARTICLES_PER_SECTION = 50
MOST_READ = 8
NEIGHBOURS = 2  # stories linked on each side of an article
ROBOTS_TXT = "User-agent: *\nDisallow: /account/\nDisallow: /search\n"
_SECTION_NAMES = (
    "World", "Politics", "Business", "Technology", "Science", "Health", "Sports",
    "Culture", "Travel", "Opinion", "Climate", "Markets", "Education", "Media",
    "Style", "Food", "Books", "Music", "Film", "Podcasts",
)  # fmt: skip


class Site:
    """`pages` pages in all: the front page, sections of about
    ARTICLES_PER_SECTION articles, and the articles."""

    def __init__(self, pages: int) -> None:
        if pages < 3:
            raise ValueError("a site needs a front page, a section and an article")
        self.pages = pages
        self.sections = max(1, round((pages - 1) / (ARTICLES_PER_SECTION + 1)))
        self.articles = pages - 1 - self.sections

    def section_name(self, k: int) -> str:
        name = _SECTION_NAMES[k % len(_SECTION_NAMES)]
        return (
            name
            if k < len(_SECTION_NAMES)
            else f"{name} {k // len(_SECTION_NAMES) + 1}"
        )

    def section_path(self, k: int) -> str:
        return "/" + self.section_name(k).lower().replace(" ", "-") + "/"

    def article_path(self, j: int) -> str:
        """Article j is in section j mod sections (so each section's stories
        are j, j + sections, j + 2 × sections, ...)."""
        return f"{self.section_path(j % self.sections)}story-{j}"

    def paths(self) -> list[str]:
        """Every page, front page first, then sections, then articles."""
        sections = [self.section_path(k) for k in range(self.sections)]
        return ["/", *sections, *map(self.article_path, range(self.articles))]

    def _nav(self) -> list[Link]:
        return [
            (self.section_path(k), self.section_name(k)) for k in range(self.sections)
        ]

    def _stories(self, numbers: Iterable[int]) -> list[Link]:
        return [(self.article_path(j), f"Story {j}") for j in numbers]

    def _most_read(self) -> list[Link]:
        step = max(1, self.articles // MOST_READ)
        return self._stories(range(0, self.articles, step))[:MOST_READ]

    def _section_stories(self, k: int) -> list[int]:
        return list(range(k, self.articles, self.sections))

    def _listing(self, page: int) -> tuple[str, list[Link]]:
        """What the page lists: page 0 is the front page, 1..sections the
        sections, the rest the articles."""
        if page == 0:
            return "Latest", self._stories(range(min(self.sections, self.articles)))
        if page <= self.sections:
            k = page - 1
            return self.section_name(k), self._stories(self._section_stories(k))
        j = page - 1 - self.sections
        k, at = j % self.sections, j // self.sections
        stories = self._section_stories(k)
        near = stories[max(0, at - NEIGHBOURS) : at]
        near += stories[at + 1 : at + 1 + NEIGHBOURS]
        return f"More in {self.section_name(k)}", self._stories(near)

    def html(self, generation: int) -> Iterator[tuple[str, str]]:
        """(path, HTML) of every page, in the order of paths()."""
        nav, most_read = self._nav(), self._most_read()
        for page, path in enumerate(self.paths()):
            title = "The Daily Example" if page == 0 else None
            if 0 < page <= self.sections:
                title = self.section_name(page - 1)
            listing = self._listing(page)
            yield path, site_page(generation, page, title, nav, most_read, listing)
