"""What changed between two screenshots of a page, as a picture: the new
screenshot faded, with every pixel that differs from the old one shown in
red. Plain CPU work with Pillow, on captures already stored."""

from __future__ import annotations

import io
from dataclasses import dataclass

from PIL import Image, ImageChops, ImageFilter

# A pixel differs when a channel moved by more than this (JPEG noise stays out).
THRESHOLD = 32
# Changed areas are grown by this many pixels so a one-pixel change shows.
GROW = 5
# Screenshots larger than this (either side) are not compared: a full-page
# screenshot of an endless page would take seconds and hundreds of MB.
MAX_SIDE = 8000
_HIGHLIGHT = (220, 38, 38)
# What the browser stores; every other decoder stays unused (EPS, for one,
# would hand the bytes to Ghostscript).
_FORMATS = ("PNG", "JPEG")


@dataclass(frozen=True)
class VisualChange:
    png: bytes
    changed_fraction: float  # of the compared area, 0..1


class NotComparable(ValueError):
    """A screenshot that cannot be read, or is too large to compare."""


def visual_change(before: bytes, after: bytes) -> VisualChange:
    old, new = _image(before), _image(after)
    size = (max(old.width, new.width), max(old.height, new.height))
    old, new = _padded(old, size), _padded(new, size)
    differs = ImageChops.difference(old, new).convert("L")
    mask = differs.point(lambda v: 255 if v > THRESHOLD else 0)
    changed = mask.histogram()[255] / (size[0] * size[1])
    if changed:
        mask = mask.filter(ImageFilter.MaxFilter(GROW * 2 + 1))
    faded = Image.blend(new, Image.new("RGB", size, "white"), 0.65)
    red = Image.blend(new, Image.new("RGB", size, _HIGHLIGHT), 0.55)
    picture = Image.composite(red, faded, mask)
    out = io.BytesIO()
    picture.save(out, format="PNG", optimize=False)
    return VisualChange(out.getvalue(), changed)


def _image(data: bytes) -> Image.Image:
    try:
        image = Image.open(io.BytesIO(data), formats=_FORMATS)
        if max(image.size) > MAX_SIDE:
            raise NotComparable("The screenshot is too large to compare.")
        return image.convert("RGB")
    except (OSError, Image.DecompressionBombError) as exc:
        raise NotComparable("The screenshot could not be read.") from exc


def _padded(image: Image.Image, size: tuple[int, int]) -> Image.Image:
    if image.size == size:
        return image
    canvas = Image.new("RGB", size, "white")
    canvas.paste(image, (0, 0))
    return canvas
