"""The pure parts of the AI layer and of change detection it relies on: schema
tightening, field-by-field comparison, the noise rule, the judge's prompt,
trimming and answer cleaning. No network, no database."""

from __future__ import annotations

import pytest

from checks.ai import formats
from checks.ai.data import DataBlock, plain_text
from checks.ai.judge import change_text, clean, messages, not_judged, trim_diff
from checks.content import field_diff, strip_noise
from monitors.rules import ignore_line_error as entry_error

# --- formats --------------------------------------------------------------------------


def test_tightening_requires_every_property_and_refuses_others_at_every_level():
    schema = {
        "type": "object",
        "properties": {
            "plans": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"name": {"type": "string"}, "price": {}},
                },
            }
        },
    }

    tight = formats.tighten(schema)

    assert tight["required"] == ["plans"]
    assert tight["additionalProperties"] is False
    item = tight["properties"]["plans"]["items"]
    assert item["required"] == ["name", "price"]
    assert item["additionalProperties"] is False
    assert schema["properties"]["plans"]["items"].get("required") is None  # a copy


def test_a_top_level_array_is_wrapped_in_an_object():
    tight = formats.tighten({"type": "array", "items": {"type": "string"}})
    assert tight["type"] == "object"
    assert tight["required"] == ["items"]
    assert tight["properties"]["items"]["type"] == "array"


@pytest.mark.parametrize(
    ("formats_option", "mode"),
    [
        ([{"type": "json", "schema": {"type": "object"}}], "json"),
        ([{"type": "changeTracking", "modes": ["json"], "schema": {}}], "json"),
        (
            [{"type": "changeTracking", "modes": ["json", "git-diff"], "schema": {}}],
            "mixed",
        ),
        ([{"type": "changeTracking", "modes": ["git-diff"]}], None),
        (["markdown"], None),
    ],
)
def test_which_mode_a_target_asks_for(formats_option, mode):
    wanted = formats.wants({"formats": formats_option})
    found = None
    if wanted.extraction is not None:
        found = "mixed" if wanted.markdown_too else "json"
    assert found == mode


def test_an_extraction_is_keyed_by_its_schema_and_prompt():
    one = formats.wants({"formats": [{"type": "json", "schema": {}, "prompt": "a"}]})
    two = formats.wants({"formats": [{"type": "json", "schema": {}, "prompt": "b"}]})
    assert one.extraction and two.extraction
    assert one.extraction.key != two.extraction.key


def test_summary_is_wanted_as_a_string_or_an_object():
    assert formats.wants({"formats": ["summary"]}).summary
    assert formats.wants({"formats": [{"type": "summary"}]}).summary


# --- field diffs ----------------------------------------------------------------------


PLANS = {
    "plans": [{"name": "Starter", "price": "$19"}, {"name": "Pro", "price": "$49"}]
}


def test_a_price_change_is_one_leaf_path_with_both_values():
    after = {
        "plans": [{"price": "$19", "name": "Starter"}, {"name": "Pro", "price": "$59"}]
    }
    assert field_diff(PLANS, after) == {
        "plans[1].price": {"previous": "$49", "current": "$59"}
    }


def test_strings_differing_only_in_spacing_composition_or_invisibles_are_equal():
    before = {"title": "Café  Pricing ", "note": "a\u200bb"}
    after = {"title": "Cafe\u0301 Pricing", "note": "ab"}
    assert field_diff(before, after) == {}


def test_added_removed_and_retyped_values_are_reported_whole():
    before = {"a": {"b": 1}, "gone": True, "list": [1]}
    after = {"a": "flat", "new": 0, "list": [1, 2]}
    assert field_diff(before, after) == {
        "a": {"previous": {"b": 1}, "current": "flat"},
        "gone": {"previous": True, "current": None},
        "list[1]": {"previous": None, "current": 2},
        "new": {"previous": None, "current": 0},
    }


def test_true_is_not_one():
    assert field_diff({"x": True}, {"x": 1}) == {"x": {"previous": True, "current": 1}}


# --- the noise rule -------------------------------------------------------------------


def test_noise_lines_are_dropped_by_text_or_regex():
    text = "Plans\nLast updated: 12:01\n1,234 views\nPro $49"
    kept = strip_noise(text, ["last UPDATED", r"/^[\d,]+ views$/"])
    assert kept == "Plans\nPro $49"


def test_noise_entries_are_validated():
    assert entry_error("/(unclosed/").startswith("Not a pattern we can use")
    assert entry_error("/(?=lookahead)/") is not None  # RE2 has no lookaround
    assert entry_error("   ") == "Empty entries are not allowed."
    assert entry_error("x" * 301) is not None
    assert entry_error("Updated") is None


# --- the judge's input and output -----------------------------------------------------


def test_the_goal_is_outside_the_data_block_and_the_change_inside():
    system, user = messages("Prices", "", "-Pro $49\n+Pro $59")
    block = DataBlock(user.split("<<<PAGE-DATA ")[1].split(">>>")[0])
    assert "Prices" in system and block.open not in system.split("between")[0]
    inside = user.split(block.open)[1].split(block.close)[0]
    assert "+Pro $59" in inside
    assert "Prices" not in user


def test_a_data_block_never_uses_a_nonce_found_in_the_text():
    block = DataBlock.around("anything")
    assert block.nonce not in "anything"
    assert len(block.nonce) == 24


def test_a_large_diff_keeps_changed_lines_hunk_by_hunk_within_the_budget():
    hunks = []
    for n in range(50):
        context = "\n".join(f" context line {i}" for i in range(20))
        hunks.append(f"@@ -{n},3 +{n},3 @@\n{context}\n-old price {n}\n+new price {n}")
    diff = "--- previous\n+++ current\n" + "\n".join(hunks)

    trimmed = trim_diff(diff, 800)

    assert len(trimmed) <= 800
    assert "context line" not in trimmed
    assert "-old price 0\n+new price 0" in trimmed
    assert "more changed section(s) not shown" in trimmed


def test_one_section_too_long_to_fit_shows_lines_it_removed_and_added_and_says_so():
    # A re-rendered list: one section, every old line first, then every new one.
    removed = "\n".join(f"-Item {i}: $ {i}" for i in range(500))
    added = "\n".join(f"+Item {i}: $ {i + 1}" for i in range(500))
    diff = f"--- previous\n+++ current\n@@ -1,500 +1,500 @@\n{removed}\n{added}"

    trimmed = trim_diff(diff, 2000)

    assert len(trimmed) <= 2000
    assert "-Item 0: $ 0" in trimmed
    assert "+Item 0: $ 1" in trimmed  # the judge sees what the page says now
    assert trimmed.endswith("changed line(s) of this section not shown]")


def test_a_long_section_after_a_short_one_is_shown_in_part_not_dropped():
    short = "@@ -1,1 +1,1 @@\n-Updated 10:01\n+Updated 10:02"
    removed = "\n".join(f"-Plan {i}: $ {i}" for i in range(300))
    added = "\n".join(f"+Plan {i}: $ {i + 1}" for i in range(300))
    long = f"@@ -9,300 +9,300 @@\n{removed}\n{added}"
    diff = f"--- previous\n+++ current\n{short}\n{long}"

    trimmed = trim_diff(diff, 2000)

    assert len(trimmed) <= 2000
    assert "+Updated 10:02" in trimmed
    assert "-Plan 0: $ 0" in trimmed and "+Plan 0: $ 1" in trimmed
    assert "changed line(s) of this section not shown]" in trimmed


def test_a_single_line_longer_than_the_budget_is_cut_on_both_sides():
    diff = "@@ -1,1 +1,1 @@\n-" + "a" * 5000 + "\n+" + "b" * 5000

    trimmed = trim_diff(diff, 1000)

    assert len(trimmed) <= 1000
    assert "-aaaa" in trimmed and "+bbbb" in trimmed


def test_field_changes_too_many_to_fit_say_that_more_were_not_shown():
    fields = {
        f"plans[{n}].price": {"previous": f"${n}", "current": f"${n + 1}"}
        for n in range(500)
    }

    shown, partial = change_text(None, fields, 1000)

    assert partial is True
    assert len(shown) <= 1100
    assert "+ plans[0].price: $1" in shown
    assert shown.endswith("[more changed fields not shown]")
    assert change_text(None, {"a": {"previous": 1, "current": 2}}, 1000)[1] is False


def test_a_made_up_quote_is_dropped_and_real_ones_kept():
    change = "-Pro $49/mo\n+Pro $59/mo"
    answer = {
        "meaningful": True,
        "confidence": "high",
        "reason": "Price rose.\x07",
        "meaningfulChanges": [
            {
                "type": "changed",
                "before": "Pro $49/mo",
                "after": "Pro $59/mo",
                "reason": "x",
            },
            {
                "type": "changed",
                "before": "Pro $49/mo",
                "after": "Pro $99/mo",
                "reason": "y",
            },
            {"type": "added", "before": None, "after": "Enterprise", "reason": "z"},
        ],
    }

    cleaned = clean(answer, change)

    assert cleaned["meaningfulChanges"] == [
        {
            "type": "changed",
            "before": "Pro $49/mo",
            "after": "Pro $59/mo",
            "reason": "x",
        }
    ]
    assert cleaned["reason"] == "Price rose."


def test_not_meaningful_answers_carry_no_changes():
    answer = {
        "meaningful": False,
        "confidence": "medium",
        "reason": "noise",
        "meaningfulChanges": [
            {"type": "added", "before": None, "after": "x", "reason": "r"}
        ],
    }
    assert clean(answer, "+x")["meaningfulChanges"] == []


def test_failing_open_alerts_with_low_confidence_and_says_why():
    verdict = not_judged("the model timed out.")
    assert verdict.judged is False
    assert verdict.judgment == {
        "meaningful": True,
        "confidence": "low",
        "reason": "Not judged: the model timed out.",
        "meaningfulChanges": [],
    }


def test_plain_text_drops_control_characters_and_bounds_length():
    assert plain_text("a\x00b\nc\x1b[31m", 100) == "ab\nc[31m"
    assert plain_text("x" * 50, 10) == "x" * 9 + "…"


def test_cited_lines_are_marked_and_page_text_stays_escaped():
    from checks.content import mark_quotes, render_side_by_side

    before = "Plans\nPro: $49 <script>x</script>"
    after = "Plans\nPro: $59 <script>x</script>"
    html = render_side_by_side(before, after)

    marked = mark_quotes(html, ["Pro: $59 <script>x</script>", "not on the page"])

    assert marked.count("<mark>") == 1
    assert "<script>" not in marked
    assert "&lt;script&gt;" in marked
    assert mark_quotes(html, []) == html
