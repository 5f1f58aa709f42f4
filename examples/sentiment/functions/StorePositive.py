"""Keep a positive review in DynamoDB, with the score that put it there.

The table's name comes from the function's environment, ``SENTIMENT_TABLE`` (key
``review_id``, a string); endpoint and credentials are standard AWS configuration.

Event: ``{"batch_id", "review": {...}, "sentiment": {"model", "compound", ...}}``.
"""

from __future__ import annotations

import os
from typing import Any

import boto3

dynamodb = boto3.client("dynamodb")


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    table = os.environ.get("SENTIMENT_TABLE")
    if not table:
        raise RuntimeError("SENTIMENT_TABLE is not set: name the DynamoDB table for "
                           "positive reviews in the function's environment")
    review, sentiment = event["review"], event["sentiment"]
    dynamodb.put_item(TableName=table, Item={
        "review_id": {"S": review["review_id"]},
        "batch_id": {"S": event["batch_id"]},
        "product_id": {"S": review["product_id"]},
        "category": {"S": review["category"]},
        "rating": {"N": str(review["rating"])},
        "text": {"S": review["text"]},
        "model": {"S": sentiment["model"]},
        "compound": {"N": repr(float(sentiment["compound"]))},
    })
    return {"review_id": review["review_id"], "sentiment": "positive",
            "model": sentiment["model"], "action": "stored"}
