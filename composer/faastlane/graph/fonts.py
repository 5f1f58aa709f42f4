"""Text metrics: the font Pillow carries in its wheel (no system fonts are assumed), used
to size boxes for both outputs and to draw the PNG. SVG viewers use a Helvetica-like
font of about the same widths; ``SLACK`` leaves room for the difference."""

from __future__ import annotations

from functools import cache

from PIL import ImageFont

SLACK = 1.08
LEADING = 4  # pixels between lines


@cache
def font(size: int) -> ImageFont.FreeTypeFont:
    loaded = ImageFont.load_default(size=size)
    assert isinstance(loaded, ImageFont.FreeTypeFont)  # with a size: Pillow's TrueType font
    return loaded


def width(text: str, size: int) -> float:
    return font(size).getlength(text) * SLACK


def ascent(size: int) -> int:
    return font(size).getmetrics()[0]


def line_height(size: int) -> int:
    rise, descent = font(size).getmetrics()
    return rise + descent + LEADING
