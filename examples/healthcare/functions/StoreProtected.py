"""Store a consenting patient's record in the protected DynamoDB table.

The item keeps the PHI apart from the clinical text: ``phi`` lists every entity found,
and ``stripped_note`` is the note with each entity replaced by a reference to it
(``[NAME#0]``, ``[DATE#1]``, ...), so the full note can be rebuilt by whoever may read
the PHI, and the text alone identifies no one.

The table's name comes from the function's environment, ``HEALTHCARE_TABLE`` (its key is
``record_id``, a string); the endpoint and credentials are standard AWS configuration.

Event: the record with ``phi`` = PHIIdentifier's result. Result: ``{"record_id",
"stored": true}``.
"""

from __future__ import annotations

import os
from typing import Any

import boto3

dynamodb = boto3.client("dynamodb")


def stripped(note: str, entities: list[dict[str, Any]]) -> str:
    parts: list[str] = []
    position = 0
    for index, entity in enumerate(entities):
        # An entity overlapping the previous one shares its place in the text.
        parts.append(note[position:max(position, entity["BeginOffset"])])
        parts.append(f"[{entity['Type']}#{index}]")
        position = max(position, entity["EndOffset"])
    parts.append(note[position:])
    return "".join(parts)


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    table = os.environ.get("HEALTHCARE_TABLE")
    if not table:
        raise RuntimeError("HEALTHCARE_TABLE is not set: name the DynamoDB table for "
                           "protected records in the function's environment")
    entities = sorted(event["phi"]["entities"], key=lambda e: e["BeginOffset"])
    phi = [{"M": {"index": {"N": str(i)}, "type": {"S": e["Type"]}, "text": {"S": e["Text"]},
                  "begin": {"N": str(e["BeginOffset"])}, "end": {"N": str(e["EndOffset"])},
                  "score": {"N": repr(float(e["Score"]))}}}
           for i, e in enumerate(entities)]
    dynamodb.put_item(TableName=table, Item={
        "record_id": {"S": event["record_id"]},
        "consent": {"S": event["consent"]},
        "stripped_note": {"S": stripped(event["note"], entities)},
        "phi": {"L": phi},
    })
    return {"record_id": event["record_id"], "stored": True}
