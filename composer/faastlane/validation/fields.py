"""Which fields each part of an ASL definition may hold, per query language.

The tables follow the Amazon States Language specification and the Step Functions
developer guide: a JSONata state trades the five JSONPath fields (``InputPath``,
``Parameters``, ``ResultSelector``, ``ResultPath``, ``OutputPath``) and every ``*Path``
variant for ``Arguments`` and ``Output``; ``Assign`` (variables) works in both but not
in Succeed and Fail states.
"""

from __future__ import annotations

from dataclasses import dataclass

# Re-exported: the validator's modules name the languages F.JSONPATH and F.JSONATA.
from faastlane.runtime.asl.model import JSONATA as JSONATA
from faastlane.runtime.asl.model import JSONPATH as JSONPATH

QUERY_LANGUAGES = (JSONPATH, JSONATA)

TOP_LEVEL = frozenset(
    {"Comment", "StartAt", "States", "Version", "TimeoutSeconds", "QueryLanguage"}
)
BRANCH = frozenset({"Comment", "StartAt", "States"})
ITEM_PROCESSOR = BRANCH | {"ProcessorConfig"}


@dataclass(frozen=True)
class StateFields:
    """The fields one state type allows: in both languages, JSONPath only, JSONata only."""

    both: frozenset[str]
    jsonpath: frozenset[str]
    jsonata: frozenset[str]

    def allowed(self, language: str) -> frozenset[str]:
        """Every field a state of this type may have under ``language``."""
        return self.both | (self.jsonata if language == JSONATA else self.jsonpath)


def _fields(both: str, jsonpath: str, jsonata: str) -> StateFields:
    return StateFields(
        frozenset(both.split()), frozenset(jsonpath.split()), frozenset(jsonata.split())
    )


# Every state may have these, whatever its type or language.
_COMMON = "Type Comment QueryLanguage"
_FLOW = "Next End"
_ERRORS = "Retry Catch"

STATE_FIELDS: dict[str, StateFields] = {
    "Task": _fields(
        f"{_COMMON} Resource {_FLOW} {_ERRORS} TimeoutSeconds HeartbeatSeconds Credentials Assign",
        "InputPath OutputPath Parameters ResultSelector ResultPath"
        " TimeoutSecondsPath HeartbeatSecondsPath",
        "Arguments Output",
    ),
    "Pass": _fields(
        f"{_COMMON} {_FLOW} Assign", "InputPath OutputPath Parameters ResultPath Result", "Output"
    ),
    "Choice": _fields(f"{_COMMON} Choices Default Assign", "InputPath OutputPath", "Output"),
    "Wait": _fields(
        f"{_COMMON} Seconds Timestamp {_FLOW} Assign",
        "InputPath OutputPath SecondsPath TimestampPath",
        "Output",
    ),
    "Succeed": _fields(f"{_COMMON} ", "InputPath OutputPath", "Output"),
    "Fail": _fields(f"{_COMMON} Error Cause", "ErrorPath CausePath", ""),
    "Parallel": _fields(
        f"{_COMMON} Branches {_FLOW} {_ERRORS} Assign",
        "InputPath OutputPath Parameters ResultSelector ResultPath",
        "Arguments Output",
    ),
    "Map": _fields(
        f"{_COMMON} ItemProcessor Iterator ItemReader ItemSelector ItemBatcher ResultWriter"
        f" MaxConcurrency ToleratedFailurePercentage ToleratedFailureCount Label {_FLOW}"
        f" {_ERRORS} Assign",
        "InputPath OutputPath ItemsPath Parameters ResultSelector ResultPath MaxConcurrencyPath"
        " ToleratedFailurePercentagePath ToleratedFailureCountPath",
        "Items Output",
    ),
}

# States that move on with Next/End; Choice, Succeed and Fail do not.
FLOW_STATES = frozenset({"Task", "Pass", "Wait", "Parallel", "Map"})

RETRIER = frozenset(
    {
        "ErrorEquals",
        "IntervalSeconds",
        "MaxAttempts",
        "BackoffRate",
        "MaxDelaySeconds",
        "JitterStrategy",
        "Comment",
    }
)
CATCHER = StateFields(
    frozenset({"ErrorEquals", "Next", "Comment", "Assign"}),
    frozenset({"ResultPath"}),
    frozenset({"Output"}),
)
# Choice rules: top-level rules carry Next (and may Assign/Output); nested ones do not.
CHOICE_RULE = StateFields(
    frozenset({"Next", "Comment", "Assign"}),
    frozenset({"Variable", "And", "Or", "Not"}),
    frozenset({"Condition", "Output"}),
)

ITEM_READER = StateFields(
    frozenset({"Resource", "ReaderConfig"}), frozenset({"Parameters"}), frozenset({"Arguments"})
)
READER_CONFIG = StateFields(
    frozenset(
        {"InputType", "CSVHeaderLocation", "CSVHeaders", "CSVDelimiter", "ManifestType", "MaxItems"}
    ),
    frozenset({"MaxItemsPath"}),
    frozenset(),
)
ITEM_BATCHER = StateFields(
    frozenset({"MaxItemsPerBatch", "MaxInputBytesPerBatch", "BatchInput"}),
    frozenset({"MaxItemsPerBatchPath", "MaxInputBytesPerBatchPath"}),
    frozenset(),
)
RESULT_WRITER = StateFields(
    frozenset({"Resource", "WriterConfig"}), frozenset({"Parameters"}), frozenset({"Arguments"})
)
PROCESSOR_CONFIG = frozenset({"Mode", "ExecutionType"})
