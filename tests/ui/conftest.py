"""Fixtures of the dashboard tests (see ui_helpers)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ui_helpers import VIEWPORT, UiSetup, chromium_path, warm_up


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
