"""Write the ml-predict inputs: large photo-like scans of handwritten digits.

Each scan is a ~1.5 MB PNG (the paper's input size): a digit drawn in ink from the
strokes in ``glyphs.json``, placed, scaled, slanted and rotated a little, on lit paper
with sensor noise. Everything comes from a seeded legacy ``numpy.random.RandomState``
(whose stream numpy keeps stable), so the pixels are the same on every run; the PNG bytes
may differ by a few bytes between zlib builds, which changes nothing downstream.

    python generate_input.py [OUT_DIR]     # default: this folder

writes ``input.json`` (one scan), ``input-batch.json`` (one scan of each digit, for the
Map path) and the labels they were drawn from, ``expected.json`` and
``expected-batch.json``. The labels are the ground truth by construction: the workflow
must predict them.
"""

from __future__ import annotations

import base64
import io
import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

HERE = Path(__file__).resolve().parent
GLYPHS = json.loads((HERE / "glyphs.json").read_text(encoding="utf-8"))
SIZE = (1280, 960)  # a 1.2-megapixel scan; with its sensor noise, ~1.5 MB as PNG
SINGLE = (7, 2024)   # the digit in input.json and its seed
BATCH_SEED = 500     # input-batch.json: digit d uses seed BATCH_SEED + d

Point = tuple[float, float]


def _catmull_rom(points: list[Point], steps: int = 12) -> list[Point]:
    """A smooth curve through every point (ends repeated so it starts and stops on them)."""
    padded = [points[0], *points, points[-1]]
    out: list[Point] = []
    for i in range(1, len(padded) - 2):
        p0, p1, p2, p3 = (np.array(padded[j]) for j in (i - 1, i, i + 1, i + 2))
        for s in range(steps):
            t = s / steps
            q = 0.5 * ((2 * p1) + (-p0 + p2) * t + (2 * p0 - 5 * p1 + 4 * p2 - p3) * t * t
                       + (-p0 + 3 * p1 - 3 * p2 + p3) * t ** 3)
            out.append((float(q[0]), float(q[1])))
    out.append(points[-1])
    return out


def stroke_points(stroke: dict[str, Any]) -> list[Point]:
    """A stroke of glyphs.json as a dense polyline in glyph units."""
    if "arc" in stroke:
        cx, cy, rx, ry, start, end = stroke["arc"]
        n = max(8, int(abs(end - start) / 4))
        return [(cx + rx * math.cos(math.radians(start + (end - start) * k / n)),
                 cy + ry * math.sin(math.radians(start + (end - start) * k / n)))
                for k in range(n + 1)]
    points = [(float(x), float(y)) for x, y in stroke["points"]]
    return _catmull_rom(points) if stroke["smooth"] else points


def _ink_mask(digit: int, rng: np.random.RandomState, size: tuple[int, int]) -> Image.Image:
    """The digit's ink coverage (mode L) at a random place, size, slant and rotation."""
    width, height = size
    glyph_h = rng.uniform(0.45, 0.7) * height
    pen = GLYPHS["pen"] * glyph_h * rng.uniform(0.85, 1.15)
    slant = rng.uniform(-0.12, 0.18)  # most hands lean right
    angle = math.radians(rng.uniform(-6, 6))
    cx = rng.uniform(0.35, 0.65) * width
    cy = rng.uniform(0.4, 0.6) * height
    cos, sin = math.cos(angle), math.sin(angle)

    def place(p: Point) -> Point:
        x = (p[0] - 0.31 + slant * (0.5 - p[1])) * glyph_h
        y = (p[1] - 0.5) * glyph_h
        return cx + x * cos - y * sin, cy + x * sin + y * cos

    mask = Image.new("L", size, 0)
    draw = ImageDraw.Draw(mask)
    r = pen / 2
    for stroke in GLYPHS["digits"][str(digit)]:
        line = [place(p) for p in stroke_points(stroke)]
        draw.line(line, fill=255, width=round(pen))
        for x, y in line:  # round caps and joints, as a ballpoint leaves them
            draw.ellipse((x - r, y - r, x + r, y + r), fill=255)
    return mask.filter(ImageFilter.GaussianBlur(pen * 0.08))


def _paper(rng: np.random.RandomState, noise: float, size: tuple[int, int]) -> np.ndarray:
    """Off-white paper under uneven light, with sensor noise (float RGB, 0-255)."""
    width, height = size
    ys, xs = np.mgrid[0:height, 0:width].astype(np.float32)
    lx, ly = rng.uniform(0, width), rng.uniform(0, height)
    falloff = np.hypot(xs - lx, ys - ly) / math.hypot(width, height)
    light = 1.0 - 0.22 * falloff
    tint = np.array([rng.uniform(232, 246), rng.uniform(226, 240), rng.uniform(210, 226)],
                    dtype=np.float32)
    grain = rng.normal(0.0, noise, size=(height, width, 3)).astype(np.float32)
    return light[..., None] * tint + grain


def _compose(coverage: np.ndarray, rng: np.random.RandomState, noise: float) -> Image.Image:
    paper = _paper(rng, noise, (coverage.shape[1], coverage.shape[0]))
    ink = np.array([rng.uniform(20, 45), rng.uniform(25, 50), rng.uniform(60, 110)],
                   dtype=np.float32)  # blue-black ballpoint
    alpha = coverage[..., None] * rng.uniform(0.85, 0.95)
    pixels = paper * (1 - alpha) + ink * alpha
    return Image.fromarray(np.clip(np.rint(pixels), 0, 255).astype(np.uint8), "RGB")


def render_digit(digit: int, seed: int, size: tuple[int, int] = SIZE, noise: float = 1.0
                 ) -> Image.Image:
    """A photo-like scan of one handwritten digit."""
    rng = np.random.RandomState(seed)
    coverage = np.asarray(_ink_mask(digit, rng, size), dtype=np.float32) / 255.0
    return _compose(coverage, rng, noise)


def render_grid(grid: np.ndarray, seed: int, cell: int = 12, noise: float = 1.0
                ) -> Image.Image:
    """A scan of an 8x8 load_digits image: block (r, c) gets grid[r, c] of its 16 sub-cells
    inked, which inverts the dataset's own 32x32 -> 8x8 block counting."""
    rng = np.random.RandomState(seed)
    order = [5, 6, 9, 10, 1, 4, 11, 14, 2, 7, 8, 13, 0, 3, 12, 15]  # centre first
    fine = np.zeros((32, 32), dtype=np.float32)
    for (r, c), level in np.ndenumerate(grid):
        for k in order[:int(level)]:
            fine[4 * r + k // 4, 4 * c + k % 4] = 1.0
    big = np.kron(fine, np.ones((cell, cell), dtype=np.float32))
    canvas = np.zeros((big.shape[0] * 3 // 2, big.shape[1] * 2), dtype=np.float32)
    top, left = (canvas.shape[0] - big.shape[0]) // 2, (canvas.shape[1] - big.shape[1]) // 2
    canvas[top:top + big.shape[0], left:left + big.shape[1]] = big
    return _compose(canvas, rng, noise)


def png_base64(image: Image.Image, level: int = 1) -> str:
    """Base64 PNG; zlib level 1 packs noisy scans five times faster than the default 6."""
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", compress_level=level)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def scan(digit: int, seed: int) -> dict[str, str]:
    """One workflow input item: what a phone app would upload."""
    return {"image_id": f"scan-{seed}", "content_type": "image/png",
            "image": png_base64(render_digit(digit, seed))}


def write(out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    digit, seed = SINGLE
    files: dict[str, Any] = {
        "input.json": scan(digit, seed),
        "expected.json": {"image_id": f"scan-{seed}", "digit": digit},
        "input-batch.json": {"images": [scan(d, BATCH_SEED + d) for d in range(10)]},
        "expected-batch.json": {"reports": [{"image_id": f"scan-{BATCH_SEED + d}", "digit": d}
                                            for d in range(10)]},
    }
    for name, content in files.items():
        (out_dir / name).write_text(json.dumps(content, indent=None if "input" in name else 2)
                                    + "\n", encoding="utf-8")


if __name__ == "__main__":
    write(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
