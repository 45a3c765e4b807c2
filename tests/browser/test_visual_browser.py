"""The visual comparison in a real Chromium at 1280 and 390 px: real
screenshots of a page whose headline grew by one line, shown at full width
with the changed place outlined, a slider between before and after that the
keyboard moves, and how much changed said in words."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from checks.models import PageResult
from monitors.models import Target
from tests.browser.people import sign_in
from tests.browser.test_accessibility_browser import _require_axe
from tests.browser.test_dashboard_browser import (
    assert_clean,
    make_monitor,
    private_targets_allowed,  # noqa: F401 -- the pages are served on 127.0.0.1
    run_check,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

VIEWPORTS = {
    "1280": {"width": 1280, "height": 900},
    "390": {"width": 390, "height": 844},
}

STYLE = (
    "<style>body{font:18px/1.5 sans-serif;margin:2rem}h1{max-width:26ch;"
    "font-size:2.4rem;line-height:1.2;margin:0 0 1.5rem}"
    ".banner{background:#fc0;padding:1.5rem;margin-top:1.5rem}</style>"
)
TEXT = "".join(
    f"<p>Paragraph {n}: every plan includes e-mail support and a monthly report.</p>"
    for n in range(1, 9)
)


# Where the figure's clip starts, as a share of its width (Chromium reports
# the inset as given, in % here).
SHOWN_FROM = """f => {
  const clip = getComputedStyle(f).clipPath;
  const left = clip.match(/inset\\(.* ([\\d.]+)(px|%)\\)$/);
  if (!left) return 0;
  const width = f.getBoundingClientRect().width;
  return left[2] === "%" ? parseFloat(left[1]) / 100 : parseFloat(left[1]) / width;
}"""


# axe-core's rules on the comparison's section, zoomed and not; undecided
# rules fail too, but for contrast, which it cannot judge over a screenshot.
AXE_ON_THE_COMPARISON = """async () => {
  const found = await axe.run(document.querySelector('[data-visual]'),
    {resultTypes: ['violations', 'incomplete']});
  const say = (r) => r.id + ': ' + r.nodes.map((n) => n.html.slice(0, 100)).join(' | ');
  return found.violations.map(say).concat(
    found.incomplete.filter((r) => r.id !== 'color-contrast').map(say));
}"""


def pricing(headline: str) -> str:
    return f"{STYLE}<h1>{headline}</h1>{TEXT}<div class='banner'>Call us</div>"


def headline_grown(team, site) -> PageResult:
    """A page checked with screenshots, then again after its headline grew by
    a line: the changed page's result."""
    url = site.html("/plans", "Plans", pricing("Plans for small teams"))
    monitor = make_monitor(team, [url])
    Target.objects.filter(monitor=monitor).update(
        scrape_options={"formats": ["markdown", "screenshot"]}
    )
    run_check(monitor)
    site.html(
        "/plans",
        "Plans",
        pricing("Plans for small teams, and now a plan for whole schools"),
    )
    return PageResult.objects.get(check_run=run_check(monitor), status="changed")


@pytest.mark.parametrize("size", VIEWPORTS)
def test_a_longer_headline_is_the_one_place_outlined_and_a_slider_compares(
    browser_page, member, team, site, screenshot, size
):
    changed = headline_grown(team, site)

    page = browser_page
    # An init script, as the Content-Security-Policy refuses injected <script> tags.
    page.context.add_init_script(path=str(_require_axe()))
    page.set_viewport_size(VIEWPORTS[size])
    sign_in(page)
    page.goto(changed.get_absolute_url())

    section = page.locator("[data-visual]")
    words = section.locator(".visual-words")
    expect(words).to_contain_text("of the page looks different, in 1 place.")
    changed.refresh_from_db()
    (box,) = changed.visual_change["boxes"]
    # The headline, and not the paragraphs it pushed down.
    assert box[1] < 60 and box[1] + box[3] < 220, box

    before = section.locator(".shot-before img")
    after = section.locator(".shot-after img")
    for image in (before, after):
        image.scroll_into_view_if_needed()
        expect(image).to_have_js_property("complete", True)
        assert image.evaluate("img => img.naturalWidth") > 0
    # Full width: the screenshots take the width of the section's content.
    inner = section.evaluate(
        "s => s.clientWidth - 2 * parseFloat(getComputedStyle(s).paddingLeft)"
    )
    assert after.bounding_box()["width"] >= inner - 2

    # The changed place is outlined over the top of this check's screenshot.
    place = section.locator("rect[data-changed-place]")
    expect(place).to_have_count(1)
    outline, shot = place.bounding_box(), after.bounding_box()
    assert outline["width"] > 20 and outline["height"] > 5
    assert shot["y"] <= outline["y"] < shot["y"] + shot["height"] * 0.35
    assert outline["x"] >= shot["x"] - 1
    assert outline["x"] + outline["width"] <= shot["x"] + shot["width"] + 1

    # The slider, with its label, moved by the keyboard: all the way to one
    # side shows only this check's screenshot, to the other only the earlier.
    slider = page.get_by_label("Slide to compare")
    expect(slider).to_be_visible()
    after_figure = section.locator(".shot-after")

    def shown_from() -> float:
        """Where this check's screenshot starts, as a share of its width."""
        return after_figure.evaluate(SHOWN_FROM)

    assert shown_from() == pytest.approx(0.5, abs=0.02)
    slider.focus()
    page.keyboard.press("Home")
    assert slider.input_value() == "0"
    assert shown_from() == pytest.approx(0, abs=0.01)
    expect(slider).to_have_attribute("aria-valuetext", "Only this check's screenshot")
    section.scroll_into_view_if_needed()
    screenshot(page, f"visual-{size}-this-check", full_page=False)
    page.keyboard.press("End")
    assert shown_from() == pytest.approx(1, abs=0.01)
    expect(slider).to_have_attribute("aria-valuetext", "Only the earlier screenshot")
    for _ in range(30):
        page.keyboard.press("ArrowLeft")
    assert slider.input_value() == "70"
    assert shown_from() == pytest.approx(0.7, abs=0.02)
    screenshot(page, f"visual-{size}-slider")

    # Actual size: the screenshots at their own width, in a window that scrolls.
    zoom = page.get_by_role("button", name="Show at actual size")
    zoom.click()
    expect(zoom).to_have_attribute("aria-pressed", "true")
    natural = after.evaluate("img => img.naturalWidth")
    assert after.bounding_box()["width"] == pytest.approx(natural, abs=1)
    view = section.locator("[data-compare-view]")
    if natural > view.evaluate("v => v.clientWidth"):
        view.focus()
        page.keyboard.press("ArrowRight")
        page.keyboard.press("ArrowRight")
        expect(view).not_to_have_js_property("scrollLeft", 0)
    view.scroll_into_view_if_needed()
    screenshot(page, f"visual-{size}-actual-size", full_page=False)
    assert page.evaluate(AXE_ON_THE_COMPARISON) == []
    zoom.click()
    expect(zoom).to_have_attribute("aria-pressed", "false")

    # Zoom: each screenshot opens at full size, the marked one too.
    links = section.locator(".zoom-links a")
    expect(links).to_have_count(3)
    marked = page.request.get(links.nth(2).get_attribute("href"))
    assert marked.headers["content-type"] == "image/png"
    assert (
        page.evaluate("document.documentElement.scrollWidth")
        <= VIEWPORTS[size]["width"]
    )
    assert page.evaluate(AXE_ON_THE_COMPARISON) == []
    assert_clean(page)


def test_without_javascript_both_screenshots_are_shown_in_full(
    chromium, live_server, member, team, site, screenshot
):
    changed = headline_grown(team, site)
    context = chromium.new_context(
        base_url=live_server.url,
        viewport=VIEWPORTS["390"],
        java_script_enabled=False,
    )
    page = context.new_page()
    sign_in(page)
    page.goto(changed.get_absolute_url())

    expect(page.get_by_label("Slide to compare")).to_be_hidden()
    before = page.locator(".shot-before img").bounding_box()
    after = page.locator(".shot-after img").bounding_box()
    assert after["y"] >= before["y"] + before["height"]  # one under the other
    assert page.locator("rect[data-changed-place]").count() == 1
    page.locator("[data-visual]").scroll_into_view_if_needed()
    screenshot(page, "visual-390-without-javascript")
    context.close()
