"""Every golden operator case written by the real MXNet 1.9.1 (shared/fixtures) replays
here with the same outputs, input gradients and updated auxiliary states."""
import pytest

from common import all_fixture_cases, run_fixture_case

# Cases whose tolerance must be looser, with the reason.
LOOSE = {
    "Cast_float16": dict(rtol=1e-3, atol=1e-3),      # float16 output
    "CTCLoss": dict(rtol=1e-4, atol=1e-4),
}


@pytest.mark.parametrize("name", [c["case"] for c in all_fixture_cases()])
def test_golden_case(name):
    run_fixture_case(name, **LOOSE.get(name, {}))
