"""``faastlane graph APP -o FILE``: the command, its options and where each format goes."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable

from faastlane.app_source import load
from faastlane.cli_options import planning
from faastlane.compose.action import Composition
from faastlane.errors import FaastlaneError

from .layout import layout
from .legend import add_legend
from .model import Graph, build
from .png import render_png
from .svg import render_svg
from .text import to_dot, to_mermaid
from .trace_times import read_trace

MARK = "faastlane graph"  # in every file written: what may be replaced

FORMATS = (".svg", ".png", ".mmd", ".dot")


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser],
             add_planning: Callable[[argparse.ArgumentParser], None]) -> None:
    graph = commands.add_parser(
        "graph", help="draw an app's workflow (SVG, PNG, Mermaid or DOT)",
        description="Draw APP's workflow: its states and transitions (Choice conditions and "
                    "Catch errors on the edges), Parallel branches and Map iterators as "
                    "boxes around their states, where each Task runs (thread, sandboxed or "
                    "forked process; sections in processes or extra containers) as "
                    "plan.json says, and which functions are untrusted or sensitive. The "
                    "format follows FILE's extension: .svg, .png, .mmd (Mermaid), .dot "
                    "(Graphviz). Example: faastlane graph examples/finra -o finra.svg; "
                    "with measured times: faastlane run examples/finra --input-file "
                    "examples/finra/input.json --trace run.jsonl && faastlane graph "
                    "examples/finra -o finra.png --trace run.jsonl")
    graph.add_argument("app", metavar="APP", help="the app folder")
    graph.add_argument("-o", "--output", required=True, metavar="FILE",
                       help="the picture to write: FILE.svg, .png, .mmd or .dot")
    graph.add_argument("--trace", metavar="FILE",
                       help="a timeline written by `faastlane run --trace FILE`, or a Step "
                            "Functions execution history (aws stepfunctions "
                            "get-execution-history): each state's measured time is drawn")
    add_planning(graph)


def graph_of(composition: Composition, trace: str | None = None) -> Graph:
    times, end_to_end = read_trace(trace) if trace else ({}, None)
    return build(composition, times, end_to_end)


def render(graph: Graph, extension: str) -> bytes:
    """The graph in the format an extension names."""
    if extension == ".mmd":
        return to_mermaid(graph, MARK).encode()
    if extension == ".dot":
        return to_dot(graph, MARK).encode()
    scene = layout(graph, add_legend)
    if extension == ".svg":
        return render_svg(scene, f"{graph.name}: {graph.subtitle}", MARK).encode()
    return render_png(scene, MARK)


def _ours(path: str) -> bool:
    """Whether ``path`` is a picture this command wrote (it may be replaced)."""
    with open(path, "rb") as handle:
        return MARK.encode() in handle.read(4096)


def cmd_graph(args: argparse.Namespace) -> int:
    extension = os.path.splitext(args.output)[1].lower()
    if extension not in FORMATS:
        raise FaastlaneError(f"-o {args.output}: the extension names the format; use one "
                             f"of {', '.join(FORMATS)}")
    if os.path.exists(args.output) and not (os.path.isfile(args.output) and _ours(args.output)):
        raise FaastlaneError(f"-o {args.output}: exists and is not a picture faastlane graph "
                             f"wrote; not replacing it")
    data = render(graph_of(load(args.app, planning(args)), args.trace), extension)
    try:
        with open(args.output, "wb") as handle:
            handle.write(data)
    except OSError as exc:
        raise FaastlaneError(f"cannot write {args.output}: {exc.strerror}") from None
    print(f"wrote {args.output}")
    return 0


COMMANDS = {"graph": cmd_graph}
