"""Score an electronics review with VADER extended by an electronics lexicon.

Stock VADER misses how people complain about devices: "overheats", "laggy" and
"bricked" are not in its lexicon, and "freezes" carries the weather's near-neutral
valence (-0.1). This model adds those terms with valences on VADER's -4..+4 scale,
chosen to match comparable stock entries ("crash" -1.7, "broken" -2.1, "responsive" 1.5).

Event: ``{"text": "..."}``. Result: ``{"model": "vader-electronics", "compound", "pos",
"neu", "neg"}``.
"""

from __future__ import annotations

from typing import Any

from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

MODEL = "vader-electronics"
ELECTRONICS_LEXICON = {
    "bricked": -2.8,
    "buggy": -1.7,
    "crashes": -1.9,
    "crashing": -1.9,
    "flimsy": -1.6,
    "freezes": -1.6,
    "freezing": -1.6,
    "glitchy": -1.7,
    "laggy": -1.8,
    "overheats": -2.1,
    "overheating": -2.1,
    "crisp": 1.4,
    "snappy": 1.7,
    "sturdy": 1.5,
}
analyzer = SentimentIntensityAnalyzer()
analyzer.lexicon.update(ELECTRONICS_LEXICON)


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    scores = analyzer.polarity_scores(event["text"])
    return {"model": MODEL, **{key: scores[key] for key in ("compound", "pos", "neu", "neg")}}
