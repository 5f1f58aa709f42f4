"""Differential conformance: Faastlane's ``run`` against moto's Step Functions engine.

Every case under ``cases/`` runs on moto (the Lambda calls executing the case's own
functions) and through ``faastlane run`` in each isolation mode; the outputs, or the
Error and Cause of a failed execution, must be equal. Where moto is wrong per the AWS
documentation or cannot run a case, the case's ``expected.json`` holds the documented
outcome and the reason, and Faastlane is compared with that instead.
"""

from __future__ import annotations

import pytest

from .cases import all_cases
from .conftest import ConformanceRuns
from .faastlane_cli import ISOLATIONS
from .outcome import difference

CASES = {case.name: case for case in all_cases()}
DOCUMENTED = [name for name, case in CASES.items() if case.documented is not None]


def test_enough_cases() -> None:
    assert len(CASES) >= 40, (f"the conformance suite should hold at least 40 workflows, "
                              f"found {len(CASES)}")


@pytest.mark.parametrize("isolation", ISOLATIONS)
@pytest.mark.parametrize("case_name", sorted(CASES))
def test_faastlane_matches_reference(
    case_name: str, isolation: str, conformance_runs: ConformanceRuns
) -> None:
    case = CASES[case_name]
    moto = conformance_runs.moto(case_name)
    if case.documented is not None:
        reference, source = case.documented, f"the AWS documentation ({case.reason})"
    else:
        reference, source = moto, "moto"
    ours = conformance_runs.faastlane(case_name, isolation)
    problem = difference(reference, ours)
    assert problem is None, (
        f"{case_name} [--isolation {isolation}] disagrees with {source}: {problem}\n"
        f"  reference: {reference.describe()}\n"
        f"  moto:      {moto.describe()}\n"
        f"  faastlane: {ours.describe()}"
    )


@pytest.mark.parametrize("case_name", DOCUMENTED)
def test_documented_deviation_of_moto_is_real(
    case_name: str, conformance_runs: ConformanceRuns
) -> None:
    """An expected.json overrides moto only while moto really deviates from it."""
    case = CASES[case_name]
    assert case.documented is not None
    moto = conformance_runs.moto(case_name)
    assert difference(case.documented, moto) is not None, (
        f"moto now gives the documented outcome for {case_name} "
        f"({moto.describe()}): delete its expected.json and compare with moto again"
    )
