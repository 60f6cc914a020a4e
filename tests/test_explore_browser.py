"""``kmc explore`` in a real browser: headless Chromium (the system's, never a downloaded
one) driven by Playwright clicks its way to seed scenario 1's lost record, reloads the
link, and steps back from a counterexample; and what it draws is checked on a screenshot."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kmc.checker.engines import make_engine
from kmc.app.explore_server import ExploreServer
from kmc.app.specs import load_spec
from kmc.app.render.explorer import Explorer
from kmc.app.render.explorer_views import KafkaView

from test_diagrams import decode_png

REPO = Path(__file__).resolve().parent.parent
SEED = str(REPO / "specs" / "hw-data-loss.toml")
SCENARIO = ["Produce(A)", "FetchRequest(B)", "FetchResponse(B)", "FetchRequest(B)", "Crash(A)", "Crash(B)",
            "Restart(B)", "BecomeFollower(B)", "ElectLeader(B)"]
REASON = "record 0 (epoch 0) at offset 0 was committed but leader B's log ends at 0"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run", "--disable-sync"]

pytestmark = pytest.mark.slow


def _chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


@pytest.fixture(scope="module")
def browser():
    path = _chromium()
    if path is None:
        pytest.skip("Chromium is not installed (Debian: apt-get install chromium; .ci/run installs it when "
                    "it can), so the explorer cannot be driven by a browser here")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright (the test extra) is not installed")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=path, args=ARGS, headless=True)
        yield b
        b.close()


@pytest.fixture
def url():
    spec = load_spec(SEED)
    model = spec.model()
    explorer = Explorer(model, spec.properties(), view=KafkaView(model), title=spec.title, path=spec.path)
    engine = make_engine(model, spec.properties())

    def run(progress):
        engine.progress = progress
        return engine.run()

    explorer.start_search(run, engine.cancel)
    server = ExploreServer(explorer, "127.0.0.1", 0)
    server.serve_in_thread()
    yield f"http://127.0.0.1:{server.port}/"
    server.shutdown()
    server.server_close()
    explorer.close()


def _wait_steps(page, n):
    """Wait until the path shows ``n`` states (Playwright's expect: the page's
    Content-Security-Policy forbids the evaluated scripts of wait_for_function)."""
    from playwright.sync_api import expect

    expect(page.locator("#path button.step")).to_have_count(n)


def _steps(page):
    return page.locator("#path button.step").all_inner_texts()


def _prop(page):
    return page.locator('li.prop[data-name="CommittedNeverLost"]')


def test_click_to_the_lost_record_reload_and_step_back(browser, url, tmp_path):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(url)
    page.wait_for_selector("body[data-ready]")
    assert _steps(page) == ["1. initial"]
    assert "holds" in _prop(page).get_attribute("class")
    for i, action in enumerate(SCENARIO):
        page.locator("#next button.action", has_text=action).first.click()
        _wait_steps(page, i + 2)
    assert _steps(page)[-1] == "10. ElectLeader(B)"
    # the property panel turns red with the model's reason
    prop = _prop(page)
    assert "violated" in prop.get_attribute("class")
    assert REASON in prop.inner_text()
    colour = prop.evaluate("e => getComputedStyle(e).backgroundColor")
    assert colour == "rgb(253, 236, 234)"
    assert "✗ CommittedNeverLost is violated in State 10" in page.locator("#diagram").inner_text()
    # the URL holds the walk: a reload (or the link on another machine) shows the same state
    link = page.url
    assert "?walk=0.0.1.1.1.2.1.1.2.1" in link
    page.reload()
    page.wait_for_selector("body[data-ready]")
    assert _steps(page)[-1] == "10. ElectLeader(B)" and "violated" in _prop(page).get_attribute("class")
    other = browser.new_page()
    other.goto(link)
    other.wait_for_selector("body[data-ready]")
    assert _steps(other) == _steps(page)
    other.close()
    # the screenshot of the violated state (checked below, like the diagrams' page)
    shot = tmp_path / "explore.png"
    page.screenshot(path=str(shot))
    _check_screenshot(shot)
    # back to the start, then the search's counterexample, and one step back from it
    page.locator("#restart").click()
    _wait_steps(page, 1)
    link = page.locator('a.counterexample[data-property="CommittedNeverLost"]')
    link.wait_for(timeout=30_000)
    assert "violated" in page.locator('li.verdict[data-property="CommittedNeverLost"]').get_attribute("class")
    link.click()
    _wait_steps(page, 10)
    assert "violated" in _prop(page).get_attribute("class")
    page.locator("#back").click()
    _wait_steps(page, 9)
    assert "holds" in _prop(page).get_attribute("class")
    assert page.url.endswith("?walk=0.0.1.1.1.2.1.1.2")
    page.locator("#forward").click()  # and forward again, to the counterexample's end
    _wait_steps(page, 10)
    page.go_back()  # the browser's own back button walks the path too
    _wait_steps(page, 9)
    page.close()


def _check_screenshot(shot):
    width, height, bpp, rows = decode_png(shot.read_bytes())
    assert (width, height) == (1400, 1000)
    pixels = [bytes(r[i:i + 3]) for r in rows[::4] for i in range(0, len(r), bpp * 4)]
    white = sum(1 for p in pixels if p == b"\xff\xff\xff")
    assert len(set(pixels)) > 50  # text, the table's colours, the swimlane: not one flat colour
    assert 0.05 < 1 - white / len(pixels) < 0.9
    # the violated property's red panel is on screen, in its place (the upper half)
    reds = [y for y, r in enumerate(rows) for i in range(0, len(r), bpp * 8)
            if r[i] > 180 and r[i + 1] < 60 and r[i + 2] < 60]
    assert reds and min(reds) < height // 2
    # the swimlane is drawn down the page
    inked = [y for y, r in enumerate(rows) if r.count(255) < len(r) * 0.97]
    assert inked and inked[-1] > 500


def _serve(explorer):
    server = ExploreServer(explorer, "127.0.0.1", 0)
    server.serve_in_thread()
    return server


def test_the_initial_state_is_chosen_a_broken_link_keeps_its_prefix_and_nothing_fails(browser, tmp_path):
    """With ``initial_leader = "any"`` a menu chooses the initial state; a link edited by
    hand shows its valid prefix and says where it broke; the page's requests all succeed
    (the favicon too) and its console stays clean."""
    text = Path(SEED).read_text().replace('truncation = "high-watermark"',
                                          'truncation = "high-watermark"\ninitial_leader = "any"')
    path = tmp_path / "any.toml"
    path.write_text(text)
    spec = load_spec(path)
    model = spec.model()
    server = _serve(Explorer(model, spec.properties(), view=KafkaView(model), title=spec.title, path=spec.path))
    url = f"http://127.0.0.1:{server.port}/"
    page = browser.new_page()
    failures, console = [], []
    page.on("requestfailed", lambda r: failures.append(r.url))
    page.on("response", lambda r: r.status >= 400 and failures.append(f"{r.status} {r.url}"))
    page.on("console", lambda m: m.type in ("error", "warning") and console.append(m.text))
    try:
        page.goto(url)
        page.wait_for_selector("body[data-ready]")
        menu = page.locator("#initial")
        assert menu.is_visible()
        assert menu.locator("option").all_inner_texts() == ["0: A leads at epoch 0", "1: B leads at epoch 0"]
        menu.select_option("1")
        page.locator("#next button.action", has_text="Produce(B)").wait_for()
        assert page.url.endswith("?walk=1")
        page.locator("#next button.action", has_text="Produce(B)").click()
        _wait_steps(page, 2)
        assert _steps(page) == ["1. initial", "2. Produce(B)"] and menu.input_value() == "1"
        # a link cut or edited by hand: the valid prefix is shown, the page says where it broke
        page.wait_for_load_state("networkidle")  # (the favicon asked for: a navigation would abort it)
        page.goto(url + "?walk=1.0.9.0")
        page.wait_for_selector("body[data-ready]")
        assert _steps(page) == ["1. initial", "2. Produce(B)"]
        # Produce(B) again, FetchRequest(A), Crash(A), Crash(B), ShrinkIsr(A): 5 enabled
        assert page.locator("#next button.action").count() == 5
        assert page.locator("#error").inner_text() == (
            "the walk breaks at state 3: no action number 9 (state 2 has 5 enabled) (the first 2 states are shown)")
        assert page.url.endswith("?walk=1.0")
        page.wait_for_timeout(300)  # (the favicon is asked for after the page's load)
    finally:
        page.close()
        server.shutdown()
        server.server_close()
    assert failures == [] and console == []


def test_a_trap_is_drawn_as_one_once_the_search_has_decided(browser):
    spec = load_spec(REPO / "specs" / "avail-c2-elr.toml")
    model = spec.model()
    explorer = Explorer(model, spec.properties(), view=KafkaView(model), title=spec.title, path=spec.path)
    engine = make_engine(model, spec.properties())

    def run(progress):
        engine.progress = progress
        return engine.run()

    explorer.start_search(run, engine.cancel)
    server = _serve(explorer)
    page = browser.new_page()
    try:
        page.goto(f"http://127.0.0.1:{server.port}/")
        page.wait_for_selector("body[data-ready]")
        link = page.locator('a.counterexample[data-property="PartitionRecoverable"]')
        link.wait_for(timeout=60_000)
        link.click()
        _wait_steps(page, 4)  # docs/model.md's trap in 4 states
        prop = page.locator('li.prop[data-name="PartitionRecoverable"]')
        assert "trap" in prop.get_attribute("class")
        assert prop.inner_text().startswith("✗ trap PartitionRecoverable — no goal state is reachable from here")
        assert prop.evaluate("e => getComputedStyle(e).backgroundColor") == "rgb(253, 236, 234)"
    finally:
        page.close()
        server.shutdown()
        server.server_close()
        explorer.close()


def test_a_lasso_is_walked_to_its_end_and_back_to_its_cycle(browser, tmp_path):
    """A liveness counterexample loaded with --trace: its link walks the lasso; at its end the
    property is violated, the cycle is marked, the swimlane fits the page (its last column is
    not cut at 1400 px), and the button back to the cycle's start keeps the lasso ahead
    (▶ walks the cycle again)."""
    from kmc.app.cli import main
    from kmc.app.commands.explore import load_traces, trace_lasso

    live = str(REPO / "specs" / "live-c2.toml")
    out = tmp_path / "live.json"
    main(["check", live, "--no-progress", "--no-trace", "--json", str(out)])
    spec = load_spec(live)
    model = spec.model()
    traces = load_traces([str(out)], model)
    explorer = Explorer(model, spec.properties(), view=KafkaView(model), title=spec.title, path=spec.path,
                        traces={n: (t.init, t.choices) for n, t in traces.items()})
    (name, saved), = traces.items()
    explorer.add_lasso(trace_lasso(name, saved, explorer.walk(saved.init, saved.choices), explorer.model,
                                   spec.properties()))
    n = len(saved.choices) + 1
    server = _serve(explorer)
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        page.goto(f"http://127.0.0.1:{server.port}/")
        page.wait_for_selector("body[data-ready]")
        page.locator("a.trace-link").click()
        _wait_steps(page, n)
        box = page.locator("#lasso")
        assert "CommittedEventuallyReplicated: a lasso of 10 states, its cycle from state 8 back to it" in box.inner_text()
        assert "committed record 0 (epoch 0) at offset 0 on every replica" in box.inner_text()
        prop = page.locator('li.prop[data-name="CommittedEventuallyReplicated"]')
        assert "violated" in prop.inner_text() and "lost for good" in prop.inner_text()
        assert page.locator("#path li.cycle").count() == 3
        assert page.locator("#diagram svg rect.cycle").count() == 1
        assert page.locator("#diagram svg rect.violation").count() == 0
        svg, room = page.locator("#diagram svg").bounding_box(), page.locator("#diagram").bounding_box()
        assert svg["x"] + svg["width"] <= room["x"] + room["width"] + 1  # nothing cut at the right
        page.locator("#cycle-back").click()
        _wait_steps(page, 8)
        assert page.url.endswith("?walk=" + ".".join(map(str, [saved.init, *saved.choices[:7]])))
        assert not page.locator("#forward").is_disabled()
        page.locator("#forward").click()
        _wait_steps(page, 9)
        assert "on the cycle" in page.locator("#lasso").inner_text()
        # a state where nothing fails: the current column is not framed in red
        page.locator("#path button.step").nth(2).click()
        _wait_steps(page, 3)
        assert page.locator("#diagram svg rect.current").count() == 1
        assert page.locator("#diagram svg rect.violation").count() == 0
        # a link onto the lasso's cycle, opened afresh: ▶ follows the lasso; before the
        # cycle's start a walk is a path like any other
        page.goto(f"http://127.0.0.1:{server.port}/?walk=" + ".".join(map(str, [saved.init, *saved.choices[:8]])))
        page.wait_for_selector("body[data-ready]")
        _wait_steps(page, 9)
        assert not page.locator("#forward").is_disabled() and page.locator("#lasso").is_visible()
        page.locator("#forward").click()
        _wait_steps(page, 10)
        assert page.locator("#cycle-back").is_visible()
        page.locator("#path button.step").nth(4).click()
        _wait_steps(page, 5)
        assert page.locator("#lasso").is_hidden()
        page.screenshot(path=str(tmp_path / "lasso.png"))
    finally:
        page.close()
        server.shutdown()
        server.server_close()
