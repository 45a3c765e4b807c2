"""The dashboard for search targets: the form checks them inline, a check's
page lists what the search found, a monitor's page the results it reported."""

from __future__ import annotations

import html
import re

import pytest
from django.urls import reverse
from django.utils import timezone

from monitors import rules
from monitors.models import Membership, Monitor, Target
from tests.searching import LAUNCH, hit
from tests.test_search_checks import make_monitor, run_check

pytest_plugins = ["tests.searching"]

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def private_targets_allowed(settings):
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True


@pytest.fixture
def web(client, team, django_user_model):
    user = django_user_model.objects.create_user("olive", "olive@example.com", "pw")
    Membership.objects.create(team=team, user=user, role=Membership.Role.OWNER)
    client.force_login(user)
    return client


def form_data(**target: str) -> dict[str, object]:
    data: dict[str, object] = {
        "name": "Acme news",
        "schedule": "hourly",
        "timezone": "UTC",
        "goal": "Acme launches",
        "judge": "auto",
        "retention_days": "",
        "webhook_url": "",
        "target": ["t0000bbbb"],
        "t0000bbbb-type": "search",
        "t0000bbbb-queries": "acme",
        "t0000bbbb-search_window": "24h",
        "t0000bbbb-max_results": "10",
    }
    data |= {f"t0000bbbb-{name}": value for name, value in target.items()}
    data["_touched"] = [f"t0000bbbb-{name}" for name in target]
    return data


def slot_text(body: str, slot: str) -> str:
    match = re.search(rf'id="err-{slot}"[^>]*>(.*?)</div>', body, re.DOTALL)
    return re.sub(r"<[^>]+>", " ", match[1]) if match else ""


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("queries", "", "Enter at least one search."),
        ("queries", "\n".join(f"q{i}" for i in range(13)), "At most 12 searches."),
        ("queries", "x" * 257, "A search can be at most 256 characters long."),
        (
            "queries",
            "acme\nacme\u202erocket",
            "Character 5 of this search is an invisible control character (U+202E)",
        ),
        # A line separator is no new line in the box, as it is none in the API:
        # the search is refused, not quietly split in two.
        (
            "queries",
            "acme\r\nacme\u2028rocket",
            "Character 5 of this search is an invisible control character (U+2028)",
        ),
        ("max_results", "60", "Enter a whole number of results from 1 to 50."),
        ("max_results", "0", "Enter a whole number of results from 1 to 50."),
        ("search_window", "2d", "Choose one of the listed time spans."),
        ("include_domains", "https://example.com/news", "is not a hostname"),
    ],
)
def test_the_search_form_says_at_once_what_is_wrong(web, field, value, message):
    response = web.post(
        "/monitors/new/validate/", form_data(**{field: value}), HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 200
    assert message in slot_text(response.content.decode(), f"t0000bbbb-{field}")


def test_the_search_form_refuses_included_and_excluded_domains_together(web):
    data = form_data(include_domains="example.com", exclude_domains="example.org")
    body = web.post("/monitors/new/validate/", data, HTTP_HX_REQUEST="true")
    assert "not both" in slot_text(body.content.decode(), "t0000bbbb-exclude_domains")


def test_a_valid_search_target_gets_no_error(web):
    data = form_data(queries="acme\nacme rocket", include_domains="example.com")
    body = web.post("/monitors/new/validate/", data, HTTP_HX_REQUEST="true")
    body = body.content.decode()
    for field in ("queries", "max_results", "include_domains", "search_window"):
        assert slot_text(body, f"t0000bbbb-{field}").strip() == ""


def test_the_search_row_says_so_only_when_no_search_service_is_set_up(web, settings):
    row = web.get(
        "/monitors/target-row/", {"add_target": "search"}, HTTP_HX_REQUEST="1"
    )
    assert "no web search service is set up" in row.content.decode()
    settings.SEARXNG_URL = "http://searx.internal:8080"
    row = web.get(
        "/monitors/target-row/", {"add_target": "search"}, HTTP_HX_REQUEST="1"
    )
    assert "no web search service is set up" not in row.content.decode()


def test_a_check_page_lists_results_found_which_were_new_verdicts_and_links(
    web, team, searx, model, news
):
    searx.results(
        "acme",
        # Tags are dropped from a provider's text; what is left is escaped.
        hit(
            news["launch"], "Acme &lt;script&gt;alert(1)&lt;/script&gt; go", "Big news"
        ),
        hit(news["earnings"], "Acme earnings", "Numbers"),
    )
    monitor = make_monitor(team, ["acme"])
    check = run_check(monitor)

    page = web.get(check.get_absolute_url()).content.decode()

    assert "2 results found, 1 new match, 2 judged against the goal." in page
    assert "<script>alert(1)" not in page
    assert "Acme &lt;script&gt;alert(1)&lt;/script&gt; go" in page
    assert f'href="{news["launch"]}" rel="noopener noreferrer nofollow"' in page
    assert "New match" in page and "Not relevant" in page
    assert "The page reports it." in page  # the judge's reason
    assert "The page is about something else." in page
    assert "Found by “acme”" in page and "Big news" in page


def test_a_check_page_says_the_search_itself_failed_and_why(web, team, searx, model):
    searx.fail(500)
    check = run_check(make_monitor(team, ["acme"]))
    page = html.unescape(web.get(check.get_absolute_url()).content.decode())
    assert "What went wrong:</strong> The web search failed: “acme”: SearXNG" in page
    assert "SearXNG answered HTTP 500 (boom)." in page
    assert "so new results may be missing from this check." in page
    assert "No page was looked at: the check failed before it reached any" in page


def test_a_check_that_found_no_search_service_says_so_without_setting_names(web, team):
    check = run_check(make_monitor(team, ["acme"]))
    assert "SEARXNG_URL" in check.error  # the API names the setting

    pages = [
        web.get(check.get_absolute_url()),
        web.get(check.monitor.get_absolute_url()),
    ]

    for page in (p.content.decode() for p in pages):
        assert "no web search service is set up for this Pagewatch yet" in page
    # Only the monitor's "For the administrator" line names the settings.
    check_page = pages[0].content.decode()
    assert "SEARXNG_URL" not in check_page and "API_KEY" not in check_page


def test_a_search_monitor_says_at_the_top_that_it_searches_nothing_until_set_up(
    web, team, settings
):
    monitor = make_monitor(team, ["acme"])
    page = html.unescape(web.get(monitor.get_absolute_url()).content.decode())
    settings.SEARXNG_URL = "http://searx.internal"
    once_set_up = web.get(monitor.get_absolute_url()).content.decode()

    assert 'data-unavailable="search"' in page
    assert "This monitor's web searches are not run yet." in page
    assert "For the administrator: set SEARXNG_URL" in page
    assert 'data-unavailable="search"' not in once_set_up


def test_the_missing_search_service_words_say_where_to_read_how_to_set_one_up(
    web, team
):
    # As the form's missing AI model does: staff can hand the README's section
    # to whoever runs Pagewatch.
    check = run_check(make_monitor(team, ["acme"]))
    for url in (check.get_absolute_url(), check.monitor.get_absolute_url()):
        page = html.unescape(web.get(url).content.decode())
        assert "as the README's “Watching the web” says" in page


def test_a_monitor_page_says_how_recent_its_searches_look_in_words(web, team):
    monitor = make_monitor(team, ["acme"], search_window="7d")
    page = web.get(monitor.get_absolute_url()).content.decode()
    assert "published in the last 7 days" in page and "within 7d" not in page


def test_a_monitor_page_shows_the_results_it_reported_over_time(
    web, team, searx, model, news, site
):
    searx.results("acme", hit(news["launch"], "Acme launches the Rocket"))
    monitor = make_monitor(team, ["acme"])
    run_check(monitor)
    later = site.html("/launch-2", "Again", "<p>Acme launches a second product</p>")
    searx.results(
        "acme",
        hit(news["launch"], "Acme launches the Rocket"),
        hit(later, "Acme launches again"),
        hit(news["earnings"], "Acme earnings"),
    )
    run_check(monitor)

    detail = web.get(monitor.get_absolute_url()).content.decode()
    found = detail.split('id="found-title"', 1)[1]
    assert found.index("Acme launches again") < found.index("Acme launches the Rocket")
    assert "Acme earnings" not in found

    results = web.get(f"/monitors/{monitor.pk}/results/").content.decode()
    assert results.count('class="found-result"') == 2
    everything = web.get(f"/monitors/{monitor.pk}/results/?show=all").content.decode()
    assert everything.count('class="found-result"') == 3
    assert "Not relevant" in everything


def test_another_teams_results_page_is_not_found(web, other_team):
    other = make_monitor(other_team, ["acme"])
    assert web.get(f"/monitors/{other.pk}/results/").status_code == 404


def test_a_monitor_without_search_targets_shows_no_results_section(web, team):
    monitor = Monitor.objects.create(team=team, name="P", schedule_cron="0 * * * *")
    Target.objects.create(monitor=monitor, type="scrape", urls=["https://e.com/"])
    assert (
        "Found on the web" not in web.get(monitor.get_absolute_url()).content.decode()
    )


def test_a_failed_search_is_said_once_and_never_shows_the_providers_address(
    web, team, searx, model
):
    searx.fail(500)
    check = run_check(make_monitor(team, ["acme"]))
    page = html.unescape(web.get(check.get_absolute_url()).content.decode())
    provider = searx.site.base_url

    assert check.error == (
        "The web search failed: “acme”: SearXNG answered HTTP 500 (boom)."
    )
    assert not check.pages.exists()
    assert "The page could not be checked" not in page
    assert page.count("SearXNG answered HTTP 500") == 1
    assert provider not in page and provider.split("://")[1] not in page


def test_the_monitor_list_says_a_failed_last_check_failed_not_that_it_had_no_pages(
    web, team
):
    check = run_check(make_monitor(team, ["acme"]))
    assert check.status == "failed"

    page = web.get(reverse("monitor-list")).content.decode()
    last_check = page.split('data-label="Last check">')[1].split("</td>")[0]
    assert "Check failed" in last_check and "No pages" not in last_check


def _words(body: str) -> str:
    main = body.split("<main", 1)[1].split("</main>", 1)[0]
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", main)))


def test_the_results_page_of_a_monitor_without_web_search_says_it_searches_nothing(
    web, team
):
    monitor = Monitor.objects.create(team=team, name="P", schedule_cron="0 * * * *")
    Target.objects.create(monitor=monitor, type="scrape", urls=["https://e.com/"])

    words = _words(web.get(f"/monitors/{monitor.pk}/results/").content.decode())

    assert "goal" not in words
    assert "web searches" not in words
    assert "This monitor does not search the web" in words


def test_the_results_page_of_a_search_without_a_goal_speaks_of_no_goal(
    web, team, settings
):
    settings.LLM_BASE_URL = "http://127.0.0.1:9/v1"
    settings.SEARXNG_URL = "http://searx.internal"
    unjudged = make_monitor(team, ["acme"], goal=None)
    judged = make_monitor(team, ["acme"])

    plain = _words(web.get(f"/monitors/{unjudged.pk}/results/").content.decode())
    with_goal = _words(web.get(f"/monitors/{judged.pk}/results/").content.decode())

    assert "goal" not in plain
    assert "A result is reported once, the first time it is found." in plain
    assert "No new result has been found yet." in plain
    assert "No result has matched the goal yet." in with_goal


def test_a_search_monitor_without_a_goal_does_not_wait_for_a_match_on_its_page(
    web, team, settings
):
    settings.SEARXNG_URL = "http://searx.internal"
    monitor = make_monitor(team, ["acme"], goal=None)

    words = _words(web.get(monitor.get_absolute_url()).content.decode())
    found = words.split("Found on the web", 1)[1]

    assert "matched the goal" not in found
    assert "No new web search result has been found yet." in found


def test_run_now_on_a_search_monitor_does_not_promise_to_check_pages(web, team):
    monitor = make_monitor(team, ["acme launch"])

    page = html.unescape(web.get(monitor.get_absolute_url()).content.decode())

    assert "Runs a check right away, whatever the schedule." in page
    assert "every page" not in page


def found_section(page: str) -> str:
    return page.split('id="found-title"', 1)[1].split("</section>", 1)[0]


def test_without_a_search_service_the_found_section_says_no_search_runs(web, team):
    monitor = make_monitor(team, ["acme"], goal=None)
    run_check(monitor)  # runs, but searches nothing

    page = html.unescape(web.get(monitor.get_absolute_url()).content.decode())
    results = html.unescape(
        web.get(reverse("monitor-results", args=[monitor.pk])).content.decode()
    )

    section = found_section(page)
    assert "No new web search result has been found yet." not in section
    assert "web search is not set up on this server yet" in section
    assert "An administrator turns it on." in section
    assert "No new result has been found yet." not in results
    assert "web search is not set up on this server yet" in results
    assert "For the administrator: set SEARXNG_URL" in results


def test_once_a_search_service_is_set_up_the_found_section_waits_for_results(
    web, team, settings
):
    settings.SEARXNG_URL = "http://searx.internal"
    monitor = make_monitor(team, ["acme"], goal=None)

    page = html.unescape(web.get(monitor.get_absolute_url()).content.decode())
    results = html.unescape(
        web.get(reverse("monitor-results", args=[monitor.pk])).content.decode()
    )

    assert "No new web search result has been found yet." in found_section(page)
    assert "No new result has been found yet." in results
    assert "not set up on this server" not in page + results


def test_a_result_too_long_for_the_judge_is_judged_in_part_and_says_so(
    web, team, searx, model, site, settings
):
    settings.LLM_MAX_INPUT_TOKENS = 2000
    items = "".join(f"<p>Item {n}: more news</p>" for n in range(400))
    long = site.html("/long", "Acme launches", LAUNCH + items)
    short = site.html("/short", "Acme launches too", LAUNCH)
    searx.results("acme", hit(long, "Launch"), hit(short, "Launch too"))
    check = run_check(make_monitor(team, ["acme"]))
    pages = {page.url: page for page in check.pages.all()}

    detail = web.get(pages[long].get_absolute_url()).content.decode()
    whole = web.get(pages[short].get_absolute_url()).content.decode()

    assert pages[long].is_judged and pages[short].is_judged
    assert pages[long].metadata["judgedInPart"] is True
    assert "judgedInPart" not in pages[short].metadata
    assert "too long for the AI judge to read whole" in detail
    assert "to read whole" not in whole


def test_our_copy_of_a_result_says_what_became_of_it_not_that_it_is_compared(
    web, team, searx, model, news
):
    searx.results(
        "acme", hit(news["launch"], "Acme launches"), hit(news["earnings"], "Numbers")
    )
    check = run_check(make_monitor(team, ["acme"]))
    launch = check.pages.get(url=news["launch"])
    earnings = check.pages.get(url=news["earnings"])
    assert launch.current_snapshot_id and earnings.current_snapshot_id

    new = _words(web.get(launch.get_absolute_url()).content.decode())
    ignored = _words(web.get(earnings.get_absolute_url()).content.decode())

    assert "New match" in new and "This result matters for the goal." in new
    assert "Not relevant" in ignored
    for said in (new, ignored):
        assert "The next check will compare against it" not in said
        assert "Nothing changed on this page" not in said
        assert "This change matters" not in said
        assert "reported once, the first time it is found" in said


def test_a_site_typed_in_letters_is_kept_in_ascii_and_shown_as_typed(web, team):
    # Results are matched against the ASCII name (checks.search.canonical);
    # people read the name they typed, on the monitor's page and when editing.
    data = form_data(include_domains="Bücher.example\nexample.com")
    response = web.post("/monitors/new/", data)
    assert response.status_code == 302
    target = Target.objects.get(monitor__team=team)
    assert target.include_domains == ["xn--bcher-kva.example", "example.com"]

    page = html.unescape(web.get(target.monitor.get_absolute_url()).content.decode())
    assert "only bücher.example, example.com" in page
    assert "xn--" not in page

    edit = reverse("monitor-edit", args=[target.monitor.pk])
    form = html.unescape(web.get(edit).content.decode())
    assert "bücher.example\nexample.com</textarea>" in form
    assert "xn--" not in form


@pytest.mark.parametrize(
    ("kept", "shown"),
    [
        pytest.param("xn--bcher-kva.example", "bücher.example", id="latin"),
        pytest.param("xn--hxajbpuk8cya.gr", "ασφάλεια.gr", id="greek"),
        pytest.param("xn--3e0bk47br7k.example", "한국어.example", id="korean"),
        # Japanese writes Han, katakana and Latin together, as browsers allow.
        pytest.param(
            "xn--eckwd4c7c5976acvb.example", "日本ドメイン.example", id="japanese"
        ),
        pytest.param("xn--tck2c4fb.example", "コーヒー.example", id="long-vowel-mark"),
        pytest.param(
            "xn--abc-s08fl0dtz6h.example", "日本語abc.example", id="han-latin"
        ),
        # A Cyrillic "а" among Latin letters: shown it would read "apple".
        pytest.param("xn--pple-43d.com", "xn--pple-43d.com", id="cyrillic-in-latin"),
        pytest.param("xn--paypl-7ve.com", "xn--paypl-7ve.com", id="paypal"),
        pytest.param(
            "xn--pple-43d.xn--bcher-kva.example",
            "xn--pple-43d.bücher.example",
            id="each-label-on-its-own",
        ),
        # Wholly Cyrillic, every letter one a Latin one looks like: "аррӏе"
        # reads "apple" and "сосо" "coco" under a TLD of Latin-script sites.
        pytest.param("xn--80ak6aa92e.com", "xn--80ak6aa92e.com", id="cyrillic-apple"),
        pytest.param("xn--n1aahb.example", "xn--n1aahb.example", id="cyrillic-coco"),
        pytest.param(
            "shop.xn--80ak6aa92e.com", "shop.xn--80ak6aa92e.com", id="lookalike-sub"
        ),
        # Real Cyrillic names: under a TLD of Cyrillic-script countries, or
        # with letters no Latin one looks like.
        pytest.param("xn--80ak6aa92e.xn--p1ai", "аррӏе.рф", id="under-rf"),
        pytest.param("xn--80ak6aa92e.ru", "аррӏе.ru", id="under-ru"),
        pytest.param("xn--n1aahb.xn--90ae", "сосо.бг", id="under-bg"),
        pytest.param("xn--e1afmkfd.com", "пример.com", id="cyrillic-word-under-com"),
        # Greek and Armenian alike: "οκ" reads "ok", "ցօօց" "goog".
        pytest.param("xn--vxaj.com", "xn--vxaj.com", id="greek-ok"),
        pytest.param("xn--vbbala.com", "xn--vbbala.com", id="armenian-goog"),
        pytest.param("xn--vxaj.gr", "οκ.gr", id="under-gr"),
        pytest.param("xn--vxaj.xn--qxam", "οκ.ελ", id="under-el"),
        pytest.param("xn--vbbala.am", "ցօօց.am", id="under-am"),
        pytest.param("xn--vbbala.xn--y9a3aq", "ցօօց.հայ", id="under-hay"),
        # A TLD in letters is a script's own only in that script.
        pytest.param("xn--vxaj.xn--p1ai", "xn--vxaj.рф", id="greek-under-rf"),
    ],
)
def test_a_site_name_is_shown_in_letters_only_when_each_label_keeps_to_one_script(
    kept, shown
):
    assert rules.unicode_domain(kept) == shown


def test_a_site_mixing_scripts_is_shown_in_ascii_on_the_monitor_and_its_form(web, team):
    monitor = make_monitor(
        team, ["acme"], include_domains=["xn--pple-43d.com", "xn--bcher-kva.example"]
    )

    page = html.unescape(web.get(monitor.get_absolute_url()).content.decode())
    edit = reverse("monitor-edit", args=[monitor.pk])
    form = html.unescape(web.get(edit).content.decode())

    assert "only xn--pple-43d.com, bücher.example" in page
    assert "xn--pple-43d.com\nbücher.example</textarea>" in form
    assert "\u0430pple" not in page + form  # the Cyrillic а


def test_editing_a_monitor_keeps_its_sites_in_ascii(web, team):
    monitor = make_monitor(team, ["acme"], exclude_domains=["xn--bcher-kva.example"])
    target = monitor.targets.get()
    edit = reverse("monitor-edit", args=[monitor.pk])
    form = html.unescape(web.get(edit).content.decode())
    assert "bücher.example</textarea>" in form

    # The form sent back unchanged saves the same names, not their letters.
    key = re.search(r'name="target" value="([^"]+)"', form)[1]
    data = {
        name.replace("t0000bbbb", key): value
        for name, value in form_data(exclude_domains="bücher.example").items()
    }
    data["target"] = [key]
    data[f"{key}-id"] = str(target.pk)
    response = web.post(edit, data)
    assert response.status_code == 302
    target.refresh_from_db()
    assert target.exclude_domains == ["xn--bcher-kva.example"]


def test_the_admin_shows_a_monitors_sites_as_the_dashboard_does(admin_client, team):
    """A monitor the admin shows as stored (deleted, or to staff who may
    only view it) listed its sites in their ASCII form."""
    monitor = make_monitor(
        team, ["acme"], exclude_domains=["xn--pple-43d.com", "xn--bcher-kva.example"]
    )
    monitor.soft_delete(timezone.now())

    page = html.unescape(
        admin_client.get(
            reverse("admin:monitors_monitor_change", args=[monitor.pk])
        ).content.decode()
    )

    assert '"xn--pple-43d.com",\n    "bücher.example"' in page
    assert "xn--bcher-kva" not in page
    assert "\u0430pple" not in page  # the Cyrillic а
