"""The healthcare example end to end, against local AWS endpoints.

The workflow runs through the real CLI (``python -m faastlane run``) with the
configuration ``examples/local-aws/start`` prints: boto3 in the functions reaches
``moto_server`` for DynamoDB and the Comprehend Medical stand-in for ``DetectPHI``.

Expectations are written by hand from ``input.json``: ``expected-phi.json`` lists every
PHI span a reader finds in each note, ``expected.json`` the report with the masked notes.
Besides the workflow's output, the tests read what landed in DynamoDB.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
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
    run_example,
    run_example_ok,
)
from .local_aws import (
    LOCAL_AWS,
    LocalAws,
    fresh_aws,  # noqa: F401  (a pytest fixture)
    local_aws_endpoints,  # noqa: F401  (a pytest fixture)
)

APP = EXAMPLES / "healthcare"
INPUT = APP / "input.json"
STORED_CONSENTS = {"full", "store-only"}
SHARED_CONSENTS = {"full", "research-only"}


def _read(name: str) -> Any:
    return json.loads((APP / name).read_text(encoding="utf-8"))


RECORDS = {r["record_id"]: r for r in _read("input.json")["records"]}
PHI: dict[str, list[dict[str, str]]] = _read("expected-phi.json")
ALL_PHI_TEXTS = sorted({e["Text"] for spans in PHI.values() for e in spans}, key=len)


def _located(note: str, spans: list[dict[str, str]]) -> list[tuple[str, str, int, int]]:
    """(type, text, begin, end) of each expected span, found left to right in the note."""
    located, position = [], 0
    for span in spans:
        begin = note.index(span["Text"], position)
        located.append((span["Type"], span["Text"], begin, begin + len(span["Text"])))
        position = begin + len(span["Text"])
    return located


def _run_ok(aws: LocalAws, *args: str, **env: str | None) -> Any:
    return run_example_ok("healthcare", "--input-file", str(INPUT), *args,
                          env=aws.environment(**env)).json


# --- the workflow, run by the CLI ---------------------------------------------------------

def _check_protected_table(aws: LocalAws) -> None:
    items = aws.items(aws.exports["HEALTHCARE_TABLE"])
    consented = {rid for rid, r in RECORDS.items() if r["consent"] in STORED_CONSENTS}
    assert set(items) == consented == {"r-001", "r-002", "r-005"}
    for record_id, item in items.items():
        note = RECORDS[record_id]["note"]
        expected = _located(note, PHI[record_id])
        assert item["consent"] == RECORDS[record_id]["consent"]
        assert [(p["type"], p["text"], p["begin"], p["end"]) for p in item["phi"]] == expected
        assert [p["index"] for p in item["phi"]] == list(range(len(expected)))
        assert all(0.5 <= p["score"] <= 1 for p in item["phi"])
        # The stripped note is the note with each span replaced by its reference.
        stripped, position = [], 0
        for index, (type_, _, begin, end) in enumerate(expected):
            stripped += [note[position:begin], f"[{type_}#{index}]"]
            position = end
        assert item["stripped_note"] == "".join(stripped) + note[position:]


def _check_analytics_saw_only_masked_notes(analytics: dict[str, Any]) -> None:
    """Analytics hands on every field of every record it receives (its data set).

    So its output is a complete view of its input: the consenting records, each with
    only the masked note and counts, and no PHI of any patient anywhere in it.
    """
    shared = [rid for rid, r in RECORDS.items() if r["consent"] in SHARED_CONSENTS]
    assert [r["record_id"] for r in analytics["dataset"]] == shared
    assert analytics["records_analysed"] == len(shared)
    for record in analytics["dataset"]:
        assert set(record) == {"record_id", "note", "masked", "conditions", "medications"}
    seen = json.dumps(analytics)
    assert [text for text in ALL_PHI_TEXTS if text in seen] == []
    # Masking removed exactly the spans found, one placeholder per span.
    for record in analytics["dataset"]:
        spans = PHI[record["record_id"]]
        assert sum(record["masked"].values()) == len(spans)
        assert record["note"].count("[") == len(spans)


@pytest.mark.parametrize("isolation", ["none", "process", "mpk"])
def test_report_table_and_analytics_input_match_the_hand_derived_expectations(
        aws: LocalAws, isolation: str) -> None:
    report = _run_ok(aws, "--isolation", isolation)
    assert report == _read("expected.json")
    _check_protected_table(aws)
    _check_analytics_saw_only_masked_notes(report["analytics"])


def test_untrusted_analytics_runs_in_its_own_process_by_default(aws: LocalAws) -> None:
    done = run_example("healthcare", "--input-file", str(INPUT), "--trace",
                       env=aws.environment())
    assert done.code == 0, done.stderr
    assert json.loads(done.stdout) == _read("expected.json")
    lines = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    header = next(line for line in lines if line.get("trace") == "faastlane")
    assert header["isolation"] == "process"  # faastlane.json marks Analytics untrusted
    calls = [line for line in lines if line.get("type") == "Function"]
    analytics = [c for c in calls if c["function"] == "Analytics"]
    assert len(analytics) == 1 and analytics[0]["placement"] == "sandbox"
    phi_pids = {c["pid"] for c in calls if c["function"] != "Analytics"}
    assert analytics[0]["pid"] not in phi_pids
    assert len([c for c in calls if c["function"] == "PHIIdentifier"]) == len(RECORDS)


def test_the_table_name_comes_from_the_function_configuration(aws: LocalAws) -> None:
    """faastlane.json names the table for StoreProtected (Lambda's Environment.Variables):
    the shell's HEALTHCARE_TABLE is not needed, and a different one does not win."""
    report = _run_ok(aws, "--isolation", "none", HEALTHCARE_TABLE="not-the-table")
    assert report == _read("expected.json")
    _check_protected_table(aws)
    assert _read("faastlane.json")["functions"]["StoreProtected"]["environment"] == \
        {"HEALTHCARE_TABLE": aws.exports["HEALTHCARE_TABLE"]}


def test_unset_table_fails_the_execution_and_stores_nothing(aws: LocalAws,
                                                            tmp_path: Path) -> None:
    app = copy_example("healthcare", tmp_path, without_environment=True)
    done = faastlane("run", str(app), "--input-file", str(INPUT), "--isolation", "none",
                     env=aws.environment(HEALTHCARE_TABLE=None))
    assert done.code == 1, done.stdout + done.stderr
    failure = json.loads(done.stdout)
    assert failure["Error"] == "RuntimeError"
    assert "HEALTHCARE_TABLE" in failure["Cause"]
    assert aws.items(aws.exports["HEALTHCARE_TABLE"]) == {}


def test_phi_detection_really_goes_to_the_configured_endpoint(aws: LocalAws) -> None:
    closed = "http://127.0.0.1:9"  # discard port: nothing listens
    done = run_example("healthcare", "--input-file", str(INPUT), "--isolation", "none",
                       env=aws.environment(AWS_ENDPOINT_URL_COMPREHENDMEDICAL=closed,
                                           AWS_MAX_ATTEMPTS="1"))
    assert done.code == 1, done.stdout + done.stderr
    assert json.loads(done.stdout)["Error"] == "EndpointConnectionError"
    assert aws.items(aws.exports["HEALTHCARE_TABLE"]) == {}


# --- the functions and the stand-in on their own ---------------------------------------------

def _function(name: str, endpoints: LocalAws, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """Import a handler module as Lambda would, with the local endpoints configured."""
    wanted = {k: v for k, v in endpoints.environment().items() if k.startswith("AWS_")}
    for key in [k for k in os.environ if k.startswith("AWS_")]:
        monkeypatch.delenv(key)
    for key, value in wanted.items():
        monkeypatch.setenv(key, value)
    return load_module(APP / "functions" / f"{name}.py", f"healthcare_{name}")


def test_notes_longer_than_one_request_are_split_without_losing_offsets(
        local_aws: LocalAws, monkeypatch: pytest.MonkeyPatch) -> None:
    identifier = _function("PHIIdentifier", local_aws, monkeypatch)
    filler = "Vitals stable overnight, no new complaints. " * 500  # 22,000 characters
    note = f"Seen by Dr. Alan Whitfield. {filler}Call 555-867-5309 on 03/05/2024."
    assert len(note) > identifier.MAX_TEXT
    found = identifier.handler({"text": note}, None)["entities"]
    assert [(e["Type"], e["Text"]) for e in found] == [
        ("NAME", "Alan Whitfield"), ("PHONE_OR_FAX", "555-867-5309"), ("DATE", "03/05/2024")]
    for entity in found:
        assert note[entity["BeginOffset"]:entity["EndOffset"]] == entity["Text"]


def test_stand_in_enforces_the_service_limits_through_boto3(local_aws: LocalAws) -> None:
    client = local_aws.client("comprehendmedical")
    with pytest.raises(client.exceptions.TextSizeLimitExceededException):
        client.detect_phi(Text="x" * 20_001)
    answer = client.detect_phi(Text="Blood pressure 118/76, BMI 23.4, A1c 7.9%.")
    assert answer["Entities"] == []
    assert answer["ModelVersion"]


DETECTOR_CASES = [
    ("Seen by Dr. Whitfield Monday morning.", [("NAME", "Whitfield")]),
    ("Referred to Grace Hospital for imaging.", []),
    ("Stage 3 disease, see page 12 of the chart.", []),
    ("BP 118/76, pulse 72, BMI 23.4.", []),
    ("Call +1 617 555 0123 or fax (617) 555-0199.",
     [("PHONE_OR_FAX", "+1 617 555 0123"), ("PHONE_OR_FAX", "(617) 555-0199")]),
    ("Results: https://portal.example.org/patient/8812 today.",
     [("URL", "https://portal.example.org/patient/8812")]),
    ("Lives at 12 Elm St, Apt 4B, Dayton, OH 45402 with her son.",
     [("ADDRESS", "12 Elm St, Apt 4B, Dayton, OH 45402")]),
    ("Patient is an 87-year-old man; wife Mary O'Brien-Smith present.",
     [("AGE", "87"), ("NAME", "Mary O'Brien-Smith")]),
    ("DOB: 14 February 1990; seen Jan 3.", [("DATE", "14 February 1990"), ("DATE", "Jan 3")]),
    ("SSN 078-05-1120, MRN: A12-99871.", [("ID", "078-05-1120"), ("ID", "A12-99871")]),
]


@pytest.mark.parametrize("text,expected", DETECTOR_CASES)
def test_stand_in_detects_phi_formats_and_leaves_clinical_numbers_alone(
        local_aws: LocalAws, text: str, expected: list[tuple[str, str]]) -> None:
    found = local_aws.client("comprehendmedical").detect_phi(Text=text)["Entities"]
    assert [(e["Type"], e["Text"]) for e in found] == expected
    for entity in found:
        assert text[entity["BeginOffset"]:entity["EndOffset"]] == entity["Text"]


def _post(url: str, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_stand_in_speaks_the_json_protocol_and_rejects_what_the_service_rejects(
        local_aws: LocalAws) -> None:
    url = local_aws.exports["AWS_ENDPOINT_URL_COMPREHENDMEDICAL"] + "/"
    signed = {"Content-Type": "application/x-amz-json-1.1",
              "Authorization": "AWS4-HMAC-SHA256 Credential=testing/20240327/us-east-1/"
                               "comprehendmedical/aws4_request, SignedHeaders=host, "
                               "Signature=0"}
    detect = {**signed, "X-Amz-Target": "ComprehendMedical_20181030.DetectPHI"}
    text = "Mrs. Rosa Diaz, 555-867-5309"
    status, body = _post(url, detect, json.dumps({"Text": text}).encode())
    assert status == 200
    assert [(e["Id"], e["Type"], e["Text"], e["Category"], e["Traits"])
            for e in body["Entities"]] == [
        (0, "NAME", "Rosa Diaz", "PROTECTED_HEALTH_INFORMATION", []),
        (1, "PHONE_OR_FAX", "555-867-5309", "PROTECTED_HEALTH_INFORMATION", [])]
    assert body["Entities"][0]["BeginOffset"] == text.index("Rosa")
    unsigned = {k: v for k, v in detect.items() if k != "Authorization"}
    assert _post(url, unsigned, b'{"Text": "x"}')[0] == 403
    status, body = _post(url, {**signed, "X-Amz-Target": "ComprehendMedical_20181030.InferRxNorm"},
                         b'{"Text": "x"}')
    assert (status, body["__type"]) == (400, "UnknownOperationException")
    status, body = _post(url, detect, b'{"Text": ""}')
    assert (status, body["__type"]) == (400, "InvalidRequestException")
    status, body = _post(url, detect, b'{"Text": "\xff"}')
    assert (status, body["__type"]) == (400, "InvalidEncodingException")


def test_stand_in_speaks_rpc_v2_cbor_to_botocore_too(
        local_aws: LocalAws, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The service model offers JSON 1.1 and RPC v2 CBOR; a client that picks CBOR works.

    botocore picks JSON today; a copy of its own model that offers only CBOR makes its
    real CBOR serializer and parser talk to the stand-in.
    """
    import boto3
    import botocore.session

    model = botocore.session.get_session().get_service_data("comprehendmedical")
    model["metadata"].update(protocol="smithy-rpc-v2-cbor", protocols=["smithy-rpc-v2-cbor"])
    folder = tmp_path / "comprehendmedical" / model["metadata"]["apiVersion"]
    folder.mkdir(parents=True)
    (folder / "service-2.json").write_text(json.dumps(model), encoding="utf-8")
    monkeypatch.setenv("AWS_DATA_PATH", str(tmp_path))
    session = boto3.session.Session(aws_access_key_id="testing", aws_secret_access_key="testing",
                                    region_name=local_aws.exports["AWS_DEFAULT_REGION"])
    make: Any = session.client
    client = make("comprehendmedical",
                  endpoint_url=local_aws.exports["AWS_ENDPOINT_URL_COMPREHENDMEDICAL"])
    assert client.meta.service_model.resolved_protocol == "smithy-rpc-v2-cbor"
    text = "Café visit: Dr. Alan Whitfield, 555-867-5309."  # offsets count code points
    found = client.detect_phi(Text=text)["Entities"]
    assert [(e["Type"], e["Text"], e["BeginOffset"]) for e in found] == [
        ("NAME", "Alan Whitfield", text.index("Alan")),
        ("PHONE_OR_FAX", "555-867-5309", text.index("555"))]
    with pytest.raises(client.exceptions.TextSizeLimitExceededException):
        client.detect_phi(Text="x" * 20_001)


def _cbor() -> ModuleType:
    return load_module(LOCAL_AWS / "cbor.py", "local_aws_cbor")


# Examples from RFC 8949, Appendix A.
RFC_8949_EXAMPLES = [
    ("1903e8", 1000), ("3903e7", -1000), ("f93c00", 1.0), ("fa47c35000", 100000.0),
    ("fb3ff199999999999a", 1.1), ("f5", True), ("f6", None), ("6449455446", "IETF"),
    ("4401020304", b"\x01\x02\x03\x04"), ("c11a514b67b0", 1363896240),
    ("7f657374726561646d696e67ff", "streaming"),
    ("9f018202039f0405ffff", [1, [2, 3], [4, 5]]),
    ("a26161016162820203", {"a": 1, "b": [2, 3]}),
    ("bf61610161629f0203ffff", {"a": 1, "b": [2, 3]}),
]


@pytest.mark.parametrize("encoded,value", RFC_8949_EXAMPLES)
def test_cbor_codec_decodes_the_rfc_examples(encoded: str, value: Any) -> None:
    assert _cbor().decode(bytes.fromhex(encoded)) == value


@pytest.mark.parametrize("value,encoded", [
    (1000, "1903e8"), (-1000, "3903e7"), (1.1, "fb3ff199999999999a"), ("IETF", "6449455446"),
    ([1, [2, 3], [4, 5]], "8301820203820405"), ({"a": 1, "b": [2, 3]}, "a26161016162820203"),
])
def test_cbor_codec_encodes_as_the_rfc_does(value: Any, encoded: str) -> None:
    assert _cbor().encode(value).hex() == encoded


@pytest.mark.parametrize("broken", ["1903", "62ff", "a1616101ff", "82", "1c"])
def test_cbor_codec_rejects_malformed_input(broken: str) -> None:
    codec = _cbor()
    with pytest.raises(codec.CBORError):
        codec.decode(bytes.fromhex(broken))


# --- the app's shape ---------------------------------------------------------------------

def test_expected_phi_is_what_the_expected_masked_notes_hide() -> None:
    """The two hand-written files agree: masking each listed span gives the expected note."""
    dataset = {r["record_id"]: r for r in _read("expected.json")["analytics"]["dataset"]}
    for record_id, record in dataset.items():
        note = RECORDS[record_id]["note"]
        masked, position = [], 0
        for type_, _, begin, end in _located(note, PHI[record_id]):
            masked += [note[position:begin], f"[{type_}]"]
            position = end
        assert record["note"] == "".join(masked) + note[position:]


def test_functions_are_plain_lambda_handlers() -> None:
    settings = _read("faastlane.json")
    sources = sorted((APP / "functions").glob("*.py"))
    assert {p.stem for p in sources} == {"PHIIdentifier", "StoreProtected", "AnonRecord",
                                         "Analytics"}
    assert_plain_lambda_handlers(sources, requirements={"boto3"})
    assert settings["untrusted"] == ["Analytics"]
    assert "Analytics" not in settings["sensitive"]
