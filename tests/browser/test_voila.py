"""End to end in a real browser: Voila serves the stepper notebook on 127.0.0.1, Debian's
Chromium (driven by Playwright, never `playwright install`) opens it, presses *next*, and the
execution graph on the page changes. The screenshot goes to docs/images/stepper.png.

Run it with `make browser-test` (it installs Chromium with apt and the `browser` extra); the
default test run leaves it out (`-m 'not browser'`).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "notebooks" / "stepper_demo.ipynb"
SCREENSHOT = ROOT / "docs" / "images" / "stepper.png"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
#: Voila runs the whole notebook before the page shows it; the kernel starts cold.
PAGE_SECONDS = 120
SERVER_SECONDS = 60


def free_port() -> int:
    """A port nobody listens on now, on the loopback interface."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def voila(tmp_path: Path) -> Iterator[str]:
    """Voila serving the stepper notebook on 127.0.0.1; its URL. Stopped afterwards."""
    port = free_port()
    state = tmp_path / "jupyter"
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(state / "config"),
        "JUPYTER_DATA_DIR": str(state / "data"),
        "JUPYTER_RUNTIME_DIR": str(state / "runtime"),
        "IPYTHONDIR": str(state / "ipython"),
        "JUPYTER_PLATFORM_DIRS": "1",
        "MPLBACKEND": "Agg",
    }
    log = (tmp_path / "voila.log").open("w")
    server = subprocess.Popen(
        [sys.executable, "-m", "voila", str(NOTEBOOK), "--no-browser", f"--port={port}",
         "--Voila.ip=127.0.0.1", "--Voila.open_browser=False"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + SERVER_SECONDS
        while True:
            if server.poll() is not None:
                pytest.fail(f"voila exited with {server.returncode}:\n{_tail(tmp_path)}")
            try:  # listening is enough: the page itself is made when the browser asks for it
                socket.create_connection(("127.0.0.1", port), timeout=5).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"voila did not answer in {SERVER_SECONDS} s:\n{_tail(tmp_path)}")
                time.sleep(0.3)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=20)
        log.close()


def _tail(folder: Path) -> str:
    return (folder / "voila.log").read_text(errors="replace")[-3000:]


def test_the_stepper_moves_in_a_real_browser(voila: str) -> None:
    if not CHROMIUM.exists():
        pytest.fail("no /usr/bin/chromium: run `make browser-test`, which installs it with apt")
    playwright = pytest.importorskip("playwright.sync_api")
    with playwright.sync_playwright() as driver:
        browser = driver.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_FLAGS
        )
        try:
            # Tall enough for the whole stepper: an element screenshot shows what is laid out.
            page = browser.new_page(viewport={"width": 1280, "height": 2400})
            page.goto(voila, timeout=PAGE_SECONDS * 1000)
            graph = page.locator(".ys-stepper img.ys-graph")
            graph.wait_for(state="visible", timeout=PAGE_SECONDS * 1000)
            page.wait_for_function(
                "() => { const g = document.querySelector('.ys-stepper img.ys-graph');"
                " return g && g.complete && g.naturalWidth > 0; }",
                timeout=30_000,
            )
            event = page.locator(".ys-stepper .ys-event")
            before_text = event.inner_text()
            before_graph = graph.get_attribute("src")
            before_timeline = page.locator(".ys-stepper img.ys-timeline").get_attribute("src")
            assert "claims order-42" in before_text
            page.locator(".ys-stepper button", has_text="next").click()
            page.wait_for_function(
                "(old) => { const e = document.querySelector('.ys-stepper .ys-event');"
                " return e && e.innerText !== old; }",
                arg=before_text,
                timeout=30_000,
            )
            page.wait_for_function(
                "(old) => { const g = document.querySelector('.ys-stepper img.ys-graph');"
                " return g && g.src !== old && g.complete && g.naturalWidth > 0; }",
                arg=before_graph,
                timeout=30_000,
            )
            # The timeline's picture is its own message from the kernel: it may land after
            # the graph's (the check right after the graph's change failed now and then).
            page.wait_for_function(
                "(old) => { const t = document.querySelector('.ys-stepper img.ys-timeline');"
                " return t && t.src !== old && t.complete && t.naturalWidth > 0; }",
                arg=before_timeline,
                timeout=30_000,
            )
            after_text = event.inner_text()
            assert "calls start again for request (order-42, ship)" in after_text
            assert graph.get_attribute("src") != before_graph
            assert page.locator(".ys-stepper img.ys-timeline").get_attribute("src") != (
                before_timeline
            )
            records = page.locator(".ys-stepper .ys-records").inner_text()
            assert "start requests (1)" in records
            assert "changed" in records
            page.wait_for_timeout(300)  # let the new pictures paint before the screenshot
            SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
            page.locator(".ys-stepper").screenshot(path=str(SCREENSHOT))
        finally:
            browser.close()
    assert SCREENSHOT.read_bytes().startswith(b"\x89PNG")
