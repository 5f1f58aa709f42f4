"""Render: the classification report, with a small annotated thumbnail.

The thumbnail (PNG, base64) shows the photo's crop beside what the model saw (the 8x8
input, enlarged) over a caption with the predicted digit and its probability, so that a
person can check a prediction at a glance.
"""

from __future__ import annotations

import base64
import io
from typing import Any

from PIL import Image, ImageDraw, ImageFont, ImageOps

CELL = 12            # pixels per cell of the enlarged 8x8 input
PANEL = 8 * CELL     # the preview and the input are both this wide and tall
PAD = 6
CAPTION = 18
SHADES = " .:-=+*#%@"  # ink levels 0-16 as characters, light to dark


def _model_input(features: list[int]) -> Image.Image:
    """The 8x8 input as ink on paper, each cell CELL pixels wide."""
    grid = Image.new("L", (8, 8))
    grid.putdata([255 - round(v * 255 / 16) for v in features])
    return grid.resize((PANEL, PANEL), Image.Resampling.NEAREST)


def _thumbnail(preview_b64: str, features: list[int], caption: str) -> bytes:
    preview = Image.open(io.BytesIO(base64.b64decode(preview_b64))).convert("L")
    preview = ImageOps.fit(preview, (PANEL, PANEL))
    sheet = Image.new("RGB", (2 * PANEL + 3 * PAD, PANEL + 2 * PAD + CAPTION), "white")
    sheet.paste(preview, (PAD, PAD))
    sheet.paste(_model_input(features), (2 * PAD + PANEL, PAD))
    draw = ImageDraw.Draw(sheet)
    draw.rectangle((2 * PAD + PANEL - 1, PAD - 1, 2 * PAD + 2 * PANEL, PAD + PANEL),
                   outline=(200, 40, 40))
    draw.text((PAD, PANEL + 2 * PAD), caption, fill=(0, 0, 0), font=ImageFont.load_default())
    buffer = io.BytesIO()
    sheet.save(buffer, format="PNG")
    return buffer.getvalue()


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    prediction = event["prediction"]
    probabilities = prediction["probabilities"]
    ranking = sorted(range(len(probabilities)), key=lambda d: -probabilities[d])
    digit = prediction["digit"]
    confidence = probabilities[digit]
    caption = f"digit {digit}: {confidence:.1%}"
    features = event["features"]
    return {
        "image_id": event.get("image_id"),
        "digit": digit,
        "confidence": round(confidence, 4),
        "runner_up": {"digit": ranking[1], "probability": round(probabilities[ranking[1]], 4)},
        "probabilities": [round(p, 4) for p in probabilities],
        "model": prediction["model"],
        "source": event["source"],
        "crop": event["crop"],
        "model_input": ["".join(SHADES[round(v * 9 / 16)] for v in features[r * 8:r * 8 + 8])
                        for r in range(8)],
        "thumbnail": base64.b64encode(_thumbnail(event["preview"], features, caption)
                                      ).decode("ascii"),
    }
