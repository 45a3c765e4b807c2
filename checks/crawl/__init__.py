"""Crawl targets: a whole site watched on every check.

    scope.py     which URLs a crawl may visit, and when two are one page
    links.py     the links of a fetched HTML page
    canonical.py the address a page names as canonical (the page is then a
                 copy of it: checks.crawl.frontier.Frontier.copies)
    discovery.py robots.txt and sitemaps at the start, through the one door
    known.py     the pages the monitor had before this check, and under
                 which address (taken first when the limit is near)
    frontier.py  the crawl's state in the database: seeds, admitted links
                 and the removed pages of a complete crawl
    waiting.py   links that waited for room near the limit, admitted once
                 no batch of the check is open

A crawl is a source of page jobs (checks.crawl.source.CrawlSource) like any other:
its pages are fetched, judged and recorded by the runner in batches, and the
links each page brings are admitted to the frontier as new batches, which any
worker takes.
"""
