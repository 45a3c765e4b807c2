"""The AI layer in the dashboard and the API: verdicts beside changed pages,
"meaningful changes only" on a check and on a monitor's history, field diffs
as a before/after table, the model's status on the monitor form, the noise
rule's field, and the validation of json formats and ignoreLines."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest

from checks import runner
from checks.models import Check, PageResult
from checks.notify import messages
from monitors.models import Membership, Monitor, Target, Team
from tests.llm import PLANS, PLANS_SCHEMA, answer, data_block
from tests.sites import Site

pytest_plugins = ["tests.llm"]
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


def watch(team: Team, site: Site, **options: Any) -> tuple[Monitor, str]:
    url = site.html("/pricing", "Pricing", PLANS)
    monitor = Monitor.objects.create(
        team=team,
        name="Pricing",
        schedule_cron="*/30 * * * *",
        goal=options.pop("goal", "Tell me when a price changes"),
        judge_enabled=True,
    )
    Target.objects.create(monitor=monitor, type="scrape", urls=[url], **options)
    return monitor, url


def run(monitor: Monitor) -> Check:
    return runner.run(Check.objects.create(monitor=monitor, trigger="manual"))


def change(site: Site, extra: str = "", price: str = "$59") -> None:
    site.html("/pricing", "Pricing", PLANS.replace("$49", price) + extra)


def test_a_changed_page_shows_its_verdict_confidence_and_reason(web, team, site, model):
    monitor, _ = watch(team, site)
    run(monitor)
    change(site)
    check = run(monitor)
    page = check.pages.get()

    listing = web.get(check.get_absolute_url()).content.decode()
    detail = web.get(page.get_absolute_url()).content.decode()

    assert "Matters for the goal" in listing
    assert "A price changed." in listing
    assert "This change matters for the goal." in detail
    assert "quite sure" in detail
    assert "<del>Pro: $49</del> → <ins>Pro: $59</ins>" in detail
    # The cited text is highlighted in the comparison itself.
    assert "<mark>" in detail.split('id="diff-region"')[1]


def test_a_fail_open_judgment_is_shown_as_not_judged_never_as_a_verdict(
    web, team, site, settings
):
    settings.LLM_BASE_URL = ""
    monitor, _ = watch(team, site)
    run(monitor)
    change(site)
    page = run(monitor).pages.get()

    listing = web.get(page.check_run.get_absolute_url()).content.decode()
    detail = web.get(page.get_absolute_url()).content.decode()

    assert "Not judged" in listing
    assert "Matters for the goal" not in listing
    assert "Not judged." in detail
    assert "This change matters for the goal." not in detail


def test_a_check_whose_only_page_the_model_could_not_read_never_says_it_did_not_load(
    web, team, site, model
):
    formats = [{"type": "json", "schema": PLANS_SCHEMA}]
    monitor, _ = watch(team, site, goal=None, scrape_options={"formats": formats})
    model.then(*[answer({"plans": "cheap"})] * 3)
    check = run(monitor)

    shown = web.get(check.get_absolute_url()).content.decode()

    assert check.status == Check.Status.FAILED
    assert "The AI model could not read the fields" in shown
    # The page was fetched: what failed is said in the page's row.
    assert "could be loaded" not in shown
    assert "No page could be checked in this check" in shown


def test_a_change_too_long_for_the_judge_is_judged_in_part_and_says_so(
    web, team, site, model, settings
):
    settings.LLM_MAX_INPUT_TOKENS = 2000
    items = "".join(f"<p>Item {n}: {n} in stock</p>" for n in range(400))
    monitor, _ = watch(team, site)
    site.html("/pricing", "Pricing", items + PLANS)
    run(monitor)
    # Every line changes: one section whose old lines come before the new.
    site.html("/pricing", "Pricing", items.replace(" in stock", " left") + PLANS)
    page = run(monitor).pages.get()

    detail = web.get(page.get_absolute_url()).content.decode()

    [request] = model.bodies
    assert "+Item 0: 0 left" in data_block(request)
    assert "changed line(s) of this section not shown" in data_block(request)
    assert page.is_judged
    assert page.metadata["judgedInPart"] is True
    assert "too long for the AI judge to read whole" in detail


def test_a_page_too_long_for_extraction_is_extracted_in_part_and_says_so(
    web, team, site, model, settings
):
    settings.LLM_MAX_INPUT_TOKENS = 2000
    items = "".join(f"<p>Item {n}: {n} in stock</p>" for n in range(400))
    formats = [{"type": "json", "schema": PLANS_SCHEMA}]
    monitor, _ = watch(team, site, goal=None, scrape_options={"formats": formats})
    site.html("/pricing", "Pricing", PLANS + items)
    first = run(monitor).pages.get()
    # The same page again: its object is reused, and still read from a part.
    again = run(monitor).pages.get()

    detail = web.get(first.get_absolute_url()).content.decode()

    [request] = model.bodies
    assert "[the rest of the page was left out]" in data_block(request)
    assert first.extraction is not None
    assert first.metadata["extractedInPart"] is True
    assert again.status == PageResult.Status.SAME
    assert again.metadata["extractedInPart"] is True
    assert "too long for the AI model to read whole" in detail


def test_a_page_too_long_for_its_summary_is_summarized_in_part_and_says_so(
    web, team, site, model, settings
):
    settings.LLM_MAX_INPUT_TOKENS = 2000
    items = "".join(f"<p>Item {n}: {n} in stock</p>" for n in range(400))
    formats = ["markdown", "summary"]
    monitor, _ = watch(team, site, goal=None, scrape_options={"formats": formats})
    site.html("/pricing", "Pricing", PLANS + items)
    first = run(monitor).pages.get()
    # The same page again: its summary is reused, and still of a part.
    again = run(monitor).pages.get()

    detail = web.get(first.get_absolute_url()).content.decode()

    [request] = model.bodies
    assert "[the rest of the page was left out]" in data_block(request)
    assert first.summary
    assert first.metadata["summarizedInPart"] is True
    assert again.status == PageResult.Status.SAME
    assert again.metadata["summarizedInPart"] is True
    assert "too long for the AI model to read whole: this summary" in detail


def test_a_page_that_fits_is_not_said_to_be_summarized_in_part(web, team, site, model):
    monitor, _ = watch(
        team, site, goal=None, scrape_options={"formats": ["markdown", "summary"]}
    )
    page = run(monitor).pages.get()

    detail = web.get(page.get_absolute_url()).content.decode()

    assert page.summary
    assert "summarizedInPart" not in page.metadata
    assert "to read whole" not in detail


def test_a_page_that_fits_is_not_said_to_be_extracted_in_part(web, team, site, model):
    formats = [{"type": "json", "schema": PLANS_SCHEMA}]
    monitor, _ = watch(team, site, goal=None, scrape_options={"formats": formats})
    page = run(monitor).pages.get()

    detail = web.get(page.get_absolute_url()).content.decode()

    assert page.extraction is not None
    assert "extractedInPart" not in page.metadata
    assert "to read whole" not in detail


def test_a_judges_reason_is_shown_escaped(web, team, site, model):
    model.then(
        answer(
            {
                "meaningful": True,
                "confidence": "high",
                "reason": "<script>alert(1)</script> see https://evil.example",
                "meaningfulChanges": [],
            }
        )
    )
    monitor, _ = watch(team, site)
    run(monitor)
    change(site)
    page = run(monitor).pages.get()

    detail = web.get(page.get_absolute_url()).content.decode()

    assert "<script>alert(1)</script>" not in detail
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in detail
    assert 'href="https://evil.example' not in detail


def test_meaningful_changes_only_on_a_check_and_on_the_history(web, team, site, model):
    noisy = site.html("/noise", "Noise", "<p>Visitors: 1</p>")
    monitor, _ = watch(team, site)
    Target.objects.create(monitor=monitor, type="scrape", urls=[noisy])
    first = run(monitor)
    site.html("/noise", "Noise", "<p>Visitors: 2</p>")
    only_noise = run(monitor)
    site.html("/noise", "Noise", "<p>Visitors: 3</p>")
    change(site)
    both = run(monitor)

    pages = web.get(both.get_absolute_url() + "?status=meaningful").content.decode()
    history = web.get(monitor.get_absolute_url() + "?changes=meaningful")
    # The check list (the chart above it shows every check, by design).
    history_html = history.content.decode().split('id="check-history"', 1)[1]

    assert both.pages.filter(verdict=PageResult.Verdict.NOISE).count() == 1
    assert "/pricing" in pages and "/noise" not in pages
    assert str(both.pk) in history_html
    assert str(only_noise.pk) not in history_html
    # Its pages were new to the monitor: a change no judge looked at, which
    # channels told of meaningful changes only hear of too.
    assert first.summary["new"] == 2
    assert messages.change(first, meaningful_only=True) is not None
    assert str(first.pk) in history_html
    assert "Meaningful changes only" in history_html


def chip(page: str, label: str) -> str | None:
    match = re.search(rf'{label} <span class="chip-count">(\d+)</span>', page)
    return match[1] if match else None


def test_without_a_model_a_change_counts_as_meaningful_and_is_marked_not_judged(
    web, team, site, settings
):
    settings.LLM_BASE_URL = ""
    monitor, _ = watch(team, site)
    run(monitor)
    change(site)
    check = run(monitor)

    page = web.get(check.get_absolute_url()).content.decode()
    meaningful = web.get(check.get_absolute_url() + "?status=meaningful")
    not_judged = web.get(check.get_absolute_url() + "?status=not_judged")
    history = web.get(monitor.get_absolute_url() + "?changes=meaningful")

    assert check.pages.get(url__endswith="/pricing").verdict == "not_judged"
    assert chip(page, "Meaningful changes") == "1"
    assert chip(page, "Not judged") == "1"
    assert "1 change was not judged, and counts as meaningful" in page
    assert "/pricing" in meaningful.content.decode().split('id="pages-title"')[1]
    assert "/pricing" in not_judged.content.decode().split('id="pages-title"')[1]
    assert str(check.pk) in history.content.decode().split('id="check-history"')[1]


def test_a_judged_check_has_no_not_judged_chip(web, team, site, model):
    monitor, _ = watch(team, site)
    run(monitor)
    change(site)
    page = web.get(run(monitor).get_absolute_url()).content.decode()

    assert chip(page, "Meaningful changes") == "1"
    assert chip(page, "Not judged") is None
    assert "not judged" not in page


def test_json_mode_shows_changed_fields_as_a_before_after_table(web, team, site, model):
    formats = [{"type": "json", "schema": PLANS_SCHEMA}]
    monitor, _ = watch(team, site, scrape_options={"formats": formats})
    run(monitor)
    change(site)
    page = run(monitor).pages.get()

    detail = web.get(page.get_absolute_url()).content.decode()

    assert "Fields that changed" in detail
    row = detail.split("<code>plans[1].price</code>")[1].split("</tr>")[0]
    assert "$49" in row and "$59" in row
    assert "Matters" in row  # the judge cited this field


def test_a_judged_field_change_points_to_the_fields_not_to_a_comparison_not_shown(
    web, team, site, model
):
    formats = [{"type": "json", "schema": PLANS_SCHEMA}]
    monitor, _ = watch(team, site, scrape_options={"formats": formats})
    run(monitor)
    change(site)
    page = run(monitor).pages.get()

    detail = web.get(page.get_absolute_url()).content.decode()

    assert "Only the fields above are compared for this page" in detail
    assert 'id="diff-region"' not in detail
    assert "highlighted in the comparison below" not in detail
    assert "These changes are marked in the fields below." in detail


def test_the_monitor_form_says_whether_a_model_is_set_up(web, settings):
    settings.LLM_BASE_URL = ""
    without = web.get("/monitors/new/").content.decode()
    settings.LLM_BASE_URL, settings.LLM_MODEL = "http://127.0.0.1:1/v1", "m"
    with_model = web.get("/monitors/new/").content.decode()

    assert "No AI model is set up for this Pagewatch yet" in without
    assert "An AI model is set up for this Pagewatch." in with_model


def test_the_monitor_form_names_the_setting_that_turns_on_each_missing_service(
    web, settings
):
    settings.LLM_BASE_URL = ""
    settings.BROWSER_EXECUTABLE = "/nowhere/chromium"
    without = html.unescape(web.get("/monitors/new/").content.decode())
    search_row = html.unescape(
        web.get("/monitors/target-row/", {"add_target": "search"}).content.decode()
    )
    settings.LLM_BASE_URL, settings.LLM_MODEL = "http://127.0.0.1:1/v1", "m"
    settings.BROWSER_EXECUTABLE = ""  # Debian's Chromium, where the tests run
    settings.SEARXNG_URL = "http://127.0.0.1:1"
    with_all = html.unescape(web.get("/monitors/new/").content.decode())
    search_row_set_up = web.get("/monitors/target-row/", {"add_target": "search"})

    # What staff will not get, in plain words, and what an administrator sets.
    assert "For the administrator: set LLM_BASE_URL (and LLM_MODEL)" in without
    assert "No browser is installed on this server" in without
    assert "For the administrator: install Chromium" in without
    assert "BROWSER_EXECUTABLE" in without
    assert "Web searches are not run" in search_row
    assert "For the administrator: set SEARXNG_URL" in search_row
    assert "For the administrator" not in with_all
    assert "For the administrator" not in search_row_set_up.content.decode()


def test_lines_to_ignore_are_saved_from_the_form_and_bad_patterns_refused(
    web, team, site
):
    monitor, url = watch(team, site, goal="")
    form = {
        "name": "Pricing",
        "schedule": "*/30 * * * *",
        "timezone": "UTC",
        "judge": "auto",
        "target": "t1a2b3c4",
        "t1a2b3c4-type": "scrape",
        "t1a2b3c4-urls": url,
        "t1a2b3c4-only_main_content": "on",
        "ignore_lines": "Last updated\n/(unclosed/",
    }

    refused = web.post(f"/monitors/{monitor.pk}/edit/", form)
    form["ignore_lines"] = "Last updated\n/^\\d+ views$/"
    saved = web.post(f"/monitors/{monitor.pk}/edit/", form)

    assert refused.status_code == 400
    assert (
        "“/(unclosed/”: This pattern is not valid: “(unclosed” opens a “(” that "
        "is never closed." in refused.content.decode()
    )
    assert saved.status_code == 302
    monitor.refresh_from_db()
    assert monitor.ignore_lines == ["Last updated", "/^\\d+ views$/"]


def test_a_schema_the_api_now_refuses_is_refused_when_the_form_saves_it_again(
    web, team, site
):
    # Saved through the API before unevaluatedProperties with
    # patternProperties was refused: the form sends it through the same rules.
    schema = {
        "patternProperties": {"^x": {"type": "string"}},
        "unevaluatedProperties": False,
    }
    formats = [{"type": "json", "schema": schema}]
    monitor, url = watch(team, site, goal="", scrape_options={"formats": formats})
    target = monitor.targets.get()
    form = {
        "name": "Pricing",
        "schedule": "*/30 * * * *",
        "timezone": "UTC",
        "judge": "auto",
        "target": "t1a2b3c4",
        "t1a2b3c4-id": str(target.id),
        "t1a2b3c4-type": "scrape",
        "t1a2b3c4-urls": url,
        "t1a2b3c4-only_main_content": "on",
    }

    refused = web.post(f"/monitors/{monitor.pk}/edit/", form)

    assert refused.status_code == 400
    page = html.unescape(refused.content.decode())
    assert "unevaluatedProperties cannot be used in a schema with" in page
    assert "use additionalProperties instead" in page
    target.refresh_from_db()
    assert target.scrape_options == {"formats": formats}


# --- the API's rules ---------------------------------------------------------------


def body(**target_options: Any) -> dict[str, Any]:
    return {
        "name": "Pricing",
        "schedule": {"cron": "*/30 * * * *"},
        "targets": [
            {"type": "scrape", "urls": ["https://example.com/"], **target_options}
        ],
    }


@pytest.mark.parametrize(
    ("fmt", "message"),
    [
        ({"type": "json"}, "A json format needs a schema or a prompt."),
        ({"type": "changeTracking", "modes": ["json"]}, "requires a schema"),
        ({"type": "json", "schema": {"type": 12}}, "not a valid JSON Schema"),
        ({"type": "json", "schema": "plans"}, "must be a JSON Schema object"),
        ({"type": "json", "prompt": 7}, "prompt must be a string"),
        # A reference to a definition that is not there: no answer could ever
        # fit, so every check would fail on it.
        (
            {"type": "json", "schema": {"properties": {"a": {"$ref": "#/$defs/a"}}}},
            "schema.$ref '#/$defs/a' points to nothing inside the schema",
        ),
        (
            {
                "type": "changeTracking",
                "modes": ["json"],
                "schema": {"items": {"$id": "https://example.com/p", "$ref": "#/x"}},
            },
            "schema.$ref '#/x' points to nothing inside the schema",
        ),
        # References that lead back to where they started without reading
        # any of the answer: checking any answer against them never ends.
        (
            {"type": "json", "schema": {"type": "object", "$ref": "#"}},
            "schema.$ref '#' leads back to itself",
        ),
        (
            {
                "type": "json",
                "schema": {
                    "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
                    "properties": {"x": {"$ref": "#/$defs/a"}},
                },
            },
            "leads back to itself",
        ),
        (
            {
                "type": "json",
                "schema": {
                    "properties": {"a": {"$id": "https://x.test/a", "$ref": "#"}}
                },
            },
            "schema.$ref '#' leads back to itself",
        ),
        (
            {
                "type": "json",
                "schema": {
                    "$defs": {
                        "a": {"anyOf": [{"type": "null"}, {"$ref": "#/$defs/a"}]}
                    },
                    "properties": {"x": {"$ref": "#/$defs/a"}},
                },
            },
            "leads back to itself",
        ),
        (
            {
                "type": "json",
                "schema": {
                    "$defs": {f"a{i}": {"$ref": f"#/$defs/a{i + 1}"} for i in range(60)}
                    | {"a60": {"type": "string"}},
                    "properties": {"x": {"$ref": "#/$defs/a0"}},
                },
            },
            "schema's references lead from one to the next more than 50 times",
        ),
        # Answers are checked with RE2, which has no look-arounds.
        (
            {
                "type": "json",
                "schema": {
                    "properties": {"a": {"type": "string", "pattern": "(?<=a)b"}}
                },
            },
            "schema.properties.a.pattern: Not a pattern we can use",
        ),
        (
            {
                "type": "changeTracking",
                "modes": ["json"],
                "schema": {"patternProperties": {"^(?!x)": {"type": "string"}}},
            },
            "schema.patternProperties: Not a pattern we can use",
        ),
        (
            {
                "type": "json",
                "schema": {
                    "patternProperties": {
                        "^x": {"properties": {"a": {"pattern": "(a)\\1"}}}
                    }
                },
            },
            "schema.patternProperties.^x.properties.a.pattern: Not a pattern",
        ),
        # jsonschema would find the keys patternProperties took for
        # unevaluatedProperties with Python's backtracking re.
        (
            {
                "type": "json",
                "schema": {
                    "patternProperties": {"^x": {"type": "string"}},
                    "unevaluatedProperties": False,
                },
            },
            "schema.unevaluatedProperties cannot be used in a schema with "
            "patternProperties",
        ),
        (
            {
                "type": "json",
                "schema": {
                    "$defs": {"keys": {"patternProperties": {"^x": {}}}},
                    "properties": {
                        "a": {
                            "allOf": [{"$ref": "#/$defs/keys"}],
                            "unevaluatedProperties": {"type": "number"},
                        }
                    },
                },
            },
            "schema.properties.a.unevaluatedProperties cannot be used",
        ),
    ],
)
def test_json_formats_are_validated_with_a_clear_message(api, fmt, message):
    response = api.post(
        "/v2/monitor", body(scrapeOptions={"formats": [fmt]}), format="json"
    )
    assert response.status_code == 400
    assert message in response.json()["error"]


@pytest.mark.parametrize(
    "schema",
    [
        pytest.param({"$id": "http://[::1"}, id="id-no-address"),
        pytest.param(
            {"properties": {"a": {"$id": "http://[::1", "type": "string"}}},
            id="nested-id-no-address",
        ),
    ],
)
def test_a_schema_whose_id_cannot_be_read_is_refused_saying_so(api, schema):
    # jsonschema's check_schema passes each of them; reading their $id as an
    # address to resolve references against does not.
    response = json_format_saved(api, schema)

    assert response.status_code == 400
    assert "the schema's $id/$schema cannot be read" in response.json()["error"]
    assert not Monitor.objects.exists()


@pytest.mark.parametrize(
    ("schema", "words"),
    [
        pytest.param({"id": 5}, "5 is not of type 'string'", id="id-a-number"),
        pytest.param(
            {"properties": {"a": {"id": ["x"]}}},
            "['x'] is not of type 'string'",
            id="nested-id-a-list",
        ),
    ],
)
def test_a_draft_4_schema_whose_id_is_no_address_is_refused_by_draft_4s_rules(
    api, schema, words
):
    draft_4 = {"$schema": "http://json-schema.org/draft-04/schema#"} | schema

    response = json_format_saved(api, draft_4)

    assert response.status_code == 400
    assert f"schema is not a valid JSON Schema: {words}" in response.json()["error"]
    assert not Monitor.objects.exists()


DRAFT_07 = "http://json-schema.org/draft-07/schema#"


def test_a_draft_07_schema_listing_the_items_of_each_place_is_saved(api):
    # Draft-07's `items: [...]` (2020-12 calls it prefixItems) was refused as
    # "not a valid JSON Schema" by the 2020-12 rules.
    schema = {
        "$schema": DRAFT_07,
        "type": "object",
        "properties": {
            "range": {
                "type": "array",
                "items": [{"type": "string"}, {"type": "number"}],
                "additionalItems": False,
            }
        },
    }

    response = json_format_saved(api, schema)

    assert response.status_code == 200, response.content
    [target] = Monitor.objects.get().targets.all()
    assert target.scrape_options["formats"][0]["schema"] == schema


def test_a_draft_04_schema_is_checked_by_draft_04s_rules_when_saved(api):
    # A number for exclusiveMinimum is 2020-12's; draft-04's is true or false.
    schema = {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "type": "number",
        "exclusiveMinimum": 5,
    }

    response = json_format_saved(api, schema)

    assert response.status_code == 400
    assert (
        "schema is not a valid JSON Schema: 5 is not of type 'boolean'"
        in (response.json()["error"])
    )
    assert not Monitor.objects.exists()


@pytest.mark.parametrize(
    "dialect",
    [
        "https://json-schema.org/draft/2030-01/schema",
        "http://json-schema.org/draft-07/schema-typo",
    ],
)
def test_a_schema_naming_a_draft_we_do_not_know_is_refused_naming_it(api, dialect):
    response = json_format_saved(api, {"$schema": dialect, "type": "object"})

    assert response.status_code == 400
    error = response.json()["error"]
    assert f"schema.$schema {dialect!r} is not a JSON Schema draft we know" in error
    assert not Monitor.objects.exists()


@pytest.mark.parametrize("dialect", [5, ["x"], {"a": 1}, None])
def test_a_schema_whose_dialect_is_no_text_is_a_clear_400(api, dialect):
    response = json_format_saved(api, {"$schema": dialect, "type": "object"})

    assert response.status_code == 400
    assert "schema is not a valid JSON Schema" in response.json()["error"]
    assert not Monitor.objects.exists()


def test_a_reference_stepping_into_a_list_by_a_word_points_to_nothing(api):
    schema = {"prefixItems": [{"type": "string"}], "$ref": "#/prefixItems/first"}

    response = json_format_saved(api, schema)

    assert response.status_code == 400
    assert (
        "schema.$ref '#/prefixItems/first' points to nothing inside the schema"
        in response.json()["error"]
    )
    assert not Monitor.objects.exists()


def test_a_schema_that_refers_to_itself_one_level_down_is_accepted(api):
    tree = {
        "$defs": {
            "node": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/node"}},
                },
            }
        },
        "$ref": "#/$defs/node",
    }
    response = api.post(
        "/v2/monitor",
        body(scrapeOptions={"formats": [{"type": "json", "schema": tree}]}),
        format="json",
    )
    assert response.status_code == 200, response.content


def json_format_saved(api, schema: dict[str, Any]) -> Any:
    return api.post(
        "/v2/monitor",
        body(scrapeOptions={"formats": [{"type": "json", "schema": schema}]}),
        format="json",
    )


@pytest.mark.parametrize("name", ["unevaluatedProperties", "$ref", "pattern"])
def test_a_field_named_like_a_keyword_in_a_schema_with_patterns_is_accepted(api, name):
    # Under `properties` a key is a field of the answer, not a keyword.
    schema = {
        "type": "object",
        "properties": {name: {"type": "string"}, "price": {"type": "number"}},
        "patternProperties": {"^x-": {"type": "string"}},
        "$defs": {name: {"type": "string"}},
    }
    response = json_format_saved(api, schema)
    assert response.status_code == 200, response.content
    target = Target.objects.get(monitor_id=response.json()["data"]["id"])
    assert target.scrape_options["formats"][0]["schema"] == schema


def test_a_field_named_pattern_properties_is_not_read_as_patterns(api):
    # Its schema's own keys ("x-unit(s" an annotation) are no patterns.
    field = {"type": "object", "x-unit(s": "EUR"}
    schema = {"type": "object", "properties": {"patternProperties": field}}
    response = json_format_saved(api, schema)
    assert response.status_code == 200, response.content


def test_a_pattern_a_reference_makes_part_of_the_schema_is_still_checked(api):
    schema = {"enum": [{"pattern": "(a)\\1"}], "not": {"$ref": "#/enum/0"}}
    response = json_format_saved(api, schema)
    assert response.status_code == 400
    assert "schema.enum[0].pattern: Not a pattern" in response.json()["error"]


def test_a_fields_map_a_reference_makes_a_schema_is_still_read_as_one(api):
    # "#/properties" makes the map of fields a schema of its own, its field
    # named unevaluatedProperties then the keyword.
    schema = {
        "type": "object",
        "properties": {"unevaluatedProperties": False},
        "patternProperties": {"^x-": {"type": "string"}},
        "additionalProperties": {"$ref": "#/properties"},
    }
    response = json_format_saved(api, schema)
    assert response.status_code == 400
    assert (
        "schema.properties.unevaluatedProperties cannot be used"
        in response.json()["error"]
    )


def test_ignore_lines_round_trip_through_the_api_and_bad_ones_are_named(api):
    good = dict(body(), ignoreLines=[" Last updated ", "/\\d+ views/", ""])
    created = api.post("/v2/monitor", good, format="json").json()["data"]
    bad = dict(body(), ignoreLines=["ok", "/(?=x)/"])
    refused = api.post("/v2/monitor", bad, format="json").json()

    assert created["ignoreLines"] == ["Last updated", "/\\d+ views/"]
    assert refused["details"][0]["path"] == ["ignoreLines", 1]
    assert "Not a pattern we can use" in refused["error"]


def test_without_a_model_the_summary_format_is_said_to_be_off_and_what_turns_it_on(
    api, web, settings
):
    settings.LLM_BASE_URL = ""
    created = api.post(
        "/v2/monitor", body(scrapeOptions={"formats": ["summary"]}), format="json"
    ).json()["data"]
    monitor = Monitor.objects.get(pk=created["id"])

    page = web.get(monitor.get_absolute_url()).content.decode()

    assert "The summary format needs an AI model" in created["warning"]
    assert "LLM_BASE_URL" in created["warning"]
    assert re.findall(r'data-unavailable="(\w+)"', page) == ["summary"]
    assert "Pages are not summarised yet." in page
