"""The MCP conformance suite (``@modelcontextprotocol/conformance``, the 0.2.0-alpha line with
per-revision requirement sets) against kairox: one test per scenario that a revision's
requirement set scores, for the client side (``client.py kairox``: kairox's MCP client in a
``Runtime``) and the server side (``kairox serve --http`` over the suite's fixture backend).

A failing scored scenario fails its test. A scenario kairox fails today is listed in
``scenarios.KNOWN_FAILURES`` with the suite's reason and is a strict ``xfail``: once it passes,
the test fails until the entry is removed. Runs on Node 22 (npm's, when the machine's is older).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import peers
import pytest
import suite
from scenarios import EXTENSIONS_FOR_US, KNOWN_FAILURES, SCORED

pytestmark = pytest.mark.integration


def _cases(side: str) -> list[object]:
    cases = []
    for revision in suite.REVISIONS:
        for scenario in SCORED[(side, revision)]:
            reason = KNOWN_FAILURES.get((side, revision, scenario))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            cases.append(pytest.param(revision, scenario, marks=marks, id=f"{revision}-{scenario}"))
    return cases


@pytest.mark.parametrize("revision", suite.REVISIONS)
def test_scored_lists_match_the_installed_suite(revision: str) -> None:
    """scenarios.SCORED is what the pinned suite's requirement set names (a bumped pin that
    changes a set fails here, with the new list to copy)."""
    for side in ("client", "server"):
        assert suite.scored(side, revision) == SCORED[(side, revision)], (side, revision)


def test_known_failures_name_scored_scenarios() -> None:
    for side, revision, scenario in KNOWN_FAILURES:
        assert scenario in SCORED[(side, revision)], (side, revision, scenario)


@pytest.mark.parametrize(("revision", "scenario"), _cases("client"))
def test_client(revision: str, scenario: str, tmp_path: Path) -> None:
    verdict, _output = suite.run_client("kairox", scenario, revision, tmp_path)
    assert verdict.passed, "\n".join(verdict.failures)


def test_extensions_for_us_are_extension_scenarios() -> None:
    """EXTENSIONS_FOR_US names scenarios the pinned suite lists as extensions (a renamed or
    promoted one fails here)."""
    for side, names in EXTENSIONS_FOR_US.items():
        listed = suite.extensions(side)
        assert [n for n in names if n not in listed] == [], side


@pytest.mark.parametrize("scenario", EXTENSIONS_FOR_US["client"])
def test_client_extension(scenario: str, tmp_path: Path) -> None:
    """An extension scenario kairox implements: scored for us (it must pass)."""
    verdict, _output = suite.run_client("kairox", scenario, None, tmp_path)
    assert verdict.passed, "\n".join(verdict.failures)


@pytest.fixture(scope="module")
def gateway_results(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, dict[str, suite.Verdict]]]:
    """Each revision's server requirement set against one ``kairox serve --http`` (a run of
    the whole set takes seconds, so it runs once per revision)."""
    peers.conformance_cli()  # installs, or skips the module's tests
    tmp = tmp_path_factory.mktemp("conformance-server")
    results: dict[str, dict[str, suite.Verdict]] = {}
    with suite.gateway(tmp / "gateway") as url:
        for revision in suite.REVISIONS:
            results[revision] = suite.run_server(url, revision, tmp / revision)
    yield results


@pytest.mark.parametrize(("revision", "scenario"), _cases("server"))
def test_server(revision: str, scenario: str, gateway_results: dict[str, dict[str, suite.Verdict]]) -> None:
    verdict = gateway_results[revision].get(scenario)
    assert verdict is not None, f"the suite reported nothing for {scenario}"
    assert verdict.passed, "\n".join(verdict.failures)


@pytest.fixture(scope="module")
def skills_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """One ``kairox serve --http`` for the server extension scenarios (its workspace has a skill)."""
    peers.conformance_cli()
    tmp = tmp_path_factory.mktemp("conformance-extensions")
    with suite.gateway(tmp / "gateway") as url:
        yield url, tmp


@pytest.mark.parametrize("scenario", EXTENSIONS_FOR_US["server"])
def test_server_extension(scenario: str, skills_gateway: tuple[str, Path]) -> None:
    """An extension scenario the gateway implements: scored for us (it must pass)."""
    url, tmp = skills_gateway
    verdict, statuses = suite.run_server_scenario(url, scenario, tmp / scenario)
    assert verdict.passed, "\n".join(verdict.failures)
    ran = {check for check, status in statuses.items() if check.startswith("sep-2640") and status != "SKIPPED"}
    if scenario == "sep-2640-skills-directory":  # directoryRead is not declared: nothing to run
        assert ran == set(), statuses
    else:  # an undeclared extension would skip every one
        assert ran, statuses
