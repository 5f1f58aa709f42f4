"""Figures like the paper's 5-9, as PNGs, from a results document (needs matplotlib).

- ``interaction.png`` (Fig. 5/6): per app and system, stacked median external /
  compute / interaction time;
- ``interaction_only.png``: function-interaction latency alone, log scale;
- ``throughput.png`` (Fig. 7): requests per minute with concurrent clients;
- ``variants.png`` (Fig. 8): Faastlane variants relative to -NS;
- ``scalability.png`` (Fig. 9): FINRA end-to-end time against the number of rules;
- ``handoff.png``: one hand-off's median latency against the payload size.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .catalogue import FAASTLANE_NS

COLOURS = {"external": "#9e9e9e", "compute": "#4c72b0", "interaction": "#dd8452"}


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    return plt


def _group(document: dict[str, Any], group: str) -> list[dict[str, Any]]:
    return [w for w in document["workloads"] if w["group"] == group]


def _grouped_bars(ax: Any, workloads: list[dict[str, Any]], value: Any,
                  stacked: bool = False) -> None:
    names: list[str] = []
    for workload in workloads:
        names += [n for n in workload["systems"] if n not in names]
    width = 0.8 / max(1, len(names))
    for index, workload in enumerate(workloads):
        for offset, name in enumerate(names):
            system = workload["systems"].get(name)
            if system is None:
                continue
            x = index + (offset - (len(names) - 1) / 2) * width
            if stacked:
                bottom = 0.0
                for part in ("external", "compute", "interaction"):
                    height = system[f"{part}_ms"]["median"]
                    ax.bar(x, height, width * 0.9, bottom=bottom, color=COLOURS[part],
                           edgecolor="black", linewidth=0.3)
                    bottom += height
                ax.text(x, bottom, name.replace("Faastlane", "FL").replace("-style", ""),
                        rotation=90, ha="center", va="bottom", fontsize=6)
            else:
                ax.bar(x, value(system), width * 0.9, label=name if index == 0 else None)
    ax.set_xticks(range(len(workloads)), [w["name"] for w in workloads])


def plot_all(document: dict[str, Any], folder: Path) -> list[Path]:
    plt = _pyplot()
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    apps = _group(document, "apps")

    def save(fig: Any, name: str) -> None:
        path = folder / name
        fig.tight_layout()
        fig.savefig(path, dpi=130)
        plt.close(fig)
        written.append(path)

    if apps:
        fig, ax = plt.subplots(figsize=(11, 5))
        _grouped_bars(ax, apps, None, stacked=True)
        # Linear: on a log axis stacked segments would not show their share.
        ax.set_ylabel("median time per execution (ms)")
        ax.set_title("External / compute / function-interaction time (bars stacked)")
        for part, colour in COLOURS.items():
            ax.bar(0, 0, color=colour, label=part)
        ax.legend(loc="upper left", fontsize=8)
        save(fig, "interaction.png")

        fig, ax = plt.subplots(figsize=(11, 5))
        _grouped_bars(ax, apps, lambda s: max(s["interaction_ms"]["median"], 1e-3))
        ax.set_yscale("log")
        ax.set_ylabel("median function-interaction latency (ms, log)")
        ax.set_title("Function-interaction latency")
        ax.legend(fontsize=7)
        save(fig, "interaction_only.png")

        with_tp = [w for w in apps if any(s.get("throughput") for s in w["systems"].values())]
        if with_tp:
            fig, ax = plt.subplots(figsize=(11, 5))
            _grouped_bars(ax, with_tp, lambda s: (s.get("throughput") or {}).get("rpm", 0))
            ax.set_ylabel("requests per minute")
            clients = next(s["throughput"]["clients"] for w in with_tp
                           for s in w["systems"].values() if s.get("throughput"))
            ax.set_title(f"Throughput, {clients} concurrent clients")
            ax.legend(fontsize=7)
            save(fig, "throughput.png")

        fig, ax = plt.subplots(figsize=(9, 4.5))
        variants = [w for w in apps if len(w.get("variants_vs_ns", {})) > 1]
        names: list[str] = []
        for w in variants:
            names += [n for n in w["variants_vs_ns"] if n not in names]
        width = 0.8 / max(1, len(names))
        for offset, name in enumerate(names):
            xs = [i + (offset - (len(names) - 1) / 2) * width for i in range(len(variants))]
            ax.bar(xs, [w["variants_vs_ns"].get(name, 0) for w in variants], width * 0.9,
                   label=name)
        ax.axhline(1.0, color="black", linewidth=0.5)
        ax.set_xticks(range(len(variants)), [w["name"] for w in variants])
        ax.set_ylabel(f"end-to-end, relative to {FAASTLANE_NS}")
        ax.set_title("Faastlane variants")
        ax.legend(fontsize=7)
        save(fig, "variants.png")

    scal = sorted(_group(document, "scalability")
                  + [w for w in apps if w["app"] == "finra" and w["size"]],
                  key=lambda w: w["size"])
    if scal:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for name in scal[-1]["systems"]:
            points = [(w["size"], w["systems"][name]["end_to_end_ms"]["median"])
                      for w in scal if name in w["systems"]]
            ax.plot(*zip(*points, strict=True), marker="o", label=name)
        ax.set_xlabel("FINRA audit rules (parallel Map iterations)")
        ax.set_ylabel("median end-to-end (ms)")
        ax.set_title("FINRA scalability")
        ax.legend(fontsize=7)
        save(fig, "scalability.png")

    chain = sorted(_group(document, "handoff"), key=lambda w: w["size"])
    if chain:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for name in chain[0]["systems"]:
            points = []
            for w in chain:
                edges = w["systems"].get(name, {}).get("handoffs", {})
                gaps = [e["median_ms"] for k, e in edges.items() if not k.startswith("start")]
                if gaps:
                    points.append((w["size"], sorted(gaps)[len(gaps) // 2]))
            if points:
                ax.plot(*zip(*points, strict=True), marker="o", label=name)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("payload (bytes)")
        ax.set_ylabel("median hand-off between two functions (ms)")
        ax.set_title("One hand-off, by payload size")
        ax.legend(fontsize=7)
        save(fig, "handoff.png")
    return written
