"""The local AWS a ``faastlane run TEMPLATE`` talks to: the template's tables, queues,
topics (with their ``Subscription``), buckets and SNS subscriptions, created on a
loopback endpoint if they are missing.

Where the endpoint comes from:

- the environment (``AWS_ENDPOINT_URL``, ``AWS_ENDPOINT_URL_<SERVICE>``): resources are
  created there only if it is this machine (127.0.0.0/8, ``localhost``, ``::1``), or
  with ``--create-resources``; otherwise they are left alone, and a line says so;
- nothing set: an embedded local AWS, moto's server on 127.0.0.1 and a free port, runs
  for the life of the command (stopped on exit, SIGINT and SIGTERM too); the action gets
  its endpoint, the region and dummy credentials, so nothing reaches a real account.

Nothing is ever deleted or changed: an existing resource is used as it is.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

from faastlane.errors import FaastlaneError

from .parameters import LOCAL_ACCOUNT, ProjectOptions, region
from .resources import BUCKET, LOCAL_TYPES, QUEUE, SUBSCRIPTION, TABLE_TYPES, TOPIC
from .template import LocalResource, Project, is_template, read_template

ENDPOINT = "AWS_ENDPOINT_URL"
# The service of each resource type, as boto3 and AWS_ENDPOINT_URL_<SERVICE> name it.
_SERVICES = {**{t: "dynamodb" for t in TABLE_TYPES}, TOPIC: "sns", QUEUE: "sqs", BUCKET: "s3",
             SUBSCRIPTION: "sns"}
# moto accepts any credentials; these never leave this machine.
DUMMY_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
_MISSING = ("boto3 and moto's server are needed to run a template's resources locally "
            "(faastlane's own requirements): pip install 'moto[server]'")


def is_loopback(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def configured_endpoint(service: str, env: dict[str, str]) -> str | None:
    """The endpoint boto3 uses for ``service`` in ``env`` (None: AWS itself)."""
    return env.get(f"{ENDPOINT}_{service.upper()}") or env.get(ENDPOINT)


def _has_endpoint(env: dict[str, str]) -> bool:
    return any(key == ENDPOINT or key.startswith(ENDPOINT + "_") for key in env)


@contextmanager
def embedded_aws() -> Iterator[str]:
    """moto's server on 127.0.0.1 and a free port, for the life of the ``with``."""
    try:
        from moto.server import ThreadedMotoServer
    except ImportError:
        raise FaastlaneError(_MISSING) from None
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per request
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        yield f"http://{host}:{port}"
    finally:
        server.stop()


def _client(service: str, endpoint: str | None, env: dict[str, str]) -> Any:
    try:
        import boto3
    except ImportError:
        raise FaastlaneError(_MISSING) from None
    session = boto3.session.Session(
        aws_access_key_id=env.get("AWS_ACCESS_KEY_ID"),
        aws_secret_access_key=env.get("AWS_SECRET_ACCESS_KEY"),
        aws_session_token=env.get("AWS_SESSION_TOKEN"),
        region_name=env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or region())
    return session.client(service, endpoint_url=endpoint)


def _table(client: Any, resource: LocalResource) -> None:
    try:
        client.describe_table(TableName=resource.name)
        return
    except client.exceptions.ResourceNotFoundException:
        pass
    props = resource.properties
    if resource.type == "AWS::Serverless::SimpleTable":
        key = props.get("PrimaryKey") or {"Name": "id", "Type": "String"}
        kind = {"String": "S", "Number": "N", "Binary": "B"}.get(key.get("Type", "String"), "S")
        request: dict[str, Any] = {
            "KeySchema": [{"AttributeName": key["Name"], "KeyType": "HASH"}],
            "AttributeDefinitions": [{"AttributeName": key["Name"], "AttributeType": kind}]}
    else:
        request = {k: props[k] for k in ("KeySchema", "AttributeDefinitions",
                                          "GlobalSecondaryIndexes", "LocalSecondaryIndexes",
                                          "StreamSpecification") if k in props}
    if "ProvisionedThroughput" in props:
        request["ProvisionedThroughput"] = {k: int(v) for k, v in
                                            props["ProvisionedThroughput"].items()}
    else:
        request["BillingMode"] = "PAY_PER_REQUEST"
    client.create_table(TableName=resource.name, **request)


def _attributes(props: dict[str, Any], names: tuple[str, ...]) -> dict[str, str]:
    return {name: (str(props[name]).lower() if isinstance(props[name], bool)
                   else str(props[name])) for name in names if name in props}


def _topic(client: Any, resource: LocalResource) -> None:
    props = resource.properties
    arn = client.create_topic(Name=resource.name, Attributes=_attributes(
        props, ("FifoTopic", "ContentBasedDeduplication")))["TopicArn"]
    for subscription in props.get("Subscription") or []:
        client.subscribe(TopicArn=arn, Protocol=subscription["Protocol"],
                         Endpoint=subscription["Endpoint"])


def _queue(client: Any, resource: LocalResource) -> None:
    props = resource.properties
    client.create_queue(QueueName=resource.name, Attributes=_attributes(
        props, ("FifoQueue", "ContentBasedDeduplication", "DelaySeconds",
                "MessageRetentionPeriod", "VisibilityTimeout", "MaximumMessageSize",
                "ReceiveMessageWaitTimeSeconds")))


def _bucket(client: Any, resource: LocalResource) -> None:
    try:
        client.head_bucket(Bucket=resource.name)
        return
    except client.exceptions.ClientError:
        pass
    where = client.meta.region_name
    extra = {} if where == "us-east-1" else {
        "CreateBucketConfiguration": {"LocationConstraint": where}}
    client.create_bucket(Bucket=resource.name, **extra)


def _subscription(client: Any, resource: LocalResource) -> None:
    props = resource.properties  # SNS keeps one subscription per topic and endpoint
    client.subscribe(TopicArn=props["TopicArn"], Protocol=props["Protocol"],
                     Endpoint=props["Endpoint"], Attributes=_attributes(
                         props, ("RawMessageDelivery", "FilterPolicyScope")))


_CREATE = {**{t: _table for t in TABLE_TYPES}, TOPIC: _topic, QUEUE: _queue, BUCKET: _bucket,
           SUBSCRIPTION: _subscription}


def create_missing(project: Project, env: dict[str, str], anywhere: bool) -> None:
    """Create the project's resources that are missing, on loopback endpoints only
    unless ``anywhere``."""
    for resource in sorted(project.local_resources, key=lambda r: LOCAL_TYPES.index(r.type)):
        service = _SERVICES[resource.type]
        endpoint = configured_endpoint(service, env)
        if not anywhere and (endpoint is None or not is_loopback(endpoint)):
            sys.stderr.write(f"faastlane: not creating {resource.logical_id} "
                             f"({resource.name}) at {endpoint or 'AWS'}: not this machine "
                             "(--create-resources would create it)\n")
            continue
        try:
            _CREATE[resource.type](_client(service, endpoint, env), resource)
        except FaastlaneError:
            raise
        except Exception as exc:  # botocore's errors: one line, with the resource
            raise FaastlaneError(f"cannot create {resource.logical_id} ({resource.name}) at "
                                 f"{endpoint or 'AWS'}: {exc}") from None


@contextmanager
def local_resources(app_path: str, options: ProjectOptions,
                    anywhere: bool = False) -> Iterator[dict[str, str] | None]:
    """For a template: the environment the action runs in, its resources created (an
    embedded local AWS when no endpoint is set). For an app folder: None (the
    process's own environment)."""
    if not is_template(app_path):
        yield None
        return
    project = read_template(app_path, options)
    env = dict(os.environ)
    if _has_endpoint(env):
        create_missing(project, env, anywhere)
        yield env
        return
    with embedded_aws() as endpoint:
        for key in ("AWS_SESSION_TOKEN", "AWS_PROFILE"):
            env.pop(key, None)
        env.update(DUMMY_CREDENTIALS, AWS_ENDPOINT_URL=endpoint, AWS_REGION=region(),
                   AWS_DEFAULT_REGION=region())
        create_missing(project, env, anywhere)
        sys.stderr.write(f"faastlane: local AWS (moto) at {endpoint} for this run, account "
                         f"{LOCAL_ACCOUNT}\n")
        yield env
