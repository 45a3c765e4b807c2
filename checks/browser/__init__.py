"""A real browser for the pages that need one: Chromium driven by Playwright.

    executable.py  which Chromium, and whether there is one (no Playwright)
    chromium.py  one browser per worker process, on its own event loop thread
    proxy.py     the filtering forward proxy every page's traffic goes through
    page.py      one page: fresh context, navigation, waits, actions, capture
    actions.py   Firecrawl's actions (wait, click, write, press, scroll...)
    options.py   which scrapeOptions need a browser (pure)
    result.py    what a page in the browser gives back (plain data)
    detect.py    whether a plain fetch returned a page built by scripts (pure)

checks.pipeline.fetch.BrowserFetcher is the one door into it: page.fetch_page runs a
page on the browser's thread and awaits it from the caller's loop. Only the
modules that drive the browser import Playwright; the web process and the
judge read executable.py, options.py, detect.py and result.py.
"""
