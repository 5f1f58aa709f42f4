"""Checks properties of the non-deterministic intrinsics, returning only the verdicts.

The range check accepts the end number itself: the documentation says "between the
specified start and end number" without settling whether the end is included.
"""
import re

_UUID4 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


def handler(event, context):
    return {
        "sum": event["sum"],
        "neg": event["neg"],
        "randomIsInt": isinstance(event["random"], int),
        "randomInRange": 5 <= event["random"] <= 10,
        "seededInRange": 5 <= event["seeded"] <= 10,
        "uuidIsV4": bool(_UUID4.match(event["uuid"])),
        "uuidsDiffer": event["uuid"] != event["uuid2"],
    }
