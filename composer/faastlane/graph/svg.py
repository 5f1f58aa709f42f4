"""The scene as SVG text: written directly, no renderer needed."""

from __future__ import annotations

from xml.sax.saxutils import escape, quoteattr

from . import fonts
from .layout import Box, Scene
from .paint import Point, paint

FONT_FAMILY = "Aileron, Helvetica, Arial, sans-serif"
ARROW = 7


def _f(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


def _points(points: list[Point]) -> str:
    return " ".join(f"{_f(x)},{_f(y)}" for x, y in points)


class SvgCanvas:
    def __init__(self) -> None:
        self.parts: list[str] = []
        self.markers: dict[str, str] = {}  # colour -> marker id

    def rect(self, box: Box, fill: str, stroke: str, radius: float = 0,
             dashed: bool = False) -> None:
        dash = ' stroke-dasharray="6 4"' if dashed else ""
        self.parts.append(f'<rect x="{_f(box.x)}" y="{_f(box.y)}" width="{_f(box.w)}" '
                          f'height="{_f(box.h)}" rx="{_f(radius)}" fill="{fill}" '
                          f'stroke="{stroke}" stroke-width="1.3"{dash}/>')

    def polygon(self, points: list[Point], fill: str, stroke: str) -> None:
        self.parts.append(f'<polygon points="{_points(points)}" fill="{fill}" '
                          f'stroke="{stroke}" stroke-width="1.3"/>')

    def polyline(self, points: list[Point], stroke: str, dashed: bool = False,
                 arrow: bool = False) -> None:
        dash = ' stroke-dasharray="5 4"' if dashed else ""
        end = ""
        if arrow:
            marker = self.markers.setdefault(stroke, f"arrow{len(self.markers)}")
            end = f' marker-end="url(#{marker})"'
        self.parts.append(f'<polyline points="{_points(points)}" fill="none" '
                          f'stroke="{stroke}" stroke-width="1.4"{dash}{end}/>')

    def text(self, x: float, y: float, text: str, size: int, colour: str) -> None:
        self.parts.append(f'<text x="{_f(x)}" y="{_f(y + fonts.ascent(size))}" '
                          f'font-size="{size}" fill="{colour}">{escape(text)}</text>')

    def document(self, scene: Scene, title: str, generator: str) -> str:
        markers = "".join(
            f'<marker id="{mid}" viewBox="0 0 10 10" refX="10" refY="5" '
            f'markerWidth="{ARROW}" markerHeight="{ARROW}" orient="auto-start-reverse">'
            f'<path d="M0,0 L10,5 L0,10 z" fill="{colour}"/></marker>'
            for colour, mid in self.markers.items())
        width, height = _f(scene.width), _f(scene.height)
        return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
                f'viewBox="0 0 {width} {height}" font-family={quoteattr(FONT_FAMILY)}>\n'
                f'<!-- {escape(generator)} -->\n<title>{escape(title)}</title>\n'
                f'<defs>{markers}</defs>\n'
                f'<rect width="100%" height="100%" fill="#ffffff"/>\n'
                + "\n".join(self.parts) + "\n</svg>\n")


def render_svg(scene: Scene, title: str, generator: str) -> str:
    canvas = SvgCanvas()
    paint(scene, canvas)
    return canvas.document(scene, title, generator)
