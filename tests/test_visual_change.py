"""What looks different between two screenshots: only the places that
changed are boxed, even when a change pushes the rest of the page down, and
how much changed is said in words. Screenshots are drawn here with Pillow
(tests/browser/test_visual_browser.py takes real ones)."""

from __future__ import annotations

import io

from PIL import Image, ImageDraw, ImageFont

from checks.content.visual import MAX_BOXES, Box, VisualChange, visual_change
from monitors.templatetags.pagewatch import visual_words

WIDTH = 1280
HEADLINE = ImageFont.load_default(size=32)
TEXT = ImageFont.load_default(size=16)


def page(
    headline: list[str],
    *,
    price: str = "$19",
    paragraphs: int = 40,
    skip: int | None = None,
) -> bytes:
    """A page as a browser draws it: a headline of some lines, paragraphs of
    text under it, a coloured banner at the end; `skip` leaves one out."""
    image = Image.new("RGB", (WIDTH, 1800), "white")
    draw = ImageDraw.Draw(image)
    y = 40
    for line in headline:
        draw.text((40, y), line, fill="black", font=HEADLINE)
        y += 44
    y += 24
    for number in range(paragraphs):
        if number == skip:
            continue
        words = f"Line {number}: plans for every team, billed monthly or yearly."
        if number == 20:
            words += f" Pro costs {price} a month."
        draw.text((40, y), words, fill=(40, 40, 40), font=TEXT)
        y += 26
    draw.rectangle((40, y + 30, 600, y + 130), fill=(255, 204, 0))
    return png(image)


def png(image: Image.Image) -> bytes:
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def test_a_headline_that_grows_one_line_is_the_only_place_marked():
    before = page(["Our prices for 2026"])
    after = page(["Our prices for 2026, now with a plan for", "every team"])

    change = visual_change(before, after)

    assert len(change.boxes) == 1
    (box,) = change.boxes
    # The two headline lines (y 40 to about 120), not the text pushed below.
    assert 30 <= box.y <= 46 and box.y + box.h <= 135
    assert box.x <= 40 and box.w < WIDTH / 2
    assert change.changed_fraction < 0.03
    assert (change.width, change.height) == (WIDTH, 1800)


def test_words_added_to_a_headline_that_wrap_to_a_new_line_are_one_place():
    before = page(["Plans for small teams"])
    after = page(["Plans for small teams and", "schools"])

    change = visual_change(before, after)

    (box,) = change.boxes
    assert box.y < 50 and box.y + box.h <= 135


def test_an_unchanged_pair_has_no_places_and_nothing_changed():
    shot = page(["Our prices for 2026"])

    change = visual_change(shot, shot)

    assert change.boxes == ()
    assert change.changed_fraction == 0


def test_a_changed_square_gets_one_box_around_it():
    blank = Image.new("RGB", (WIDTH, 900), "white")
    marked = blank.copy()
    ImageDraw.Draw(marked).rectangle((700, 300, 899, 449), fill=(20, 90, 200))

    change = visual_change(png(blank), png(marked))

    (box,) = change.boxes
    # Compared at a third of the width, so edges are found to within 4 pixels.
    assert abs(box.x - 700) <= 10 and abs(box.x + box.w - 900) <= 10
    assert abs(box.y - 300) <= 8 and abs(box.y + box.h - 450) <= 8
    assert change.changed_fraction > 200 * 150 / (WIDTH * 900)
    assert change.changed_fraction < 230 * 180 / (WIDTH * 900)


def test_a_changed_price_under_a_longer_headline_is_a_second_place():
    before = page(["Our prices for 2026"])
    after = page(
        ["Our prices for 2026, now with a plan for", "every team"], price="$24"
    )

    change = visual_change(before, after)

    headline, price = change.boxes
    assert headline.y < 50
    # Line 20 sits under two headline lines now: 40 + 88 + 24 + 20 * 26.
    assert 660 <= price.y <= 675 and price.h < 40
    assert price.x > 400  # the price at the end of the line, not the line


def test_a_removed_line_is_marked_where_it_was_and_the_rest_is_not():
    before = page(["Our prices for 2026"])
    after = page(["Our prices for 2026"], skip=10)

    change = visual_change(before, after)

    (box,) = change.boxes
    # Line 10 started at 40 + 44 + 24 + 10 * 26 = 368; the lines after it
    # moved up into its place and are not marked.
    assert 355 <= box.y <= 372 and box.h <= 20


def test_changes_all_over_the_page_are_merged_into_a_few_places():
    blank = Image.new("RGB", (WIDTH, 3000), "white")
    spotted = blank.copy()
    draw = ImageDraw.Draw(spotted)
    for row in range(20):
        for column in range(4):
            x, y = 100 + column * 300, 100 + row * 140
            draw.rectangle((x, y, x + 20, y + 20), fill="black")

    change = visual_change(png(blank), png(spotted))

    assert 1 <= len(change.boxes) <= MAX_BOXES


def test_a_change_on_a_finely_striped_page_is_found_where_it_is():
    striped = Image.new("RGB", (WIDTH, 3000), "white")
    draw = ImageDraw.Draw(striped)
    for y in range(0, 3000, 2):
        draw.line((0, y, WIDTH - 1, y), fill="black")
    changed = striped.copy()
    ImageDraw.Draw(changed).rectangle((100, 1500, 400, 1600), fill="red")

    change = visual_change(png(striped), png(changed))

    (box,) = change.boxes
    assert abs(box.y - 1500) <= 8 and abs(box.y + box.h - 1601) <= 8
    assert abs(box.x - 100) <= 10 and abs(box.x + box.w - 401) <= 10


def test_a_comparison_is_kept_as_json_and_read_back():
    change = VisualChange(800, 600, (Box(1, 2, 3, 4), Box(5, 6, 7, 8)), 0.0412)

    assert VisualChange.from_json(change.as_json()) == change


def test_how_much_looks_different_is_said_in_words():
    two = VisualChange(1000, 1000, (Box(0, 0, 100, 200), Box(0, 400, 100, 200)), 0.04)
    one = VisualChange(1000, 1000, (Box(0, 0, 10, 20),), 0.0002)
    none = VisualChange(1000, 1000, (), 0.0)

    assert visual_words(two) == "About 4 % of the page looks different, in 2 places."
    assert visual_words(one) == (
        "Less than 1 % of the page looks different, in 1 place."
    )
    assert visual_words(none).startswith("Nothing looks different")
