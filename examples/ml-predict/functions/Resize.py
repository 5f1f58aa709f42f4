"""Resize: a large photo of a handwritten digit -> the model's 8x8 input.

The model was trained on scikit-learn's digits (UCI "optdigits"): each digit there was
cropped, scaled to fill a 32x32 box keeping its aspect ratio, centred, binarised, and
every 4x4 block's inked pixels counted, giving 8x8 levels 0-16. This function does the
same to a photo: find the ink (Otsu's threshold on a denoised grey copy), crop it, fit it
into a square, and average the ink over an 8x8 grid. It also returns a small greyscale
preview of the crop, so that nothing after it needs the large image.
"""

from __future__ import annotations

import base64
import binascii
import io
from typing import Any

import numpy as np
from PIL import Image, ImageFilter, ImageOps, UnidentifiedImageError

FORMATS = ("PNG", "JPEG")
MAX_PIXELS = 40_000_000  # refuse decompression bombs before decoding them
WORK_SIDE = 640          # find the ink on a copy this big: plenty for an 8x8 result
MIN_CONTRAST = 40        # grey levels between paper and ink; less means no ink at all
PREVIEW = 96


class InvalidImage(Exception):
    """The input is not a PNG or JPEG image this function can read."""


class NoDigitFound(Exception):
    """The image has no ink that could be a digit."""


def _decode(event: dict[str, Any]) -> tuple[Image.Image, int]:
    if not isinstance(event, dict) or "image" not in event:
        raise InvalidImage("the event has no 'image' (base64 PNG or JPEG data)")
    try:
        data = base64.b64decode(event["image"], validate=True)
    except (TypeError, binascii.Error) as exc:
        raise InvalidImage(f"'image' must be base64 image data: {exc}") from None
    try:
        image = Image.open(io.BytesIO(data))
        if image.format not in FORMATS:
            raise InvalidImage(f"unsupported image format {image.format}; use PNG or JPEG")
        if image.width * image.height > MAX_PIXELS:
            raise InvalidImage(f"{image.width}x{image.height} is more than "
                               f"{MAX_PIXELS} pixels")
        image.load()
    except (UnidentifiedImageError, Image.DecompressionBombError, OSError) as exc:
        raise InvalidImage(f"cannot decode the image: {exc}") from None
    return image, len(data)


def _otsu(grey: np.ndarray) -> int:
    """The threshold that best separates the two populations of grey levels."""
    counts = np.bincount(grey.ravel(), minlength=256).astype(np.float64)
    levels = np.arange(256, dtype=np.float64)
    below = np.cumsum(counts)
    above = below[-1] - below
    mean_below = np.cumsum(counts * levels) / np.maximum(below, 1)
    mean_above = ((counts * levels).sum() - np.cumsum(counts * levels)) / np.maximum(above, 1)
    between = below * above * (mean_below - mean_above) ** 2
    return int(np.argmax(between))


def _ink(photo: Image.Image) -> tuple[np.ndarray, float]:
    """The ink mask of a reduced, denoised copy of a grey photo, and that copy's scale."""
    grey = photo
    scale = min(1.0, WORK_SIDE / max(grey.size))
    if scale < 1.0:
        grey = grey.resize((round(grey.width * scale), round(grey.height * scale)),
                           Image.Resampling.BOX)
    # A median filter removes sensor speckle; a wide blur estimates the uneven lighting,
    # which is divided out so that one threshold fits the whole page.
    pixels = np.asarray(grey.filter(ImageFilter.MedianFilter(3)), dtype=np.float64)
    light = np.asarray(grey.filter(ImageFilter.GaussianBlur(max(grey.size) / 8)),
                       dtype=np.float64)
    flat = np.clip(pixels / np.maximum(light, 1) * 200, 0, 255).astype(np.uint8)
    threshold = _otsu(flat)
    ink, paper = flat[flat <= threshold], flat[flat > threshold]
    if ink.size == 0 or paper.size == 0 or paper.mean() - ink.mean() < MIN_CONTRAST:
        raise NoDigitFound("the image has no ink darker than the paper")
    return flat <= threshold, scale


def _crop_box(mask: np.ndarray) -> tuple[int, int, int, int]:
    """Left, top, right, bottom of the ink, ignoring specks far smaller than a stroke."""
    rows = np.flatnonzero(mask.sum(axis=1) >= 2)
    cols = np.flatnonzero(mask.sum(axis=0) >= 2)
    if rows.size == 0 or cols.size == 0:
        raise NoDigitFound("no ink stroke found")
    return int(cols[0]), int(rows[0]), int(cols[-1]) + 1, int(rows[-1]) + 1


def _square(mask: Image.Image) -> Image.Image:
    """The crop centred in a square whose side is its longer edge (aspect kept)."""
    side = max(mask.size)
    canvas = Image.new("L", (side, side), 0)
    canvas.paste(mask, ((side - mask.width) // 2, (side - mask.height) // 2))
    return canvas


def _preview(photo: Image.Image, box: list[float]) -> Image.Image:
    """A PREVIEW x PREVIEW greyscale square around ``box``; white beyond the photo's edge."""
    left, top, right, bottom = box
    half = 0.65 * max(right - left, bottom - top)
    cx, cy = (left + right) / 2, (top + bottom) / 2
    square = [round(cx - half), round(cy - half), round(cx + half), round(cy + half)]
    inside = (max(square[0], 0), max(square[1], 0),
              min(square[2], photo.width), min(square[3], photo.height))
    canvas = Image.new("L", (square[2] - square[0], square[3] - square[1]), 255)
    canvas.paste(photo.crop(inside), (inside[0] - square[0], inside[1] - square[1]))
    return canvas.resize((PREVIEW, PREVIEW), Image.Resampling.LANCZOS)


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    image, size = _decode(event)
    photo = ImageOps.exif_transpose(image).convert("L")  # as the camera held it
    mask, scale = _ink(photo)
    left, top, right, bottom = _crop_box(mask)
    ink = Image.fromarray(mask[top:bottom, left:right].astype(np.uint8) * 255, "L")
    cells = np.asarray(_square(ink).resize((8, 8), Image.Resampling.BOX), dtype=np.float64)
    features = np.rint(cells * 16 / 255).astype(int)

    # The preview is a square around the ink, with a margin, cut from the photo itself.
    preview = _preview(photo, [v / scale for v in (left, top, right, bottom)])
    buffer = io.BytesIO()
    preview.save(buffer, format="PNG")
    return {
        "image_id": event.get("image_id"),
        "features": features.ravel().tolist(),
        "source": {"format": image.format, "width": image.width, "height": image.height,
                   "bytes": size},
        "crop": [round(v / scale) for v in (left, top, right, bottom)],
        "preview": base64.b64encode(buffer.getvalue()).decode("ascii"),
    }
