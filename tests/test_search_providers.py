"""Each search provider's adapter against a fake of its API on 127.0.0.1
(tests/searching.py): what it sends, how it reads the answer, how it fails;
and the canonical URL every result is keyed by."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs, urlsplit

import pytest

from checks.search import providers
from checks.search.canonical import canonical_url, domain_allowed, result_key
from checks.search.providers import (
    BraveProvider,
    FirecrawlProvider,
    Hit,
    Provider,
    Query,
    SearchError,
    SearxngProvider,
    TavilyProvider,
)
from checks.search.providers.base import plain, published
from monitors.search_provider import configured_provider
from tests.searching import FakeBrave, FakeFirecrawl, FakeSearxng, FakeTavily, hit
from tests.sites import Site, refused_url

WHEN = datetime(2026, 5, 17, 15, 30, tzinfo=UTC)
HITS = [
    hit(
        "https://news.example.com/a",
        "<b>Acme</b> launches",
        "Acme &amp; co",
        published=WHEN,
    ),
    hit("https://blog.example.org/b", "Acme again", "More"),
]


@pytest.fixture
def server(settings) -> Iterator[Site]:
    settings.SEARCH_TIMEOUT_SECONDS = 1
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = False  # the provider host is allowed
    with Site() as running:
        yield running


def search(provider: Provider, query: Query) -> list[Hit]:
    async def go() -> list[Hit]:
        async with provider:
            return await provider.search(query)

    return asyncio.run(go())


def test_searxng_asks_for_json_in_a_time_range_and_reads_every_field(server):
    fake = FakeSearxng(server).results("acme", *HITS)
    provider = SearxngProvider(server.base_url)

    found = search(provider, Query("acme", window="1h", limit=10))

    params = fake.params(fake.requests[0])
    assert params == {"q": "acme", "format": "json", "time_range": "day"}
    assert found == [
        Hit("https://news.example.com/a", "Acme launches", "Acme & co", WHEN, 1),
        Hit("https://blog.example.org/b", "Acme again", "More", None, 2),
    ]


def test_searxng_cuts_its_page_to_the_limit(server):
    FakeSearxng(server).results("acme", *HITS)
    assert len(search(SearxngProvider(server.base_url), Query("acme", limit=1))) == 1


def test_searxng_with_every_engine_unresponsive_is_an_error_not_no_results(server):
    fake = FakeSearxng(server)
    fake.unresponsive = [["google", "timeout"], ["bing", "CAPTCHA"]]
    with pytest.raises(SearchError) as failed:
        search(SearxngProvider(server.base_url), Query("acme"))
    assert failed.value.message == (
        "None of SearXNG's search engines gave results; these did not answer: "
        "google (timeout), bing (CAPTCHA)."
    )


def test_searxng_with_no_results_and_every_engine_fine_is_no_results(server):
    FakeSearxng(server)
    assert search(SearxngProvider(server.base_url), Query("nothing")) == []


def test_searxng_url_ending_in_its_search_page_says_what_to_set(server):
    # People paste the address of the search page: Pagewatch adds /search
    # itself, so the instance answers 404 at /search/search.
    FakeSearxng(server).results("acme", *HITS)

    with pytest.raises(SearchError) as failed:
        search(SearxngProvider(server.base_url + "/search"), Query("acme"))

    assert failed.value.message == (
        "SearXNG refused the search (HTTP 404): SEARXNG_URL must be the "
        "instance's base address without /search, which Pagewatch adds itself."
    )


def test_brave_sends_its_key_freshness_and_count_and_reads_page_age(server):
    fake = FakeBrave(server).results("acme", *HITS)
    provider = BraveProvider("brave-key", server.url("/res/v1/web/search"))

    found = search(provider, Query("acme", window="7d", limit=30))

    request = fake.requests[0]
    assert request.header("X-Subscription-Token") == "brave-key"
    params = {k: v[0] for k, v in parse_qs(urlsplit(request.path).query).items()}
    assert params == {"q": "acme", "count": "20", "freshness": "pw"}
    assert [(h.url, h.title, h.snippet, h.published) for h in found] == [
        ("https://news.example.com/a", "Acme launches", "Acme & co", WHEN),
        ("https://blog.example.org/b", "Acme again", "More", None),
    ]


def test_brave_refusing_the_key_names_the_setting_to_check(server):
    FakeBrave(server).fail(401, {"error": {"detail": "bad", "message": "Bad token"}})
    provider = BraveProvider("wrong", server.url("/res/v1/web/search"))
    with pytest.raises(SearchError) as failed:
        search(provider, Query("acme"))
    assert failed.value.message == (
        "Brave Search answered HTTP 401 (Bad token). Check BRAVE_API_KEY."
    )


def test_tavily_posts_the_query_with_domains_and_reads_published_dates(server):
    fake = FakeTavily(server).results("acme", *HITS)
    provider = TavilyProvider("tvly-key", server.url("/search"))

    found = search(
        provider, Query("acme", window="24h", limit=5, include_domains=("example.com",))
    )

    request = fake.requests[0]
    assert request.method == "POST"
    assert request.header("Authorization") == "Bearer tvly-key"
    assert json.loads(request.body) == {
        "query": "acme",
        "max_results": 5,
        "time_range": "day",
        "search_depth": "basic",
        "topic": "general",
        "include_domains": ["example.com"],
    }
    assert [(h.url, h.published) for h in found] == [
        ("https://news.example.com/a", WHEN),
        ("https://blog.example.org/b", None),
    ]


def test_tavily_over_its_plan_says_so(server):
    FakeTavily(server).fail(429, {"detail": {"error": "Rate limit exceeded"}})
    with pytest.raises(SearchError) as failed:
        search(TavilyProvider("k", server.url("/search")), Query("acme"))
    assert "Tavily answered HTTP 429" in failed.value.message
    assert "the plan's limit" in failed.value.message


@pytest.mark.parametrize(
    ("window", "tbs"),
    [("5m", "qdr:h"), ("1h", "qdr:h"), ("6h", "qdr:d"), ("7d", "qdr:w")],
)
def test_firecrawl_posts_to_v2_search_with_tbs_and_domains(server, window, tbs):
    fake = FakeFirecrawl(server).results("acme", *HITS)
    provider = FirecrawlProvider("fc-key", server.base_url)

    found = search(provider, Query("acme", window=window, exclude_domains=("x.com",)))

    request = fake.requests[0]
    assert request.path == "/v2/search"
    assert request.header("Authorization") == "Bearer fc-key"
    assert json.loads(request.body) == {
        "query": "acme",
        "limit": 10,
        "tbs": tbs,
        "sources": ["web"],
        "excludeDomains": ["x.com"],
    }
    assert [(h.url, h.title, h.snippet) for h in found] == [
        ("https://news.example.com/a", "Acme launches", "Acme & co"),
        ("https://blog.example.org/b", "Acme again", "More"),
    ]
    assert provider.endpoint == server.url("/v2/search")


def test_firecrawl_reads_a_v1_list_and_reports_its_own_error(server):
    fake = FakeFirecrawl(server)
    fake.shape = lambda hits: {"success": True, "data": [{"url": "https://e.com/"}]}
    provider = FirecrawlProvider("fc-key", server.base_url)
    assert [h.url for h in search(provider, Query("acme"))] == ["https://e.com/"]
    fake.fail(402, {"success": False, "error": "Insufficient credits"})
    with pytest.raises(SearchError) as failed:
        search(FirecrawlProvider("fc-key", server.base_url), Query("acme"))
    assert failed.value.message == (
        "Firecrawl answered HTTP 402 (Insufficient credits)."
    )


def test_an_answer_that_is_not_json_is_an_error(server):
    server.page("/search", "<html>nope</html>")
    with pytest.raises(SearchError) as failed:
        search(SearxngProvider(server.base_url), Query("acme"))
    assert failed.value.message == "SearXNG answered with something other than JSON."


def test_an_answer_over_the_size_cap_is_said_to_be_too_large_not_unreachable(server):
    rows = [
        {"url": f"https://example.com/{i}", "content": "x" * 1000} for i in range(3000)
    ]
    server.page(
        "/search", json.dumps({"results": rows}), content_type="application/json"
    )
    with pytest.raises(SearchError) as failed:
        search(SearxngProvider(server.base_url), Query("acme"))
    assert failed.value.message == (
        "SearXNG's answer was larger than 2 MB, so it was not read."
    )


@pytest.mark.parametrize("status", [200, 500])
def test_an_answer_nested_too_deeply_to_read_is_no_json_not_an_internal_error(
    server, status
):
    # Python's JSON parser gives up on such nesting with a RecursionError.
    nested = "[" * 100_000 + "]" * 100_000
    server.page("/search", nested, content_type="application/json", status=status)
    with pytest.raises(SearchError) as failed:
        search(SearxngProvider(server.base_url), Query("acme"))
    assert failed.value.message == (
        "SearXNG answered with something other than JSON."
        if status == 200
        else "SearXNG answered HTTP 500."
    )


@pytest.mark.parametrize(
    "answer",
    [{"error": "Engine settings are broken"}, {"results": "none"}, {"query": "acme"}],
)
def test_a_searxng_json_answer_without_a_list_of_results_is_an_error(server, answer):
    # A proxy's or a broken instance's JSON is not "nothing was found".
    server.page("/search", json.dumps(answer), content_type="application/json")
    with pytest.raises(SearchError) as failed:
        search(SearxngProvider(server.base_url), Query("acme"))
    assert failed.value.message == "SearXNG's answer held no list of results."


def test_a_tavily_json_answer_without_a_list_of_results_is_an_error(server):
    server.page(
        "/search", json.dumps({"answer": None}), content_type="application/json"
    )
    with pytest.raises(SearchError) as failed:
        search(TavilyProvider("key", server.url("/search")), Query("acme"))
    assert failed.value.message == "Tavily's answer held no list of results."


def test_a_provider_that_is_down_or_slow_is_an_error_with_the_reason(server):
    with pytest.raises(SearchError) as refused:
        search(SearxngProvider(refused_url().rstrip("/")), Query("acme"))
    assert refused.value.message.startswith("SearXNG could not be reached: Connection")
    fake = FakeSearxng(server).hang(3)
    try:
        with pytest.raises(SearchError) as slow:
            search(SearxngProvider(server.base_url), Query("acme"))
    finally:
        fake.released.set()
    assert slow.value.message == (
        "SearXNG could not be reached: Gave up on 127.0.0.1 after 1 s."
    )


def test_a_provider_address_with_a_password_is_refused_in_one_sentence():
    with pytest.raises(SearchError) as failed:
        search(SearxngProvider("https://me:s3cret@searx.example"), Query("acme"))
    assert failed.value.message == (
        "SearXNG could not be reached: URL must not contain a user name or password."
    )


def test_a_provider_on_a_blocked_address_is_still_refused(settings):
    settings.SEARCH_TIMEOUT_SECONDS = 1
    with pytest.raises(SearchError) as failed:
        search(SearxngProvider("http://169.254.169.254"), Query("acme"))
    assert "Blocked" in failed.value.message


# --- which provider --------------------------------------------------------------


@pytest.mark.parametrize(
    ("configured", "expected"),
    [
        ({}, ""),
        ({"SEARXNG_URL": "http://s", "BRAVE_API_KEY": "b"}, "searxng"),
        ({"BRAVE_API_KEY": "b", "TAVILY_API_KEY": "t"}, "brave"),
        ({"TAVILY_API_KEY": "t", "FIRECRAWL_API_KEY": "f"}, "tavily"),
        ({"FIRECRAWL_API_KEY": "f"}, "firecrawl"),
        (
            {
                "SEARCH_PROVIDER": "tavily",
                "SEARXNG_URL": "http://s",
                "TAVILY_API_KEY": "t",
            },
            "tavily",
        ),
        ({"SEARCH_PROVIDER": "brave", "SEARXNG_URL": "http://s"}, ""),
    ],
)
def test_searxng_is_the_default_whenever_set_unless_search_provider_says(
    settings, configured, expected
):
    for name, value in configured.items():
        setattr(settings, name, value)
    assert configured_provider() == expected
    provider = providers.configured()
    assert (provider.name if provider else "") == expected


def test_the_firecrawl_provider_uses_firecrawl_api_url(settings):
    settings.FIRECRAWL_API_KEY = "fc"
    settings.FIRECRAWL_API_URL = "http://firecrawl.internal:3002"
    provider = providers.configured()
    assert provider.endpoint == "http://firecrawl.internal:3002/v2/search"


# --- canonical URLs and the rules -----------------------------------------------


@pytest.mark.parametrize(
    "variant",
    [
        "http://example.com/news/launch",
        "https://www.example.com/news/launch/",
        "HTTPS://Example.COM/news/launch",
        "https://example.com/news/launch?utm_source=x&utm_medium=rss",
        "https://example.com/news/launch?fbclid=abc#section",
        "https://example.com:443/news/launch?gclid=1",
    ],
)
def test_variants_of_one_result_share_its_key(variant):
    assert result_key(variant) == result_key("https://example.com/news/launch")


@pytest.mark.parametrize(
    "variant",
    [
        "https://xn--bcher-kva.example/%C3%A4rger?q=%E6%9D%B1",
        "https://www.xn--bcher-kva.example/%c3%a4rger/?q=%e6%9d%b1",
        "https://bücher.example/%C3%A4rger?q=東",
    ],
)
def test_a_result_written_in_letters_or_in_escapes_has_one_key(variant):
    # Search engines give one page's address either way.
    assert result_key(variant) == result_key("https://bücher.example/ärger?q=東")


def test_domain_rules_read_a_host_written_in_letters_as_its_ascii_name():
    assert domain_allowed("https://bücher.example/x", include=["xn--bcher-kva.example"])
    assert not domain_allowed(
        "https://www.bücher.example/x", exclude=["xn--bcher-kva.example"]
    )


def test_a_host_with_sharp_s_is_its_own_site_not_the_one_spelt_with_ss():
    # IDNA 2003 (Python's "idna" codec) wrote faß as fass; IDNA 2008 keeps ß.
    assert result_key("https://faß.example/") != result_key("https://fass.example/")
    assert result_key("https://faß.example/") == result_key(
        "https://xn--fa-hia.example/"
    )
    assert not domain_allowed("https://faß.example/x", include=["fass.example"])
    assert domain_allowed("https://faß.example/x", exclude=["fass.example"])
    assert domain_allowed("https://faß.example/x", include=["xn--fa-hia.example"])


@pytest.mark.parametrize(
    ("letters", "ascii_name"),
    [
        ("☃.net", "xn--n3h.net"),
        ("i❤.ws", "xn--i-7iq.ws"),
        ("faß☃.example", "xn--fa-hia6419a.example"),
    ],
)
def test_a_host_idna_2008_refuses_is_one_result_with_its_ascii_name(
    letters, ascii_name
):
    # Symbols are no letters to IDNA 2008, but browsers (and search engines)
    # still go to xn--n3h.net for ☃.net: one site, one result.
    assert result_key(f"https://{letters}/a") == result_key(f"https://{ascii_name}/a")
    assert result_key(f"https://WWW.{letters}/a/") == result_key(
        f"https://{ascii_name}/a"
    )
    assert domain_allowed(f"https://{letters}/a", include=[ascii_name])
    assert not domain_allowed(f"https://{letters}/a", exclude=[ascii_name])


def test_results_are_held_to_the_address_policy_through_its_own_switch(settings):
    # The switch every door reads (checks.fetch.policy): a deployment whose
    # settings leave ALLOW_PRIVATE_NETWORK_TARGETS out has it off, and the
    # search reads it the same way rather than failing on the missing name.
    from checks.search.gather import _fits

    del settings.ALLOW_PRIVATE_NETWORK_TARGETS
    now = datetime.now(UTC)
    query = providers.Query("acme")

    assert not _fits(providers.Hit("http://10.0.0.1/acme"), query, now)
    assert _fits(providers.Hit("https://news.example.com/acme"), query, now)


def test_other_pages_and_real_parameters_keep_their_own_key():
    base = "https://example.com/news/launch"
    assert result_key(base + "?id=2") != result_key(base + "?id=3")
    assert result_key(base + "-2") != result_key(base)
    assert result_key("https://blog.example.com/news/launch") != result_key(base)
    assert (
        canonical_url(base + "?b=2&a=1&utm_id=x") == "example.com/news/launch?a=1&b=2"
    )


def test_domain_rules_take_subdomains_and_www_alike():
    assert domain_allowed("https://www.example.com/x", include=["example.com"])
    assert domain_allowed("https://news.example.com/x", include=["example.com"])
    assert not domain_allowed("https://notexample.com/x", include=["example.com"])
    assert not domain_allowed("https://news.example.com/x", exclude=["example.com"])
    assert domain_allowed("https://other.org/x", exclude=["example.com"])


def test_provider_text_is_plain_and_times_are_read_or_left_out():
    assert plain("<strong>Acme</strong> &amp;\n co") == "Acme & co"
    assert plain(None) == ""
    # A title's control characters (a bell, a zero-width space) are dropped,
    # as in a service's words about an error: one rule for both.
    assert plain("Acme\x07 \u200bLaunch") == "Acme Launch"
    assert published("2026-05-17T15:30:00") == WHEN
    assert published("2026-05-17T17:30:00+02:00") == WHEN
    assert published("2 hours ago") is None
    assert published(17) is None
    assert WHEN - timedelta(days=1) < published("2026-05-17") + timedelta(days=1)


def test_the_address_an_error_is_recorded_under_carries_no_secret():
    provider = SearxngProvider("http://user:secret@searx.internal:8080/base?token=t")
    assert provider.address == "http://searx.internal:8080/base"
