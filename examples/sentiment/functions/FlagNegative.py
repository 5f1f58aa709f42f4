"""Publish a negative review to the manual-review SNS topic.

The topic's ARN comes from the function's environment, ``SENTIMENT_TOPIC_ARN``; endpoint
and credentials are standard AWS configuration. The message body is the review and its
score as JSON; ``product_id`` and ``category`` also travel as message attributes, so
subscribers can filter on them.

Event: ``{"batch_id", "review": {...}, "sentiment": {"model", "compound", ...}}``.
"""

from __future__ import annotations

import json
import os
from typing import Any

import boto3

sns = boto3.client("sns")


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    topic = os.environ.get("SENTIMENT_TOPIC_ARN")
    if not topic:
        raise RuntimeError("SENTIMENT_TOPIC_ARN is not set: give the ARN of the "
                           "manual-review topic in the function's environment")
    review, sentiment = event["review"], event["sentiment"]
    message = {"batch_id": event["batch_id"], **review, "model": sentiment["model"],
               "compound": sentiment["compound"]}
    sns.publish(
        TopicArn=topic,
        Subject=f"Negative review {review['review_id']} of {review['product_id']}"[:100],
        Message=json.dumps(message),
        MessageAttributes={
            "product_id": {"DataType": "String", "StringValue": review["product_id"]},
            "category": {"DataType": "String", "StringValue": review["category"]},
        },
    )
    return {"review_id": review["review_id"], "sentiment": "negative",
            "model": sentiment["model"], "action": "published"}
