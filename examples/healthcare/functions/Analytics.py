"""Cohort analytics over de-identified clinical notes (an untrusted, third-party function).

It receives only AnonRecord's output: masked notes, never the original records. It
tags each note with the conditions and medications it mentions (whole-word, case-blind
matches against a small vocabulary) and counts them over the cohort, with the PHI types
that were masked. The tagged notes are the research data set it hands on.

Event: ``{"records": [{"record_id", "note", "masked"}, ...]}``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

# canonical name -> the phrases that mention it
CONDITIONS = {
    "asthma": ("asthma",),
    "chest pain": ("chest pain",),
    "type 2 diabetes": ("type 2 diabetes", "t2dm"),
    "hypertension": ("hypertension", "high blood pressure"),
    "migraine": ("migraine", "migraines"),
    "pneumonia": ("pneumonia",),
    "rash": ("rash",),
}
MEDICATIONS = {
    "albuterol": ("albuterol",),
    "atorvastatin": ("atorvastatin",),
    "lisinopril": ("lisinopril",),
    "metformin": ("metformin",),
    "sumatriptan": ("sumatriptan",),
}


def _patterns(vocabulary: Mapping[str, tuple[str, ...]]) -> dict[str, re.Pattern[str]]:
    return {name: re.compile(r"\b(?:" + "|".join(map(re.escape, phrases)) + r")\b",
                             re.IGNORECASE)
            for name, phrases in vocabulary.items()}


CONDITION_PATTERNS = _patterns(CONDITIONS)
MEDICATION_PATTERNS = _patterns(MEDICATIONS)


def _mentions(text: str, patterns: dict[str, re.Pattern[str]]) -> list[str]:
    return sorted(name for name, pattern in patterns.items() if pattern.search(text))


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    dataset: list[dict[str, Any]] = []
    conditions: Counter[str] = Counter()
    medications: Counter[str] = Counter()
    masked: Counter[str] = Counter()
    for record in event["records"]:
        tagged = {**record, "conditions": _mentions(record["note"], CONDITION_PATTERNS),
                  "medications": _mentions(record["note"], MEDICATION_PATTERNS)}
        conditions.update(tagged["conditions"])
        medications.update(tagged["medications"])
        masked.update(record["masked"])
        dataset.append(tagged)
    return {
        "records_analysed": len(dataset),
        "conditions": dict(sorted(conditions.items())),
        "medications": dict(sorted(medications.items())),
        "masked_phi": dict(sorted(masked.items())),
        "dataset": dataset,
    }
