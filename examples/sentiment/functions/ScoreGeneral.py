"""Score a review's sentiment with VADER as it ships (the model for most products).

VADER (Hutto and Gilbert, 2014) is a rule-based model: a lexicon of word valences plus
rules for negation, intensifiers, "but", capitals and punctuation. The lexicon ships
inside the ``vaderSentiment`` package, so nothing is downloaded.

Event: ``{"text": "..."}``. Result: ``{"model": "vader", "compound", "pos", "neu",
"neg"}``; ``compound`` is in [-1, 1] and the workflow's Choice applies VADER's documented
thresholds (positive >= 0.05, negative <= -0.05).
"""

from __future__ import annotations

from typing import Any

from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

MODEL = "vader"
analyzer = SentimentIntensityAnalyzer()  # loads the lexicon once per container


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    scores = analyzer.polarity_scores(event["text"])
    return {"model": MODEL, **{key: scores[key] for key in ("compound", "pos", "neu", "neg")}}
