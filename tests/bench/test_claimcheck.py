"""Claim checks: large parts of a state go to an object store and come back intact."""

import json

from faastlane_bench import claimcheck


class MemoryStore:
    """An object store in a dict: the claim-check logic is what is under test here."""

    def __init__(self):
        self.objects = {}

    def put(self, data):
        url = f"s3://bucket/{len(self.objects)}"
        self.objects[url] = data
        return url

    def get(self, url):
        return self.objects[url]


def test_small_values_stay_inline():
    store = MemoryStore()
    value = {"a": 1, "b": "x" * 10}
    assert claimcheck.offload(value, 1000, store) is value
    assert not store.objects


def test_the_large_field_moves_and_small_ones_stay():
    store = MemoryStore()
    value = {"image_id": "scan-1", "image": "x" * 5000, "meta": {"w": 1}}
    sent = claimcheck.offload(value, 1000, store)
    assert claimcheck.encoded_size(sent) <= 1000
    assert sent["image_id"] == "scan-1" and sent["meta"] == {"w": 1}
    assert claimcheck.is_reference(sent["image"])
    assert claimcheck.has_references(sent)
    assert claimcheck.resolve(sent, store) == value


def test_nested_and_list_states_round_trip():
    store = MemoryStore()
    value = [{"rule": i, "book": "y" * 800} for i in range(10)]
    sent = claimcheck.offload(value, 2000, store)
    assert claimcheck.encoded_size(sent) <= 2000
    assert claimcheck.resolve(sent, store) == value
    assert json.loads(json.dumps(sent))  # still plain JSON


def test_a_large_scalar_becomes_one_reference():
    store = MemoryStore()
    sent = claimcheck.offload("z" * 3000, 100, store)
    assert claimcheck.is_reference(sent)
    assert claimcheck.resolve(sent, store) == "z" * 3000
