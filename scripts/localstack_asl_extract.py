#!/usr/bin/env python3
# Kept in this repository from shared/tools/localstack-replay/extract.py; run by
# scripts/extract_aws_recorded.py, which packs its output into tests/fixtures/aws_recorded/.
"""Turn LocalStack's AWS-recorded Step Functions snapshot tests into a conformance corpus.

LocalStack's ``tests/aws/services/stepfunctions/v2/**/test_*.py`` build Amazon States
Language definitions (JSON5 templates, often edited in Python), start executions on real
AWS, and keep what AWS answered in ``*.snapshot.json`` files (the execution history, with
the final ``ExecutionSucceeded`` output or ``ExecutionFailed`` error and cause).  This
script recovers, for every such execution that needs no AWS service, the exact
definition and input that were sent, pairs them with the recorded result, and writes one
folder per case::

    OUT/<case>/workflow.json   the definition string passed to CreateStateMachine
    OUT/<case>/input.json      the input string passed to StartExecution
    OUT/<case>/expected.json   {"status": "SUCCEEDED", "output": ...} or
                               {"status": "FAILED", "error": ..., "cause": ...},
                               plus "source", "ignore", "patterns", "meta" (see README.md)
    OUT/index.json             every execution seen, kept or skipped, with the reason

Nothing from LocalStack is copied anywhere but OUT and a temporary folder.

How the definitions are recovered
---------------------------------
Not by reading the Python: each test module is *executed* in a worker process
(``--worker``) against stand-ins.  ``pytest`` is replaced by a small emulation that
expands ``parametrize`` exactly as pytest does (ids, ``pytest.param``, stacking, the
suffixes pytest adds to duplicate ids), so that every generated node id can be looked up
in the snapshot file.  ``localstack``/``botocore``/... imports get stub modules; the
``aws_client`` fixture is a fake whose Step Functions client records each
``create_state_machine``/``update_state_machine`` definition and each
``start_execution``/``start_sync_execution`` input and returns traced response objects.
LocalStack's own helper module ``localstack/testing/pytest/stepfunctions/utils.py``
(``create_and_record_execution`` and friends) is run unmodified on top of these fakes.
The fake ``sfn_snapshot`` records which snapshot key (and which position inside the
matched object) received which execution's history / description / output, and every
transformer the test registered.  ``is_aws_cloud()`` is true, as it was when the
snapshots were recorded.  Any other service call (Lambda, SQS, IAM, ...) returns a
sentinel value; a definition or input that contains one is skipped.

How the results are checked
---------------------------
* the recorded ``ExecutionStarted`` input must equal the recovered input after the same
  snapshot transformers are applied to it (else: skipped as "input mismatch");
* every state entered in the recorded history must exist in the recovered definition
  with the same type (else: skipped as "history does not fit the definition");
* placeholders that LocalStack's snapshot transformers wrote into the recorded result
  (``<uuid:1>``, ``arn:<partition>:...``, ``111111111111``, ISO dates turned into
  ``date``, values of ``*timestamp*`` keys, test-specific replacements) are found; a
  string leaf that contains some gets a full-match regular expression in ``patterns``,
  a leaf that was replaced whole goes into ``ignore``; a case whose whole output or
  whose error is a placeholder is dropped.

Only cases that an engine can run with no AWS service are kept: no Task state (Lambda,
SQS, SNS, DynamoDB, S3, EventBridge, ECS, HTTP, activities, nested executions, ...), no
Map ItemReader/ResultWriter, no Wait longer than ``--max-wait`` seconds (default 2; Wait
paths and ``{% $states.input.x %}`` are resolved against the recorded state input), no
Retry whose worst-case back-off exceeds ``--max-retry-wait`` (default 10 s), only tests
marked ``@markers.aws.validated``, only executions that ended SUCCEEDED or FAILED.

Setup (once; the venv lives outside any repository)::

    python3 -m venv /tmp/ls-asl-venv
    /tmp/ls-asl-venv/bin/pip install json5        # the only non-stdlib dependency

Usage::

    /tmp/ls-asl-venv/bin/python extract.py                       # mirror + output defaults
    /tmp/ls-asl-venv/bin/python extract.py --mirror "$LOCALSTACK_MIRROR" \\
        --out /tmp/localstack-asl-cases --rev HEAD --jobs 4
    /tmp/ls-asl-venv/bin/python extract.py --only choice_operators   # modules whose path contains it

Written for CPython 3.11 (standard library + json5 0.17).
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures as cf
import contextlib
import copy
import datetime as _dt
import hashlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import inspect
import io
import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
import traceback
import types
import uuid

DEFAULT_MIRROR = os.environ.get("LOCALSTACK_MIRROR", "")  # the bare git dir that fetch brings
DEFAULT_OUT = "/tmp/localstack-asl-cases"
SFN_TESTS = "tests/aws/services/stepfunctions"
SFN_UTILS = "localstack-core/localstack/testing/pytest/stepfunctions/utils.py"
SFN_ENCODING = "localstack-core/localstack/services/stepfunctions/asl/utils/encoding.py"
REAL_MODULES = {  # localstack modules that are run for real (their imports are stubbed)
    "localstack.testing.pytest.stepfunctions.utils": SFN_UTILS,
    "localstack.services.stepfunctions.asl.utils.encoding": SFN_ENCODING,
}
FAKE_ACCOUNT = "111111111111"  # the value LocalStack's snapshot puts in place of the account
FAKE_REGION = "us-east-1"
RECORD_PREFIX = "@@LSREC "
STUB_SENTINEL = "__LS_STUB__"
UID_PREFIX = "ls5uid"  # short_uid() values start with this: easy to find in a definition
UUID_PREFIX = "00005e1f"  # uuid4() values start with this
PER_TEST_TIMEOUT_S = 30

# ============================================================================
# Worker side: run one LocalStack test module against fakes and report what happened.
# ============================================================================


class _Recorder:
    """Everything one test did that matters: definitions, executions, snapshot matches."""

    def __init__(self):
        self.state_machines: dict[str, dict] = {}
        self.executions: list[dict] = []
        self.matches: list[dict] = []
        self.transformers: list[dict] = []
        self.usage: list[str] = []
        self.uids: list[str] = []

    def use(self, what: str) -> None:
        if what not in self.usage and len(self.usage) < 200:
            self.usage.append(what)


_REC = _Recorder()


def _note(what: str) -> None:
    _REC.use(what)


def _stub_value(path: str) -> str:
    # Enum members of LocalStack's generated API (localstack.aws.api.<svc>.<Type>.<Member>)
    # are str enums whose value is the member name (StateMachineType.EXPRESS == "EXPRESS").
    parts = path.split(".")
    if path.startswith("localstack.aws.api.") and len(parts) >= 6 and "(" not in path:
        return parts[-1]
    return f"{STUB_SENTINEL}({path})"


class Stub(str):
    """Stands in for anything that would need LocalStack, botocore or an AWS resource.

    A ``str`` so that it survives ``json.dumps`` and f-strings; its text contains
    STUB_SENTINEL so that a definition or input built from it can be recognised.
    """

    def __new__(cls, path: str):
        obj = str.__new__(cls, _stub_value(path))
        obj._path = path
        return obj

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return Stub(f"{self._path}.{name}")

    def __call__(self, *args, **kwargs):
        if len(args) == 1 and not kwargs and (inspect.isfunction(args[0]) or inspect.isclass(args[0])):
            return args[0]  # used as a decorator
        if self._path.startswith("localstack.aws.api."):
            return dict(*args, **kwargs)  # TypedDict shapes, e.g. LoggingConfiguration(level=...)
        _note(f"call:{self._path}")
        return Stub(f"{self._path}()")

    def __getitem__(self, key):
        if isinstance(key, slice):
            return str.__getitem__(self, key)
        return Stub(f"{self._path}[{key!r}]")

    def __iter__(self):
        return iter(())

    def __bool__(self):
        return True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __mro_entries__(self, bases):
        return (object,)

    def __or__(self, other):  # type annotations such as ``LoggingConfiguration | None``
        return self

    def __ror__(self, other):
        return self

    def __reduce__(self):
        return (Stub, (self._path,))

    def __deepcopy__(self, memo):
        return self

    def __copy__(self):
        return self


class TracedDict(dict):
    """A fake AWS response that remembers which execution (and what about it) it stands for."""

    def __init__(self, data, trace):
        super().__init__(data)
        self._trace = trace

    def __deepcopy__(self, memo):
        return TracedDict(copy.deepcopy(dict(self), memo), self._trace)


class TracedStr(str):
    def __new__(cls, value, trace):
        obj = str.__new__(cls, value)
        obj._trace = trace
        return obj


def _find_traces(obj, path=()):
    found = []
    if isinstance(obj, (TracedDict, TracedStr)):
        found.append({"path": list(path), "kind": obj._trace[0], "exec": obj._trace[1]})
        if isinstance(obj, TracedStr):
            return found
    if isinstance(obj, dict):
        for k, v in obj.items():
            if isinstance(obj, TracedDict) and k == "events":
                continue
            found.extend(_find_traces(v, path + (str(k),)))
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            found.extend(_find_traces(v, path + (i,)))
    return found


# ---- snapshot transformer stand-ins (localstack_snapshot.snapshots.transformer) -------------


def _pattern_text(p) -> str:
    return p.pattern if isinstance(p, re.Pattern) else str(p)


class _T:
    kind = "opaque"

    def describe(self) -> dict:
        return {"kind": self.kind}

    def transform(self, input_data, *, ctx=None):
        return input_data


class RegexTransformer(_T):
    kind = "regex"

    def __init__(self, regex, replacement):
        self.regex, self.replacement = regex, replacement

    def describe(self):
        return {"kind": "regex", "pattern": _pattern_text(self.regex), "replacement": str(self.replacement)}


class TextTransformer(RegexTransformer):
    def __init__(self, text, replacement):
        super().__init__(re.escape(str(text)), replacement)


class JsonpathTransformer(_T):
    kind = "jsonpath"

    def __init__(self, jsonpath, replacement, replace_reference=True):
        self.jsonpath, self.replacement, self.replace_reference = jsonpath, replacement, replace_reference

    def describe(self):
        return {"kind": "jsonpath", "jsonpath": str(self.jsonpath), "replacement": str(self.replacement),
                "reference": bool(self.replace_reference)}


class KeyValueBasedTransformer(_T):
    kind = "keyvalue"

    def __init__(self, match_fn, replacement, replace_reference=True):
        self.match_fn, self.replacement, self.replace_reference = match_fn, replacement, replace_reference

    def describe(self):
        return {"kind": "keyvalue", "replacement": str(self.replacement), "reference": bool(self.replace_reference)}


class GenericTransformer(_T):
    kind = "generic"

    def __init__(self, fn):
        self.fn = fn


class SortingTransformer(_T):
    kind = "sorting"

    def __init__(self, key, sorting_fn=None):
        self.key = key

    def describe(self):
        return {"kind": "sorting", "key": str(self.key)}


class _KeyTransformer(_T):
    """TransformerUtility.key_value(key, replacement, reference_replacement)."""

    kind = "key"

    def __init__(self, key, replacement, reference):
        self.key, self.replacement, self.reference = key, replacement, reference

    def describe(self):
        return {"kind": "key", "key": str(self.key), "replacement": str(self.replacement),
                "reference": bool(self.reference)}


class _NamedTransformer(_T):
    """A TransformerUtility helper this script does not model (service specific)."""

    def __init__(self, name):
        self.name = name

    def describe(self):
        return {"kind": "utility", "name": self.name}


class TransformContext:
    def __init__(self):
        self.replacements, self.scoped_tokens, self._cache = [], {}, {}


def _camel_to_hyphen(s: str) -> str:
    return "".join("-" + c.lower() if c.isupper() else c for c in s).strip("-")


class TransformerUtility:
    """Stand-in for LocalStack's TransformerUtility: the helpers the SFN tests use."""

    @staticmethod
    def key_value(key, value_replacement=None, reference_replacement=True):
        return _KeyTransformer(key, value_replacement or _camel_to_hyphen(str(key)), reference_replacement)

    @staticmethod
    def jsonpath(jsonpath, value_replacement, reference_replacement=True):
        return JsonpathTransformer(jsonpath, value_replacement, reference_replacement)

    @staticmethod
    def regex(regex, replacement):
        return RegexTransformer(regex, replacement)

    @staticmethod
    def sfn_sm_create_arn(create_sm_res, index):
        return RegexTransformer(str(create_sm_res["stateMachineArn"]).rpartition(":")[-1], f"<ArnPart_{index}idx>")

    @staticmethod
    def sfn_sm_exec_arn(start_exec, index):
        return RegexTransformer(str(start_exec["executionArn"]).rpartition(":")[-1], f"<ExecArnPart_{index}idx>")

    @staticmethod
    def sfn_sm_express_exec_arn(start_exec, index):
        parts = str(start_exec["executionArn"]).split(":")
        return [RegexTransformer(parts[-2], f"<ExpressExecArn_Part1_{index}idx>"),
                RegexTransformer(parts[-1], f"<ExpressExecArn_Part2_{index}idx>")]

    @staticmethod
    def sfn_sm_sync_exec_arn(start_exec, index):
        parts = str(start_exec["executionArn"]).split(":")
        return [RegexTransformer(parts[-2], f"<SyncExecArn_Part1_{index}idx>"),
                RegexTransformer(parts[-1], f"<SyncExecArn_Part2_{index}idx>")]

    @staticmethod
    def sfn_map_run_arn(map_run_arn, index):
        return [_NamedTransformer("sfn_map_run_arn")]

    @staticmethod
    def stepfunctions_api():
        return []  # modelled by the parent (always present for sfn_snapshot)

    def __getattr__(self, name):
        def _helper(*args, **kwargs):
            return _NamedTransformer(name)

        return _helper


class _TransformerUtilityNS:
    def __getattr__(self, name):
        attr = getattr(TransformerUtility, name, None)
        if attr is not None:
            return attr
        return lambda *a, **k: _NamedTransformer(name)


def _flatten_transformers(t):
    if isinstance(t, (list, tuple)):
        for x in t:
            yield from _flatten_transformers(x)
    elif t is not None:
        yield t


class FakeSnapshot:
    """The ``sfn_snapshot``/``snapshot`` fixture: records transformers and matches."""

    def __init__(self):
        self.transform = _TransformerUtilityNS()

    def add_transformer(self, transformer, *, priority=0):
        for t in _flatten_transformers(transformer):
            desc = t.describe() if isinstance(t, _T) else {"kind": "opaque", "type": type(t).__name__}
            if type(t).__name__ == "SfnNoneRecursiveParallelTransformer":
                desc = {"kind": "parallel-events-sort"}
            _REC.transformers.append(desc)

    def add_transformers_list(self, transformer_list, priority=0):
        self.add_transformer(list(transformer_list), priority=priority)

    def match(self, key, obj):
        _REC.matches.append({"key": str(key), "traces": _find_traces(obj)})
        return True

    def match_object(self, key, obj):
        return self.match(key, obj)

    def register_replacement(self, pattern, value):
        self.add_transformer(RegexTransformer(pattern, value))

    def skip_key(self, pattern, value):
        self.add_transformer(KeyValueBasedTransformer(None, value, False))

    def replace_value(self, pattern, value):
        self.add_transformer(KeyValueBasedTransformer(None, value, False))

    def __getattr__(self, name):
        return Stub(f"sfn_snapshot.{name}")


# ---- botocore / AWS client fakes -------------------------------------------------------


class ClientError(Exception):
    def __init__(self, error_response=None, operation_name=None):
        super().__init__(str(error_response))
        self.response = error_response or {"Error": {"Code": "Stub", "Message": "stub"}}
        self.operation_name = operation_name


class _ExceptionsNS:
    def __init__(self):
        self._cache = {}

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        if name not in self._cache:
            self._cache[name] = type(name, (ClientError,), {})
        return self._cache[name]


def _now():
    return _dt.datetime.now(tz=_dt.timezone.utc)


class FakeStepFunctions:
    """Records definitions and executions; every response is a traced stand-in."""

    def __init__(self):
        self.exceptions = _ExceptionsNS()

    # -- state machines
    def _resolve(self, arn: str):
        arn = str(arn).split("#", 1)[0]  # "<arn>#<test case>" = LocalStack mock config
        if arn in _REC.state_machines:
            return arn, _REC.state_machines[arn]
        base = arn.rsplit(":", 1)[0]  # version (":1") or alias (":name") ARN
        if base in _REC.state_machines:
            return base, _REC.state_machines[base]
        return arn, None

    def create_state_machine(self, **kw):
        name = str(kw.get("name") or f"sm-{len(_REC.state_machines)}")
        arn = f"arn:aws:states:{FAKE_REGION}:{FAKE_ACCOUNT}:stateMachine:{name}"
        definition = kw.get("definition")
        _REC.state_machines[arn] = {
            "name": name,
            "definition": definition if isinstance(definition, str) else json.dumps(definition),
            "definition_is_str": isinstance(definition, str),
            "type": str(kw.get("type") or "STANDARD"),
            "versions": 0,
        }
        resp = {"stateMachineArn": arn, "creationDate": _now(), "ResponseMetadata": {"HTTPStatusCode": 200}}
        if kw.get("publish"):
            _REC.state_machines[arn]["versions"] += 1
            resp["stateMachineVersionArn"] = f"{arn}:{_REC.state_machines[arn]['versions']}"
        return resp

    def update_state_machine(self, stateMachineArn, **kw):
        arn, sm = self._resolve(stateMachineArn)
        resp = {"updateDate": _now(), "ResponseMetadata": {"HTTPStatusCode": 200}}
        if sm is not None:
            if "definition" in kw:
                d = kw["definition"]
                sm["definition"] = d if isinstance(d, str) else json.dumps(d)
                sm["definition_is_str"] = isinstance(d, str)
                sm["updated"] = True
            if kw.get("publish"):
                sm["versions"] += 1
                resp["stateMachineVersionArn"] = f"{arn}:{sm['versions']}"
        return resp

    def describe_state_machine(self, stateMachineArn, **kw):
        arn, sm = self._resolve(stateMachineArn)
        if sm is None:  # made elsewhere (CloudFormation): AWS's answer in the snapshot has the definition
            return TracedDict({"stateMachineArn": str(stateMachineArn), "definition": "{}", "status": "ACTIVE",
                               "ResponseMetadata": {"HTTPStatusCode": 200}}, ("describe_sm", str(stateMachineArn)))
        return {"stateMachineArn": arn, "name": sm["name"], "definition": sm["definition"], "type": sm["type"],
                "status": "ACTIVE", "roleArn": "arn:aws:iam::111111111111:role/fake", "creationDate": _now(),
                "ResponseMetadata": {"HTTPStatusCode": 200}}

    # -- executions
    def _start(self, stateMachineArn, input, name, sync):
        sm_arn, sm = self._resolve(stateMachineArn)
        eid = len(_REC.executions)
        exec_name = str(name) if name else str(uuid.uuid4())
        sm_name = sm["name"] if sm else "unknown"
        arn = f"arn:aws:states:{FAKE_REGION}:{FAKE_ACCOUNT}:{'express' if sync else 'execution'}:{sm_name}:{exec_name}"
        if sync:
            arn += f":{uuid.uuid4()}"
        _REC.executions.append({
            "id": eid,
            "arn": arn,
            "state_machine": sm["name"] if sm else None,
            "definition": sm["definition"] if sm else None,
            "definition_is_str": sm["definition_is_str"] if sm else None,
            "definition_updated": bool(sm and sm.get("updated")),
            "type": sm["type"] if sm else None,
            "input": input,
            "input_given": input is not None,
            "sync": sync,
            "mocked_test_case": "#" in str(stateMachineArn),
            "state_machine_arn": str(stateMachineArn),
        })
        return eid, arn

    def start_execution(self, stateMachineArn, input=None, name=None, **kw):
        eid, arn = self._start(stateMachineArn, input, name, sync=False)
        return TracedDict({"executionArn": arn, "startDate": _now(), "ResponseMetadata": {"HTTPStatusCode": 200}},
                          ("start", eid))

    def start_sync_execution(self, stateMachineArn, input=None, name=None, **kw):
        eid, arn = self._start(stateMachineArn, input, name, sync=True)
        return TracedDict({"executionArn": arn, "stateMachineArn": str(stateMachineArn), "status": "SUCCEEDED",
                           "output": "{}", "startDate": _now(), "stopDate": _now(),
                           "ResponseMetadata": {"HTTPStatusCode": 200}}, ("sync", eid))

    def _eid(self, execution_arn):
        for e in reversed(_REC.executions):
            if e["arn"] == str(execution_arn):
                return e["id"]
        _note("sfn-api:unknown-execution-arn")
        return -1

    def describe_execution(self, executionArn, **kw):
        eid = self._eid(executionArn)
        return TracedDict({"executionArn": executionArn, "status": "SUCCEEDED", "output": "{}",
                           "startDate": _now(), "stopDate": _now(), "ResponseMetadata": {"HTTPStatusCode": 200}},
                          ("describe", eid))

    def get_execution_history(self, executionArn, **kw):
        eid = self._eid(executionArn)
        return TracedDict({"events": [], "ResponseMetadata": {"HTTPStatusCode": 200}}, ("history", eid))

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        _note(f"sfn-api:{name}")
        return Stub(f"aws_client.stepfunctions.{name}")


class FakeClients:
    def __init__(self, sfn):
        self.stepfunctions = sfn

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        _note(f"aws:{name}")
        return Stub(f"aws_client.{name}")


# ---- pytest emulation --------------------------------------------------------------------

NOTSET = object()


class ParameterSet(tuple):
    def __new__(cls, values, marks, id):
        return tuple.__new__(cls, (tuple(values), tuple(marks), id))

    values = property(lambda self: self[0])
    marks = property(lambda self: self[1])
    id = property(lambda self: self[2])


class Mark:
    def __init__(self, name, args, kwargs):
        self.name, self.args, self.kwargs = name, tuple(args), dict(kwargs)


def _store_mark(obj, mark):
    own = obj.__dict__.get("pytestmark", []) if inspect.isclass(obj) else getattr(obj, "pytestmark", [])
    if not isinstance(own, list):
        own = [own]
    obj.pytestmark = [*own, mark]


class MarkDecorator:
    def __init__(self, name, args=(), kwargs=None):
        self.mark = Mark(name, args, kwargs or {})
        self.name, self.args, self.kwargs = name, self.mark.args, self.mark.kwargs

    def __call__(self, *args, **kwargs):
        if len(args) == 1 and not kwargs and (inspect.isfunction(args[0]) or inspect.isclass(args[0])):
            _store_mark(args[0], self.mark)
            return args[0]
        return MarkDecorator(self.name, self.args + args, {**self.kwargs, **kwargs})


class MarkGenerator:
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return MarkDecorator(name)


class _PytestOutcome(BaseException):
    pass


class Skipped(_PytestOutcome):
    pass


class Failed(_PytestOutcome):
    pass


class XFailed(Failed):
    pass


class ExceptionInfo:
    def __init__(self):
        self.value = self.type = self.tb = None

    def match(self, regexp):
        return bool(re.search(regexp, str(self.value)))

    @property
    def typename(self):
        return self.type.__name__ if self.type else ""


class RaisesContext:
    def __init__(self, expected, match=None):
        self.expected, self.match_expr, self.excinfo = expected, match, ExceptionInfo()

    def __enter__(self):
        return self.excinfo

    def __exit__(self, etype, value, tb):
        if etype is None:
            raise Failed(f"DID NOT RAISE {self.expected}")
        if isinstance(value, _PytestOutcome):
            return False
        exp = self.expected if isinstance(self.expected, tuple) else (self.expected,)
        exp = tuple(e for e in exp if inspect.isclass(e))
        if exp and not issubclass(etype, exp):
            return False
        self.excinfo.value, self.excinfo.type, self.excinfo.tb = value, etype, tb
        return True


def _pytest_raises(expected, *args, match=None, **kwargs):
    if args and callable(args[0]):
        ctx = RaisesContext(expected, match)
        with ctx:
            args[0](*args[1:], **kwargs)
        return ctx.excinfo
    return RaisesContext(expected, match)


def _pytest_param(*values, marks=(), id=None):
    if isinstance(marks, MarkDecorator):
        marks = (marks,)
    return ParameterSet(values, [m.mark if isinstance(m, MarkDecorator) else m for m in marks], id)


def _pytest_fixture(fixture_function=None, *, scope="function", params=None, autouse=False, ids=None, name=None):
    def deco(fn):
        fn._ls_fixture = {"name": name or fn.__name__, "params": params, "ids": ids, "autouse": autouse}
        return fn

    if fixture_function is not None and callable(fixture_function):
        return deco(fixture_function)
    return deco


def _pytest_skip(reason="", *a, **k):
    raise Skipped(reason)


def _pytest_fail(reason="", *a, **k):
    raise Failed(reason)


def _pytest_xfail(reason=""):
    raise XFailed(reason)


def _make_pytest_module() -> types.ModuleType:
    m = types.ModuleType("pytest")
    m.mark = MarkGenerator()
    m.param = _pytest_param
    m.fixture = _pytest_fixture
    m.raises = _pytest_raises
    m.skip = _pytest_skip
    m.skip.Exception = Skipped
    m.fail = _pytest_fail
    m.xfail = _pytest_xfail
    m.importorskip = lambda name, *a, **k: importlib.import_module(name)
    m.approx = lambda x, *a, **k: x
    m.warns = lambda *a, **k: contextlib.nullcontext()
    m.deprecated_call = lambda *a, **k: contextlib.nullcontext()
    m.FixtureRequest = m.MonkeyPatch = m.TempPathFactory = m.Config = m.Item = object
    m.ExceptionInfo = ExceptionInfo
    m.Mark, m.MarkDecorator = Mark, MarkDecorator
    m.__path__ = []
    return m


# ---- pytest node ids (pytest 8/9 IdMaker semantics) ------------------------------------

_NON_PRINTABLE = {i: f"\\x{i:02x}" for i in range(128) if i not in range(32, 127)}
_NON_PRINTABLE.update({ord("\t"): "\\t", ord("\r"): "\\r", ord("\n"): "\\n"})


def _ascii_escaped(val) -> str:
    if isinstance(val, bytes):
        ret = val.decode("ascii", "backslashreplace")
    else:
        ret = val.encode("unicode_escape").decode("ascii")
    return ret.translate(_NON_PRINTABLE)


def _idval_from_value(val):
    import enum

    if isinstance(val, (str, bytes)):
        return _ascii_escaped(val)
    if val is None or isinstance(val, (float, int, bool, complex)):
        return str(val)
    if isinstance(val, re.Pattern):
        return _ascii_escaped(val.pattern)
    if val is NOTSET:
        return None
    if isinstance(val, enum.Enum):
        return str(val)
    if isinstance(getattr(val, "__name__", None), str):
        return val.__name__
    return None


def _make_ids(argnames, paramsets, ids) -> list[str]:
    idfn = ids if callable(ids) else None
    ids_list = None if callable(ids) or ids is None else list(ids)

    def idval(val, argname, idx):
        if idfn is not None:
            r = idfn(val)
            if r is not None:
                v = _idval_from_value(r)
                if v is not None:
                    return v
        v = _idval_from_value(val)
        return v if v is not None else f"{argname}{idx}"

    resolved = []
    for idx, ps in enumerate(paramsets):
        if ps.id is not None:
            resolved.append(_ascii_escaped(ps.id))
        elif ids_list is not None and idx < len(ids_list) and ids_list[idx] is not None:
            v = _idval_from_value(ids_list[idx])
            resolved.append(v if v is not None else f"{argnames[0]}{idx}")
        else:
            resolved.append("-".join(idval(v, a, idx) for v, a in zip(ps.values, argnames)))
    if len(resolved) != len(set(resolved)):
        counts = collections.Counter(resolved)
        suffixes = collections.defaultdict(int)
        for index, id_ in enumerate(resolved):
            if counts[id_] > 1:
                suffix = "_" if id_ and id_[-1].isdigit() else ""
                new_id = f"{id_}{suffix}{suffixes[id_]}"
                while new_id in set(resolved):
                    suffixes[id_] += 1
                    new_id = f"{id_}{suffix}{suffixes[id_]}"
                resolved[index] = new_id
                suffixes[id_] += 1
    return resolved


def _parametrize_args(mark):
    args, kw = list(mark.args), dict(mark.kwargs)
    argnames = args.pop(0) if args else kw.pop("argnames")
    argvalues = args.pop(0) if args else kw.pop("argvalues")
    if args:
        kw.setdefault("indirect", args.pop(0))
    if args:
        kw.setdefault("ids", args.pop(0))
    if isinstance(argnames, str):
        argnames = [a.strip() for a in argnames.split(",") if a.strip()]
    else:
        argnames = list(argnames)
    force_tuple = len(argnames) == 1
    paramsets = []
    for v in argvalues:
        if isinstance(v, ParameterSet):
            paramsets.append(v)
        elif force_tuple:
            paramsets.append(ParameterSet((v,), (), None))
        else:
            paramsets.append(ParameterSet(tuple(v), (), None))
    return argnames, paramsets, kw.get("ids"), kw.get("indirect", False)


def _marks_of(obj, own_only=False):
    if inspect.isclass(obj):
        marks = []
        for klass in obj.__mro__ if not own_only else (obj,):
            m = klass.__dict__.get("pytestmark", [])
            marks.extend(m if isinstance(m, list) else [m])
        return marks
    m = getattr(obj, "pytestmark", [])
    return list(m) if isinstance(m, list) else [m]


def _collect(module, relpath):
    """Yield (nodeid, cls, func, params, indirect, marks) like pytest's collection."""
    items = []
    mod_marks = getattr(module, "pytestmark", [])
    mod_marks = mod_marks if isinstance(mod_marks, list) else [mod_marks]
    candidates = []
    for name, obj in list(vars(module).items()):
        if name.startswith("test") and inspect.isfunction(obj):
            candidates.append((None, name, obj))
        elif name.startswith("Test") and inspect.isclass(obj) and "__init__" not in obj.__dict__:
            seen = set()
            for klass in obj.__mro__:
                for mname, fn in klass.__dict__.items():
                    if mname.startswith("test") and inspect.isfunction(fn) and mname not in seen:
                        seen.add(mname)
                        candidates.append((obj, mname, fn))
    for cls, name, fn in candidates:
        marks = _marks_of(fn) + (_marks_of(cls) if cls else []) + mod_marks
        base = f"{relpath}::{cls.__name__}::{name}" if cls else f"{relpath}::{name}"
        callspecs = [([], {}, [], set())]
        for mark in [m for m in marks if getattr(m, "name", None) == "parametrize"]:
            argnames, paramsets, ids, indirect = _parametrize_args(mark)
            if not paramsets:
                callspecs = []
                break
            id_list = _make_ids(argnames, paramsets, ids)
            if indirect is True:
                ind = set(argnames)
            elif indirect:
                ind = set(indirect)
            else:
                ind = set()
            callspecs = [(ids0 + [pid], {**p0, **dict(zip(argnames, ps.values))}, m0 + list(ps.marks), i0 | ind)
                         for ids0, p0, m0, i0 in callspecs for pid, ps in zip(id_list, paramsets)]
        for id_parts, params, pmarks, indirect_names in callspecs:
            nodeid = base + (f"[{'-'.join(id_parts)}]" if id_parts else "")
            items.append((nodeid, cls, fn, params, indirect_names, marks + pmarks))
    return items


# ---- localstack markers --------------------------------------------------------------------


class _LsMarker:
    def __init__(self, path):
        self._path = path

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _LsMarker(f"{self._path}.{name}")

    def __call__(self, *args, **kwargs):
        if len(args) == 1 and not kwargs and (inspect.isfunction(args[0]) or inspect.isclass(args[0])):
            _store_mark(args[0], Mark(f"ls:{self._path}", (), {}))
            return args[0]

        def deco(obj):
            _store_mark(obj, Mark(f"ls:{self._path}", args, kwargs))
            return obj

        return deco


# ---- stub import machinery -----------------------------------------------------------------


def _extract_json(path, obj):
    if isinstance(obj, TracedDict) and obj._trace[0] in ("history", "describe", "sync"):
        if "executionSucceededEventDetails" in path and "output" in path:
            return TracedStr("{}", ("output", obj._trace[1]))
    raise NoSuchJsonPathError(path)


class NoSuchJsonPathError(Exception):
    pass


_uid_counter = itertools.count(1)


def _short_uid():
    v = f"{UID_PREFIX}{next(_uid_counter):03d}"
    _REC.uids.append(v)
    return v


def _long_uid():
    return str(uuid.uuid4())


def _poll_condition(condition, timeout=None, interval=None):
    try:
        condition()
    except Exception:
        pass
    return True


def _retry(function, retries=3, sleep=1.0, sleep_before=0, **kwargs):
    return function(**kwargs)


def _to_str(obj, encoding="utf-8", errors="strict"):
    return obj.decode(encoding, errors) if isinstance(obj, bytes) else obj


def _to_bytes(obj, encoding="utf-8", errors="strict"):
    return obj.encode(encoding, errors) if isinstance(obj, str) else obj


CUSTOM_ATTRS = {
    "localstack.testing.pytest": {"markers": _LsMarker("")},
    "localstack.testing.aws.util": {"is_aws_cloud": lambda: True, "in_default_partition": lambda: True},
    "localstack.utils.strings": {"short_uid": _short_uid, "long_uid": _long_uid, "to_str": _to_str,
                                 "to_bytes": _to_bytes},
    "localstack.utils.sync": {"poll_condition": _poll_condition, "retry": _retry,
                              "wait_until": lambda fn, *a, **k: fn() or True},
    "localstack.services.stepfunctions.asl.utils.json_path": {"extract_json": _extract_json,
                                                             "NoSuchJsonPathError": NoSuchJsonPathError},
    "localstack.testing.snapshots.transformer_utility": {"TransformerUtility": TransformerUtility},
    "localstack_snapshot.snapshots.transformer": {
        "RegexTransformer": RegexTransformer, "JsonpathTransformer": JsonpathTransformer,
        "KeyValueBasedTransformer": KeyValueBasedTransformer, "GenericTransformer": GenericTransformer,
        "SortingTransformer": SortingTransformer, "TextTransformer": TextTransformer,
        "TransformContext": TransformContext, "Transformer": object,
        "ResponseMetaDataTransformer": _T, "TimestampTransformer": _T, "JsonStringTransformer": _T,
    },
    "localstack_snapshot.snapshots.transformer_utility": {"TransformerUtility": TransformerUtility},
    "botocore.exceptions": {"ClientError": ClientError, "ParamValidationError": ClientError,
                            "WaiterError": ClientError, "BotoCoreError": ClientError,
                            "EndpointConnectionError": ClientError, "ReadTimeoutError": ClientError},
    "botocore.config": {"Config": lambda *a, **k: Stub("botocore.config.Config()")},
    "localstack.aws.api": {"CommonServiceException": ClientError, "ServiceException": ClientError},
}


class _StubModule(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        full = f"{self.__name__}.{name}"
        if full in REAL_MODULES or any(k.startswith(full + ".") for k in REAL_MODULES):
            return importlib.import_module(full)
        attrs = CUSTOM_ATTRS.get(self.__name__, {})
        if name in attrs:
            return attrs[name]
        return Stub(full)


class _StubLoader(importlib.abc.Loader):
    def create_module(self, spec):
        return _StubModule(spec.name)

    def exec_module(self, module):
        module.__path__ = []
        module.__all__ = []
        for k, v in CUSTOM_ATTRS.get(module.__name__, {}).items():
            setattr(module, k, v)


class _RealFileLoader(importlib.machinery.SourceFileLoader):
    pass


class _Finder(importlib.abc.MetaPathFinder):
    """First in sys.meta_path: LocalStack modules run for real, and known stubbed packages."""

    STUB_ROOTS = {"localstack", "localstack_snapshot", "botocore", "boto3", "jsonpath_ng", "aws_cdk",
                  "constructs", "yaml", "requests", "moto", "pytest_httpserver", "werkzeug", "_pytest",
                  "localstack_ext", "dateutil", "cryptography", "jinja2", "xmltodict", "deepdiff",
                  "plux", "rolo", "docker", "pluggy", "aws_lambda_powertools", "cachetools", "urllib3"}

    def __init__(self, src_root):
        self.src_root = src_root

    def find_spec(self, fullname, path=None, target=None):
        if fullname in REAL_MODULES:
            file = os.path.join(self.src_root, REAL_MODULES[fullname])
            return importlib.util.spec_from_file_location(fullname, file, loader=_RealFileLoader(fullname, file))
        if fullname.split(".")[0] in self.STUB_ROOTS:
            return importlib.machinery.ModuleSpec(fullname, _StubLoader(), is_package=True)
        return None


class _FallbackFinder(importlib.abc.MetaPathFinder):
    """Last in sys.meta_path: any other third-party module becomes a stub (never stdlib)."""

    def find_spec(self, fullname, path=None, target=None):
        top = fullname.split(".")[0]
        if top in sys.stdlib_module_names or top == "json5" or fullname == "tests" \
                or fullname.startswith("tests.aws.services.stepfunctions"):
            return None  # tests of other services (tests.aws.services.lambda_...) are not copied: stubbed
        _note(f"import:{top}")
        return importlib.machinery.ModuleSpec(fullname, _StubLoader(), is_package=True)


# ---- fixtures ---------------------------------------------------------------------------------


class _FakeNode:
    def __init__(self, nodeid):
        self.nodeid = nodeid
        self.name = nodeid.rsplit("::", 1)[-1]
        self.originalname = self.name.split("[")[0]

    def get_closest_marker(self, name):
        return None

    def __getattr__(self, name):
        return Stub(f"request.node.{name}")


class _FakeRequest:
    def __init__(self, nodeid, resolver, param=NOTSET):
        self.node = _FakeNode(nodeid)
        self._resolver = resolver
        if param is not NOTSET:
            self.param = param

    def getfixturevalue(self, name):
        return self._resolver(name)

    def addfinalizer(self, fn):
        pass

    def __getattr__(self, name):
        return Stub(f"request.{name}")


class _FakeMonkeypatch:
    def setattr(self, *a, **k):
        pass

    def setenv(self, *a, **k):
        pass

    def delenv(self, *a, **k):
        pass

    def setitem(self, *a, **k):
        pass

    def delattr(self, *a, **k):
        pass

    def __getattr__(self, name):
        return Stub(f"monkeypatch.{name}")


def _role_fixture(*args, **kwargs):
    return f"arn:aws:iam::{FAKE_ACCOUNT}:role/test-sfn-role-{_short_uid()}"


def _create_state_machine_fixture(target_aws_client=None, **kwargs):
    client = target_aws_client if isinstance(target_aws_client, FakeClients) else _CLIENTS
    return client.stepfunctions.create_state_machine(**kwargs)


_SFN = FakeStepFunctions()
_CLIENTS = FakeClients(_SFN)


def _builtin_fixture(name, nodeid, resolver):
    if name in ("aws_client", "aws_client_no_sync_prefix", "aws_client_no_retry"):
        return _CLIENTS
    if name == "aws_client_factory":
        return lambda *a, **k: _CLIENTS
    if name in ("create_state_machine_iam_role",):
        return _role_fixture
    if name == "create_state_machine":
        return _create_state_machine_fixture
    if name in ("sfn_snapshot", "snapshot", "sfn_batch_snapshot", "sfn_ecs_snapshot"):
        if name != "sfn_snapshot":
            _note(f"fixture:{name}")
        return FakeSnapshot()
    if name == "account_id":
        return FAKE_ACCOUNT
    if name == "region_name":
        return FAKE_REGION
    if name == "request":
        return _FakeRequest(nodeid, resolver)
    if name == "monkeypatch":
        return _FakeMonkeypatch()
    if name == "cleanups":
        return []
    if name in ("tmp_path", "tmpdir"):
        return tempfile.mkdtemp(prefix="ls-asl-tmp-")
    _note(f"fixture:{name}")
    return Stub(f"fixture:{name}")


def _call_fixture(fn, kwargs):
    value = fn(**kwargs)
    if inspect.isgenerator(value):
        value = next(value)
    return value


def _run_item(module, item):
    global _REC
    nodeid, cls, fn, params, indirect, marks = item
    _REC = _Recorder()
    instance = cls() if cls else None
    cache = {}

    fixture_defs = {}
    for holder in ([module] + ([cls] if cls else [])):
        for attr_name, obj in list(vars(holder).items()):
            info = getattr(obj, "_ls_fixture", None)
            if isinstance(info, dict):
                fixture_defs[info["name"]] = (obj, holder is cls)

    def resolve(name, stack=()):
        if name in cache:
            return cache[name]
        if name in params and name not in indirect:
            return params[name]
        if name in fixture_defs and name not in stack:
            fdef, is_method = fixture_defs[name]
            sig = inspect.signature(fdef)
            kw = {}
            for p in sig.parameters:
                if p == "self":
                    continue
                if p == "request":
                    kw[p] = _FakeRequest(nodeid, resolve, params.get(name, NOTSET))
                else:
                    kw[p] = resolve(p, stack + (name,))
            f = fdef.__get__(instance) if is_method else fdef
            value = _call_fixture(f, kw)
        elif name in params:  # indirect parameter without a fixture here
            value = params[name]
        else:
            value = _builtin_fixture(name, nodeid, resolve)
        cache[name] = value
        return value

    status, error = "passed", None
    signal.alarm(PER_TEST_TIMEOUT_S)
    try:
        sig = inspect.signature(fn)
        kwargs = {p: resolve(p) for p in sig.parameters if p != "self"}
        if cls:
            fn(instance, **kwargs)
        else:
            fn(**kwargs)
    except Skipped as e:
        status, error = "skipped", str(e)[:300]
    except BaseException as e:  # noqa: BLE001 - a test that breaks on the fakes is reported, not fatal
        status = "error"
        tb = traceback.extract_tb(e.__traceback__)
        where = next((f"{os.path.basename(f.filename)}:{f.lineno}" for f in reversed(tb)
                      if "/tests/" in f.filename), "")
        error = f"{type(e).__name__}: {str(e)[:200]} @ {where}"
    finally:
        signal.alarm(0)

    ls_marks = [m.name[3:] for m in marks if isinstance(getattr(m, "name", None), str) and m.name.startswith("ls:")]
    aws = next((m for m in ls_marks if m.startswith(".aws.")), None)
    skip_marks = []
    for m in marks:  # skipped in LocalStack's own runs (the AWS recording may be older than the skip)
        if getattr(m, "name", None) == "skip":
            skip_marks.append(str(m.kwargs.get("reason", m.args[0] if m.args else "skip")))
        elif getattr(m, "name", None) == "skipif":
            cond = m.args[0] if m.args else m.kwargs.get("condition")
            if cond is True or (not isinstance(cond, str) and bool(cond)):
                skip_marks.append(str(m.kwargs.get("reason", "skipif")))
    skip_verify = []
    for m in marks:
        if isinstance(getattr(m, "name", None), str) and m.name.endswith("snapshot.skip_snapshot_verify"):
            paths = m.kwargs.get("paths", m.args[0] if m.args else None)
            if isinstance(paths, str):
                paths = [paths]
            if isinstance(paths, (list, tuple)):
                skip_verify.extend(str(p) for p in paths)
            else:
                skip_verify.append("<whole snapshot>")
    return {
        "nodeid": nodeid,
        "aws_marker": aws[5:] if aws else None,
        "skip_snapshot_verify": skip_verify,
        "skip_marks": skip_marks,
        "status": status,
        "error": error,
        "executions": _REC.executions,
        "matches": _REC.matches,
        "transformers": _REC.transformers,
        "usage": _REC.usage,
        "uids": _REC.uids,
    }


def _timeout_handler(signum, frame):
    raise TimeoutError(f"test ran longer than {PER_TEST_TIMEOUT_S}s on the fakes")


def worker_main(src_root: str, relpath: str) -> int:
    """Import one test module under the stand-ins and print one record per test item."""
    out = sys.stdout
    sys.stdout = sys.stderr  # tests may print; records go to the real stdout only
    sys.dont_write_bytecode = True
    sys.meta_path.insert(0, _Finder(src_root))
    sys.meta_path.append(_FallbackFinder())
    sys.modules["pytest"] = _make_pytest_module()
    sys.path.insert(0, src_root)
    time.sleep = lambda *_a, **_k: None  # tests wait for AWS; nothing to wait for here
    real_uuid4 = uuid.uuid4
    counter = itertools.count(1)
    uuid.uuid4 = lambda: uuid.UUID(f"{UUID_PREFIX}-0000-4000-8000-{next(counter):012d}")
    del real_uuid4
    signal.signal(signal.SIGALRM, _timeout_handler)
    modname = relpath[:-3].replace("/", ".")
    try:
        module = importlib.import_module(modname)
        items = _collect(module, relpath)
    except BaseException as e:  # noqa: BLE001
        out.write(RECORD_PREFIX + json.dumps({"module": relpath, "import_error": f"{type(e).__name__}: {e}"[:500]}) + "\n")
        out.flush()
        return 0
    for item in items:
        rec = _run_item(module, item)
        out.write(RECORD_PREFIX + json.dumps(rec, default=str) + "\n")
        out.flush()
    return 0


# ============================================================================
# Parent side: materialise the sources, run the workers, pair records with snapshots.
# ============================================================================

PATTERN_ISO8601 = re.compile(  # localstack_snapshot's PATTERN_ISO8601 (replaced by "date")
    r"(?:[1-9]\d{3}-(?:(?:0[1-9]|1[0-2])-(?:0[1-9]|1\d|2[0-8])|(?:0[13-9]|1[0-2])-(?:29|30)|(?:0[13578]|1[02])-31)"
    r"|(?:[1-9]\d(?:0[48]|[2468][048]|[13579][26])|(?:[2468][048]|[13579][26])00)-02-29)"
    r"T(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d{1,9})?(?:Z|[+-][01]\d:?([0-5]\d)?)"
)
PATTERN_UUID = re.compile(r"[a-fA-F0-9]{8}-[a-fA-F0-9]{4}-[a-fA-F0-9]{4}-[a-fA-F0-9]{4}-[a-fA-F0-9]{12}")
PLACEHOLDER = re.compile(r"<[A-Za-z][A-Za-z0-9_.:\-]*>")
NUMBERED = re.compile(r"<([A-Za-z][A-Za-z0-9_.\-]*):\d+>")
ISO_RX = PATTERN_ISO8601.pattern.replace("([0-5]\\d)", "(?:[0-5]\\d)")
# Keys whose values the stepfunctions_api() transformers replace (service responses only).
API_KEY_TOKENS = {"X-Amzn-Trace-Id": "X-Amzn-Trace-Id", "x-amz-crc32": "x-amz-crc32",
                  "x-amzn-RequestId": "x-amzn-RequestId", "x-amzn-requestid": "x-amzn-requestid"}
TERMINAL = {"ExecutionSucceeded": "SUCCEEDED", "ExecutionFailed": "FAILED", "ExecutionAborted": "ABORTED",
            "ExecutionTimedOut": "TIMED_OUT"}
STATE_ENTERED = re.compile(r"^(Pass|Choice|Wait|Succeed|Fail|Parallel|Map|Task)StateEntered$")


def git(mirror: str, *args: str, binary=False):
    r = subprocess.run(["git", "--git-dir", mirror, *args], capture_output=True, check=True)
    return r.stdout if binary else r.stdout.decode()


def materialise(mirror: str, rev: str, dest: str) -> str:
    commit = git(mirror, "rev-parse", rev).strip()
    data = git(mirror, "archive", "--format=tar", commit, SFN_TESTS, SFN_UTILS, SFN_ENCODING, "tests/__init__.py",
               "tests/aws/__init__.py", "tests/aws/services/__init__.py", binary=True)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        try:
            tar.extractall(dest, filter="data")
        except TypeError:  # CPython < 3.11.4 has no extraction filters
            tar.extractall(dest)
    return commit


def run_workers(src_root: str, modules: list[str], jobs: int, python: str, timeout: int):
    def one(relpath):
        t0 = time.monotonic()
        try:
            p = subprocess.run([python, os.path.abspath(__file__), "--worker", src_root, relpath],
                               capture_output=True, text=True, timeout=timeout, cwd=src_root)
            stdout, stderr, rc = p.stdout, p.stderr, p.returncode
        except subprocess.TimeoutExpired as e:
            stdout = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
            stderr, rc = f"worker timed out after {timeout}s", -1
        recs = [json.loads(line[len(RECORD_PREFIX):]) for line in stdout.splitlines()
                if line.startswith(RECORD_PREFIX)]
        return relpath, recs, rc, stderr[-2000:], time.monotonic() - t0

    with cf.ThreadPoolExecutor(jobs) as ex:
        yield from ex.map(one, modules)


# ---- JSON helpers ------------------------------------------------------------------------------


def norm_path(segments) -> str:
    """RFC 9535 normalized path: $['a'][0]['b']."""
    out = "$"
    for s in segments:
        if isinstance(s, int):
            out += f"[{s}]"
        else:
            esc = s.replace("\\", "\\\\").replace("'", "\\'")
            esc = "".join(c if ord(c) >= 0x20 else f"\\u{ord(c):04x}" for c in esc)
            out += f"['{esc}']"
    return out


def walk_leaves(value, path=()):
    if isinstance(value, dict):
        for k, v in value.items():
            yield from walk_leaves(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from walk_leaves(v, path + (i,))
    else:
        yield path, value


def walk_keys(value, path=()):
    if isinstance(value, dict):
        for k, v in value.items():
            yield path + (k,), k
            yield from walk_keys(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from walk_keys(v, path + (i,))


def get_at(value, path):
    for seg in path:
        if isinstance(seg, int):
            if not isinstance(value, list) or seg >= len(value):
                raise KeyError(seg)
            value = value[seg]
        else:
            if not isinstance(value, dict) or seg not in value:
                raise KeyError(seg)
            value = value[seg]
    return value


# ---- what LocalStack's snapshot does to a value -----------------------------------------------


def emulate_snapshot(text: str, transformers: list[dict]):
    """Apply the snapshot transformers that can touch an execution input to ``text``.

    Returns the value the snapshot would have stored (placeholders numbered as ``<x:#>``).
    Models: JSON-object strings parsed, ``*timestamp*`` keys, UUIDs under ``*id`` keys,
    the test's regex/key transformers, ``arn:aws:`` and ISO-8601 dates.
    """
    value = text
    if isinstance(text, str) and text.startswith("{"):
        try:
            value = json.loads(text)
        except ValueError:
            value = text
    refs = []

    def kv(v):
        if isinstance(v, dict):
            for k, x in list(v.items()):
                if isinstance(x, str) and k.lower().endswith("id") and PATTERN_UUID.match(x):
                    refs.append((x, "uuid"))
                if re.match(r"^.*timestamp.*$", k, flags=re.IGNORECASE) and not PATTERN_ISO8601.match(str(x)):
                    v[k] = "timestamp"
                    continue
                for t in transformers:
                    if t.get("kind") == "key" and t.get("key") == k:
                        if t.get("reference") and isinstance(x, str):
                            refs.append((x, t["replacement"]))
                        else:
                            v[k] = t["replacement"]
                        break
                else:
                    if isinstance(x, dict):
                        kv(x)
                    elif isinstance(x, list):
                        for item in x:
                            if isinstance(item, dict):
                                kv(item)
        return v

    value = kv(value)
    dumped = json.dumps(value)
    for t in transformers:
        if t.get("kind") == "regex":
            try:
                dumped = re.sub(t["pattern"], t["replacement"], dumped)
            except re.error:
                pass
    dumped = dumped.replace("arn:aws:", "arn:<partition>:")
    for ref, name in refs:
        dumped = dumped.replace(ref.replace('"', '\\"'), f"<{name}:#>")
    dumped = PATTERN_ISO8601.sub("date", dumped)
    try:
        value = json.loads(dumped)
    except ValueError:
        return None
    return renumber(value)


def renumber(value):
    if isinstance(value, str):
        return NUMBERED.sub(lambda m: f"<{m.group(1)}:#>", value)
    if isinstance(value, dict):
        return {renumber(k): renumber(v) for k, v in value.items()}
    if isinstance(value, list):
        return [renumber(v) for v in value]
    return value


def recorded_json(value):
    """Value of an ``input``/``output`` field as stored in a snapshot -> the JSON value.

    The snapshot parsed strings that start with "{" (objects); anything else (arrays,
    strings, numbers, ...) is still the raw JSON text.
    """
    if isinstance(value, str):
        return json.loads(value)
    return value


# ---- definition analysis ---------------------------------------------------------------------

SERVICE_RX = re.compile(r"^arn:aws[a-z-]*:states:::(?:aws-sdk:)?([a-zA-Z0-9-]+)")


def task_service(resource) -> str:
    r = str(resource)
    if STUB_SENTINEL in r:  # an ARN the test got from a fixture or an AWS call
        m = re.search(r"fixture:([a-z0-9_]+)", r) or re.search(r"aws_client\.([a-z0-9_]+)", r)
        name = m.group(1) if m else ""
        for svc in ("lambda", "activity", "sqs", "sns", "dynamodb", "s3", "events", "secret", "ecs", "apigateway"):
            if svc in name:
                return {"secret": "secretsmanager"}.get(svc, svc)
        return f"stub:{name}" if name else "stub"
    if re.match(r"^arn:aws[a-z-]*:lambda:", r):
        return "lambda"
    if re.match(r"^arn:aws[a-z-]*:states:[^:]*:[^:]*:activity:", r):
        return "activity"
    m = SERVICE_RX.match(r)
    if m:
        return {"states": "sfn"}.get(m.group(1), m.group(1))
    if "{%" in r or r.startswith("$"):
        return "dynamic"
    return "other"


def iter_states(states: dict, depth=0):
    if not isinstance(states, dict):
        return
    for name, st in states.items():
        if not isinstance(st, dict):
            continue
        yield name, st, depth
        for br in st.get("Branches", []) or []:
            if isinstance(br, dict):
                yield from iter_states(br.get("States", {}), depth + 1)
        for key in ("ItemProcessor", "Iterator"):
            proc = st.get(key)
            if isinstance(proc, dict):
                yield from iter_states(proc.get("States", {}), depth + 1)


def analyse_definition(defn: dict) -> dict:
    info = {"types": collections.Counter(), "tasks": [], "item_reader": False, "result_writer": False,
            "distributed": False, "waits": [], "query_language": "JSONPath", "features": set(),
            "retry_worst_s": 0.0, "state_types_by_name": {}}
    top_ql = defn.get("QueryLanguage", "JSONPath")
    info["query_language"] = "JSONata" if top_ql == "JSONata" else "JSONPath"
    mixed = False
    for name, st, depth in iter_states(defn.get("States", {})):
        t = st.get("Type")
        info["types"][t] += 1
        info["state_types_by_name"].setdefault(name, set()).add(t)
        ql = st.get("QueryLanguage")
        if ql and ql != top_ql:
            mixed = True
        if t == "Task":
            info["tasks"].append(task_service(st.get("Resource")))
        if t == "Map":
            proc = st.get("ItemProcessor") or {}
            mode = (proc.get("ProcessorConfig") or {}).get("Mode")
            if mode == "DISTRIBUTED":
                info["distributed"] = True
                info["features"].add("map-distributed")
            if "ItemReader" in st:
                info["item_reader"] = True
            if "ResultWriter" in st:
                info["result_writer"] = True
            if "ItemBatcher" in st:
                info["features"].add("map-item-batcher")
            if "ToleratedFailureCount" in st or "ToleratedFailurePercentage" in st or \
                    "ToleratedFailureCountPath" in st or "ToleratedFailurePercentagePath" in st:
                info["features"].add("map-tolerated-failure")
        if t == "Wait":
            info["waits"].append((name, {k: st[k] for k in ("Seconds", "SecondsPath", "Timestamp", "TimestampPath")
                                         if k in st}))
        if "Assign" in st:
            info["features"].add("variables")
        if st.get("Retry"):
            info["features"].add("retry")
            if t in ("Parallel", "Map", "Task"):
                worst = 0.0
                for r in st["Retry"]:
                    if not isinstance(r, dict):
                        continue
                    interval = r.get("IntervalSeconds", 1)
                    rate = r.get("BackoffRate", 2.0)
                    attempts = r.get("MaxAttempts", 3)
                    cap = r.get("MaxDelaySeconds")
                    try:
                        delays = [float(interval) * float(rate) ** k for k in range(int(attempts))]
                        if cap is not None:
                            delays = [min(d, float(cap)) for d in delays]
                        worst += sum(delays)
                    except (TypeError, ValueError, OverflowError):
                        worst += 0
                info["retry_worst_s"] += worst
        if st.get("Catch"):
            info["features"].add("catch")
        for k in ("Arguments", "Output"):
            if k in st:
                info["features"].add(f"jsonata-{k.lower()}")
        for k in ("InputPath", "OutputPath", "ResultPath", "Parameters", "ResultSelector", "ItemSelector",
                  "ItemsPath"):
            if k in st:
                info["features"].add("paths" if k.endswith("Path") else k.lower())
    if mixed:
        info["query_language"] = "mixed"
    text = json.dumps(defn)
    if re.search(r"States\.[A-Za-z]+\(", text):
        info["features"].add("intrinsics")
    if "$$" in text or "$states.context" in text:
        info["features"].add("context-object")
    if "{%" in text:
        info["features"].add("jsonata-expressions")
    if re.search(r'"\$(?![.$\[\s"])[A-Za-z_]', text):
        info["features"].add("variables")
    return info


def time_sensitive(defn_text: str, input_text: str) -> bool:
    """Could the output carry an ISO timestamp (which the snapshot turned into "date")?"""
    if PATTERN_ISO8601.search(defn_text or "") or PATTERN_ISO8601.search(input_text or ""):
        return True
    return any(s in (defn_text or "") for s in ("$$", "$states.context", "$now(", "$millis(", "$fromMillis("))


def simple_path_get(value, path: str):
    """Evaluate a plain JSONPath like $.a.b[0] (no filters); raise KeyError if absent."""
    if path == "$":
        return value
    if not path.startswith("$"):
        raise KeyError(path)
    for m in re.finditer(r"\.([A-Za-z0-9_\-]+)|\[(\d+)\]|\['([^']*)'\]", path[1:]):
        key = m.group(1) or m.group(3)
        if key is not None:
            if not isinstance(value, dict) or key not in value:
                raise KeyError(key)
            value = value[key]
        else:
            i = int(m.group(2))
            if not isinstance(value, list) or i >= len(value):
                raise KeyError(i)
            value = value[i]
    return value


def parse_iso(ts: str):
    try:
        return _dt.datetime.fromisoformat(ts.replace("Z", "+00:00"))
    except (ValueError, AttributeError):
        return None


def wait_problem(info, history_events, exec_input_raw, max_wait: float):
    """None if every Wait is short; else a skip reason."""
    now = _dt.datetime.now(tz=_dt.timezone.utc)
    entered_inputs = {}
    for ev in history_events or []:
        if ev.get("type") == "WaitStateEntered":
            d = ev.get("stateEnteredEventDetails", {})
            entered_inputs.setdefault(d.get("name"), d.get("input"))
    for name, spec in info["waits"]:
        for field, path_field in (("Seconds", "SecondsPath"), ("Timestamp", "TimestampPath")):
            m = re.fullmatch(r"\{%\s*\$states\.input((?:\.[A-Za-z_][A-Za-z0-9_]*)*)\s*%\}", str(spec.get(field, "")))
            if m:  # JSONata "{% $states.input.a.b %}" reads the state input like the path "$.a.b"
                spec = {path_field: "$" + m.group(1)}
        if "Seconds" in spec:
            s = spec["Seconds"]
            if isinstance(s, (int, float)):
                if s > max_wait:
                    return f"wait>{max_wait:g}s"
                continue
            if isinstance(s, str) and re.fullmatch(r"\{%\s*-?\d+(\.\d+)?\s*%\}", s):
                if float(s.strip("{}% ")) > max_wait:
                    return f"wait>{max_wait:g}s"
                continue
            if name not in entered_inputs:
                continue  # never reached in the recorded run
            return "wait:dynamic-jsonata"
        if "Timestamp" in spec:
            ts = spec["Timestamp"]
            if isinstance(ts, str) and "{%" in ts:
                if name not in entered_inputs:
                    continue
                return "wait:dynamic-jsonata"
            t = parse_iso(ts) if isinstance(ts, str) else None
            if t is not None and t.tzinfo is not None and (t - now).total_seconds() > max_wait:
                return "wait:future-timestamp"
            continue
        path = spec.get("SecondsPath") or spec.get("TimestampPath")
        if name not in entered_inputs:
            continue
        state_input = entered_inputs[name]
        try:
            state_input = recorded_json(state_input)
        except (ValueError, TypeError):
            return "wait:unresolvable-path"
        try:
            v = simple_path_get(state_input, path)
        except (KeyError, TypeError):
            if isinstance(path, str) and "{" not in path:
                continue  # the path fails in the recorded run too: no wait happens
            return "wait:unresolvable-path"
        if "SecondsPath" in spec:
            if isinstance(v, (int, float)) and not isinstance(v, bool) and v > max_wait:
                return f"wait>{max_wait:g}s"
            continue
        if isinstance(v, str) and PLACEHOLDER.search(v) or v == "date":
            # replaced by a transformer: look the value up in our own input instead
            try:
                v = simple_path_get(json.loads(exec_input_raw), path)
            except (KeyError, TypeError, ValueError):
                return "wait:unresolvable-path"
        t = parse_iso(v) if isinstance(v, str) else None
        if t is not None and t.tzinfo is not None and (t - now).total_seconds() > max_wait:
            return "wait:future-timestamp"
    return None


# ---- placeholders in a recorded result -------------------------------------------------------


class Placeholders:
    """Finds what LocalStack's transformers wrote into a recorded output or cause."""

    def __init__(self, transformers, raw_texts, time_source):
        raw = "\n".join(t for t in raw_texts if t)
        self.raw = raw
        self.time_source = time_source
        tokens = set()
        for t in transformers:
            rep = t.get("replacement")
            if rep and t.get("kind") in ("regex", "jsonpath", "keyvalue", "key"):
                tokens.add(rep)
        # always-present transformers of the sfn_snapshot fixture / tests/aws/conftest.py
        tokens.update({"snf_role_arn", "sfn_role_arn"})
        self.tokens = sorted((t for t in tokens if t and t not in raw and not PLACEHOLDER.fullmatch(t)),
                             key=len, reverse=True)
        self.whole_tokens = set(self.tokens) | {"timestamp"}

    def _bracketed(self, s):
        return [m for m in PLACEHOLDER.finditer(s) if m.group(0) not in self.raw]

    def string_pattern(self, s: str):
        """None if ``s`` is untouched, else a regex the original string must fully match."""
        pieces = []  # (start, end, regex)
        for m in self._bracketed(s):
            tok = m.group(0)
            rx = PATTERN_UUID.pattern if tok.startswith("<uuid:") else ".+?"
            pieces.append((m.start(), m.end(), rx))
        if FAKE_ACCOUNT not in self.raw:
            for m in re.finditer(FAKE_ACCOUNT, s):
                pieces.append((m.start(), m.end(), r"\d{12}"))
        if self.time_source:
            for m in re.finditer(r"(?<![A-Za-z0-9])date(?![A-Za-z0-9])", s):
                pieces.append((m.start(), m.end(), f"(?:date|{ISO_RX})"))
        for tok in self.tokens:
            for m in re.finditer(re.escape(tok), s):
                pieces.append((m.start(), m.end(), f"(?:{re.escape(tok)}|.+?)"))
        if not pieces:
            return None
        pieces.sort()
        out, pos = "", 0
        for start, end, rx in pieces:
            if start < pos:
                continue  # overlapping finds: the first one wins
            out += re.escape(s[pos:start]) + rx
            pos = end
        out += re.escape(s[pos:])
        return out

    def scan(self, value, base=()):
        """-> (ignore paths, {path: regex}, problems) for a recorded JSON value."""
        ignore, patterns, problems = [], {}, []
        for path, key in walk_keys(value):
            if isinstance(key, str) and (self._bracketed(key) or key in self.tokens):
                problems.append(f"placeholder in key {norm_path(base + path)}")
            if isinstance(key, str) and re.match(r"^.*timestamp.*$", key, flags=re.IGNORECASE):
                # LocalStack replaced a non-ISO value with "timestamp" (an ISO one became "date",
                # which string_pattern() handles like any other ISO date)
                try:
                    if get_at(value, path) == "timestamp":
                        ignore.append(base + path)
                except KeyError:
                    pass
            elif isinstance(key, str) and key in API_KEY_TOKENS:
                ignore.append(base + path)
        ignored = set(ignore)
        for path, leaf in walk_leaves(value):
            full = base + path
            if any(full[:len(i)] == i for i in ignored):
                continue
            if isinstance(leaf, str):
                if leaf in self.tokens:
                    ignore.append(full)
                    continue
                rx = self.string_pattern(leaf)
                if rx is not None:
                    patterns[full] = rx
        return ignore, patterns, problems


# ---- pairing records with snapshots ---------------------------------------------------------


def load_json_file(path):
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        return {}


def history_facts(hist: dict) -> dict:
    events = hist.get("events") if isinstance(hist, dict) else None
    if not isinstance(events, list) or not events:
        return {"error": "no events in the recorded history"}
    facts = {"events": events, "entered": []}
    for ev in events:
        typ = ev.get("type")
        if typ == "ExecutionStarted":
            d = ev.get("executionStartedEventDetails", {})
            facts["input"] = d.get("input")
            facts["input_truncated"] = (d.get("inputDetails") or {}).get("truncated")
        m = STATE_ENTERED.match(typ or "")
        if m:
            facts["entered"].append((ev.get("stateEnteredEventDetails", {}).get("name"), m.group(1)))
    term = [ev for ev in events if ev.get("type") in TERMINAL]
    if not term:
        return {**facts, "error": "the recorded history has no terminal event"}
    last = term[-1]
    facts["status"] = TERMINAL[last["type"]]
    if facts["status"] == "SUCCEEDED":
        d = last.get("executionSucceededEventDetails", {})
        facts["output_present"] = "output" in d
        facts["output"] = d.get("output")
        facts["output_truncated"] = (d.get("outputDetails") or {}).get("truncated")
    elif facts["status"] == "FAILED":
        d = last.get("executionFailedEventDetails", {})
        facts["error_value"], facts["cause"] = d.get("error"), d.get("cause")
    return facts


def describe_facts(desc: dict) -> dict:
    if not isinstance(desc, dict) or "status" not in desc:
        return {"error": "recorded response has no status"}
    facts = {"status": desc["status"], "input": desc.get("input"), "entered": []}
    if desc["status"] == "SUCCEEDED":
        facts["output_present"] = "output" in desc
        facts["output"] = desc.get("output")
        facts["output_truncated"] = (desc.get("outputDetails") or {}).get("truncated")
    elif desc["status"] == "FAILED":
        facts["error_value"], facts["cause"] = desc.get("error"), desc.get("cause")
    return facts


def slug(text: str, limit=110) -> str:
    s = re.sub(r"[^A-Za-z0-9._=-]+", "_", text).strip("_")
    return s[:limit].rstrip("_")


class Extractor:
    def __init__(self, args):
        self.args = args
        self.cases = []  # kept
        self.entries = []  # every execution / test considered, with its fate
        self.unmatched_snapshot = {}

    # -- bookkeeping
    def skip(self, source, reason, **extra):
        self.entries.append({"source": source, "kept": False, "reason": reason, **extra})

    # -- main pairing
    def handle_module(self, relpath, records, src_root):
        snap_path = os.path.join(src_root, relpath[:-3] + ".snapshot.json")
        val_path = os.path.join(src_root, relpath[:-3] + ".validation.json")
        snapshot = load_json_file(snap_path)
        validation = load_json_file(val_path)
        seen_nodeids = set()
        for rec in records:
            if "import_error" in rec:
                self.skip(relpath, "harness:import-error", detail=rec["import_error"])
                continue
            nodeid = rec["nodeid"]
            seen_nodeids.add(nodeid)
            self.handle_record(rec, snapshot.get(nodeid), validation.get(nodeid))
        for key in snapshot:
            if key not in seen_nodeids:
                self.unmatched_snapshot[key] = relpath

    def handle_record(self, rec, snap, validation):
        nodeid = rec["nodeid"]
        if rec["aws_marker"] != "validated":
            self.skip(nodeid, f"not-aws-validated:{rec['aws_marker']}")
            return
        if snap is None:
            self.skip(nodeid, "no-snapshot-recorded", test_status=rec["status"], error=rec.get("error"))
            return
        content = snap.get("recorded-content", {})
        traces = []
        for m in rec["matches"]:
            for t in m["traces"]:
                traces.append((m["key"], t))
        exec_kinds = collections.defaultdict(list)
        for key, t in traces:
            if t["kind"] in ("history", "describe", "sync", "output"):
                exec_kinds[t["exec"]].append((key, t))
        if not exec_kinds:
            if rec["executions"]:
                self.skip(nodeid, "no-execution-result-in-snapshot", test_status=rec["status"],
                          error=rec.get("error"), usage=rec["usage"])
            else:
                self.skip(nodeid, "not-an-execution-test", test_status=rec["status"], error=rec.get("error"))
            return
        multi = len(exec_kinds) > 1
        for eid, found in sorted(exec_kinds.items()):
            order = {"history": 0, "sync": 1, "describe": 2, "output": 3}
            found.sort(key=lambda kt: order[kt[1]["kind"]])
            key, t = found[0]
            ident = nodeid if not multi and key == "get_execution_history" else f"{nodeid}#{key}"
            if t["path"]:
                ident += norm_path(t["path"])[1:]
            self.handle_execution(rec, snap, validation, eid, found, ident, content)

    @staticmethod
    def recorded_definition(rec, ex, content) -> dict:
        """Definition of a state machine the test did not create itself (CloudFormation), as
        AWS returned it to DescribeStateMachine in the snapshot."""
        for m in rec["matches"]:
            for t in m["traces"]:
                if t["kind"] != "describe_sm" or t["exec"] != ex.get("state_machine_arn"):
                    continue
                try:
                    d = get_at(content[m["key"]], t["path"]).get("definition")
                except (KeyError, AttributeError):
                    continue
                if d is None:
                    continue
                text = d if isinstance(d, str) else json.dumps(d)
                if PLACEHOLDER.search(text) or FAKE_ACCOUNT in text:
                    return {"definition_problem": "recorded-definition-has-placeholders"}
                return {"definition": text, "definition_from_snapshot": True}
        return {}

    def handle_execution(self, rec, snap, validation, eid, found, ident, content):
        nodeid = rec["nodeid"]
        ex = rec["executions"][eid] if 0 <= eid < len(rec["executions"]) else None
        if ex is not None and ex.get("definition") is None:
            ex = dict(ex, **self.recorded_definition(rec, ex, content))
        if ex is None or ex.get("definition") is None:
            self.skip(ident, "harness:execution-not-tracked" if ex is None or not ex.get("definition_problem")
                      else ex["definition_problem"])
            return
        key, t = found[0]
        try:
            recorded = get_at(content[key], t["path"])
        except KeyError:
            self.skip(ident, "snapshot-path-missing", key=key)
            return
        if t["kind"] == "history":
            facts = history_facts(recorded)
        elif t["kind"] in ("describe", "sync"):
            facts = describe_facts(recorded)
        else:
            facts = {"status": "SUCCEEDED", "output_present": True, "output": recorded, "entered": []}
            if t["path"]:  # e.g. choice_operators' {"input": exec_input, "output": output} records
                try:
                    sibling = get_at(content[key], t["path"][:-1])
                except KeyError:
                    sibling = None
                if isinstance(sibling, dict) and "input" in sibling:
                    facts["input"] = sibling["input"]
        if "error" in facts:
            self.skip(ident, "snapshot:" + facts["error"])
            return
        definition_text = ex["definition"]
        input_text = ex["input"] if ex["input_given"] else "{}"
        base = {"snapshot_key": key}

        # -- definition and input must be reproducible
        if not isinstance(definition_text, str):
            self.skip(ident, "harness:definition-not-a-string", **base)
            return
        try:
            definition = json.loads(definition_text)
        except ValueError:
            self.skip(ident, "definition-not-json", **base)
            return
        if not isinstance(input_text, str):
            self.skip(ident, "harness:input-not-a-string", **base)
            return
        info = analyse_definition(definition) if isinstance(definition, dict) else None
        if info is None:
            self.skip(ident, "definition-not-an-object", **base)
            return
        if info["tasks"]:
            services = sorted(set(info["tasks"]))
            self.skip(ident, f"task:{services[0] if len(services) == 1 else 'several'}", services=services, **base)
            return
        if info["item_reader"]:
            self.skip(ident, "map:item-reader", **base)
            return
        if info["result_writer"]:
            self.skip(ident, "map:result-writer", **base)
            return
        if STUB_SENTINEL in definition_text or STUB_SENTINEL in input_text:
            self.skip(ident, "depends-on-aws-resource", usage=rec["usage"], **base)
            return
        if any(u in definition_text or u in input_text for u in rec["uids"]) or UUID_PREFIX in definition_text \
                or UUID_PREFIX in input_text:
            self.skip(ident, "random-value-in-definition-or-input", **base)
            return
        if ex.get("mocked_test_case"):
            self.skip(ident, "localstack-mock-config", **base)
            return
        if facts["status"] not in ("SUCCEEDED", "FAILED"):
            self.skip(ident, f"status:{facts['status']}", **base)
            return
        if any(tr.get("kind") in ("generic", "opaque", "utility") for tr in rec["transformers"]):
            kinds = sorted({tr.get("name") or tr.get("kind") for tr in rec["transformers"]
                            if tr.get("kind") in ("generic", "opaque", "utility")})
            self.skip(ident, "opaque-snapshot-transformer", transformers=kinds, **base)
            return
        if facts.get("input_truncated") or facts.get("output_truncated"):
            self.skip(ident, "snapshot:truncated", **base)
            return

        # -- the recorded run must fit what we rebuilt
        input_check = "not-recorded"
        if facts.get("input") is not None:
            want = renumber(facts["input"])
            got = emulate_snapshot(input_text, rec["transformers"])
            if got == want:
                try:
                    same = json.loads(input_text) == recorded_json(facts["input"])
                except ValueError:
                    same = False
                input_check = "equal" if same else "equal-after-transformers"
            else:
                self.skip(ident, "input-mismatch", recorded=facts["input"], rebuilt=input_text[:500], **base)
                return
        for name, typ in facts.get("entered", []):
            have = info["state_types_by_name"].get(name)
            if not have or typ not in have:
                self.skip(ident, "history-does-not-fit-definition", state=name, type=typ, **base)
                return
        history_check = f"{len(facts.get('entered', []))} states" if facts.get("entered") else "n/a"

        # -- timing
        problem = wait_problem(info, facts.get("events"), input_text, self.args.max_wait)
        if problem:
            self.skip(ident, problem, **base)
            return
        if info["retry_worst_s"] > self.args.max_retry_wait:
            self.skip(ident, "retry-backoff-too-long", worst_s=info["retry_worst_s"], **base)
            return

        # -- expected result
        ph = Placeholders(rec["transformers"], [definition_text, input_text],
                          time_sensitive(definition_text, input_text))
        expected = {"status": facts["status"]}
        ignore, patterns = [], {}
        if facts["status"] == "SUCCEEDED":
            if not facts.get("output_present"):
                self.skip(ident, "snapshot:no-output", **base)
                return
            raw_out = facts["output"]
            try:
                output = recorded_json(raw_out)
            except ValueError:
                self.skip(ident, "snapshot:output-not-json", **base)
                return
            if isinstance(raw_out, str) and raw_out.strip().startswith("{"):
                self.skip(ident, "snapshot:output-not-parsed", **base)
                return
            ig, pat, problems = ph.scan(output, ("output",))
            if problems:
                self.skip(ident, "placeholder-in-output-key", detail=problems[:3], **base)
                return
            if ("output",) in ig or ("output",) in pat and not isinstance(output, str):
                self.skip(ident, "output-is-a-placeholder", **base)
                return
            expected["output"] = output
            ignore += ig
            patterns.update(pat)
        else:
            err, cause = facts.get("error_value"), facts.get("cause")
            if isinstance(err, str) and (ph.string_pattern(err) is not None or err in ph.tokens):
                self.skip(ident, "placeholder-in-error", error=err, **base)
                return
            expected["error"] = err
            expected["cause"] = cause
            if isinstance(cause, str):
                if cause in ph.tokens:
                    ignore.append(("cause",))
                else:
                    rx = ph.string_pattern(cause)
                    if rx is not None:
                        patterns[("cause",)] = rx
            elif cause is not None:  # the snapshot parsed a JSON-object cause
                ig, pat, problems = ph.scan(cause, ("cause",))
                if problems:
                    self.skip(ident, "placeholder-in-cause-key", **base)
                    return
                ignore += ig
                patterns.update(pat)
        if ignore:
            expected["ignore"] = [norm_path(p) for p in ignore]
        if patterns:
            expected["patterns"] = {norm_path(p): rx for p, rx in patterns.items()}
        expected["source"] = nodeid
        if key != "get_execution_history" or t["path"]:
            expected["snapshot_key"] = key + (norm_path(t["path"])[1:] if t["path"] else "")
        features = sorted(info["features"])
        expected["meta"] = {
            "query_language": info["query_language"],
            "state_types": sorted(k for k in info["types"] if k),
            "features": features,
            "workflow_type": ex.get("type") or "STANDARD",
            "recorded_date": snap.get("recorded-date"),
            "last_validated": (validation or {}).get("last_validated_date"),
            "recorded_as": t["kind"],
            "definition_from": "snapshot:DescribeStateMachine" if ex.get("definition_from_snapshot") else "test code",
            "input_check": input_check,
            "history_check": history_check,
        }
        if rec.get("skip_marks"):
            expected["meta"]["localstack_skips_test"] = rec["skip_marks"]
        if rec.get("skip_snapshot_verify"):
            # paths where LocalStack's own engine is known to differ from this AWS recording
            expected["meta"]["localstack_skip_verify"] = rec["skip_snapshot_verify"]
        if isinstance(expected.get("cause"), (dict, list)):
            expected["meta"]["cause_is_json"] = True
        name = slug(ident.split("/v2/", 1)[-1].replace(".py::", ".").replace("::", "."))
        name += "-" + hashlib.sha1(ident.encode()).hexdigest()[:8]
        self.cases.append({"name": name, "definition": definition_text, "input": input_text, "expected": expected})
        self.entries.append({"source": ident, "kept": True, "case": name,
                             "query_language": info["query_language"], "state_types": expected["meta"]["state_types"],
                             "features": features, "status": facts["status"],
                             "ignored_paths": len(ignore), "patterned_paths": len(patterns)})


def pretty_if_lossless(text: str) -> str:
    """Indent a JSON text when that changes nothing but whitespace (key order, numbers kept)."""
    try:
        value = json.loads(text)
    except ValueError:
        return text
    if json.dumps(value) == text:
        return json.dumps(value, indent=2) + "\n"
    return text


def write_output(out_dir, extractor, meta):
    if os.path.isdir(out_dir):
        for entry in os.listdir(out_dir):
            p = os.path.join(out_dir, entry)
            if os.path.isdir(p) and os.path.isfile(os.path.join(p, "expected.json")):
                shutil.rmtree(p)
    os.makedirs(out_dir, exist_ok=True)
    for case in extractor.cases:
        d = os.path.join(out_dir, case["name"])
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "workflow.json"), "w") as f:
            f.write(pretty_if_lossless(case["definition"]))
        with open(os.path.join(d, "input.json"), "w") as f:
            f.write(case["input"])
        with open(os.path.join(d, "expected.json"), "w") as f:
            f.write(json.dumps(case["expected"], indent=2, ensure_ascii=False) + "\n")
    index = {**meta, "kept": len(extractor.cases), "entries": extractor.entries,
             "snapshot_keys_without_test": extractor.unmatched_snapshot}
    with open(os.path.join(out_dir, "index.json"), "w") as f:
        json.dump(index, f, indent=1, default=str)


def summarise(extractor) -> str:
    kept = [e for e in extractor.entries if e["kept"]]
    skipped = [e for e in extractor.entries if not e["kept"]]
    lines = [f"kept {len(kept)} cases; skipped {len(skipped)} (tests or executions)"]
    c = collections.Counter(e["query_language"] for e in kept)
    lines.append("  query language: " + ", ".join(f"{k} {v}" for k, v in c.most_common()))
    c = collections.Counter(e["status"] for e in kept)
    lines.append("  expected status: " + ", ".join(f"{k} {v}" for k, v in c.most_common()))
    c = collections.Counter(t for e in kept for t in e["state_types"])
    lines.append("  cases using state type: " + ", ".join(f"{k} {v}" for k, v in c.most_common()))
    c = collections.Counter(t for e in kept for t in e["features"])
    lines.append("  cases using feature: " + ", ".join(f"{k} {v}" for k, v in c.most_common()))
    lines.append(f"  with ignored paths: {sum(1 for e in kept if e['ignored_paths'])}, "
                 f"with patterned strings: {sum(1 for e in kept if e['patterned_paths'])}")
    c = collections.Counter(e["reason"] for e in skipped)
    lines.append("skip reasons:")
    for k, v in c.most_common():
        lines.append(f"  {v:5d}  {k}")
    lines.append(f"snapshot entries with no test id generated here: {len(extractor.unmatched_snapshot)}")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mirror", default=DEFAULT_MIRROR, help="bare git dir of localstack/localstack")
    ap.add_argument("--rev", default="HEAD", help="revision to read (default HEAD)")
    ap.add_argument("--out", default=DEFAULT_OUT, help=f"output folder (default {DEFAULT_OUT})")
    ap.add_argument("--max-wait", type=float, default=2.0, help="longest Wait to keep, seconds (default 2)")
    ap.add_argument("--max-retry-wait", type=float, default=10.0,
                    help="skip definitions whose Retry back-off could add up to more than this (default 10 s)")
    ap.add_argument("--jobs", type=int, default=max(1, min(8, os.cpu_count() or 1)))
    ap.add_argument("--only", default="", help="only test modules whose path contains this")
    ap.add_argument("--worker-timeout", type=int, default=600, help="seconds per test module")
    ap.add_argument("--keep-src", action="store_true", help="keep the temporary copy of the LocalStack tests")
    ap.add_argument("--worker", nargs=2, metavar=("SRC", "MODULE"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return worker_main(*args.worker)
    if importlib.util.find_spec("json5") is None:  # the workers need it (LocalStack's TemplateLoader)
        print("json5 is missing: python3 -m venv /tmp/ls-asl-venv && /tmp/ls-asl-venv/bin/pip install json5, "
              "then run this script with /tmp/ls-asl-venv/bin/python", file=sys.stderr)
        return 2
    src_root = tempfile.mkdtemp(prefix="localstack-sfn-src-")
    t0 = time.monotonic()
    try:
        commit = materialise(args.mirror, args.rev, src_root)
        v2 = os.path.join(src_root, SFN_TESTS, "v2")
        modules = sorted(os.path.relpath(os.path.join(d, f), src_root)
                         for d, _, files in os.walk(v2) for f in files
                         if f.startswith("test_") and f.endswith(".py"))
        if args.only:
            modules = [m for m in modules if args.only in m]
        ex = Extractor(args)
        problems = []
        for relpath, records, rc, stderr, dt in run_workers(src_root, modules, args.jobs, sys.executable,
                                                            args.worker_timeout):
            if rc != 0:
                problems.append(f"{relpath}: worker exit {rc}: {stderr.strip()[-300:]}")
            ex.handle_module(relpath, records, src_root)
            print(f"  {relpath[len(SFN_TESTS) + 4:]:70s} {len(records):4d} test items  {dt:5.1f}s", file=sys.stderr)
        meta = {"localstack_commit": commit, "extracted_at": _dt.datetime.now(tz=_dt.timezone.utc).isoformat(),
                "max_wait_s": args.max_wait, "max_retry_wait_s": args.max_retry_wait, "modules": len(modules),
                "worker_problems": problems}
        write_output(args.out, ex, meta)
        print(summarise(ex))
        for p in problems:
            print("worker problem:", p, file=sys.stderr)
        print(f"wrote {len(ex.cases)} cases to {args.out} from localstack {commit[:12]} "
              f"in {time.monotonic() - t0:.0f}s")
    finally:
        if args.keep_src:
            print(f"sources kept in {src_root}", file=sys.stderr)
        else:
            shutil.rmtree(src_root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
