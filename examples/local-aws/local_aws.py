"""Start, set up, inspect and stop the local AWS endpoints the examples talk to.

Two servers on 127.0.0.1, each on a free port:

- ``moto_server`` (from ``moto[server]``): DynamoDB, SNS and SQS, in memory;
- ``comprehend_medical.py``: the Comprehend Medical ``DetectPHI`` stand-in.

``start`` launches both, creates the examples' resources (:data:`RESOURCES`) and prints
the ``export`` lines that point boto3 at them; ``eval "$(examples/local-aws/start)"``
applies them to the shell. The functions never see this module: they read standard AWS
configuration and the resource names from the environment.

    local_aws.py start [--state-dir DIR] [--no-setup]   start, set up, print exports
    local_aws.py env   [--state-dir DIR]                print the exports again
    local_aws.py setup [--state-dir DIR]                create the resources (idempotent)
    local_aws.py show  [--state-dir DIR]                what landed: tables and review queue
    local_aws.py stop  [--state-dir DIR]                stop both servers

The state directory (default ``$FAASTLANE_LOCAL_AWS_DIR``, else
``$TMPDIR/faastlane-local-aws-$UID``) holds the servers' process ids, ports and logs;
``stop`` ends exactly those processes.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from decimal import Decimal
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
HOST = "127.0.0.1"
REGION = "us-east-1"
# Dummy credentials for the local endpoints only: moto accepts any, and so does the stand-in.
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
# Seconds a server may take to answer; more where the CPU is emulated (the QEMU tests).
START_TIMEOUT = float(os.environ.get("FAASTLANE_LOCAL_AWS_START_TIMEOUT", "30"))

# What the examples use, and the variables their functions read the names from.
HEALTHCARE_TABLE = "faastlane-healthcare-protected"
SENTIMENT_TABLE = "faastlane-sentiment-positive"
SENTIMENT_TOPIC = "faastlane-sentiment-negative"
REVIEW_QUEUE = "faastlane-sentiment-manual-review"  # subscribed to the topic, to read it
RESOURCES = {
    "HEALTHCARE_TABLE": HEALTHCARE_TABLE,
    "SENTIMENT_TABLE": SENTIMENT_TABLE,
    "SENTIMENT_TOPIC_ARN": f"arn:aws:sns:{REGION}:123456789012:{SENTIMENT_TOPIC}",
    "SENTIMENT_REVIEW_QUEUE": REVIEW_QUEUE,
}


def default_state_dir() -> Path:
    configured = os.environ.get("FAASTLANE_LOCAL_AWS_DIR")
    if configured:
        return Path(configured)
    return Path(tempfile.gettempdir()) / f"faastlane-local-aws-{os.getuid()}"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def _http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False


def _wait(process: subprocess.Popen[bytes], url: str, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{url}: server exited with {process.returncode}; see {log}:\n"
                               f"{log.read_text(errors='replace')[-2000:]}")
        if _http_ok(url):
            return
        time.sleep(0.1)
    raise RuntimeError(f"{url}: not answering after {START_TIMEOUT:.0f}s; see {log}")


def _spawn(command: list[str], log: Path) -> subprocess.Popen[bytes]:
    with open(log, "wb") as out:
        # Own session: the servers outlive the shell command that started them.
        return subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)


def _start_moto(state: Path) -> tuple[subprocess.Popen[bytes], int]:
    log = state / "moto.log"
    for _ in range(3):  # the free port can be taken between probing and binding
        port = _free_port()
        process = _spawn([sys.executable, "-m", "moto.server", "-H", HOST, "-p", str(port)], log)
        try:
            _wait(process, f"http://{HOST}:{port}/moto-api/data.json", log)
            return process, port
        except RuntimeError:
            _terminate(process.pid)
    raise RuntimeError(f"moto_server did not start; see {log}")


def _start_comprehend_medical(state: Path) -> tuple[subprocess.Popen[bytes], int]:
    log, port_file = state / "comprehend-medical.log", state / "comprehend-medical.port"
    port_file.unlink(missing_ok=True)
    process = _spawn([sys.executable, str(HERE / "comprehend_medical.py"), "--host", HOST,
                      "--port", "0", "--port-file", str(port_file)], log)
    deadline = time.monotonic() + START_TIMEOUT
    while not port_file.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            _terminate(process.pid)
            raise RuntimeError(f"the Comprehend Medical stand-in did not start; see {log}")
        time.sleep(0.05)
    port = int(port_file.read_text())
    _wait(process, f"http://{HOST}:{port}/", log)
    return process, port


def environment(ports: dict[str, int]) -> dict[str, str]:
    """The variables that point boto3 (and the examples' functions) at the local servers."""
    return {
        "AWS_ENDPOINT_URL": f"http://{HOST}:{ports['moto']}",
        "AWS_ENDPOINT_URL_COMPREHENDMEDICAL": f"http://{HOST}:{ports['comprehendmedical']}",
        **CREDENTIALS,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_REGION": REGION,
        **RESOURCES,
    }


def _clients(env: dict[str, str]) -> tuple[Any, Any, Any]:
    import boto3  # only the set-up needs boto3; start/stop work without it

    session = boto3.session.Session(aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
                                    aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
                                    region_name=env["AWS_DEFAULT_REGION"])
    url = env["AWS_ENDPOINT_URL"]
    return (session.client("dynamodb", endpoint_url=url),
            session.client("sns", endpoint_url=url), session.client("sqs", endpoint_url=url))


def create_resources(env: dict[str, str]) -> None:
    """Create the tables, the topic and its review queue; existing ones are kept."""
    dynamodb, sns, sqs = _clients(env)
    existing = set(dynamodb.list_tables()["TableNames"])
    for table, key in ((env["HEALTHCARE_TABLE"], "record_id"),
                       (env["SENTIMENT_TABLE"], "review_id")):
        if table not in existing:
            dynamodb.create_table(TableName=table, BillingMode="PAY_PER_REQUEST",
                                  KeySchema=[{"AttributeName": key, "KeyType": "HASH"}],
                                  AttributeDefinitions=[{"AttributeName": key,
                                                         "AttributeType": "S"}])
            dynamodb.get_waiter("table_exists").wait(TableName=table)
    topic_arn = sns.create_topic(Name=env["SENTIMENT_TOPIC_ARN"].rsplit(":", 1)[1])["TopicArn"]
    if topic_arn != env["SENTIMENT_TOPIC_ARN"]:
        raise RuntimeError(f"created {topic_arn}, expected {env['SENTIMENT_TOPIC_ARN']}")
    queue_url = sqs.create_queue(QueueName=env["SENTIMENT_REVIEW_QUEUE"])["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])[
        "Attributes"]["QueueArn"]
    subscribed = {s["Endpoint"] for s in
                  sns.list_subscriptions_by_topic(TopicArn=topic_arn)["Subscriptions"]}
    if queue_arn not in subscribed:
        sns.subscribe(TopicArn=topic_arn, Protocol="sqs", Endpoint=queue_arn,
                      Attributes={"RawMessageDelivery": "false"})


def reset(env: dict[str, str]) -> None:
    """Empty moto (every table, topic and queue), then create the resources again."""
    request = urllib.request.Request(f"{env['AWS_ENDPOINT_URL']}/moto-api/reset", method="POST")
    with urllib.request.urlopen(request, timeout=10):
        pass
    create_resources(env)


def show(env: dict[str, str]) -> dict[str, Any]:
    """Every item of both tables and every message waiting in the review queue."""
    from boto3.dynamodb.types import TypeDeserializer

    dynamodb, _, sqs = _clients(env)
    plain = TypeDeserializer().deserialize
    tables = {name: [{k: plain(v) for k, v in item.items()}
                     for item in dynamodb.scan(TableName=name)["Items"]]
              for name in (env["HEALTHCARE_TABLE"], env["SENTIMENT_TABLE"])}
    queue_url = sqs.get_queue_url(QueueName=env["SENTIMENT_REVIEW_QUEUE"])["QueueUrl"]
    messages: dict[str, Any] = {}
    while True:  # hide each message while collecting, so every one is seen exactly once
        batch = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10,
                                    VisibilityTimeout=60).get("Messages", [])
        if not batch:
            break
        messages.update((m["MessageId"], m) for m in batch)
    for message in messages.values():  # then put them back for the next look
        sqs.change_message_visibility(QueueUrl=queue_url, VisibilityTimeout=0,
                                      ReceiptHandle=message["ReceiptHandle"])
    return {"tables": tables, "review_queue": [json.loads(m["Body"]) for m in messages.values()]}


# --- process bookkeeping ----------------------------------------------------------------

def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie has exited; only its parent (not us) can reap it
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def _ours(pid: int, marker: str) -> bool:
    """The pid still runs what we started (not a process that reused the number)."""
    try:
        return marker in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return _alive(pid)  # no /proc: trust the recorded pid


def _terminate(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return
        except ChildProcessError:  # not our child: poll until it is gone
            if not _alive(pid):
                return
        time.sleep(0.05)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _load_state(state: Path) -> dict[str, Any] | None:
    try:
        return dict(json.loads((state / "state.json").read_text()))
    except (OSError, ValueError):
        return None


def _running(state: Path) -> dict[str, Any] | None:
    recorded = _load_state(state)
    if recorded and all(_ours(p["pid"], p["marker"]) for p in recorded["processes"].values()):
        return recorded
    return None


def start(state: Path, setup: bool = True) -> dict[str, str]:
    state.mkdir(parents=True, exist_ok=True)
    running = _running(state)
    if running:  # idempotent: a second start reuses the servers
        env = dict(running["env"])
    else:
        stop(state)
        moto, moto_port = _start_moto(state)
        try:
            cm, cm_port = _start_comprehend_medical(state)
        except RuntimeError:
            _terminate(moto.pid)
            raise
        env = environment({"moto": moto_port, "comprehendmedical": cm_port})
        processes = {"moto": {"pid": moto.pid, "marker": "moto.server"},
                     "comprehendmedical": {"pid": cm.pid, "marker": "comprehend_medical.py"}}
        (state / "state.json").write_text(json.dumps({"env": env, "processes": processes},
                                                     indent=2))
    if setup:
        create_resources(env)
    return env


def stop(state: Path) -> list[str]:
    """Stop the servers recorded in ``state``; returns the names of those stopped."""
    recorded = _load_state(state)
    stopped: list[str] = []
    for name, process in (recorded or {}).get("processes", {}).items():
        if _ours(process["pid"], process["marker"]):
            _terminate(process["pid"])
            stopped.append(name)
    (state / "state.json").unlink(missing_ok=True)
    return stopped


def _number(value: Any) -> Any:
    """DynamoDB numbers come back as Decimal: print them as JSON numbers."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    raise TypeError(f"not JSON: {type(value).__name__}")


def exports(env: dict[str, str]) -> str:
    return "".join(f"export {key}={value}\n" for key, value in env.items())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Local AWS endpoints for the examples.")
    parser.add_argument("command", choices=["start", "env", "setup", "show", "stop"])
    parser.add_argument("--state-dir", type=Path, default=default_state_dir())
    parser.add_argument("--no-setup", action="store_true", help="start without resources")
    args = parser.parse_args(argv)
    state: Path = args.state_dir
    if args.command == "start":
        missing = [m for m in ("moto", "flask", "boto3") if importlib.util.find_spec(m) is None]
        if missing:
            print(f"{sys.executable} lacks {', '.join(missing)}: pip install 'moto[server]' "
                  "boto3 (or pip install -e '.[examples]' in the repository)", file=sys.stderr)
            return 1
        try:
            env = start(state, setup=not args.no_setup)
        except RuntimeError as error:
            print(f"local AWS endpoints: {error}", file=sys.stderr)
            return 1
        sys.stdout.write(exports(env))
        print(f"# local AWS endpoints running; stop them with: {HERE / 'stop'}"
              + (f" --state-dir {state}" if state != default_state_dir() else ""),
              file=sys.stderr)
        return 0
    if args.command == "stop":
        stopped = stop(state)
        print(f"stopped: {', '.join(stopped) or 'nothing was running'}", file=sys.stderr)
        return 0
    running = _running(state)
    if running is None:
        print(f"the local endpoints are not running (state: {state}); run "
              f"{HERE / 'start'} first", file=sys.stderr)
        return 1
    env = dict(running["env"])
    if args.command == "env":
        sys.stdout.write(exports(env))
    elif args.command == "setup":
        create_resources(env)
    else:
        json.dump(show(env), sys.stdout, indent=2, default=_number)
        sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
