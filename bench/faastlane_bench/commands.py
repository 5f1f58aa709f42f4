"""``faastlane bench`` and ``faastlane cost``: added to the ``faastlane`` CLI through the
entry-point group ``faastlane.commands`` (``bench/setup.py``), which ``faastlane.cli`` loads."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from faastlane.cli_options import read_input
from faastlane.errors import FaastlaneError
from faastlane.runtime.run_options import add_input

from . import own_app
from .catalogue import EXAMPLES, REPOSITORY

DEFAULT_RESULTS = REPOSITORY / "bench" / "results"


def _add_app(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("app", metavar="APP", nargs="?",
                        help=f"your app folder: {what} (without APP: the examples)")
    add_input(parser)
    parser.add_argument("--json", action="store_true",
                        help="print the results document as JSON instead of tables")


def register(commands: Any) -> None:
    bench = commands.add_parser(
        "bench", help="benchmark your app (or the examples) on Faastlane and on baselines",
        description="With APP: run your workflow with your input on Faastlane (no "
                    "isolation, process isolation, MPK where available) and on an "
                    "OpenWhisk-style and a Step Functions-style baseline on this machine, "
                    "interleaved, and print a summary with ratios and the dollar cost "
                    "(-o DIR also writes results.json). Without APP: every example (and "
                    "FINRA with 50-200 rules, and a hand-off microbenchmark), writing "
                    "results.json, results.md, cost.md and PNG plots (needs a checkout).")
    _add_app(bench, "measure this workflow with --input/--input-file")
    bench.add_argument("--quick", action="store_true",
                       help="a smoke run (about a minute): few rounds, no plots needed")
    bench.add_argument("-o", "--output", type=Path, default=None, metavar="DIR",
                       help=f"where to write the results (default {DEFAULT_RESULTS}; "
                            "with --quick a temporary folder)")
    bench.add_argument("--only", nargs="*", metavar="WORKLOAD",
                       help="only workloads whose names start with these (e.g. finra chain)")
    bench.add_argument("--rounds", type=int, help="latency rounds per app (default 100; "
                       f"with APP {own_app.DEFAULT_ROUNDS})")
    bench.add_argument("--no-plots", action="store_true", help="skip the PNG figures")
    bench.add_argument("--from-results", type=Path, metavar="FILE",
                       help="run nothing: redo the tables, cost and plots of a results.json")
    bench.add_argument("--placement", action="store_true",
                       help="only the placement figure (Fig. 9): FINRA 50-200 rules x vCPUs "
                            "per container, spilling to extra containers vs one container "
                            f"per function (default output {DEFAULT_RESULTS}/placement)")
    bench.add_argument("--docker-image", metavar="IMAGE",
                       help="with --placement: instead, check the process stand-ins against "
                            "Docker containers of IMAGE (docker/build.sh runtime)")

    cost = commands.add_parser(
        "cost", help="dollar cost per execution: Step Functions vs one Faastlane Lambda",
        description="Price each benchmarked workflow with AWS's published prices "
                    "(bench/faastlane_bench/prices.json): on Step Functions (Standard and "
                    "Express) with one Lambda per function, and as one Faastlane Lambda, "
                    "using the durations measured by `faastlane bench` (--results), or, "
                    "with APP, measured now on your workflow and input.")
    _add_app(cost, "measure it now (as `faastlane bench APP`), then price it")
    cost.add_argument("--rounds", type=int,
                      help="with APP: latency rounds per system "
                           f"(default {own_app.DEFAULT_ROUNDS})")
    cost.add_argument("--results", type=Path, default=DEFAULT_RESULTS / "results.json",
                      metavar="FILE", help="a results.json written by faastlane bench")
    cost.add_argument("--memory-mb", type=int, default=1024,
                      help="memory of each function's Lambda (default 1024)")
    cost.add_argument("--faastlane-memory-mb", type=int,
                      help="memory of the Faastlane Lambda (default: --memory-mb)")


def _load_results(path: Path, key: str = "workloads") -> Any:
    """A results.json written by ``faastlane bench`` (a list under ``key``: ``points`` for
    --placement's); one line if it cannot be read or is not one."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise FaastlaneError(f"cannot read {path}: {exc.strerror or exc} (run `faastlane "
                             "bench` first)") from None
    except UnicodeDecodeError:
        raise FaastlaneError(f"{path} is not a results.json written by faastlane bench "
                             "(not UTF-8 text)") from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise FaastlaneError(f"{path} is not valid JSON: {exc.msg} (line {exc.lineno}, "
                             f"column {exc.colno})") from None
    if not isinstance(document, dict) or not isinstance(document.get(key), list):
        raise FaastlaneError(f"{path} is not a results.json written by faastlane bench "
                             f"(no {key!r} list)")
    return document


def _checked(path: Path | None, use: Any, *args: Any) -> Any:
    """``use(*args)`` on a loaded results document: a document of the wrong shape is one
    line naming the file, not a traceback (a fresh run's own document is trusted)."""
    if path is None:
        return use(*args)
    try:
        return use(*args)
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
        raise FaastlaneError(f"{path} is not a results.json written by faastlane bench "
                             f"({type(exc).__name__}: {exc})") from None


def cmd_placement(args: argparse.Namespace) -> int:
    """``faastlane bench --placement``: the placement figure only."""
    import tempfile

    from . import placement

    config = placement.Config.quick_run() if args.quick else placement.Config()
    if args.docker_image:
        config = placement.Config.docker_check(args.docker_image)
    if args.rounds:
        config = placement.Config(**{**config.__dict__, "rounds": args.rounds})
    document = (_load_results(args.from_results, "points") if args.from_results
                else placement.run(config))
    # A quick run's folder is made once there are results to put in it, not before.
    output = args.output or (Path(tempfile.mkdtemp(prefix="faastlane-bench-placement-"))
                             if args.quick else DEFAULT_RESULTS / "placement")
    for path in placement.write(document, output, plots=not args.no_plots):
        print(path)
    differ = [f"{p['rules']} rules/{p['vcpus']} vCPU {name}" for p in document["points"]
              for name, s in p["systems"].items()
              if not s["checks"]["matches_reference"] or s["checks"]["matches_expected"] is False]
    if differ:
        sys.stderr.write(f"faastlane: outputs differ: {', '.join(differ)}\n")
        return 1
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    import tempfile

    from . import cost, harness, plots, report

    if args.app is not None:
        return cmd_bench_app(args)
    if args.input is not None or args.input_file is not None:
        raise FaastlaneError("--input and --input-file go with APP: faastlane bench APP "
                             "--input-file FILE")
    if args.placement:
        return cmd_placement(args)
    if not args.from_results and not EXAMPLES.is_dir():
        raise FaastlaneError(f"the examples' benchmark needs a source checkout ({EXAMPLES} "
                             "does not exist): name your app, faastlane bench APP")

    config = harness.Config.quick_run() if args.quick else harness.Config()
    if args.rounds:
        config = harness.Config(**{**config.__dict__, "rounds": args.rounds})
    if args.from_results:
        document = _load_results(args.from_results)
    else:
        document = harness.run(config, only=args.only)
    document = _checked(args.from_results, report.enrich, document)
    # A quick run's folder is made once there are results to put in it, not before.
    output = args.output or (Path(tempfile.mkdtemp(prefix="faastlane-bench-results-"))
                             if args.quick else DEFAULT_RESULTS)
    written = report.write(document, output)
    prices = cost.load_prices()
    rows = cost.estimate_all(document, prices, 1024)
    cost_md = output / "cost.md"
    cost_md.write_text(cost.markdown(rows, prices, 1024, 1024), encoding="utf-8")
    written.append(cost_md)
    if not args.no_plots:
        try:
            written += plots.plot_all(document, output)
        except ImportError:
            sys.stderr.write("faastlane: matplotlib is not installed: no plots "
                             "(pip install -e ./bench)\n")
    for path in written:
        print(path)
    disagree = [w["name"] for w in document["workloads"] if not w["outputs_agree"]]
    if disagree:
        sys.stderr.write(f"faastlane: outputs differ between systems in: "
                         f"{', '.join(disagree)}\n")
        return 1
    return 0


def _measure_app(args: argparse.Namespace) -> dict[str, Any]:
    config = own_app.app_config(args.rounds, getattr(args, "quick", False))
    return own_app.measure(args.app, read_input(args), config)


def cmd_bench_app(args: argparse.Namespace) -> int:
    """``faastlane bench APP``: the user's workflow, its summary and its price."""
    for option in ("only", "from_results", "placement", "docker_image"):
        if getattr(args, option):
            raise FaastlaneError(f"--{option.replace('_', '-')} is for the examples' "
                                 "benchmark, not with APP")
    document = _measure_app(args)
    if args.output:
        sys.stderr.write(f"faastlane: wrote {own_app.write_results(document, args.output)}\n")
    if args.json:
        print(json.dumps(document, indent=2, default=str))
    else:
        sys.stdout.write(own_app.summary_table(document) + "\n"
                         + own_app.cost_table(document, 1024, 1024))
    return 0 if document["workloads"][0]["outputs_agree"] else 1


def cmd_cost(args: argparse.Namespace) -> int:
    from . import cost

    if args.app is not None:
        document = _measure_app(args)
        memory = args.memory_mb
        # What was measured, then the price (on stderr beside --json's document).
        (sys.stderr if args.json else sys.stdout).write(own_app.summary_table(document) + "\n")
        rows = cost.estimate_all(document, cost.load_prices(), memory,
                                 args.faastlane_memory_mb or memory)
        if args.json:
            print(json.dumps({"prices": cost.load_prices(), "rows": cost.rows_json(rows)},
                             indent=2))
        else:
            sys.stdout.write(own_app.cost_table(document, memory,
                                                args.faastlane_memory_mb or memory))
        return 0
    document = _load_results(args.results)
    prices = cost.load_prices()
    memory = args.memory_mb
    faastlane_memory = args.faastlane_memory_mb or memory
    rows = _checked(args.results, cost.estimate_all, document, prices, memory,
                    faastlane_memory)
    if args.json:
        print(json.dumps({"prices": prices, "rows": cost.rows_json(rows)}, indent=2))
    else:
        sys.stdout.write(cost.markdown(rows, prices, memory, faastlane_memory))
    return 0


COMMANDS = {"bench": cmd_bench, "cost": cmd_cost}
