"""Rule-based detection of protected health information (PHI) in clinical text.

This is the detector behind the local Comprehend Medical stand-in
(``comprehend_medical.py``). Amazon's ``DetectPHI`` is a trained model with no local
edition; this module finds the same entity types with regular expressions and a few
context rules, so the healthcare example can run offline against a real endpoint that
does real detection. It is precise on the formats it knows and blind to everything else:
do not use it to de-identify real patient data.

What it finds (entity ``Type`` as Comprehend Medical names it):

- ``NAME``: capitalised names after a title (``Dr. Alan Whitfield``, ``Ms. Gonzalez``),
  after a label or relation (``Patient: Maria Gonzalez``, ``daughter Susan King``), or
  starting with a common given name (``Emily Chen``); then every later standalone use of
  a surname already found. Titles are not part of the entity.
- ``DATE``: ``04/12/1961``, ``1/2/24``, ``2024-01-18``, ``March 2, 2024``, ``Feb 14``,
  ``14 February 2024``.
- ``ID``: social security numbers (``123-45-6789``) and labelled identifiers (``MRN``,
  ``Member ID``, ``Account No.``, ... followed by a value with at least one digit).
- ``PHONE_OR_FAX``: North American numbers (``(217) 555-0142``, ``555-867-5309``,
  ``312.555.0199``, ``+1 617 555 0123``).
- ``EMAIL`` and ``URL``.
- ``ADDRESS``: a street number, capitalised street name and suffix, with an optional unit
  and an optional ``, City, ST 12345`` tail.
- ``AGE``: the number in ``62-year-old``, ``34 year old``, ``45 y/o``, ``age 71``,
  ``aged 29``.

Entities never overlap: where two rules match overlapping text, the longer match wins
(then the earlier rule in :data:`RULES`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

# A capitalised name token: Smith, O'Neil, McDonald, Smith-Jones.
_TOKEN = r"(?:[A-Z]'|Mc|Mac)?[A-Z][a-z]+(?:-[A-Z][a-z]+)?"

_MONTHS = (r"(?:January|February|March|April|May|June|July|August|September|October|"
           r"November|December|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept|Sep|Oct|Nov|Dec)\.?")

# Given names that start a name without any title or label (a small, common sample).
GIVEN_NAMES = frozenset("""
    Aaron Adam Aisha Alan Albert Alice Amanda Amy Andrew Angela Anna Anthony Arjun
    Barbara Benjamin Betty Brian Carlos Carol Catherine Charles Christopher Daniel David
    Deborah Diana Donald Dorothy Edward Elena Elizabeth Emily Emma Eric Fatima Frank
    Gary George Grace Hannah Helen Henry Isabella Jack James Jane Jason Jennifer Jessica
    John Jose Joseph Joshua Juan Julia Karen Kenneth Kevin Laura Linda Lisa Luis Margaret
    Maria Mark Mary Matthew Mei Michael Michelle Mohammed Nancy Nicole Noah Olivia Patricia
    Paul Peter Priya Rachel Raj Rebecca Richard Robert Ronald Rosa Ryan Samuel Sandra Sarah
    Sofia Steven Susan Thomas Timothy Wei William Yuki Zoe
""".split())

# Capitalised words that end a name: a title rule must not swallow "Monday" or "Clinic".
_NOT_NAMES = frozenset("""
    Monday Tuesday Wednesday Thursday Friday Saturday Sunday January February March April
    May June July August September October November December Hospital Clinic Center
    Centre Medical Emergency Department Unit Ward Patient Pharmacy
""".split())

_LABELS = (r"(?i:patient(?: name)?|name|emergency contact|contact|physician|attending|"
           r"provider|guardian|daughter|son|wife|husband|mother|father|spouse|sister|brother)")

_STREET_SUFFIX = (r"(?:Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Court|"
                  r"Ct|Way|Place|Pl|Terrace|Parkway|Pkwy|Highway|Hwy|Circle|Square)")


@dataclass(frozen=True)
class Rule:
    type: str
    pattern: re.Pattern[str]
    score: float
    min_words: int = 1  # a name rule that needs "first last" still needs it after trimming


def _rule(type_: str, pattern: str, score: float, min_words: int = 1) -> Rule:
    return Rule(type_, re.compile(pattern), score, min_words)


# Order matters only to break ties between equally long overlapping matches.
RULES: tuple[Rule, ...] = (
    _rule("EMAIL", r"(?P<v>\b[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,})\b",
          0.99),
    _rule("URL", r"(?P<v>\bhttps?://[^\s,;)]+[^\s,;).])", 0.99),
    _rule("ID", r"(?P<v>\b\d{3}-\d{2}-\d{4})\b", 0.98),
    _rule("ID", r"\b(?:MRN|SSN|Medical Record (?:Number|No\.?)|Member ID|Patient ID|"
                r"Account (?:Number|No\.?)|Acct\.?|Policy (?:Number|No\.?)|Insurance ID|ID)"
                r"\s*(?:#|:|No\.?)?\s*(?P<v>(?=[A-Z-]*\d)[A-Z0-9][A-Z0-9-]{3,}[A-Z0-9])\b", 0.97),
    _rule("PHONE_OR_FAX",
          r"(?P<v>(?:\+1[\s.-]?)?(?:\(\d{3}\)\s?|\b\d{3}[\s.-])\d{3}[\s.-]\d{4})\b", 0.97),
    _rule("DATE", r"(?P<v>\b(?:\d{1,2}[/-]\d{1,2}[/-](?:\d{4}|\d{2})|\d{4}-\d{2}-\d{2}))\b",
          0.97),
    _rule("DATE", rf"(?P<v>\b{_MONTHS}\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s+\d{{4}})?)\b", 0.96),
    _rule("DATE", rf"(?P<v>\b\d{{1,2}}(?:st|nd|rd|th)?\s+{_MONTHS},?\s+\d{{4}})\b", 0.96),
    _rule("ADDRESS",
          rf"(?P<v>\b\d{{1,6}}\s+(?:{_TOKEN}\s+){{1,4}}{_STREET_SUFFIX}\b"
          r"(?:,?\s+(?:Apt|Suite|Unit|#)\.?\s*[A-Za-z0-9]+)?"
          r"(?:,\s+(?:[A-Z][a-z]+\s){0,2}[A-Z][a-z]+,?\s+[A-Z]{2}(?:\s+\d{5}(?:-\d{4})?)?\b)?)",
          0.93),
    _rule("AGE", r"\b(?P<v>\d{1,3})(?:\s*-?\s*(?:years?|yrs?)\s*-?\s*old\b|\s*(?:y/o|yo)\b)",
          0.95),
    _rule("AGE", r"\b(?i:age|aged)\s*:?\s*(?P<v>\d{1,3})\b", 0.93),
    _rule("NAME", rf"\b(?:Mr|Mrs|Ms|Miss|Mx|Dr|Prof|Doctor|Nurse)\.?\s+"
                  rf"(?P<v>{_TOKEN}(?:\s+{_TOKEN}){{0,2}})", 0.95),
    _rule("NAME", rf"\b{_LABELS}\s*:?\s+(?P<v>{_TOKEN}(?:\s+{_TOKEN}){{1,2}})", 0.9,
          min_words=2),
    _rule("NAME", rf"\b(?P<v>(?:{'|'.join(sorted(GIVEN_NAMES))})(?:\s+{_TOKEN}){{1,2}})\b",
          0.88, min_words=2),
)
SURNAME_SCORE = 0.85


@dataclass(frozen=True)
class Entity:
    type: str
    begin: int
    end: int
    score: float
    text: str


def _trim_name(text: str) -> str:
    """Cut a name before the first word that is not part of a name ("Whitfield Monday")."""
    kept: list[str] = []
    for word in text.split():
        if word in _NOT_NAMES:
            break
        kept.append(word)
    return " ".join(kept)


def _candidates(text: str) -> Iterator[tuple[Entity, int]]:
    for rank, rule in enumerate(RULES):
        for match in rule.pattern.finditer(text):
            begin, end = match.span("v")
            value = text[begin:end]
            if rule.type == "NAME":
                value = _trim_name(value)
                if len(value.split()) < rule.min_words:
                    continue
                end = begin + len(value)
            yield Entity(rule.type, begin, end, rule.score, value), rank


def _resolve(found: list[tuple[Entity, int]]) -> list[Entity]:
    """Keep the longest of overlapping matches (the earlier rule on a tie), in text order."""
    kept: list[Entity] = []
    for entity, _ in sorted(found, key=lambda f: (-(f[0].end - f[0].begin), f[1], f[0].begin)):
        if all(entity.end <= k.begin or entity.begin >= k.end for k in kept):
            kept.append(entity)
    return sorted(kept, key=lambda e: e.begin)


def _surname_mentions(text: str, names: list[Entity]) -> Iterator[tuple[Entity, int]]:
    """Later standalone uses of a surname found in a full name ("Gonzalez agrees")."""
    surnames = {n.text.split()[-1] for n in names if n.type == "NAME"}
    for surname in surnames:
        for match in re.finditer(rf"\b{re.escape(surname)}\b", text):
            yield Entity("NAME", match.start(), match.end(), SURNAME_SCORE, surname), len(RULES)


def detect_phi(text: str) -> list[Entity]:
    """Every PHI entity in ``text``, in order, none overlapping."""
    first = _resolve(list(_candidates(text)))
    # Surnames only fill gaps: a longer entity already covering the text wins.
    return _resolve([(e, 0) for e in first] + list(_surname_mentions(text, first)))
