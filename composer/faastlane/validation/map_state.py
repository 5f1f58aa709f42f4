"""The Map state: its item processor, where items come from, batching and limits."""

from __future__ import annotations

from typing import Any

from . import fields as F
from . import jsonata_syntax as jsonata
from .checker import ARN, Checker
from .problem import child

MAX_MAP_LABEL = 40
MAX_ITEMS = 100_000_000
MAX_BATCH_BYTES = 262_144


class MapChecks(Checker):
    """Checks for the Map state (inline and distributed)."""

    def state_map(
        self, node: dict[str, Any], where: str, language: str, names: frozenset[str]
    ) -> None:
        """Map: the item processor, where items come from and how many run at once."""
        processors = self.exclusive(node, where, "ItemProcessor", "Iterator")
        if not processors:
            self.report(where, "a Map state needs an ItemProcessor (or the older Iterator)")
        for key in processors:
            self.item_processor(node[key], child(where, key), key)
        self.exclusive(node, where, "ItemSelector", "Parameters")
        if "ItemSelector" in node:
            self.payload(node, "ItemSelector", where, language, must_be_object=True)
        if "ItemsPath" in node:
            self.path(node["ItemsPath"], child(where, "ItemsPath"), reference=True)
        if "Items" in node:
            items, at = node["Items"], child(where, "Items")
            if isinstance(items, list) or (isinstance(items, str) and jsonata.is_expression(items)):
                self.jsonata_value(items, at)
            else:
                self.report(at, "Items must be a JSON array or a JSONata expression")
        for key, integer, maximum in (
            ("MaxConcurrency", True, None),
            ("ToleratedFailurePercentage", False, 100),
            ("ToleratedFailureCount", True, None),
        ):
            self.exclusive(node, where, key, key + "Path")
            self.check_number(
                node, key, where, integer=integer, minimum=0, maximum=maximum, language=language
            )
            if key + "Path" in node:
                self.path(node[key + "Path"], child(where, key + "Path"), reference=True)
        if "Label" in node:
            label = node["Label"]
            if not isinstance(label, str) or len(label) > MAX_MAP_LABEL:
                self.report(
                    child(where, "Label"),
                    f"Label must be a string of at most {MAX_MAP_LABEL} characters",
                )
        if "ItemReader" in node:
            self.item_reader(node["ItemReader"], child(where, "ItemReader"), language)
        if "ItemBatcher" in node:
            self.item_batcher(node["ItemBatcher"], child(where, "ItemBatcher"), language)
        if "ResultWriter" in node:
            self.result_writer(node["ResultWriter"], child(where, "ResultWriter"), language)

    def item_processor(self, node: Any, where: str, key: str) -> None:
        # The older Iterator takes a ProcessorConfig too: AWS runs such a definition
        # (recorded in LocalStack's snapshot tests, e.g. test_map_state_legacy_config_*).
        self.machine(node, where, F.ITEM_PROCESSOR, f"a Map {key}")
        if not isinstance(node, dict) or "ProcessorConfig" not in node:
            return
        config, at = node["ProcessorConfig"], child(where, "ProcessorConfig")
        if not self.expect_object(config, at, "ProcessorConfig"):
            return
        self.check_plain_fields(config, at, F.PROCESSOR_CONFIG, "ProcessorConfig")
        mode = config.get("Mode", "INLINE")
        if mode not in ("INLINE", "DISTRIBUTED"):
            self.report(child(at, "Mode"), f"Mode must be INLINE or DISTRIBUTED, not {mode!r}")
        if "ExecutionType" in config and config["ExecutionType"] not in ("STANDARD", "EXPRESS"):
            self.report(child(at, "ExecutionType"), "ExecutionType must be STANDARD or EXPRESS")
        if mode == "DISTRIBUTED" and "ExecutionType" not in config:
            self.report(at, "a DISTRIBUTED Map needs an ExecutionType (STANDARD or EXPRESS)")

    def item_reader(self, node: Any, where: str, language: str) -> None:
        if not self.expect_object(node, where, "ItemReader"):
            return
        self.check_fields(node, where, F.ITEM_READER, language, "ItemReader")
        if "Resource" not in node:
            self.report(where, "an ItemReader needs a Resource")
        elif not isinstance(node["Resource"], str) or not ARN.match(node["Resource"]):
            self.report(child(where, "Resource"), "the ItemReader Resource must be an ARN string")
        self.payload(node, "Parameters", where, language, must_be_object=True)
        self.payload(node, "Arguments", where, language, must_be_object=True)
        if "ReaderConfig" in node:
            config, at = node["ReaderConfig"], child(where, "ReaderConfig")
            if self.expect_object(config, at, "ReaderConfig"):
                self.check_fields(config, at, F.READER_CONFIG, language, "ReaderConfig")
                self.exclusive(config, at, "MaxItems", "MaxItemsPath")
                self.check_number(
                    config, "MaxItems", at, minimum=0, maximum=MAX_ITEMS, language=language
                )
                if "MaxItemsPath" in config:
                    self.path(config["MaxItemsPath"], child(at, "MaxItemsPath"), reference=True)

    def item_batcher(self, node: Any, where: str, language: str) -> None:
        if not self.expect_object(node, where, "ItemBatcher"):
            return
        self.check_fields(node, where, F.ITEM_BATCHER, language, "ItemBatcher")
        limits = [
            key
            for key in ("MaxItemsPerBatch", "MaxInputBytesPerBatch")
            if key in node or key + "Path" in node
        ]
        if not limits:
            self.report(where, "an ItemBatcher needs MaxItemsPerBatch or MaxInputBytesPerBatch")
        for key, maximum in (
            ("MaxItemsPerBatch", None),
            ("MaxInputBytesPerBatch", MAX_BATCH_BYTES),
        ):
            self.exclusive(node, where, key, key + "Path")
            self.check_number(node, key, where, minimum=1, maximum=maximum, language=language)
            if key + "Path" in node:
                self.path(node[key + "Path"], child(where, key + "Path"), reference=True)
        if "BatchInput" in node:
            self.payload(node, "BatchInput", where, language, must_be_object=True)

    def result_writer(self, node: Any, where: str, language: str) -> None:
        if not self.expect_object(node, where, "ResultWriter"):
            return
        self.check_fields(node, where, F.RESULT_WRITER, language, "ResultWriter")
        if "Resource" in node and (
            not isinstance(node["Resource"], str) or not ARN.match(node["Resource"])
        ):
            self.report(child(where, "Resource"), "the ResultWriter Resource must be an ARN string")
        self.payload(node, "Parameters", where, language, must_be_object=True)
        self.payload(node, "Arguments", where, language, must_be_object=True)
