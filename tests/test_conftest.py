"""The suite's own hooks (tests/conftest.py): under CI a missing test oracle fails instead of skipping."""

from pathlib import Path

import pytest

CONFTEST = Path(__file__).parent / "conftest.py"


@pytest.fixture
def oracle_tests(pytester, monkeypatch):
    """A suite with this conftest (run without the installed plugins, which it does not need) and a test
    of each kind: an oracle asked for at run time, one asked for at collection (module level), and a skip
    for another reason."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makeconftest(CONFTEST.read_text(encoding="utf-8"))
    pytester.makepyfile(
        test_at_run_time="""
            import pytest

            def test_needs_an_oracle():
                pytest.importorskip("no_such_oracle_module")

            def test_skips_for_another_reason():
                pytest.skip("not on this platform")
        """,
        test_at_collection="""
            import pytest

            oracle = pytest.importorskip("no_such_oracle_module")

            def test_uses_it():
                assert oracle
        """)
    return pytester


def test_a_missing_oracle_fails_under_ci(oracle_tests, monkeypatch):
    monkeypatch.setenv("CI", "true")
    result = oracle_tests.runpytest("--continue-on-collection-errors")
    result.assert_outcomes(failed=1, skipped=1, errors=1)
    result.stdout.fnmatch_lines(["*a test oracle is missing: could not import 'no_such_oracle_module'*"])
    assert result.ret != 0


def test_a_missing_oracle_skips_elsewhere(oracle_tests, monkeypatch):
    monkeypatch.setenv("CI", "false")
    result = oracle_tests.runpytest()
    result.assert_outcomes(skipped=3)
    assert result.ret == 0
