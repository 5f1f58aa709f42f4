"""``faastlane profile``: MPK support and usable vCPUs of this machine or of a target;
``faastlane profile APP --input-file F``: where an app's parallel states should run
(:mod:`app_run`).

``cli.py`` calls :func:`register` and dispatches to :data:`COMMANDS`. Results are cached
per target and memory size (``cache.py``) and re-measured when older than ``--max-age``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from typing import Any

from faastlane.compose import profile_cache as cache
from faastlane.deploy.commands import add_connection  # the deploy commands' own options
from faastlane.errors import FaastlaneError
from faastlane.runtime.options import ISOLATION_MODES

from . import app_run, targets

TARGETS = ("local", "docker", "openwhisk", "lambda")


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "profile", help="MPK support and usable vCPUs of this machine or a platform",
        description="Detect protection keys (CPU flags, a pkey_alloc probe, the "
                    "interpreter) and infer the usable vCPUs from a compute-bound "
                    "benchmark with 1, 2, 3, ... processes, here, in a Docker container "
                    "with CPU limits, or as an action on OpenWhisk or Lambda. Results are "
                    "cached per target and memory size.")
    parser.add_argument("app", nargs="?", metavar="APP",
                        help="instead, profile this app: run it once on its sample input "
                             "(--input/--input-file), trace it, and show where its "
                             "Parallel and Map states would run (compose --profile-from)")
    parser.add_argument("--input", help="APP: the execution input as JSON")
    parser.add_argument("--input-file", metavar="F",
                        help="APP: a file holding the execution input ('-': stdin)")
    parser.add_argument("--isolation", choices=ISOLATION_MODES,
                        help="APP: run and plan it with this isolation (default: as "
                             "compose chooses)")
    parser.add_argument("-o", "--output", metavar="TRACE",
                        help="APP: where the trace goes (default NAME.profile.jsonl here)")
    parser.add_argument("--target", choices=TARGETS, default="local",
                        help="where to measure (default: this machine)")
    parser.add_argument("--image", default="faastlane/runtime:latest",
                        help="docker: the image to measure in (default "
                             "faastlane/runtime:latest, docker/build.sh runtime)")
    parser.add_argument("--cpus", help="docker: --cpus for the container (e.g. 1)")
    parser.add_argument("--cpuset-cpus", help="docker: --cpuset-cpus (e.g. 0)")
    parser.add_argument("--memory", type=int, metavar="MB",
                        help="the container's / action's / function's memory (Lambda's "
                             "CPU share follows it)")
    parser.add_argument("--name", default=targets.ACTION_NAME,
                        help=f"openwhisk/lambda: the probe's name (default "
                             f"{targets.ACTION_NAME})")
    parser.add_argument("--kind", default="python:3.11", help="openwhisk: the Python kind")
    parser.add_argument("--docker", metavar="IMAGE",
                        help="openwhisk: run the probe in this image (blackbox action)")
    parser.add_argument("--role", help="lambda: the execution role ARN (to create it)")
    parser.add_argument("--max-processes", type=int, metavar="N",
                        help="measure 1..N processes (default: the CPUs visible + 1)")
    parser.add_argument("--seconds", type=float, default=0.1,
                        help="one process's work per measurement (default 0.1)")
    parser.add_argument("--max-age", type=float, default=24.0, metavar="HOURS",
                        help="re-measure a cached profile older than this (default 24)")
    parser.add_argument("--refresh", action="store_true", help="measure even if cached")
    parser.add_argument("--json", action="store_true", help="print the profile as JSON")
    add_connection(parser)


def _measure(args: argparse.Namespace) -> tuple[str, Callable[[], dict[str, Any]]]:
    """The cache key for the target, and how to measure it."""
    count, seconds = args.max_processes, args.seconds
    if args.target == "local":
        return cache.cache_key("local", args.memory), \
            lambda: targets.profile_local(count, seconds)
    if args.target == "docker":
        limits = f"{args.image},cpus={args.cpus},cpuset={args.cpuset_cpus}"
        return cache.cache_key("docker", args.memory, limits), \
            lambda: targets.profile_docker(args.image, args.cpus, args.cpuset_cpus,
                                           args.memory, count, seconds)
    if args.target == "openwhisk":
        from faastlane.deploy.openwhisk import OpenWhiskClient  # noqa: PLC0415
        from faastlane.deploy.wskprops import resolve  # noqa: PLC0415

        client = OpenWhiskClient(resolve(args.apihost, args.auth, args.namespace),
                                 args.insecure)
        where = f"{client.config.apihost}/{client.config.namespace}/{args.name}"
        return cache.cache_key("openwhisk", args.memory, where), \
            lambda: targets.profile_openwhisk(client, args.name, args.kind, args.docker,
                                              args.memory, count, seconds)
    from faastlane.deploy.aws_lambda import LambdaClient  # noqa: PLC0415

    lam = LambdaClient(args.profile, args.region)
    return cache.cache_key("lambda", args.memory, f"{args.region or ''}/{args.name}"), \
        lambda: targets.profile_lambda(lam, args.name, args.role, args.memory, count, seconds)


def describe(key: str, profile: dict[str, Any], from_cache: bool) -> str:
    """The profile as a few lines for people."""
    mpk, cpus = profile["mpk"], profile["cpus"]
    age = time.time() - profile["measured_at"]
    when = f"cached, measured {age / 3600:.1f} h ago" if from_cache else "measured now"
    probe = mpk["pkey_alloc"]
    verdict = "usable" if mpk["usable"] else "not usable"
    quota = cpus["cgroup_quota"]
    curve = " ".join(f"{k}:{v:.2f}" for k, v in profile["scaling"]["throughput"].items())
    return "\n".join([
        f"target {key} ({when})",
        f"MPK: {verdict}: CPU pku {'yes' if mpk['cpu_pku'] else 'no'}, kernel ospke "
        f"{'yes' if mpk['os_pke'] else 'no'}, {probe['detail']}; interpreter "
        f"{mpk['interpreter']}" + (f" ({mpk['interpreter_reason']})"
                                   if mpk["interpreter_reason"] else ""),
        f"CPUs: {cpus['os_cpu_count']} on the host, {cpus['affinity']} in the cpuset, "
        f"CFS quota {'none' if quota is None else f'{quota:g} CPUs'}",
        f"throughput by processes (x one process): {curve}",
        f"inferred vCPUs: {profile['vcpus']} (effective {profile['effective_cpus']:g}); "
        f"plan with: faastlane compose APP --vcpus {profile['vcpus']}",
        *([f"hand-off costs: {_handoff(profile['handoff'])}"] if profile.get("handoff") else []),
    ])


def _handoff(measured: dict[str, float]) -> str:
    units = {"fork_ms": "ms a forked job", "pipe_ms_per_mb": "ms per MB over a pipe",
             "invoke_ms": "ms an invocation", "transfer_ms_per_mb": "ms per MB invoked"}
    return ", ".join(f"{measured[k]:g} {u}" for k, u in units.items() if k in measured)


def _never_busy() -> str | None:
    return None


def cmd_profile(args: argparse.Namespace) -> int:
    if args.app is not None:
        return _profile_app(args)
    if any(getattr(args, name) is not None
           for name in ("input", "input_file", "output", "isolation")):
        raise FaastlaneError("--input, --input-file, --isolation and --output profile an "
                             "APP: name it")
    key, measure = _measure(args)
    # Only a profile measured on this machine (a process, a container) is skewed by its
    # load; a platform's runs on the platform's.
    here = args.target in ("local", "docker")
    profile, from_cache = cache.cached(key, measure, max_age=args.max_age * 3600,
                                       refresh=args.refresh,
                                       quiet=cache.busy if here else _never_busy)
    if args.json:
        print(json.dumps(dict(profile, target=key, cached=from_cache), indent=2))
    else:
        print(describe(key, profile, from_cache))
    if profile.get("busy"):
        sys.stderr.write(f"faastlane: warning: the machine was busy while profiling "
                         f"({profile['busy']}): the vCPUs inferred may be too few; not "
                         f"cached -- profile again when it is quiet\n")
    return 0


def _profile_app(args: argparse.Namespace) -> int:
    if args.input is not None and args.input_file is not None:
        raise FaastlaneError("give --input or --input-file, not both")
    given = (["--input", args.input] if args.input is not None else
             ["--input-file", args.input_file] if args.input_file is not None else [])
    trace = args.output or app_run.default_trace(args.app)
    sections = app_run.profile_app(args.app, given, trace, args.isolation)
    if args.json:
        print(json.dumps({"app": args.app, "trace": trace, "states": sections}, indent=2))
    else:
        print(app_run.describe(args.app, trace, sections))
    return 0


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {"profile": cmd_profile}
