"""The design-review page in a real browser: Debian's Chromium (driven by Playwright, never
`playwright install`) opens the file from file://, with no server and no kernel; moving the
slider and pressing the buttons change the graph, the timeline's cursor, the words and the
records; nothing is logged to the console and no request leaves the page. The screenshot goes
to docs/images/review.png (the README shows it).

Run it with `make browser-test`; the default test run leaves it out (`-m 'not browser'`).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

import yieldstar_sim as ys
from yieldstar_sim.examples import charge_order, ship_order
from yieldstar_sim.widgets import narrate

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOT = ROOT / "docs" / "images" / "review.png"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
#: The event the screenshot shows: the crash between the step's trigger and its record.
CRASH_WORDS = "crashes and forgets everything"


class Browser:
    """A Chromium page that records every request and every console message."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.requests: list[str] = []
        self.console: list[str] = []
        page.on("request", lambda request: self.requests.append(request.url))
        page.on("console", lambda message: self.console.append(f"{message.type}: {message.text}"))
        page.on("pageerror", lambda error: self.console.append(f"pageerror: {error}"))

    def open(self, path: Path, fragment: str = "", event: int = 0) -> str:
        url = path.resolve().as_uri()
        self.page.goto(url + fragment)
        self.page.wait_for_selector(f"section.ys-stepper[data-event='{event}']")
        return url

    def stepper(self, number: int) -> Any:
        return self.page.locator("section.ys-stepper").nth(number)


@pytest.fixture
def browser() -> Iterator[Browser]:
    if not CHROMIUM.exists():
        pytest.fail("no /usr/bin/chromium: run `make browser-test`, which installs it with apt")
    playwright = pytest.importorskip("playwright.sync_api")
    with playwright.sync_playwright() as driver:
        chromium = driver.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_FLAGS
        )
        try:
            yield Browser(chromium.new_page(viewport={"width": 1280, "height": 1000}))
        finally:
            chromium.close()


def _state(stepper: Any) -> dict[str, Any]:
    """What the stepper shows now."""
    return {
        "event": stepper.get_attribute("data-event"),
        "words": stepper.locator(".ys-words").inner_text(),
        "graph": stepper.locator(".ys-graph").inner_html(),
        "cursor": stepper.locator(".ys-cursor").get_attribute("x1"),
        "records": stepper.locator(".ys-records").inner_text(),
    }


def test_the_review_page_steps_through_a_run_offline(tmp_path: Path, browser: Browser) -> None:
    run = ys.simulate(ys.load_scenario("trigger-in-step"), seed=0, runtime="memory")
    sentences = narrate(run.trace)
    page = run.export(tmp_path / "review.html")
    url = browser.open(page)
    stepper = browser.stepper(0)
    first = _state(stepper)
    assert first["words"] == sentences[0]
    assert "<svg" in first["graph"]
    assert "executions (1)" in first["records"]
    assert stepper.locator(".ys-previous").is_disabled()

    crash = next(i for i, s in enumerate(sentences) if CRASH_WORDS in s)
    stepper.locator(".ys-slider").fill(str(crash))
    moved = _state(stepper)
    assert moved["event"] == str(crash)
    assert moved["words"] == sentences[crash]
    assert moved["graph"] != first["graph"]  # the graph as of the crash has more in it
    assert float(moved["cursor"]) > float(first["cursor"])
    assert moved["records"] != first["records"]

    stepper.locator(".ys-next").click()
    assert _state(stepper)["words"] == sentences[crash + 1]
    stepper.locator(".ys-previous").click()
    assert _state(stepper)["words"] == sentences[crash]
    stepper.locator(".ys-slider").fill(str(len(sentences) - 1))
    assert stepper.locator(".ys-next").is_disabled()
    stepper.locator(".ys-slider").fill(str(crash))

    browser.page.wait_for_timeout(200)  # let the new picture paint before the screenshot
    SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    stepper.screenshot(path=str(SCREENSHOT))
    assert browser.console == []
    assert browser.requests == [url]  # the page itself, and nothing else
    assert SCREENSHOT.read_bytes().startswith(b"\x89PNG")


HOSTILE_KEY = "ship</script><script>alert(1)</script><img src=x onerror=alert(2)> \u202e24"


@ys.workflow("hostile")
def hostile(step: ys.StepRunner, params: object) -> Any:
    return (yield from step.run(HOSTILE_KEY, lambda: 1))


def test_hostile_labels_stay_text_in_the_browser(tmp_path: Path, browser: Browser) -> None:
    scenario = ys.Scenario(
        name="<script>alert(3)</script>",
        description="<img src=x onerror=alert(4)>",
        workflows=[hostile],
        triggers=[ys.Trigger("hostile", None, execution_id="order-\u202e24")],
    )
    run = ys.simulate(scenario, seed=0, runtime="memory")
    dialogs: list[str] = []
    browser.page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    url = browser.open(run.export(tmp_path / "hostile.html"))
    stepper = browser.stepper(0)
    shown = []
    for event in range(len(run.trace)):
        stepper.locator(".ys-slider").fill(str(event))
        shown.append(stepper.locator(".ys-words").inner_text())
    assert shown == [s.replace("\u202e", "[U+202E]") for s in narrate(run.trace)]
    assert any("ship</script><script>alert(1)</script>" in words for words in shown)
    text = browser.page.locator("body").inner_text()
    assert "<script>alert(3)</script>" in text
    assert "<img src=x onerror=alert(4)>" in text
    assert "order-[U+202E]24" in text
    assert browser.page.locator("img").count() == 0
    assert dialogs == []
    assert browser.console == []
    assert browser.requests == [url]


def test_the_report_page_has_one_working_stepper_per_violation(
    tmp_path: Path, browser: Browser
) -> None:
    scenario = ys.load_scenario("trigger-in-step")
    report = ys.explore(scenario, confirm=None, stop_at_first=False)
    assert len(report.violations) == 2
    url = browser.open(report.export(tmp_path / "report.html"))
    assert browser.page.locator("figure.grid svg").count() == 1
    assert browser.page.locator("figure.divergence svg").count() == 2
    one, two = browser.stepper(0), browser.stepper(1)
    before = _state(two)
    one.locator(".ys-next").click()
    one.locator(".ys-next").click()
    assert one.get_attribute("data-event") == "2"
    assert _state(two) == before  # each stepper moves on its own
    two.locator(".ys-slider").fill("5")
    assert _state(two)["event"] == "5"
    assert browser.console == []
    assert browser.requests == [url]


def orders(count: int) -> ys.Scenario:
    """The issue's scale scenario: independent orders, 4 workers, one crash."""
    return ys.Scenario(
        name=f"orders-{count}",
        workflows=[charge_order, ship_order],
        triggers=[
            ys.Trigger("charge-order", {"order": n}, execution_id=f"order-{n}")
            for n in range(1, count + 1)
        ],
        workers=4,
        faults=[ys.Fault("crash", op="put_step", execution_id="order-1", step_key="ship")],
        max_points=40 * count + 1_000,
    )


#: What the graph and the executions table say of each execution, read from the page.
SHOWN_STATUSES = """(root) => {
  const graph = {}, table = {};
  root.querySelectorAll(".ys-node[data-id]").forEach((node) => {
    if (node.style.display !== "none") graph[node.getAttribute("data-id")] =
      [node.getAttribute("data-status"), node.classList.contains("ys-leased")];
  });
  const executions = root.querySelector(".ys-records .ys-table");
  executions.querySelectorAll("tbody tr[data-key]").forEach((row) => {
    table[row.getAttribute("data-key")] =
      [row.children[5].textContent, row.children[6].textContent !== "none"];
  });
  return {graph, table};
}"""


#: What each family drawn now says of its executions: ``status:count,...``.
SHOWN_FAMILIES = """(root) => {
  const families = {};
  root.querySelectorAll(".ys-family").forEach((node) => {
    if (node.style.display !== "none") families[node.getAttribute("data-family")] =
      node.getAttribute("data-counts");
  });
  return families;
}"""


def _counts(statuses: list[str]) -> str:
    """``status:count`` in the page's order of statuses (its colours'), as a family says it."""
    order = ["pending", "suspended", "completed", "failed", "cancelled", "pruned"]
    counted = {status: statuses.count(status) for status in set(statuses)}
    return ",".join(f"{status}:{counted[status]}" for status in order if status in counted)


def test_the_graph_and_the_executions_table_agree_at_every_event(
    tmp_path: Path, browser: Browser
) -> None:
    # At event 41 of this page the graph used to show order-1 running while the table said
    # pending (the graph had a status of its own; the records have none called running).
    run = ys.simulate(orders(10), seed=0, runtime="memory")
    url = browser.open(run.export(tmp_path / "orders.html"))
    stepper = browser.stepper(0)
    family = "9 \u00d7 charge-order \u2192 ship-order, completed"
    # Drawn once, the family's count by status is the table's over the executions it holds.
    for event in range(len(run.trace)):
        stepper.locator(".ys-slider").fill(str(event))
        shown = stepper.evaluate(SHOWN_STATUSES)
        assert all(shown["graph"][key] == shown["table"][key] for key in shown["graph"]), event
        rest = [status for key, (status, _) in shown["table"].items() if key not in shown["graph"]]
        families = stepper.evaluate(SHOWN_FAMILIES)
        assert families == ({family: _counts(rest)} if rest else {}), event
    assert set(shown["graph"]) == {"order-1", "@ship-order:order-1/ship"}
    # Every execution drawn: each node is its row.
    stepper.locator(".ys-grouped").uncheck()
    seen: set[tuple[str, bool]] = set()
    for event in range(len(run.trace)):
        stepper.locator(".ys-slider").fill(str(event))
        shown = stepper.evaluate(SHOWN_STATUSES)
        assert shown["graph"] == shown["table"], event
        seen |= {(status, leased) for status, leased in shown["graph"].values()}
    assert {("pending", False), ("pending", True), ("completed", False)} <= seen
    assert not any(status == "running" for status, _ in seen)
    assert browser.console == []
    assert browser.requests == [url]


def test_a_click_on_a_family_draws_every_execution(tmp_path: Path, browser: Browser) -> None:
    run = ys.simulate(orders(40), seed=0, runtime="memory")
    browser.open(run.export(tmp_path / "orders.html"))
    stepper = browser.stepper(0)
    stepper.locator(".ys-slider").fill(str(len(run.trace) - 1))
    family = stepper.locator(".ys-family")
    assert family.count() == 1
    assert family.get_attribute("data-counts") == "completed:78"
    assert "39 \u00d7 charge-order" in family.inner_html()
    assert stepper.locator(".ys-node[data-id]").count() == 2  # order-1 and its shipment
    family.click()
    assert not stepper.locator(".ys-grouped").is_checked()
    assert stepper.locator(".ys-family").count() == 0
    drawn = stepper.locator(".ys-node[data-id='order-2']")
    assert drawn.count() == 1  # the family's first member, scrolled to
    assert drawn.get_attribute("data-status") == "completed"
    stepper.locator(".ys-grouped").check()
    assert stepper.locator(".ys-family").count() == 1


def test_a_link_opens_the_page_at_an_event_or_an_execution(
    tmp_path: Path, browser: Browser
) -> None:
    run = ys.simulate(orders(10), seed=0, runtime="memory")
    page = run.export(tmp_path / "orders.html")
    sentences = narrate(run.trace)
    browser.open(page, "#event=41", event=41)
    stepper = browser.stepper(0)
    assert stepper.locator(".ys-words").inner_text() == sentences[41]
    stepper.locator(".ys-next").click()
    assert browser.page.url.endswith("#event=42")  # the address follows the slider
    first = next(e.seq for e in run.trace if "@ship-order:order-7/ship" in e.text)
    browser.open(page, "#execution=%40ship-order%3Aorder-7%2Fship", event=first)
    assert stepper.locator(".ys-search").input_value() == "@ship-order:order-7/ship"
    hits = stepper.locator(".ys-node.ys-hit")
    assert hits.count() == 1
    assert hits.get_attribute("data-id") == "@ship-order:order-7/ship"
    assert f"appears at event #{first}" in stepper.locator(".ys-found").inner_text()


@ys.workflow("charge-order")
def charge_in_step(step: ys.StepRunner, params: Any) -> Any:
    """RFC 003's Problem: the shipment is triggered inside a step, without a request ID."""
    order = params["order"]
    yield from step.run("charge", lambda: step.world.effect("card.charged", order=order))
    return (yield from step.run("ship", lambda: step.world.trigger("ship-order", params)))


def trigger_in_step(count: int, *, crashed: int) -> ys.Scenario:
    """The Problem copied to ``count`` orders on 3 workers; order ``crashed``'s worker crashes
    before it records the ship step, and that order sends two couriers."""
    return ys.Scenario(
        name=f"trigger-in-step-{count}",
        workflows=[charge_in_step, ship_order],
        triggers=[
            ys.Trigger("charge-order", {"order": n}, execution_id=f"order-{n}")
            for n in range(1, count + 1)
        ],
        faults=[ys.Fault("crash", op="put_step", execution_id=f"order-{crashed}", step_key="ship")],
        invariants=[ys.at_most_once("courier.booked", by="order")],
        workers=3,
    )


def test_a_link_opens_the_page_at_a_violation(tmp_path: Path, browser: Browser) -> None:
    # Issue 53: 300 orders of the trigger-in-step pattern, the crash on order-150's worker
    # breaking it; the link to the violation is the page at its second courier, found.
    from yieldstar_sim.views.evidence import violation_events

    run = ys.simulate(trigger_in_step(300, crashed=150), seed=0, runtime="memory")
    events = list(run.trace)
    one, two = violation_events(run.violations, events)
    page = run.export(tmp_path / "bug.html")
    url = browser.open(page, "#violation=2", event=two)
    stepper = browser.stepper(0)
    courier = events[two]
    assert courier.kind == "effect"
    assert stepper.locator(".ys-search").input_value() == courier.execution_id
    note = stepper.locator(".ys-violation-note").inner_text()
    assert note.startswith("violation 2 comes true here: at_most_once(courier.booked, by=order)")
    assert browser.page.locator("li.ys-target").get_attribute("id") == "violation-2"
    named = {node.get_attribute("data-id") for node in stepper.locator(".ys-node.ys-named").all()}
    assert "order-150" in named
    assert browser.page.url.endswith("#violation=2")  # the address says where it is
    # The list's links move the stepper to the other violation, the second admission.
    browser.page.locator("#violation-1 a.ys-violation-link").click()
    browser.page.wait_for_selector(f"section.ys-stepper[data-event='{one}']")
    assert browser.page.url.endswith("#violation=1")
    stepper.locator(".ys-next").click()
    assert f"#event={one + 1}&execution=" in browser.page.url  # and it follows the slider
    assert browser.console == []
    assert browser.requests == [url]


def test_a_report_page_link_opens_its_violation_s_stepper(tmp_path: Path, browser: Browser) -> None:
    scenario = ys.load_scenario("trigger-in-step")
    report = ys.explore(scenario, confirm=None, stop_at_first=False)
    page = report.export(tmp_path / "report.html")
    url = browser.open(page)
    browser.page.goto(url + "#violation=2")
    two = browser.stepper(1)
    browser.page.wait_for_function(
        "(root) => root.getAttribute('data-event') !== '0'", arg=two.element_handle()
    )
    assert "comes true here" in two.locator(".ys-violation-note").inner_text()
    assert browser.stepper(0).get_attribute("data-event") == "0"  # the other stays
    assert browser.console == []


def test_the_search_box_finds_an_execution_s_rows(tmp_path: Path, browser: Browser) -> None:
    run = ys.simulate(orders(40), seed=0, runtime="memory")
    browser.open(run.export(tmp_path / "orders.html"))
    stepper = browser.stepper(0)
    stepper.locator(".ys-slider").fill(str(len(run.trace) - 1))
    rows = stepper.locator(".ys-records .ys-table").first.locator("tbody tr[data-key]")
    assert rows.count() < 80  # 80 executions: the table shows a window, and says so
    stepper.locator(".ys-search").fill("order-37")
    keys = [rows.nth(i).get_attribute("data-key") for i in range(rows.count())]
    assert keys[0] == "order-37"
    assert all("order-37" in rows.nth(i).inner_text() for i in range(rows.count()))
    assert len(keys) == 2  # and the ship-order it started, whose parent link names it
    stepper.locator(".ys-search").fill("no-such-order")
    assert "no execution ID contains" in stepper.locator(".ys-found").inner_text()
    assert rows.count() == 0


def test_a_thousand_orders_page_moves_to_its_last_event(
    tmp_path: Path, browser: Browser, capsys: pytest.CaptureFixture[str]
) -> None:
    # Issue 33 bounds this at 2 s; the seconds are printed, never asserted (a shared machine
    # makes wall-clock limits flaky): `make browser-test` shows them.
    run = ys.simulate(orders(1_000), seed=0, runtime="memory")
    page = run.export(tmp_path / "orders.html")
    last = len(run.trace) - 1
    took = []
    for _ in range(2):  # the better of two fresh opens: the machine is shared
        browser.open(page)
        stepper = browser.stepper(0)
        started = time.perf_counter()
        stepper.locator(".ys-slider").fill(str(last))
        browser.page.wait_for_selector(f"section.ys-stepper[data-event='{last}']")
        took.append(time.perf_counter() - started)
    assert stepper.locator(".ys-words").inner_text() == narrate(run.trace)[last]
    assert browser.console == []
    with capsys.disabled():
        print(
            f"\n[figure] 1,000-order review page ({len(run.trace):,} events): the slider to its "
            f"last event in {min(took):.2f} s (the better of {len(took)}; issue 33: within 2 s)"
        )
