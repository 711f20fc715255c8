"""Fixtures of the dashboard tests (see ui_helpers)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import peers
import psutil
import pytest
from ui_helpers import VIEWPORT, UiSetup, chromium_path, warm_up


def _browser_processes() -> set[int]:
    """The Playwright driver (a child of this process running its ``cli.js``) and everything
    under it: the browser and its helpers."""
    out: set[int] = set()
    for child in psutil.Process().children():
        try:
            command = child.cmdline()
            if any(part.endswith("cli.js") and "playwright" in part for part in command):
                out.add(child.pid)
                out.update(p.pid for p in child.children(recursive=True))
        except psutil.Error:
            continue
    return out


@pytest.fixture
def no_leftovers(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """As in tests/conftest.py, except for the browser's own processes: chromium starts
    helper processes when it first needs them (a utility service, a GPU process), at any
    point of a test, and they live as long as the browser (the module-scoped fixture closes
    it). Everything else a test starts (``kairox ui`` and its servers, orphans included)
    must be gone."""
    real = peers.live_descendants

    def outside_the_browser(exclude: set[int] | frozenset[int] = frozenset()) -> list[psutil.Process]:
        browser = _browser_processes()
        return [p for p in real(exclude) if p.pid not in browser]

    monkeypatch.setattr(peers, "live_descendants", outside_the_browser)
    with peers.no_leftover_processes():
        yield


@pytest.fixture
def ui(tmp_path: Path, no_leftovers: None) -> Iterator[UiSetup]:
    setup = UiSetup(tmp_path)
    try:
        yield setup
    finally:
        setup.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    path = chromium_path()
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed (apt-get install chromium); CI needs the browser tests")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        instance = p.chromium.launch(executable_path=path, args=["--no-sandbox"])
        try:
            warm_up(instance)
            yield instance
        finally:
            instance.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport=VIEWPORT, device_scale_factor=1, locale="en-US", timezone_id="UTC")
    context.set_default_timeout(30_000)
    page = context.new_page()
    try:
        yield page
    finally:
        context.close()
