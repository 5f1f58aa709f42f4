"""The graph as text for tools that lay it out themselves: Mermaid and Graphviz DOT."""

from __future__ import annotations

import json
import re
import zlib

from .model import (
    CATCH,
    CHOICE,
    DEFAULT,
    SENSITIVE,
    TRUSTED,
    UNTRUSTED,
    Cluster,
    Diagram,
    Graph,
    Node,
)
from .paint import CLUSTER_COLOURS, EDGE_COLOURS, box_colours

_TRUST_CLASSES = {UNTRUSTED: "untrusted", SENSITIVE: "sensitive", TRUSTED: "trusted",
                  None: "task"}


def _ident(key: str) -> str:
    """A plan key (``Fetch/Branches/0/Inner``) as an identifier both languages accept."""
    if re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", key):
        return "s_" + key
    # Distinct keys stay distinct ("A/B" and "A_B"): a checksum of the key itself.
    return f"s_{re.sub(r'[^A-Za-z0-9_]', '_', key)}_{zlib.crc32(key.encode()):08x}"


def _lines(item: Node | Cluster) -> list[str]:
    title = item.name if isinstance(item, Node) else f"{item.kind} {item.name}"
    lines = [title, *[line for line in item.lines if line]]
    if item.time:
        lines.append(item.time)
    return lines


# ----------------------------------------------------------------------------- Mermaid


def _mermaid_text(lines: list[str]) -> str:
    text = "<br/>".join(lines)
    return '"' + text.replace('"', "#quot;") + '"'


def _mermaid_node(node: Node) -> str:
    ident, text = _ident(node.id), _mermaid_text(_lines(node))
    if node.kind in ("Start", "End"):
        return f"{ident}(({text}))"
    if node.kind == "Choice":
        return f"{ident}{{{{{text}}}}}"
    return f"{ident}({text})"


def _mermaid_class(node: Node) -> str:
    if node.kind == "Task":
        return _TRUST_CLASSES[node.trust]
    return node.kind.lower()


def _mermaid_diagram(diagram: Diagram, indent: str, out: list[str]) -> None:
    for item in diagram.items:
        if isinstance(item, Cluster):
            out.append(f"{indent}subgraph {_ident(item.id)}[{_mermaid_text(_lines(item))}]")
            out.append(f"{indent}  direction TB")
            for index, inner in enumerate(item.diagrams):
                lane = f"{_ident(item.id)}_{index}"
                out.append(f"{indent}  subgraph {lane}[{_mermaid_text([inner.title])}]")
                _mermaid_diagram(inner, indent + "    ", out)
                out.append(f"{indent}  end")
            out.append(f"{indent}end")
            out.append(f"{indent}class {_ident(item.id)} {item.kind.lower()}")
        else:
            out.append(f"{indent}{_mermaid_node(item)}:::{_mermaid_class(item)}")
    for edge in diagram.edges:
        source, target = _ident(edge.source), _ident(edge.target)
        if not edge.label:
            out.append(f"{indent}{source} --> {target}")
        elif edge.kind == CATCH:
            out.append(f"{indent}{source} -. {_mermaid_text([edge.label])} .-> {target}")
        else:
            out.append(f"{indent}{source} -- {_mermaid_text([edge.label])} --> {target}")


def to_mermaid(graph: Graph, generator: str) -> str:
    """Mermaid's flowchart; ``generator`` goes in a comment (front matter must be first)."""
    out = ["---", f"title: {json.dumps(graph.name + ' (' + graph.subtitle + ')')}", "---",
           "flowchart TD", f"  %% {generator}"]
    _mermaid_diagram(graph.diagram, "  ", out)
    styles = {"untrusted": box_colours(Node("", "", "Task", trust=UNTRUSTED)),
              "sensitive": box_colours(Node("", "", "Task", trust=SENSITIVE)),
              "trusted": box_colours(Node("", "", "Task", trust=TRUSTED)),
              "task": box_colours(Node("", "", "Task"))}
    for kind in ("Choice", "Pass", "Wait", "Succeed", "Fail", "Start", "End"):
        styles[kind.lower()] = box_colours(Node("", "", kind))
    for kind in CLUSTER_COLOURS:
        styles[kind.lower()] = CLUSTER_COLOURS[kind]
    for name, (fill, stroke) in styles.items():
        colour = ",color:#ffffff" if name in ("start", "end") else ""
        out.append(f"  classDef {name} fill:{fill},stroke:{stroke}{colour}")
    return "\n".join(out) + "\n"


# ----------------------------------------------------------------------------- DOT


def _dot_quote(text: str) -> str:
    return json.dumps(text)


def _dot_label(lines: list[str]) -> str:
    return _dot_quote("\n".join(lines))


def _first_node(item: Node | Cluster) -> str:
    """A node inside a cluster for an edge to end at (DOT joins nodes; ``lhead``/``ltail``
    clip the edge at the cluster's border)."""
    while isinstance(item, Cluster):
        item = item.diagrams[0].items[0]
    return _ident(item.id)


def _dot_diagram(diagram: Diagram, indent: str, out: list[str]) -> None:
    items = {item.id: item for item in diagram.items}
    for item in diagram.items:
        if isinstance(item, Cluster):
            fill, stroke = box_colours(item)
            style = "rounded,filled,dashed" if item.kind == "Map" else "rounded,filled"
            out.append(f"{indent}subgraph cluster_{_ident(item.id)} {{")
            out.append(f'{indent}  label={_dot_label(_lines(item))}; style="{style}"; '
                       f'fillcolor="{fill}"; color="{stroke}";')
            for index, inner in enumerate(item.diagrams):
                out.append(f"{indent}  subgraph cluster_{_ident(item.id)}_{index} {{")
                out.append(f'{indent}    label={_dot_quote(inner.title)}; style="dashed"; '
                           f'color="#b0b8c8"; fillcolor="#ffffff";')
                _dot_diagram(inner, indent + "    ", out)
                out.append(f"{indent}  }}")
            out.append(f"{indent}}}")
            continue
        fill, stroke = box_colours(item)
        shape = {"Choice": "hexagon", "Start": "circle", "End": "doublecircle"}.get(
            item.kind, "box")
        font = ', fontcolor="#ffffff"' if item.kind in ("Start", "End") else ""
        out.append(f'{indent}{_ident(item.id)} [label={_dot_label(_lines(item))}, '
                   f'shape={shape}, style="rounded,filled", fillcolor="{fill}", '
                   f'color="{stroke}"{font}];')
    for edge in diagram.edges:
        source, target = items[edge.source], items[edge.target]
        attrs = []
        if isinstance(source, Cluster):
            attrs.append(f"ltail=cluster_{_ident(source.id)}")
        if isinstance(target, Cluster):
            attrs.append(f"lhead=cluster_{_ident(target.id)}")
        if edge.label:
            attrs.append(f"label={_dot_quote(edge.label)}")
        if edge.kind in (DEFAULT, CATCH):
            attrs.append("style=dashed")
        if edge.kind in (CHOICE, DEFAULT, CATCH):
            attrs.append(f'color="{EDGE_COLOURS[edge.kind]}"')
        suffix = f" [{', '.join(attrs)}]" if attrs else ""
        out.append(f"{indent}{_first_node(source)} -> {_first_node(target)}{suffix};")


def to_dot(graph: Graph, generator: str) -> str:
    out = [f"// {generator}", f"digraph {_dot_quote(graph.name)} {{", "  compound=true;",
           f"  label={_dot_quote(graph.name + ' (' + graph.subtitle + ')')}; labelloc=t;",
           '  node [fontname="Helvetica", fontsize=11];',
           '  edge [fontname="Helvetica", fontsize=10];']
    _dot_diagram(graph.diagram, "  ", out)
    out.append("}")
    return "\n".join(out) + "\n"
