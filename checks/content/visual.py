"""What looks different between two screenshots of a page: the places that
changed, as a few boxes on the new screenshot, and how much of it they cover.

A headline that grows by one line pushes everything below it down. Comparing
pixel by pixel would then mark the whole rest of the page, so the rows of the
two screenshots are aligned first (as a text diff aligns lines: rows that
look the same are matched in order, with difflib) and only the rows that
found no partner are compared. Plain CPU work with Pillow on captures already
stored, done on copies scaled down to a bounded size so a tall page costs
about what a short one does."""

from __future__ import annotations

import io
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Any

from PIL import Image, ImageChops, ImageDraw

# A pixel differs when a channel moved by more than this (JPEG noise stays out).
THRESHOLD = 32
# Screenshots larger than this (either side) are not compared: a full-page
# screenshot of an endless page would take seconds and hundreds of MB.
MAX_SIDE = 8000
# The screenshots are compared at most this wide: enough to see a changed
# word, narrow enough that a tall page stays quick.
COMPARE_WIDTH = 400
# Changes closer than this (in screenshot pixels) are one place, so a changed
# paragraph is one box rather than one per word.
GAP = 32
# More places than this are merged further: a reader follows a handful.
MAX_BOXES = 8
# Boxes are drawn this much (in screenshot pixels) around what changed.
MARGIN = 6
_OUTLINE = (220, 38, 38)
# What the browser stores; every other decoder stays unused (EPS, for one,
# would hand the bytes to Ghostscript).
_FORMATS = ("PNG", "JPEG")


@dataclass(frozen=True)
class Box:
    """A changed place, in pixels of the new screenshot."""

    x: int
    y: int
    w: int
    h: int


@dataclass(frozen=True)
class VisualChange:
    width: int  # of the new screenshot
    height: int
    boxes: tuple[Box, ...]
    changed_fraction: float  # of the new screenshot covered by boxes, 0..1

    def as_json(self) -> dict[str, Any]:
        return {
            "width": self.width,
            "height": self.height,
            "boxes": [[b.x, b.y, b.w, b.h] for b in self.boxes],
            "changedFraction": round(self.changed_fraction, 6),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> VisualChange:
        return cls(
            width=int(data["width"]),
            height=int(data["height"]),
            boxes=tuple(Box(*(int(v) for v in box)) for box in data["boxes"]),
            changed_fraction=float(data["changedFraction"]),
        )


class NotComparable(ValueError):
    """A screenshot that cannot be read, or is too large to compare."""


def visual_change(before: bytes, after: bytes) -> VisualChange:
    old, new = _image(before), _image(after)
    # Only the width is scaled down: rows stay whole so that content moved
    # down by a few pixels looks exactly the same, row for row.
    width = min(new.width, COMPARE_WIDTH)
    mask = _changed_mask(
        _scaled(old, width, old.height), _scaled(new, width, new.height)
    )
    # Across, words of one sentence lie further apart than lines do down;
    # and a sentence that grew wraps its new words to the start of the next
    # line, far from where they were added on the line above.
    gaps = (max(1, GAP * width // new.width, width // 8), GAP)
    places = _merged(list(_places(mask, gaps)), (*gaps, width // 3))
    return _in_screenshot_pixels(places, mask, new.size)


def marked_png(after: bytes, change: VisualChange) -> bytes:
    """The new screenshot with the changed places outlined, at full size."""
    image = _image(after)
    tint = Image.new("RGB", image.size, _OUTLINE)
    shade = Image.new("L", image.size, 0)
    draw = ImageDraw.Draw(shade)
    for box in change.boxes:
        draw.rectangle((box.x, box.y, box.x + box.w - 1, box.y + box.h - 1), fill=40)
    image = Image.composite(tint, image, shade)
    lines = ImageDraw.Draw(image)
    stroke = max(3, image.width // 400)
    for box in change.boxes:
        lines.rectangle(
            (box.x, box.y, box.x + box.w - 1, box.y + box.h - 1),
            outline=_OUTLINE,
            width=stroke,
        )
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=False)
    return out.getvalue()


def _image(data: bytes) -> Image.Image:
    try:
        image = Image.open(io.BytesIO(data), formats=_FORMATS)
        if max(image.size) > MAX_SIDE:
            raise NotComparable("The screenshot is too large to compare.")
        return image.convert("RGB")
    except (OSError, Image.DecompressionBombError) as exc:
        raise NotComparable("The screenshot could not be read.") from exc


def _scaled(image: Image.Image, width: int, height: int) -> Image.Image:
    if image.size == (width, height):
        return image
    # Averaging (BOX) keeps thin text visible and smooths JPEG noise.
    return image.resize((width, height), Image.Resampling.BOX)


def _changed_mask(old: Image.Image, new: Image.Image) -> Image.Image:
    """A mask over the new screenshot (255 where it changed), after matching
    the rows both screenshots share so that content that only moved down or
    up is not marked. Rows of the old screenshot that vanished are marked
    where they used to sit, one row high, as a change of the new one."""
    width = new.width
    old_rows, new_rows = _row_runs(old), _row_runs(new)
    # autojunk: rows seen all over the page (blank bands, rules, stripes) do
    # not start a match, only extend one, which keeps a striped page from
    # taking minutes; they still line up beside the rows around them.
    matcher = SequenceMatcher(
        None, [key for key, _, _ in old_rows], [key for key, _, _ in new_rows],
        autojunk=True,
    )  # fmt: skip
    mask = Image.new("L", new.size, 0)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        old_top, old_bottom = _span(old_rows, i1, i2)
        new_top, new_bottom = _span(new_rows, j1, j2)
        if new_bottom == new_top:
            # Removed rows: mark their content on the row where they were.
            gone = _differs(old.crop((0, old_top, width, old_bottom)), None)
            box = gone.getbbox()
            if box is not None:
                row = min(new_top, new.height - 1)
                mask.paste(255, (box[0], row, box[2], row + 1))
            continue
        block = new.crop((0, new_top, width, new_bottom))
        if old_bottom == old_top:
            mask.paste(_differs(block, None), (0, new_top))
            continue
        # Rows that matched nothing (JPEG noise can do that to rows that only
        # moved) are compared twice: lined up with the rows above them, and
        # with the rows below; what looks the same either way did not change.
        previous = old.crop((0, old_top, width, old_bottom))
        changed = ImageChops.darker(
            _differs(block, previous, 0),
            _differs(block, previous, block.height - previous.height),
        )
        mask.paste(changed, (0, new_top))
    return mask


def _row_runs(image: Image.Image) -> list[tuple[bytes, int, int]]:
    """The image's rows as (what the row looks like, first row, row after
    the run), runs of identical rows taken as one: a blank band is one
    element however tall, which keeps the alignment quick and lets it match
    blank bands of different heights around a change."""
    # Coarse colours, so that anti-aliasing or JPEG noise does not make two
    # rows that look the same count as different.
    coarse = image.point(lambda v: v >> 4).tobytes()
    stride = image.width * 3
    runs: list[tuple[bytes, int, int]] = []
    for row in range(image.height):
        key = coarse[row * stride : (row + 1) * stride]
        if runs and runs[-1][0] == key:
            runs[-1] = (key, runs[-1][1], row + 1)
        else:
            runs.append((key, row, row + 1))
    return runs


def _span(runs: list[tuple[bytes, int, int]], first: int, last: int) -> tuple[int, int]:
    """The rows that runs[first:last] cover (an empty span where they start)."""
    if first < last:
        return runs[first][1], runs[last - 1][2]
    top = runs[first][1] if first < len(runs) else (runs[-1][2] if runs else 0)
    return top, top


def _differs(
    block: Image.Image, previous: Image.Image | None, offset: int = 0
) -> Image.Image:
    """Where `block` differs from `previous` laid over it `offset` rows down
    (or from the page's background where nothing is laid over)."""
    ground = Image.new("RGB", block.size, _background(block))
    if previous is not None:
        if offset < 0:
            previous = previous.crop((0, -offset, previous.width, previous.height))
            offset = 0
        ground.paste(
            previous.crop((0, 0, block.width, block.height - offset)), (0, offset)
        )
    diff = ImageChops.difference(block, ground)
    strongest = ImageChops.lighter(
        ImageChops.lighter(diff.getchannel(0), diff.getchannel(1)), diff.getchannel(2)
    )
    return strongest.point(lambda v: 255 if v > THRESHOLD else 0)


def _background(block: Image.Image) -> tuple[int, int, int]:
    """The most common colour of the block's edge: the page's background."""
    edge = block.crop((0, 0, 1, block.height)).getcolors(block.height) or []
    return max(edge)[1] if edge else (255, 255, 255)


def _places(
    mask: Image.Image, gaps: tuple[int, int]
) -> Iterable[tuple[int, int, int, int]]:
    """Boxes (left, top, right, bottom) around the changed pixels: bands of
    changed rows, then runs of changed columns within each band."""
    for top, bottom in _runs(_profile(mask, rows=True), gaps[1]):
        band = mask.crop((0, top, mask.width, bottom))
        for left, right in _runs(_profile(band, rows=False), gaps[0]):
            box = band.crop((left, 0, right, band.height)).getbbox()
            if box is not None:
                yield left + box[0], top + box[1], left + box[2], top + box[3]


def _profile(mask: Image.Image, *, rows: bool) -> list[bool]:
    """Whether each row (or column) of the mask holds a changed pixel."""
    image = mask if rows else mask.transpose(Image.Transpose.TRANSPOSE)
    data, stride = image.tobytes(), image.width
    return [max(data[i * stride : (i + 1) * stride]) > 0 for i in range(image.height)]


def _runs(flags: list[bool], gap: int) -> list[tuple[int, int]]:
    """Runs of True (start, end), joined across gaps shorter than `gap`."""
    runs: list[tuple[int, int]] = []
    for index, flag in enumerate(flags):
        if not flag:
            continue
        if runs and index - runs[-1][1] < gap:
            runs[-1] = (runs[-1][0], index + 1)
        else:
            runs.append((index, index + 1))
    return runs


def _merged(
    boxes: list[tuple[int, int, int, int]], gaps: tuple[int, int, int]
) -> list[tuple[int, int, int, int]]:
    """Boxes closer than `gaps` (across on one line, down, across between
    lines one above the other) joined, and further until a reader can follow
    them."""
    while True:
        boxes = _join_near(boxes, gaps)
        if len(boxes) <= MAX_BOXES:
            return sorted(boxes, key=lambda b: (b[1], b[0]))
        gaps = (gaps[0] * 2, gaps[1] * 2, gaps[2] * 2)


def _join_near(
    boxes: list[tuple[int, int, int, int]], gaps: tuple[int, int, int]
) -> list[tuple[int, int, int, int]]:
    gx, gy, stacked = gaps
    boxes = list(boxes)
    joined = True
    while joined:
        joined = False
        for i in range(len(boxes)):
            for j in range(i + 1, len(boxes)):
                a, b = boxes[i], boxes[j]
                across = gx if a[1] < b[3] and b[1] < a[3] else stacked
                if (
                    a[0] - across < b[2]
                    and b[0] - across < a[2]
                    and a[1] - gy < b[3]
                    and b[1] - gy < a[3]
                ):
                    boxes[i] = (
                        min(a[0], b[0]),
                        min(a[1], b[1]),
                        max(a[2], b[2]),
                        max(a[3], b[3]),
                    )
                    del boxes[j]
                    joined = True
                    break
            if joined:
                break
    return boxes


def _in_screenshot_pixels(
    places: list[tuple[int, int, int, int]],
    mask: Image.Image,
    size: tuple[int, int],
) -> VisualChange:
    width, height = size
    fx, fy = width / mask.width, height / mask.height
    boxes = []
    for left, top, right, bottom in places:
        x0 = max(0, int(left * fx) - MARGIN)
        y0 = max(0, int(top * fy) - MARGIN)
        x1 = min(width, int(right * fx + 0.999) + MARGIN)
        y1 = min(height, int(bottom * fy + 0.999) + MARGIN)
        boxes.append(Box(x0, y0, x1 - x0, y1 - y0))
    covered = Image.new("L", size, 0)
    draw = ImageDraw.Draw(covered)
    for box in boxes:
        draw.rectangle((box.x, box.y, box.x + box.w - 1, box.y + box.h - 1), fill=255)
    fraction = covered.histogram()[255] / (width * height) if boxes else 0.0
    return VisualChange(width, height, tuple(boxes), fraction)
