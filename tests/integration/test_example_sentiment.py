"""The sentiment example end to end, against local AWS endpoints.

The workflow runs through the real CLI (``python -m faastlane run``) with the
configuration ``examples/local-aws/start`` prints: the functions' boto3 clients reach
``moto_server``, where an SQS queue subscribed to the review topic collects what was
published.

``expected.json`` is written by hand: each review's label follows from the VADER lexicon
entries of its words and VADER's documented thresholds (compound >= 0.05 positive,
<= -0.05 negative); the README's table shows the reasoning per review. Besides the
workflow's output, the tests read what landed in DynamoDB and in the topic's queue.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from .apps import faastlane
from .examples import (
    EXAMPLES,
    assert_plain_lambda_handlers,
    copy_example,
    load_module,
    run_example_ok,
)
from .local_aws import (
    LocalAws,
    fresh_aws,  # noqa: F401  (a pytest fixture)
    local_aws_endpoints,  # noqa: F401  (a pytest fixture)
)

APP = EXAMPLES / "sentiment"
INPUT = APP / "input.json"
THRESHOLD = 0.05  # VADER's documented boundary between neutral and polar


def _read(name: str) -> Any:
    return json.loads((APP / name).read_text(encoding="utf-8"))


REQUEST = _read("input.json")
REVIEWS = {r["review_id"]: r for r in REQUEST["reviews"]}
EXPECTED = _read("expected.json")


def _model_for(review: dict[str, Any]) -> str:
    return "vader-electronics" if review["category"] == "electronics" else "vader"


def _run(aws: LocalAws, *args: str, **env: str | None) -> Any:
    return run_example_ok("sentiment", *args, env=aws.environment(**env)).json


def _published(aws: LocalAws) -> dict[str, dict[str, Any]]:
    """Review id -> SNS notification, from the queue subscribed to the topic."""
    notifications = aws.drain_queue(aws.exports["SENTIMENT_REVIEW_QUEUE"])
    by_review = {json.loads(n["Message"])["review_id"]: n for n in notifications}
    assert len(by_review) == len(notifications), "a review was published twice"
    return by_review


# --- the workflow, run by the CLI ---------------------------------------------------------

@pytest.mark.parametrize("isolation", ["none", "process", "mpk"])
def test_report_table_and_topic_match_the_hand_derived_labels(
        aws: LocalAws, isolation: str) -> None:
    report = _run(aws, "--input-file", str(INPUT), "--isolation", isolation)
    assert report == EXPECTED
    check_table_and_topic(aws)


def check_table_and_topic(aws: LocalAws) -> None:
    """What a run of input.json leaves in DynamoDB and on the topic (the deploy tests
    check the deployed action with it too)."""
    stored = aws.items(aws.exports["SENTIMENT_TABLE"])
    assert sorted(stored) == EXPECTED["positive"]
    for review_id, item in stored.items():
        review = REVIEWS[review_id]
        assert {k: item[k] for k in review} == review
        assert item["batch_id"] == REQUEST["batch_id"]
        assert item["model"] == _model_for(review)
        assert item["compound"] >= THRESHOLD

    published = _published(aws)
    assert sorted(published) == EXPECTED["negative"]
    for review_id, notification in published.items():
        review = REVIEWS[review_id]
        assert notification["TopicArn"] == aws.exports["SENTIMENT_TOPIC_ARN"]
        assert notification["Subject"] == f"Negative review {review_id} of {review['product_id']}"
        message = json.loads(notification["Message"])
        assert {k: message[k] for k in review} == review
        assert message["model"] == _model_for(review)
        assert message["compound"] <= -THRESHOLD
        attributes = {k: v["Value"] for k, v in notification["MessageAttributes"].items()}
        assert attributes == {"product_id": review["product_id"], "category": review["category"]}


def test_neutral_reviews_leave_no_trace(aws: LocalAws) -> None:
    neutral = [REVIEWS[rid] for rid in EXPECTED["neutral"]]
    request = {"batch_id": "neutral-only", "reviews": neutral}
    report = _run(aws, "--input", json.dumps(request), "--isolation", "none")
    assert report["neutral"] == EXPECTED["neutral"]
    assert (report["stored"], report["published"]) == (0, 0)
    assert aws.items(aws.exports["SENTIMENT_TABLE"]) == {}
    assert _published(aws) == {}


def test_unset_topic_fails_the_execution(aws: LocalAws, tmp_path: Path) -> None:
    """Without faastlane.json's SENTIMENT_TOPIC_ARN (nor the shell's), FlagNegative fails
    naming the variable."""
    app = copy_example("sentiment", tmp_path, without_environment=True)
    negative = REVIEWS[EXPECTED["negative"][0]]
    request = {"batch_id": "no-topic", "reviews": [negative]}
    done = faastlane("run", str(app), "--input", json.dumps(request), "--isolation", "none",
                     env=aws.environment(SENTIMENT_TOPIC_ARN=None))
    assert done.code == 1, done.stdout + done.stderr
    failure = json.loads(done.stdout)
    assert failure["Error"] == "RuntimeError"
    assert "SENTIMENT_TOPIC_ARN" in failure["Cause"]
    assert _published(aws) == {}


def test_the_names_come_from_the_functions_configuration(aws: LocalAws) -> None:
    """faastlane.json gives StorePositive its table and FlagNegative its topic (Lambda's
    Environment.Variables): the shell's values are neither needed nor used."""
    done = run_example_ok("sentiment", "--input-file", str(APP / "input.json"),
                          env=aws.environment(SENTIMENT_TABLE="not-the-table",
                                              SENTIMENT_TOPIC_ARN=None))
    assert json.loads(done.stdout) == EXPECTED
    check_table_and_topic(aws)


# --- the two models on their own ---------------------------------------------------------

def _function(name: str) -> ModuleType:
    return load_module(APP / "functions" / f"{name}.py", f"sentiment_{name}")


@pytest.mark.parametrize("review_id", ["rv-002", "rv-003", "rv-010", "rv-014"])
def test_electronics_reviews_need_the_electronics_lexicon(review_id: str) -> None:
    """These reviews' sentiment words are missing from stock VADER's lexicon (or, for
    "freezes", carry only -0.1), so the stock model calls them neutral."""
    text = REVIEWS[review_id]["text"]
    general = _function("ScoreGeneral").handler({"text": text}, None)
    electronics = _function("ScoreElectronics").handler({"text": text}, None)
    assert abs(general["compound"]) < THRESHOLD
    assert abs(electronics["compound"]) >= THRESHOLD
    expected_sign = 1 if review_id in EXPECTED["positive"] else -1
    assert electronics["compound"] * expected_sign > 0
    assert (general["model"], electronics["model"]) == ("vader", "vader-electronics")


def test_the_electronics_lexicon_does_not_leak_into_the_general_model() -> None:
    # Both models live in one process when isolation is "none".
    electronics = _function("ScoreElectronics")
    general = _function("ScoreGeneral")
    assert electronics.handler({"text": "It overheats."}, None)["compound"] <= -THRESHOLD
    assert general.handler({"text": "It overheats."}, None)["compound"] == 0.0


# --- the app's shape ---------------------------------------------------------------------

def test_expected_report_is_consistent_with_the_input() -> None:
    labelled = EXPECTED["positive"] + EXPECTED["negative"] + EXPECTED["neutral"]
    assert sorted(labelled) == sorted(REVIEWS) and len(labelled) == len(set(labelled))
    assert EXPECTED["reviews"] == len(REVIEWS)
    assert (EXPECTED["stored"], EXPECTED["published"]) == (len(EXPECTED["positive"]),
                                                           len(EXPECTED["negative"]))
    for model, ids in EXPECTED["by_model"].items():
        assert ids == [rid for rid in REVIEWS if _model_for(REVIEWS[rid]) == model]


def test_functions_are_plain_lambda_handlers() -> None:
    sources = sorted((APP / "functions").glob("*.py"))
    assert {p.stem for p in sources} == {"ScoreGeneral", "ScoreElectronics", "StorePositive",
                                         "FlagNegative", "Summarize"}
    assert_plain_lambda_handlers(sources, requirements={"boto3", "vaderSentiment"})
    assert set(_read("faastlane.json")["trusted"]) == {p.stem for p in sources}
