"""``kmc explore``: the explorer's walks and statuses, its JSON API, the server's
safety rules, and the command (a URL printed, Ctrl-C stops it cleanly)."""

from __future__ import annotations

import http.client
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kmc.app.cli import EXIT_BAD_INPUT, main
from kmc.app.explore_hosts import allowed_hosts, bind_address
from kmc.app.explore_http import parse_walk
from kmc.app.explore_server import ExploreServer
from kmc.app.specs import load_spec
from kmc.app.render.explorer import Explorer, WalkError
from kmc.app.render.explorer_views import GenericView, KafkaView

REPO = Path(__file__).resolve().parent.parent
SEED = str(REPO / "specs" / "hw-data-loss.toml")
# Seed scenario 1's lost record: the choices of its shortest counterexample, as the
# explorer's walk (initial state 0 first): Produce(A), FetchRequest(B), FetchResponse(B),
# FetchRequest(B), Crash(A), Crash(B), Restart(B), BecomeFollower(B), ElectLeader(B).
LOST = [0, 0, 1, 1, 1, 2, 1, 1, 2, 1]


@pytest.fixture(scope="module")
def seed_explorer():
    spec = load_spec(SEED)
    model = spec.model()
    return Explorer(model, spec.properties(), view=KafkaView(model), title=spec.title, path=spec.path)


@pytest.fixture
def server(seed_explorer):
    srv = ExploreServer(seed_explorer, "127.0.0.1", 0)
    srv.serve_in_thread()
    yield srv
    srv.shutdown()
    srv.server_close()


def request(srv, target, method="GET", host=None, body=None, headers=None):
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=10)
    hdrs = {"Host": host or f"127.0.0.1:{srv.port}", **(headers or {})}
    conn.request(method, target, body=body, headers=hdrs)
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    return resp.status, resp.getheader("Content-Type"), data


def get_json(srv, target):
    status, ctype, data = request(srv, target)
    assert status == 200 and ctype.startswith("application/json"), (status, data[:200])
    return json.loads(data)


def test_the_lost_record_walk_violates_committed_never_lost(seed_explorer):
    doc = seed_explorer.state_doc(LOST[0], LOST[1:])
    names = [s["action"] for s in doc["steps"]]
    assert names == ["initial", "Produce(A)", "FetchRequest(B)", "FetchResponse(B)", "FetchRequest(B)", "Crash(A)",
                     "Crash(B)", "Restart(B)", "BecomeFollower(B)", "ElectLeader(B)"]
    (prop,) = doc["properties"]
    assert prop["status"] == "violated"
    assert prop["reason"] == "record 0 (epoch 0) at offset 0 was committed but leader B's log ends at 0"
    assert "✗ CommittedNeverLost is violated in State 10" in doc["diagram_svg"]
    # one step back: nothing is lost yet
    before = seed_explorer.state_doc(LOST[0], LOST[1:-1])
    assert before["properties"][0]["status"] == "holds"
    assert "ElectLeader(B)" in [e["action"] for e in before["enabled"]]
    assert "✓ State 9" in before["diagram_svg"]


def test_a_walk_is_deterministic_and_bad_walks_are_refused(seed_explorer):
    assert seed_explorer.state_doc(0, [0, 1]) == seed_explorer.state_doc(0, [0, 1])
    with pytest.raises(WalkError, match="no action number 7"):
        seed_explorer.walk(0, [0, 7])
    with pytest.raises(WalkError, match="no initial state number 3"):
        seed_explorer.walk(3, [])
    assert parse_walk("0.3.1") == (0, [3, 1])
    for bad in ("0.-1", "a", "0..1", "1e3"):
        with pytest.raises(ValueError):
            parse_walk(bad)


def test_disabled_actions_are_listed_with_a_reason(seed_explorer):
    doc = seed_explorer.state_doc(0, [])
    assert [e["action"] for e in doc["enabled"]] == ["Produce(A)", "FetchRequest(B)", "Crash(A)", "Crash(B)"]
    disabled = {d["action"]: d["reason"] for d in doc["disabled"]}
    assert {"Restart(A)", "ElectLeader(B)", "FetchResponse(B)"} <= set(disabled)
    assert not {"Produce(A)", "FetchRequest(B)"} & set(disabled) and disabled["Restart(A)"] == "A is down"


def test_the_api_answers_the_page(server):
    status, ctype, page = request(server, "/")
    assert status == 200 and ctype.startswith("text/html") and b"/explorer.js" in page
    assert b"http://" not in page and b"https://" not in page  # nothing from elsewhere
    for asset, kind in (("/explorer.js", "text/javascript"), ("/explorer.css", "text/css")):
        status, ctype, body = request(server, asset)
        assert status == 200 and ctype.startswith(kind) and b"https://" not in body
    spec = get_json(server, "/api/spec")
    assert spec["path"] == SEED and spec["properties"][0]["name"] == "CommittedNeverLost"
    state = get_json(server, "/api/state?walk=" + ".".join(map(str, LOST)))
    assert state["walk"] == LOST and state["properties"][0]["status"] == "violated"
    assert get_json(server, "/api/state")["walk"] == [0]  # no walk: the initial state


def test_the_background_search_fills_in_the_verdicts(tmp_path):
    from kmc.checker.engines import make_engine

    spec = load_spec(SEED)
    model = spec.model()
    explorer = Explorer(model, spec.properties(), view=KafkaView(model))
    engine = make_engine(model, spec.properties())
    explorer.start_search(lambda progress: (setattr(engine, "progress", progress), engine.run())[1], engine.cancel)
    for _ in range(200):
        doc = explorer.search_doc()
        if doc["state"] != "running":
            break
        time.sleep(0.05)
    assert doc["state"] == "done" and doc["distinct"] == 1834
    verdict = doc["verdicts"]["CommittedNeverLost"]
    assert verdict["verdict"] == "violated" and verdict["walk"] == LOST


@pytest.mark.parametrize("case", ["host", "method", "body", "long", "walk", "missing"])
def test_the_server_refuses_what_it_should(server, case):
    port = server.port
    if case == "host":  # DNS rebinding: another site's name pointed at 127.0.0.1
        status, _, body = request(server, "/api/spec", host=f"attacker.example:{port}")
        assert status == 403 and b"Host" in body
        status, _, _ = request(server, "/api/spec", host=f"localhost:{port}")
        assert status == 200
    elif case == "method":
        status, _, _ = request(server, "/api/spec", method="POST", body=b"")
        assert status == 405
    elif case == "body":
        status, _, _ = request(server, "/api/spec", body=b"x" * 100, headers={"Content-Length": "100"})
        assert status == 413
    elif case == "long":
        status, _, _ = request(server, "/api/state?walk=0" + ".0" * 40_000)
        assert status in (414, 431)
    elif case == "walk":
        status, _, body = request(server, "/api/state?walk=0.9")
        assert status == 400 and json.loads(body) == {"error": "trace replay failed at step 2: no action number 9"}
    else:
        status, _, _ = request(server, "/../../etc/passwd")
        assert status == 404


def test_any_model_is_drawn_by_its_fields():
    import toy

    model = toy.TwoCounters()
    explorer = Explorer(model, model.properties(), view=GenericView(model))
    doc = explorer.state_doc(0, [0, 0, 1])
    assert [s["action"] for s in doc["steps"]] == ["initial", "Inc(name='IncX', replica=0)",
                                                    "Inc(name='IncX', replica=0)", "Inc(name='IncY', replica=0)"]
    assert "<th>x</th><td>2</td>" in doc["state_html"] and '<tr class="changed"><th>y</th><td>1</td>' in doc["state_html"]
    assert doc["diagram_svg"] is None
    assert {p["name"]: p["status"] for p in doc["properties"]} == {"SumBelow": "holds", "NeverDown": "holds"}


def test_a_saved_trace_loads_as_a_walk(tmp_path, capsys):
    from kmc.app.commands.explore import load_traces

    out = tmp_path / "r.json"
    main(["check", SEED, "--no-progress", "--no-trace", "--json", str(out)])
    traces = load_traces([str(out)], load_spec(SEED).model())
    assert {name: (t.init, t.choices) for name, t in traces.items()} == {str(out): (LOST[0], LOST[1:])}


@pytest.mark.parametrize("content,message", [
    (None, "no such file"),
    (b"{", "not JSON"),
    (b'{"schema_version": 1, "violations": [{"property": "P", "trace": {"init_index": 0, "choices": [0, 99]}}]}',
     "does not replay"),
])
def test_a_bad_trace_is_one_line(tmp_path, capsys, content, message):
    path = tmp_path / "t.json"
    if content is not None:
        path.write_bytes(content)
    assert main(["explore", SEED, "--port", "0", "--trace", str(path)]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_the_command_prints_its_url_and_stops_on_ctrl_c():
    proc = subprocess.Popen([sys.executable, "-c", "from kmc.app.cli import run; run()", "explore", SEED,
                             "--port", "0", "--host", "127.0.0.2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert "open http://127.0.0.2:" in line
        port = int(line.split("http://127.0.0.2:")[1].split("/")[0])
        conn = http.client.HTTPConnection("127.0.0.2", port, timeout=10)
        conn.request("GET", "/api/spec")
        assert conn.getresponse().status == 200
        conn.close()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0 and "stopped" in out
    assert err == ""  # 127.0.0.2 is a loopback address: no warning, no --allow-remote needed


def test_a_long_walk_has_no_swimlane_and_a_server_on_every_interface_knows_its_names(seed_explorer):
    import socket

    from kmc.app.render.explorer_views import MAX_DIAGRAM_STATES

    import attrs

    view = seed_explorer.view
    walk = seed_explorer.walk(LOST[0], LOST[1:])
    assert view.diagram_svg(walk, None).startswith("<svg")
    long = attrs.evolve(walk, steps=walk.steps * (MAX_DIAGRAM_STATES // len(walk.steps) + 1))
    assert len(long.steps) > MAX_DIAGRAM_STATES and view.diagram_svg(long, None) is None
    hosts = allowed_hosts(bind_address("0.0.0.0", allow_remote=True), 8470)  # (nothing bound)
    assert f"{socket.gethostname().lower()}:8470" in hosts
    assert {"127.0.0.1:8470", "[::1]:8470", "localhost:8470"} <= hosts and "evil.example:8470" not in hosts


def test_a_client_that_goes_away_is_no_traceback(server, capsys):
    """A reset or a closed pipe (a tab closed mid-request) says nothing; any other failure
    of a request is one line, never the standard library's traceback."""
    for error in (ConnectionResetError(104, "Connection reset by peer"), BrokenPipeError(32, "Broken pipe"),
                  ValueError("boom")):
        try:
            raise error
        except Exception:
            server.handle_error(None, ("127.0.0.1", 5555))
    err = capsys.readouterr().err
    assert err.strip().splitlines() == ["kmc: explore: a request from 127.0.0.1 failed: ValueError: boom"]
