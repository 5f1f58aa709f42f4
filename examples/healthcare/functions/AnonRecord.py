"""Mask the PHI in a clinical note for research use.

Every entity PHIIdentifier found is replaced by its type in brackets (``[NAME]``,
``[DATE]``, ...); unlike StoreProtected's references, the mask keeps no way back to the
original text. The result is all that the untrusted Analytics function ever receives.

Event: the record with ``phi`` = PHIIdentifier's result. Result: ``{"record_id",
"note": the masked note, "masked": {type: count}}``.
"""

from __future__ import annotations

from collections import Counter
from typing import Any


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    note: str = event["note"]
    masked: list[str] = []
    counts: Counter[str] = Counter()
    position = 0
    for entity in sorted(event["phi"]["entities"], key=lambda e: e["BeginOffset"]):
        begin, end = entity["BeginOffset"], entity["EndOffset"]
        if begin < position:  # overlaps the previous entity: already masked with it
            position = max(position, end)
            continue
        masked.append(note[position:begin])
        masked.append(f"[{entity['Type']}]")
        counts[entity["Type"]] += 1
        position = end
    masked.append(note[position:])
    return {"record_id": event["record_id"], "note": "".join(masked),
            "masked": dict(sorted(counts.items()))}
