"""The scene as a PNG, drawn with Pillow (its wheels carry FreeType and a font), at
``SCALE`` times the scene's pixels for sharp text."""

from __future__ import annotations

import io
import math

from PIL import Image, ImageDraw
from PIL.PngImagePlugin import PngInfo

from . import fonts
from .layout import Box, Scene
from .paint import Point, paint

SCALE = 2
ARROW = 7
DASH, GAP = 5, 4


def _hex(colour: str) -> tuple[int, int, int]:
    return int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16)


class PngCanvas:
    def __init__(self, width: int, height: int) -> None:
        self.image = Image.new("RGB", (width * SCALE, height * SCALE), "#ffffff")
        self.draw = ImageDraw.Draw(self.image)

    def _pts(self, points: list[Point]) -> list[tuple[float, float]]:
        return [(x * SCALE, y * SCALE) for x, y in points]

    def rect(self, box: Box, fill: str, stroke: str, radius: float = 0,
             dashed: bool = False) -> None:
        corners = [box.x * SCALE, box.y * SCALE, (box.x + box.w) * SCALE,
                   (box.y + box.h) * SCALE]
        if dashed:
            self.draw.rounded_rectangle(corners, radius * SCALE, fill=_hex(fill))
            x0, y0, x1, y1 = box.x, box.y, box.x + box.w, box.y + box.h
            self.polyline([(x0, y0), (x1, y0), (x1, y1), (x0, y1), (x0, y0)], stroke, True)
        else:
            self.draw.rounded_rectangle(corners, radius * SCALE, fill=_hex(fill),
                                        outline=_hex(stroke), width=SCALE)

    def polygon(self, points: list[Point], fill: str, stroke: str) -> None:
        self.draw.polygon(self._pts(points), fill=_hex(fill), outline=_hex(stroke),
                          width=SCALE)

    def polyline(self, points: list[Point], stroke: str, dashed: bool = False,
                 arrow: bool = False) -> None:
        colour = _hex(stroke)
        scaled = self._pts(points)
        if dashed:
            for (ax, ay), (bx, by) in zip(scaled, scaled[1:], strict=False):  # each segment
                length = math.hypot(bx - ax, by - ay)
                step = (DASH + GAP) * SCALE
                at = 0.0
                while at < length:
                    end = min(at + DASH * SCALE, length)
                    self.draw.line([(ax + (bx - ax) * at / length, ay + (by - ay) * at / length),
                                    (ax + (bx - ax) * end / length,
                                     ay + (by - ay) * end / length)],
                                   fill=colour, width=SCALE)
                    at += step
        else:
            self.draw.line(scaled, fill=colour, width=SCALE, joint="curve")
        if arrow and len(scaled) >= 2:
            (ax, ay), (bx, by) = scaled[-2], scaled[-1]
            angle = math.atan2(by - ay, bx - ax)
            size = ARROW * SCALE
            left = (bx - size * math.cos(angle - 0.4), by - size * math.sin(angle - 0.4))
            right = (bx - size * math.cos(angle + 0.4), by - size * math.sin(angle + 0.4))
            self.draw.polygon([(bx, by), left, right], fill=colour)

    def text(self, x: float, y: float, text: str, size: int, colour: str) -> None:
        self.draw.text((x * SCALE, y * SCALE), text, fill=_hex(colour),
                       font=fonts.font(size * SCALE))

    def encode(self, generator: str) -> bytes:
        info = PngInfo()
        info.add_text("Software", generator)  # a tEXt chunk near the file's start
        out = io.BytesIO()
        self.image.save(out, format="PNG", optimize=True, pnginfo=info)
        return out.getvalue()


def image_size(scene: Scene) -> tuple[int, int]:
    """The PNG's size in pixels for a scene."""
    return math.ceil(scene.width) * SCALE, math.ceil(scene.height) * SCALE


def render_png(scene: Scene, generator: str) -> bytes:
    canvas = PngCanvas(math.ceil(scene.width), math.ceil(scene.height))
    paint(scene, canvas)
    return canvas.encode(generator)
