"""YAML and JSON documents with the line of every node, for problems that say where.

CloudFormation's YAML short tags become the long form JSON templates use
(``!Ref X`` -> ``{"Ref": "X"}``, ``!GetAtt A.B`` -> ``{"Fn::GetAtt": ["A", "B"]}``,
``!Sub s`` -> ``{"Fn::Sub": "s"}``, ...), so one resolver reads both. JSON is read by the
same YAML parser (JSON is YAML 1.2; where PyYAML's 1.1 disagrees, ``json`` decides and
lines are lost), so a JSON template's problems have lines too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import yaml

from faastlane.validation.problem import child, nearest_line

# Short tag -> the long form's key. ``!GetAtt A.B`` (a scalar) is split at the first dot.
SHORT_TAGS = {
    "!Ref": "Ref", "!Condition": "Condition", "!GetAtt": "Fn::GetAtt", "!Sub": "Fn::Sub",
    "!Join": "Fn::Join", "!Select": "Fn::Select", "!Split": "Fn::Split", "!If": "Fn::If",
    "!Equals": "Fn::Equals", "!And": "Fn::And", "!Or": "Fn::Or", "!Not": "Fn::Not",
    "!FindInMap": "Fn::FindInMap", "!Base64": "Fn::Base64", "!GetAZs": "Fn::GetAZs",
    "!ImportValue": "Fn::ImportValue", "!Cidr": "Fn::Cidr", "!Transform": "Fn::Transform",
    "!ToJsonString": "Fn::ToJsonString", "!Length": "Fn::Length",
}


class DocumentError(Exception):
    """A file that cannot be parsed: the message, and its line where known."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


@dataclass
class Document:
    """A parsed file: its data and the 1-based line of each node, by JSON pointer."""

    data: Any
    lines: dict[str, int] = field(default_factory=dict)
    duplicates: list[str] = field(default_factory=list)  # pointers of repeated keys

    def line(self, pointer: str) -> int | None:
        """The line of the node at ``pointer``, or of its nearest ancestor."""
        return nearest_line(self.lines, pointer)


class _Loader(yaml.SafeLoader):
    """SafeLoader that turns scalars into values only (tags are handled by :func:`_convert`)."""


# Scalars YAML reads as values JSON has no type for: kept as the text written (a date in
# a Pass state's Result stays "2024-01-31", as CloudFormation's YAML-to-JSON keeps it).
_TEXT_TAGS = ("tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:binary")


def _scalar(loader: _Loader, node: yaml.ScalarNode) -> Any:
    if node.tag.startswith("!") or node.tag in _TEXT_TAGS:
        return node.value  # the argument of a short tag is the text as written
    return loader.construct_object(node)


def _convert(loader: _Loader, node: yaml.Node, where: str, doc: Document) -> Any:
    doc.lines.setdefault(where, node.start_mark.line + 1)
    tag = node.tag
    if tag.startswith("!") and not tag.startswith("!!"):
        key = SHORT_TAGS.get(tag)
        if key is None:
            raise DocumentError(f"unknown tag {tag} (CloudFormation's: "
                                f"{', '.join(sorted(SHORT_TAGS))})", node.start_mark.line + 1)
        inner_where = child(where, key)
        doc.lines.setdefault(inner_where, node.start_mark.line + 1)
        if isinstance(node, yaml.ScalarNode):
            value: Any = node.value
            if key == "Fn::GetAtt":
                value = value.split(".", 1)
            return {key: value}
        node.tag = ("tag:yaml.org,2002:seq" if isinstance(node, yaml.SequenceNode)
                    else "tag:yaml.org,2002:map")
        return {key: _convert(loader, node, inner_where, doc)}
    if isinstance(node, yaml.MappingNode):
        loader.flatten_mapping(node)
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = _scalar(loader, key_node)
            if not isinstance(key, str):  # keys are strings as written (YAML 1.1's `on`)
                key = str(key_node.value)
            at = child(where, key)
            if key in out:
                doc.duplicates.append(at)
            doc.lines[at] = key_node.start_mark.line + 1
            out[key] = _convert(loader, value_node, at, doc)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_convert(loader, item, child(where, index), doc)
                for index, item in enumerate(node.value)]
    assert isinstance(node, yaml.ScalarNode)  # the one other kind of node
    return _scalar(loader, node)


def parse(text: str, json_only: bool = False) -> Document:
    """Parse YAML (or JSON) text; raise DocumentError with the line of a syntax error."""
    if json_only:
        try:
            json.loads(text)
        except json.JSONDecodeError as exc:
            raise DocumentError(f"invalid JSON: {exc.msg} (column {exc.colno})",
                                exc.lineno) from None
    loader = _Loader(text)
    try:
        root = loader.get_single_node()
        doc = Document(None)
        if root is not None:
            doc.data = _convert(loader, root, "", doc)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        if json_only:  # valid JSON that PyYAML's YAML 1.1 reads otherwise: no lines
            return Document(json.loads(text))
        raise DocumentError(f"invalid YAML: {exc.problem or exc.context}",
                            mark.line + 1 if mark else None) from None
    except yaml.YAMLError as exc:
        raise DocumentError(f"invalid YAML: {exc}") from None
    finally:
        loader.dispose()
    if json_only:
        doc.data = json.loads(text)  # the exact values (YAML 1.1 reads some scalars otherwise)
    return doc


def read(path: str) -> Document:
    """Parse a file: ``.json`` as JSON, anything else as YAML."""
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    return parse(text, json_only=path.endswith(".json"))
