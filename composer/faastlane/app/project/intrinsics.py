"""CloudFormation's intrinsic functions and conditions, evaluated locally.

``Ref``, ``Fn::GetAtt``, ``Fn::Sub`` (both forms), ``Fn::Join``, ``Fn::Select``,
``Fn::Split``, ``Fn::If``/``Fn::Equals``/``Fn::And``/``Fn::Or``/``Fn::Not`` and
``Condition`` (inside conditions only: elsewhere a ``Condition`` key is data),
``Fn::FindInMap`` (with ``DefaultValue``), ``Fn::Base64``, ``Fn::GetAZs``,
``Fn::ToJsonString`` and ``Fn::Length``. What a resource's ``Ref`` or attribute is comes
from :mod:`.resources`; what cannot be known here (``Fn::ImportValue``, an attribute of a
resource type not modelled) raises :class:`Unresolved` at the pointer of the function.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable, Collection
from typing import Any

from faastlane.validation.problem import child, did_you_mean

from .parameters import NO_VALUE

_PLACEHOLDER = re.compile(r"\$\{([^}]*)\}")


class Unresolved(Exception):
    """A value that cannot be resolved: why, and the JSON pointer where."""

    def __init__(self, message: str, where: str) -> None:
        super().__init__(message)
        self.where = where


# The callbacks a resolver asks about names: a parameter (or pseudo parameter), then a
# resource's Ref or one of its attributes. Each raises KeyError if there is no such name,
# Unresolved if there is but its value cannot be known.
RefLookup = Callable[[str, str], Any]
AttLookup = Callable[[str, str, str], Any]


class Resolver:
    """Evaluates the intrinsic functions in a template's values."""

    def __init__(self, parameters: dict[str, Any], ref: RefLookup, get_att: AttLookup,
                 conditions: dict[str, Any], mappings: dict[str, Any],
                 resources: Callable[[], Collection[str]] = tuple) -> None:
        self.parameters = parameters
        self._ref, self._get_att = ref, get_att
        self._resources = resources  # the logical ids, for "did you mean"
        self._conditions = conditions  # name -> its (unevaluated) expression
        self._mappings = mappings
        self._evaluated: dict[str, bool] = {}
        self._evaluating: list[str] = []

    # -- values ------------------------------------------------------------------------

    def resolve(self, value: Any, where: str) -> Any:
        """``value`` with every intrinsic function evaluated (``AWS::NoValue`` removed)."""
        if isinstance(value, dict):
            if len(value) == 1:
                (key, argument), = value.items()
                handler = _FUNCTIONS.get(key)
                if handler is not None:
                    return handler(self, argument, child(where, key))
            out = {}
            for key, item in value.items():
                resolved = self.resolve(item, child(where, key))
                if resolved is not NO_VALUE:
                    out[key] = resolved
            return out
        if isinstance(value, list):
            resolved_items = (self.resolve(item, child(where, i)) for i, item in enumerate(value))
            return [item for item in resolved_items if item is not NO_VALUE]
        return value

    def _string(self, value: Any, where: str, what: str) -> str:
        resolved = self.resolve(value, where)
        if isinstance(resolved, bool):
            return "true" if resolved else "false"
        if isinstance(resolved, (int, float)):
            return str(resolved)
        if not isinstance(resolved, str):
            raise Unresolved(f"{what} must be a string, not {type(resolved).__name__}", where)
        return resolved

    def _list(self, value: Any, where: str, what: str,
              length: int | None = None) -> list[Any]:
        resolved = self.resolve(value, where)
        if not isinstance(resolved, list) or (length is not None and len(resolved) != length):
            shape = "a list" if length is None else f"a list of {length}"
            raise Unresolved(f"{what} takes {shape}", where)
        return resolved

    # -- names -------------------------------------------------------------------------

    def ref(self, name: Any, where: str) -> Any:
        if not isinstance(name, str):
            raise Unresolved("Ref takes the name of a parameter or resource", where)
        if name in self.parameters:
            return self.parameters[name]
        try:
            return self._ref(name, where)
        except KeyError:
            known = [*self.parameters, *self._resources()]
            raise Unresolved(f"Ref to {name!r}: no parameter or resource of that name"
                             f"{did_you_mean(name, known)}", where) from None

    def get_att(self, argument: Any, where: str) -> Any:
        if isinstance(argument, str):
            argument = argument.split(".", 1)
        if not (isinstance(argument, list) and len(argument) == 2):
            raise Unresolved("Fn::GetAtt takes [LogicalId, Attribute] (!GetAtt Id.Attribute)",
                             where)
        name = self._string(argument[0], child(where, 0), "Fn::GetAtt's logical id")
        attribute = self._string(argument[1], child(where, 1), "Fn::GetAtt's attribute")
        try:
            return self._get_att(name, attribute, where)
        except KeyError:
            raise Unresolved(f"Fn::GetAtt {name}.{attribute}: no resource {name!r}"
                             f"{did_you_mean(name, self._resources())}", where) from None

    # -- conditions ----------------------------------------------------------------------

    def condition(self, name: Any, where: str) -> bool:
        """The named condition's value (each evaluated once; a cycle is a problem)."""
        if not isinstance(name, str) or name not in self._conditions:
            raise Unresolved(f"no condition named {name!r} in Conditions", where)
        if name not in self._evaluated:
            if name in self._evaluating:
                raise Unresolved(f"condition {name!r} depends on itself", where)
            self._evaluating.append(name)
            try:
                self._evaluated[name] = self.truth(self._conditions[name],
                                                   child("/Conditions", name))
            finally:
                self._evaluating.pop()
        return self._evaluated[name]

    def truth(self, value: Any, where: str) -> bool:
        if isinstance(value, dict) and list(value) == ["Condition"]:
            return self.condition(value["Condition"], child(where, "Condition"))
        resolved = self.resolve(value, where)
        if isinstance(resolved, bool):
            return resolved
        if isinstance(resolved, str) and resolved in ("true", "false"):
            return resolved == "true"
        raise Unresolved("a condition must be Fn::Equals, Fn::And, Fn::Or, Fn::Not or "
                         "Condition", where)

    # -- Fn::Sub ------------------------------------------------------------------------

    def substitute(self, text: str, variables: dict[str, Any], where: str) -> str:
        def replace(match: re.Match[str]) -> str:
            name = match.group(1)
            if name.startswith("!"):
                return "${" + name[1:] + "}"  # ${!Literal} is written as ${Literal}
            if name in variables:
                value = variables[name]
            elif name in self.parameters or "." not in name:
                value = self.ref(name, where)
            else:
                value = self.get_att(name, where)
            if isinstance(value, list):
                raise Unresolved(f"${{{name}}} is a list: Fn::Sub needs a string "
                                 "(use Fn::Join)", where)
            return self._string(value, where, f"${{{name}}}")
        return _PLACEHOLDER.sub(replace, text)


def _sub(resolver: Resolver, argument: Any, where: str) -> str:
    if isinstance(argument, list):
        if len(argument) != 2 or not isinstance(argument[1], dict):
            raise Unresolved("Fn::Sub takes a string, or [string, {Name: value}]", where)
        text = resolver._string(argument[0], child(where, 0), "Fn::Sub's text")
        variables = {name: resolver.resolve(value, child(where, 1, name))
                     for name, value in argument[1].items()}
        return resolver.substitute(text, variables, where)
    if not isinstance(argument, str):
        raise Unresolved("Fn::Sub takes a string, or [string, {Name: value}]", where)
    return resolver.substitute(argument, {}, where)


def _join(resolver: Resolver, argument: Any, where: str) -> str:
    if not (isinstance(argument, list) and len(argument) == 2):
        raise Unresolved("Fn::Join takes [delimiter, [values]]", where)
    delimiter = resolver._string(argument[0], child(where, 0), "Fn::Join's delimiter")
    items = resolver._list(argument[1], child(where, 1), "Fn::Join's second argument")
    return delimiter.join(resolver._string(item, child(where, 1, i), "each joined value")
                          for i, item in enumerate(items))


def _select(resolver: Resolver, argument: Any, where: str) -> Any:
    if not (isinstance(argument, list) and len(argument) == 2):
        raise Unresolved("Fn::Select takes [index, [values]]", where)
    index = resolver.resolve(argument[0], child(where, 0))
    items = resolver._list(argument[1], child(where, 1), "Fn::Select's second argument")
    try:
        position = int(index)
    except (TypeError, ValueError):
        raise Unresolved(f"Fn::Select's index {index!r} is not a number", where) from None
    if not 0 <= position < len(items):
        raise Unresolved(f"Fn::Select's index {position} is outside the list of "
                         f"{len(items)}", where)
    return items[position]


def _split(resolver: Resolver, argument: Any, where: str) -> list[str]:
    if not (isinstance(argument, list) and len(argument) == 2):
        raise Unresolved("Fn::Split takes [delimiter, string]", where)
    delimiter = resolver._string(argument[0], child(where, 0), "Fn::Split's delimiter")
    if not delimiter:
        raise Unresolved("Fn::Split's delimiter is empty", where)
    return resolver._string(argument[1], child(where, 1), "Fn::Split's string").split(delimiter)


def _if(resolver: Resolver, argument: Any, where: str) -> Any:
    if not (isinstance(argument, list) and len(argument) == 3):
        raise Unresolved("Fn::If takes [condition, value if true, value if false]", where)
    chosen = 1 if resolver.condition(argument[0], child(where, 0)) else 2
    return resolver.resolve(argument[chosen], child(where, chosen))


def _equals(resolver: Resolver, argument: Any, where: str) -> bool:
    values = resolver._list(argument, where, "Fn::Equals", length=2)
    first, second = (json.dumps(v, sort_keys=True) if not isinstance(v, str) else v
                     for v in values)
    return first == second


def _logic(name: str) -> Callable[[Resolver, Any, str], bool]:
    def evaluate(resolver: Resolver, argument: Any, where: str) -> bool:
        if not isinstance(argument, list) or not argument:
            raise Unresolved(f"{name} takes a list of conditions", where)
        truths = [resolver.truth(item, child(where, i)) for i, item in enumerate(argument)]
        if name == "Fn::Not":
            if len(truths) != 1:
                raise Unresolved("Fn::Not takes a list of one condition", where)
            return not truths[0]
        return all(truths) if name == "Fn::And" else any(truths)
    return evaluate


def _find_in_map(resolver: Resolver, argument: Any, where: str) -> Any:
    if not (isinstance(argument, list) and len(argument) in (3, 4)):
        raise Unresolved("Fn::FindInMap takes [MapName, TopLevelKey, SecondLevelKey]", where)
    keys = [resolver._string(argument[i], child(where, i), "Fn::FindInMap's key")
            for i in range(3)]
    default: Any = NO_VALUE
    if len(argument) == 4:
        option = argument[3]
        if not (isinstance(option, dict) and "DefaultValue" in option):
            raise Unresolved("Fn::FindInMap's fourth argument is {DefaultValue: value}", where)
        default = option["DefaultValue"]
    found: Any = resolver._mappings
    for depth, key in enumerate(keys):
        if not isinstance(found, dict) or key not in found:
            if default is not NO_VALUE:
                return resolver.resolve(default, child(where, 3, "DefaultValue"))
            what = ("no mapping", "no top-level key", "no second-level key")[depth]
            raise Unresolved(f"Fn::FindInMap: {what} {key!r}", child(where, depth))
        found = found[key]
    return resolver.resolve(found, where)


def _base64(resolver: Resolver, argument: Any, where: str) -> str:
    text = resolver._string(argument, where, "Fn::Base64's argument")
    return base64.b64encode(text.encode("utf-8")).decode("ascii")


def _get_azs(resolver: Resolver, argument: Any, where: str) -> list[str]:
    region = resolver._string(argument, where, "Fn::GetAZs's region") \
        or resolver.parameters["AWS::Region"]
    return [f"{region}{zone}" for zone in "abc"]


def _to_json_string(resolver: Resolver, argument: Any, where: str) -> str:
    return json.dumps(resolver.resolve(argument, where), separators=(",", ":"))


def _length(resolver: Resolver, argument: Any, where: str) -> int:
    return len(resolver._list(argument, where, "Fn::Length"))


def _not_local(name: str, why: str) -> Callable[[Resolver, Any, str], Any]:
    def refuse(_resolver: Resolver, _argument: Any, where: str) -> Any:
        raise Unresolved(f"{name} cannot be resolved locally: {why}", where)
    return refuse


_FUNCTIONS: dict[str, Callable[[Resolver, Any, str], Any]] = {
    "Ref": lambda r, a, w: r.ref(a, w),
    "Fn::GetAtt": lambda r, a, w: r.get_att(a, w),
    "Fn::Sub": _sub, "Fn::Join": _join, "Fn::Select": _select, "Fn::Split": _split,
    "Fn::If": _if, "Fn::Equals": _equals, "Fn::And": _logic("Fn::And"),
    "Fn::Or": _logic("Fn::Or"), "Fn::Not": _logic("Fn::Not"),
    "Fn::FindInMap": _find_in_map, "Fn::Base64": _base64, "Fn::GetAZs": _get_azs,
    "Fn::ToJsonString": _to_json_string, "Fn::Length": _length,
    "Fn::ImportValue": _not_local("Fn::ImportValue", "it reads another stack's outputs; "
                                  "pass the value as a parameter instead"),
    "Fn::Cidr": _not_local("Fn::Cidr", "networks are not modelled"),
    "Fn::Transform": _not_local("Fn::Transform", "macros run in CloudFormation"),
}
