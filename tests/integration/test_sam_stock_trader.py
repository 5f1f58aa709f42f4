"""The SAM-shaped example, ``examples/stock-trader`` (the Step Functions "Stock Trader"
sample as ``sam init`` generates it for Python, plus an SNS topic the trade is announced
on), run unmodified through ``faastlane run template.yaml``.

Against moto's server (``examples/local-aws/start``, on a loopback port): the run creates
the template's table and topic under their stack-derived names, the DynamoDB ``putItem``
Task writes the trade, and the SNS ``publish`` Task's message reaches an SQS queue the
test subscribed to the topic. With no endpoint set, the run brings its own local AWS.
"""

from __future__ import annotations

import json
from typing import Any

from faastlane.app.project.resources import generated_name

from .apps import faastlane
from .examples import EXAMPLES
from .local_aws import (
    LocalAws,
    clean_environment,
    fresh_aws,  # noqa: F401  (a pytest fixture)
    local_aws_endpoints,  # noqa: F401  (a pytest fixture)
)

TEMPLATE = EXAMPLES / "stock-trader" / "template.yaml"
STACK = "stock-trader"  # the template's folder: the stack's default name
TABLE = generated_name(STACK, "TransactionTable")
TOPIC = generated_name(STACK, "TradeTopic", 256)
INBOX = "stock-trader-inbox"


def _subscribe_inbox(aws: LocalAws) -> str:
    """A queue subscribed to the trade topic (created first: the run finds it)."""
    sns, sqs = aws.client("sns"), aws.client("sqs")
    topic = sns.create_topic(Name=TOPIC)["TopicArn"]
    url = sqs.create_queue(QueueName=INBOX)["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])[
        "Attributes"]["QueueArn"]
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=queue_arn)
    return topic


def _check_trade(trade: dict[str, Any]) -> None:
    price = int(trade["price"])
    assert 0 <= price <= 100 and 1 <= int(trade["qty"]) <= 10
    # Buy or Sell?: NumericLessThanEquals 50 buys, anything else sells.
    assert trade["type"] == ("buy" if price <= 50 else "sell")


def test_stock_trader_records_the_trade_and_announces_it(aws: LocalAws) -> None:
    topic = _subscribe_inbox(aws)
    done = faastlane("run", str(TEMPLATE), env=aws.environment())
    assert done.code == 0, done.stderr
    # The last state is the SNS publish: its result, in the shape Step Functions gives.
    output = done.json
    assert set(output) >= {"MessageId", "SdkHttpMetadata", "SdkResponseMetadata"}
    items = aws.items(TABLE)
    assert len(items) == 1
    (trade_id, item), = items.items()
    _check_trade({"price": item["Price"], "qty": item["Quantity"], "type": item["Type"]})
    assert set(item) == {"Id", "Type", "Price", "Quantity", "Timestamp"}
    envelope, = aws.drain_queue(INBOX)
    assert envelope["TopicArn"] == topic and envelope["Subject"] == "Stock trade"
    assert envelope["MessageId"] == output["MessageId"]
    announced = json.loads(envelope["Message"])
    assert announced["id"] == trade_id
    assert (int(announced["price"]), int(announced["qty"]), announced["type"]) == (
        item["Price"], item["Quantity"], item["Type"])


def test_stock_trader_validates_as_sam_generates_it() -> None:
    done = faastlane("validate", str(TEMPLATE))
    assert done.code == 0, done.stdout
    assert done.stdout.strip() == f"{TEMPLATE} is valid (state machine StockTradingStateMachine)"


def test_stock_trader_runs_with_no_endpoint_on_its_own_local_aws() -> None:
    done = faastlane("run", str(TEMPLATE), env=clean_environment())
    assert done.code == 0, done.stderr
    assert "MessageId" in done.json
    assert "local AWS (moto) at http://127.0.0.1:" in done.stderr
