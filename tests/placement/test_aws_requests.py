"""The runtime's own AWS requests: SigV4 signatures equal botocore's, and the object
store round-trips JSON through moto's S3 server."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from faastlane.runtime.asl.errors import StatesError
from faastlane.runtime.parallel import sigv4
from faastlane.runtime.parallel.object_store import ObjectStore

KEY, SECRET = "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"


@pytest.mark.parametrize("service, url", [
    ("lambda", "https://lambda.us-east-1.amazonaws.com/2015-03-31/functions/my%20fn/"
               "invocations?Qualifier=live&b=a%20b"),
    ("s3", "http://127.0.0.1:5000/bucket/pre%20fix/k~ey.json"),
])
@pytest.mark.parametrize("token", [None, "session-token"])
def test_signature_equals_botocore(service: str, url: str, token: str | None) -> None:
    from botocore.auth import S3SigV4Auth, SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    body = b'{"a": 1}'
    request = AWSRequest(method="POST", url=url, data=body,
                         headers={"Content-Type": "application/json"})
    signer = S3SigV4Auth if service == "s3" else SigV4Auth
    signer(Credentials(KEY, SECRET, token), service, "us-east-1").add_auth(request)
    when = datetime.strptime(request.headers["X-Amz-Date"], "%Y%m%dT%H%M%SZ").replace(
        tzinfo=UTC)
    ours = sigv4.sign("POST", url, {"Content-Type": "application/json"}, body, service,
                      "us-east-1", sigv4.Credentials(KEY, SECRET, token), when)
    assert ours["Authorization"] == request.headers["Authorization"]


def test_store_round_trips_json_through_s3(store_env: dict[str, str]) -> None:
    store = ObjectStore.from_environ(store_env)
    assert store is not None
    value = {"rules": list(range(1000)), "text": "é" * 10}
    key = store.put_json(value, "group")
    assert key.startswith(store.prefix + "/faastlane/")
    assert store.get_json(key) == value
    store.delete(key)
    with pytest.raises(StatesError, match="HTTP 404"):
        store.get_json(key)


def test_no_store_unless_configured() -> None:
    assert ObjectStore.from_environ({}) is None
    with pytest.raises(ValueError, match="s3://BUCKET"):
        ObjectStore.from_environ({"FAASTLANE_SPILL_STORE": "bucket-without-scheme"})
