"""A monitor's change rules (`changeRules`, a Pagewatch extension) through
the /v2/monitor API: saved, answered, replaced, removed, refused with clear
400s, and described in the OpenAPI document."""

from __future__ import annotations

import pytest

from monitors.models import Monitor
from tests.test_api_monitors import URL, body, create, update

pytestmark = pytest.mark.django_db

RULES = {
    "lines": "added",
    "containing": [" Sale ", "/\\d+% off/", "sale"],
    "disappears": "Out of stock",
}


def test_change_rules_are_saved_cleaned_and_answered_by_get(api, team):
    created = create(api, changeRules=RULES)

    fetched = api.get(f"{URL}/{created['id']}").json()["data"]

    cleaned = {
        "lines": "added",
        "containing": ["Sale", "/\\d+% off/", "sale"],
        "appears": None,
        "disappears": "Out of stock",
    }
    assert created["changeRules"] == fetched["changeRules"] == cleaned
    assert Monitor.objects.get(pk=created["id"]).change_rules == cleaned


def test_a_monitor_without_rules_answers_null_and_rules_setting_nothing_are_none(
    api, team
):
    plain = create(api)
    nothing = create(api, changeRules={"lines": "any", "containing": [" "]})

    assert plain["changeRules"] is None and nothing["changeRules"] is None
    assert Monitor.objects.get(pk=nothing["id"]).change_rules is None


def test_patch_replaces_the_rules_whole_keeps_them_when_left_out_and_null_removes(
    api, team
):
    created = create(api, changeRules=RULES)

    renamed = update(api, created["id"], {"name": "Renamed"})
    replaced = update(api, created["id"], {"changeRules": {"appears": "In stock"}})
    removed = update(api, created["id"], {"changeRules": None})

    assert renamed["changeRules"]["disappears"] == "Out of stock"
    assert replaced["changeRules"] == {
        "lines": "any",
        "containing": [],
        "appears": "In stock",
        "disappears": None,
    }
    assert removed["changeRules"] is None
    assert Monitor.objects.get(pk=created["id"]).change_rules is None


@pytest.mark.parametrize(
    ("rules", "path", "words"),
    [
        ({"lines": "changed"}, ["changeRules", "lines"], '"changed" is not a valid'),
        (
            {"containing": ["ok", "/[unclosed/"]},
            ["changeRules", "containing", 1],
            "Not a pattern we can use",
        ),
        ({"appears": "x" * 301}, ["changeRules", "appears"], "no more than 300"),
        ({"containing": ["w"] * 21}, ["changeRules", "containing"], "more than 20"),
        (
            {"containing": [f"/[\\p{{L}}\\p{{N}}]{{1,{250 - n}}}/" for n in range(20)]},
            ["changeRules", "containing"],
            "too large to use together",
        ),
        ({"disappear": "Out of stock"}, ["changeRules", "disappear"], ""),
        ("added", ["changeRules"], ""),
    ],
)
def test_broken_rules_are_a_400_naming_where_and_nothing_is_saved(
    api, team, rules, path, words
):
    response = api.post(URL, body(changeRules=rules), format="json")

    assert response.status_code == 400, response.content
    detail = response.json()["details"][0]
    assert detail["path"] == path
    assert words in response.json()["error"]
    assert not Monitor.objects.filter(team=team).exists()


def test_a_broken_rule_in_a_patch_leaves_the_stored_ones(api, team):
    created = create(api, changeRules=RULES)

    response = api.patch(
        f"{URL}/{created['id']}",
        {"changeRules": {"appears": "/(?<=look)behind/"}},
        format="json",
    )

    assert response.status_code == 400
    assert response.json()["details"][0]["path"] == ["changeRules", "appears"]
    assert Monitor.objects.get(pk=created["id"]).change_rules["lines"] == "added"


def test_the_openapi_document_describes_change_rules(api):
    schema = api.get("/v2/openapi.json").json()
    components = schema["components"]["schemas"]

    rules = components["ChangeRules"]
    assert set(rules["properties"]) == {"lines", "containing", "appears", "disappears"}
    lines = rules["properties"]["lines"]["allOf"][0]["$ref"]
    assert lines == "#/components/schemas/ChangeRulesLinesEnum"
    assert components["ChangeRulesLinesEnum"]["enum"] == ["any", "added", "removed"]
    for shape in ("MonitorWriteRequest", "PatchedMonitorUpdateRequest", "Monitor"):
        assert "changeRules" in components[shape]["properties"]
