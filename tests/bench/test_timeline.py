"""The latency breakdown: covered time, interaction, hand-offs."""

from faastlane_bench.timeline import Span, breakdown, covered, handoffs, spans_from_records


def test_covered_counts_overlaps_once_and_clips():
    assert covered([(1, 3), (2, 4), (6, 7)], 0, 10) == 4
    assert covered([(1, 3), (2, 4)], 2.5, 3.5) == 1
    assert covered([], 0, 1) == 0


def test_interaction_is_time_no_function_ran():
    spans = [Span("A", 1.0, 2.0), Span("B", 2.5, 3.0), Span("C", 2.6, 3.5)]
    parts = breakdown(0.5, 4.0, spans, external=[(1.2, 1.4)])
    assert round(parts.end_to_end_ms) == 3500
    assert round(parts.external_ms) == 200
    assert round(parts.compute_ms) == 1800  # 1.0 + 1.0 busy, minus 0.2 external
    assert round(parts.interaction_ms) == 1500  # 0.5 + 0.5 + 0.5 with nothing running


def test_handoffs_name_the_feeding_function():
    spans = [Span("A", 1.0, 2.0), Span("B", 2.1, 3.0), Span("C", 2.2, 2.5)]
    edges = dict(handoffs(0.9, spans))
    assert round(edges["start -> A"], 3) == 100
    assert round(edges["A -> B"], 3) == 100
    assert round(edges["A -> C"], 3) == 200  # B had not ended when C began


def test_spans_from_faastlane_trace_records():
    records = [{"type": "Task", "state": "S", "start": 1.0, "end": 2.0},
               {"type": "Function", "function": "f", "start": 1.0, "end": 1.9,
                "compute_ms": 500.0}]
    assert spans_from_records(records) == [Span("f", 1.0, 1.5)]
