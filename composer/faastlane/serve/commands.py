"""``faastlane serve APP``: compose once, keep the Orchestrator warm, answer Lambda's and
OpenWhisk's REST calls on 127.0.0.1 until SIGINT or SIGTERM."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
from collections.abc import Callable

from faastlane.app.project.local_aws import local_resources
from faastlane.app_source import load
from faastlane.cli_options import planning, project_options
from faastlane.compose.action import write_action
from faastlane.errors import FaastlaneError
from faastlane.local_action import claim, scratch_parent, sweep
from faastlane.runtime.cpus import available_cpus

from .endpoint import LocalEndpoint
from .openwhisk_api import PREFIX
from .workflow import ChildDied, WarmWorkflow


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser],
             add_planning: Callable[[argparse.ArgumentParser], None]) -> None:
    serve = commands.add_parser(
        "serve", help="serve a workflow on local Lambda and OpenWhisk endpoints",
        description="Compose APP once and serve it on 127.0.0.1, warm between calls, "
                    "until Ctrl-C or SIGTERM: the Lambda Invoke API (POST "
                    "/2015-03-31/functions/NAME/invocations, NAME the workflow's name) for "
                    "boto3 and `aws lambda invoke --endpoint-url`, and OpenWhisk's REST API "
                    "(POST /api/v1/namespaces/_/actions/NAME?blocking=true&result=true) "
                    "for `wsk -i --apihost`, and the Step Functions API (boto3's "
                    "stepfunctions client, `aws stepfunctions --endpoint-url`: executions "
                    "and their histories). One log line per call on stderr. Example: "
                    "faastlane serve examples/finra --port 9000, then aws lambda invoke "
                    "--endpoint-url http://127.0.0.1:9000 --function-name finra "
                    "--payload fileb://examples/finra/input.json out.json")
    serve.add_argument("app", metavar="APP",
                       help="the app folder, or a SAM / CloudFormation template")
    serve.add_argument("--port", type=int, default=3001, metavar="N",
                       help="the port on 127.0.0.1 (default 3001, as sam local "
                            "start-lambda; 0: any free port)")
    serve.add_argument("--concurrency", type=int, default=None, metavar="N",
                       help="executions at once, each on its own warm copy of the action, "
                            "started as calls need them (default: this machine's usable "
                            "CPUs); more calls wait for a free copy")
    add_planning(serve)
    serve.add_argument("--create-resources", action="store_true",
                       help="a template's tables, topics, queues and buckets are created "
                            "where missing on a loopback endpoint (or an embedded local AWS "
                            "that lives as long as the server); this flag allows it on any "
                            "other endpoint too")


def cmd_serve(args: argparse.Namespace) -> int:
    # Ctrl-C stops the server even when started where SIGINT is ignored (`cmd &` in a
    # script): a server is stopped by a signal, not by its input ending.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if not 0 <= args.port <= 65535:
        raise FaastlaneError(f"--port {args.port}: give 0-65535")
    concurrency = available_cpus() if args.concurrency is None else args.concurrency
    if concurrency < 1:
        raise FaastlaneError(f"--concurrency {args.concurrency}: give 1 or more")
    composition = load(args.app, planning(args))
    name = composition.app.name
    sweep(scratch_parent())
    with tempfile.TemporaryDirectory(prefix="faastlane-serve-", dir=scratch_parent()
                                     ) as scratch, \
            local_resources(args.app, project_options(args), args.create_resources) as env:
        claim(scratch)
        action = write_action(composition, os.path.join(scratch, "action"))
        try:
            workflow = WarmWorkflow(name, action, env, concurrency)
        except ChildDied as exc:
            raise FaastlaneError(f"the composed action did not start: {exc}") from None
        try:
            try:
                server = LocalEndpoint(args.port, workflow)
            except OSError as exc:
                raise FaastlaneError(f"cannot listen on 127.0.0.1:{args.port}: "
                                     f"{exc.strerror}") from None
            try:
                sys.stderr.write(
                    f"faastlane serve: {name} on {server.url}, up to {concurrency} "
                    f"at once (Ctrl-C to stop)\n"
                    f"  Lambda:    POST {server.url}/2015-03-31/functions/{name}/invocations\n"
                    f"  OpenWhisk: POST {server.url}{PREFIX}_/actions/{name}"
                    f"?blocking=true&result=true\n"
                    f"  Step Functions: --endpoint-url {server.url}, state machine "
                    f"{server.states.machine_arn}\n")
                sys.stderr.flush()
                server.serve_forever()
            finally:
                server.server_close()
        finally:
            workflow.close()
    return 0


COMMANDS = {"serve": cmd_serve}
