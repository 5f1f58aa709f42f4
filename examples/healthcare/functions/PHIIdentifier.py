"""Find the protected health information (PHI) in a clinical note with Comprehend Medical.

An ordinary Lambda handler. It calls ``DetectPHI`` through boto3 exactly as on AWS; where
the endpoint is, is standard AWS configuration (``AWS_ENDPOINT_URL_COMPREHENDMEDICAL``
points it at the local stand-in in ``examples/local-aws``).

Event: ``{"text": "..."}``. Result: ``{"entities": [{"Type", "Text", "BeginOffset",
"EndOffset", "Score"}, ...]}`` in text order, offsets into the whole note.
"""

from __future__ import annotations

from typing import Any

import boto3

# Created once per container, reused by every invocation (Lambda's usual pattern).
comprehend_medical = boto3.client("comprehendmedical")

MAX_TEXT = 20_000  # DetectPHI's limit on one request, in characters
MIN_SCORE = 0.5  # entities the service is less sure of are not treated as PHI
KEPT = ("Type", "Text", "BeginOffset", "EndOffset", "Score")


def chunks(text: str, limit: int = MAX_TEXT) -> list[tuple[int, str]]:
    """Split at whitespace into pieces of at most ``limit`` characters, with their offsets.

    Splitting at whitespace keeps a name or a phone number whole in one request.
    """
    pieces: list[tuple[int, str]] = []
    start = 0
    while len(text) - start > limit:
        cut = max(text.rfind(" ", start, start + limit), text.rfind("\n", start, start + limit))
        cut = cut + 1 if cut > start else start + limit  # one unbroken word: hard cut
        pieces.append((start, text[start:cut]))
        start = cut
    if start < len(text):
        pieces.append((start, text[start:]))
    return pieces


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    entities: list[dict[str, Any]] = []
    for offset, piece in chunks(event["text"]):
        if not piece.strip():
            continue
        response = comprehend_medical.detect_phi(Text=piece)
        for entity in response["Entities"]:
            if entity["Score"] < MIN_SCORE:
                continue
            found = {key: entity[key] for key in KEPT}
            found["BeginOffset"] += offset
            found["EndOffset"] += offset
            entities.append(found)
    entities.sort(key=lambda e: e["BeginOffset"])
    return {"entities": entities}
