"""``kmc explore``'s server under load and on other addresses, and what the explorer adds
to a walk: a model of the user's own (``--model``), the initial state chosen, traps once
the search has decided, a broken walk kept to its valid prefix, the favicon.

Every test binds loopback addresses only, with bounded counts and times, and stops by
itself."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

import toy
from kmc.app import explore_server
from kmc.app.cli import EXIT_BAD_INPUT, main
from kmc.app.explore_hosts import bind_address, remote_warning
from kmc.app.explore_http import parse_walk_prefix
from kmc.app.explore_server import ExploreServer
from kmc.checker.engines import make_engine
from kmc.checker.base.errors import UsageError
from kmc.app.specs import load_spec
from kmc.app.render.explorer import Explorer
from kmc.app.render.explorer_views import GenericView, KafkaView

REPO = Path(__file__).resolve().parent.parent
SEED = str(REPO / "specs" / "hw-data-loss.toml")
TRAP_SPEC = str(REPO / "specs" / "avail-c2-elr.toml")
TWO_PHASE = str(REPO / "specs" / "models" / "two_phase.py")
KMC = [sys.executable, "-c", "from kmc.app.cli import run; run()"]


def toy_explorer(n=15):
    model = toy.TwoCounters(n=n)
    return Explorer(model, model.properties(), view=GenericView(model))


@pytest.fixture
def toy_server():
    srv = ExploreServer(toy_explorer(), "127.0.0.1", 0)
    srv.serve_in_thread()
    yield srv
    srv.shutdown()
    srv.server_close()


def get(port, target, host="127.0.0.1", timeout=10.0):
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request("GET", target, headers={"Host": f"{host if ':' not in host else f'[{host}]'}:{port}"})
        resp = conn.getresponse()
        return resp.status, resp.getheader("Content-Type"), resp.read()
    finally:
        conn.close()


def half_open(port, count, partial=True):
    """``count`` connections that send part of a request head (or nothing) and then wait."""
    socks = []
    for i in range(count):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        if partial and i % 2 == 0:
            s.sendall(f"GET /api/spec HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n".encode())
        socks.append(s)
    return socks


def start_command(*args, preexec_fn=None):
    """``kmc explore ARGS --port 0`` in a process; its URL from its first line."""
    proc = subprocess.Popen([*KMC, "explore", *args, "--port", "0"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=preexec_fn)
    line = proc.stdout.readline()
    if "open http://" not in line:
        proc.kill()
        out, err = proc.communicate(timeout=20)
        pytest.fail(f"kmc explore did not start: {line!r} {err[-500:]!r}")
    url = line.split("open ")[1].split()[0]
    return proc, url


def stop_command(proc):
    try:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, out, err


# -- availability ---------------------------------------------------------------------------


def test_150_parallel_walks_of_30_steps_are_all_answered(toy_server):
    """150 clients at once, each asking for a walk of 30 steps: every one is answered (the
    listen backlog holds them, the workers answer in turn)."""
    port = toy_server.port
    walk = ".".join(["0"] * 31)  # IncX fifteen times, then (IncX disabled) IncY fifteen times
    results: list = []
    barrier = threading.Barrier(150)

    def one():
        barrier.wait()
        try:
            status, _, body = get(port, "/api/state?walk=" + walk, timeout=30)
            doc = json.loads(body)
            results.append((status, len(doc["steps"]), doc["state_html"].count("<td>15</td>")))
        except Exception as e:  # noqa: BLE001 (counted below)
            results.append(type(e).__name__)

    threads = [threading.Thread(target=one) for _ in range(150)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert Counter(results) == {(200, 31, 2): 150}  # x = y = 15 after 30 steps


def test_half_open_connections_hold_no_thread_and_are_closed(toy_server, monkeypatch):
    """200 clients that connect and send half a request head (or nothing): a normal request
    is answered at once, no thread waits on them, and each is closed after the head timeout."""
    monkeypatch.setattr(explore_server, "HEAD_TIMEOUT", 1.5)
    port = toy_server.port
    threads_before = threading.active_count()
    socks = half_open(port, 200)
    try:
        start = time.monotonic()
        status, _, body = get(port, "/api/spec", timeout=5)
        assert status == 200 and json.loads(body)["initial_states"] == 1
        assert time.monotonic() - start < 3
        assert threading.active_count() <= threads_before + 1  # (the client's own: none here)
        deadline = time.monotonic() + 10
        closed = 0
        for s in socks:  # each gets the end of its stream: closed by the server
            s.settimeout(max(0.1, deadline - time.monotonic()))
            try:
                closed += s.recv(1) == b""
            except TimeoutError:
                pass
        assert closed == 200
    finally:
        for s in socks:
            s.close()


def _low_file_limit():
    import resource

    resource.setrlimit(resource.RLIMIT_NOFILE, (128, 128))


def _cpu_seconds(pid) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="reads the server's CPU time in /proc (Linux)")
def test_more_half_open_connections_than_files_neither_blocks_nor_spins():
    """With a file limit of 128 and 300 half-open connections (more than the process can
    hold), a normal request is still answered within seconds, and the server does not spin
    on a listener it cannot accept from."""
    proc, url = start_command(SEED, "--no-search", preexec_fn=_low_file_limit)
    port = int(url.rsplit(":", 1)[1].strip("/"))
    socks = []
    try:
        socks = half_open(port, 300)
        time.sleep(0.5)
        cpu = _cpu_seconds(proc.pid)
        time.sleep(2)
        assert _cpu_seconds(proc.pid) - cpu < 0.5  # idle, not spinning
        start = time.monotonic()
        status, _, body = get(port, "/api/spec", timeout=10)
        assert status == 200 and json.loads(body)["path"] == SEED
        assert time.monotonic() - start < 5
    finally:
        for s in socks:
            s.close()
        code, out, err = stop_command(proc)
    assert code == 0 and "Traceback" not in err


# -- addresses ------------------------------------------------------------------------------


def _ipv6_loopback() -> bool:
    if not socket.has_ipv6:
        return False
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.mark.skipif(not _ipv6_loopback(), reason="this machine has no IPv6 loopback (::1)")
def test_the_ipv6_loopback_serves_and_prints_a_url_in_brackets():
    proc, url = start_command(SEED, "--no-search", "--host", "::1")
    try:
        assert url.startswith("http://[::1]:") and url.endswith("/")
        port = int(url.rsplit(":", 1)[1].strip("/"))
        status, _, body = get(port, "/api/spec", host="::1")
        assert status == 200 and json.loads(body)["path"] == SEED
    finally:
        code, out, err = stop_command(proc)
    assert code == 0 and err == ""  # a loopback address: no warning


class _NoSocket:
    """Stands for ``socket.socket``: a test fails if anything opens one."""

    def __init__(self, *args, **kwargs):
        raise AssertionError("a socket was opened")


@pytest.mark.parametrize("host", ["0", "0.0.0.0", "::", "192.0.2.7"])
def test_a_non_loopback_address_is_refused_without_allow_remote_before_binding(host, capsys, monkeypatch):
    monkeypatch.setattr(explore_server.socket, "socket", _NoSocket)
    assert main(["explore", SEED, "--host", host, "--port", "0", "--no-search"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"kmc: error: --host {host}: ") and "--allow-remote" in err[0]
    assert "port" not in err[0]


def test_allow_remote_says_where_it_listens_and_prints_a_url_a_browser_opens():
    every = bind_address("0", allow_remote=True)  # resolved, nothing bound
    assert (every.address, every.every_interface, every.loopback) == ("0.0.0.0", True, False)
    assert every.url(8470) == "http://127.0.0.1:8470/"
    assert remote_warning(every) == (
        "kmc: warning: listening on every interface (0), not only this machine: anyone who can reach it "
        "can walk the model and run its search"
    )
    v6 = bind_address("::", allow_remote=True)
    assert v6.every_interface and v6.url(8470) == "http://[::1]:8470/"
    lan = bind_address("192.0.2.7", allow_remote=True)
    assert lan.url(8470) == "http://192.0.2.7:8470/" and "listening on 192.0.2.7" in remote_warning(lan)
    loop = bind_address("::1")
    assert loop.loopback and loop.url(8470) == "http://[::1]:8470/"
    assert bind_address("127.0.0.2").loopback and bind_address("localhost").loopback
    with pytest.raises(UsageError, match="--host no.such.host.invalid: not an address"):
        bind_address("no.such.host.invalid")


# -- what the explorer shows ----------------------------------------------------------------


def test_a_model_of_ones_own_is_walked_and_searched():
    """``kmc explore --model``: the page's API walks the two-phase commit of
    docs/writing-a-model.md, and the search decides its properties (eager: violated)."""
    proc, url = start_command("--model", f"{TWO_PHASE}:two_phase", "--param", "rms=2", "--param", "eager=true")
    port = int(url.rsplit(":", 1)[1].strip("/"))
    try:
        spec = json.loads(get(port, "/api/spec")[2])
        assert spec["path"] == f"{TWO_PHASE}:two_phase" and "rms=2" in spec["title"]
        assert [p["name"] for p in spec["properties"]][:1] == ["Consistent"]
        state = json.loads(get(port, "/api/state?walk=0")[2])
        assert state["steps"][0]["action"] == "initial" and state["enabled"] and state["diagram_svg"] is None
        for _ in range(200):
            search = json.loads(get(port, "/api/search")[2])
            if search["state"] != "running":
                break
            time.sleep(0.1)
        assert search["state"] == "done", search
        verdict = search["verdicts"]["Consistent"]
        assert verdict["verdict"] == "violated" and verdict["walk"][0] == 0
        walked = json.loads(get(port, "/api/state?walk=" + ".".join(map(str, verdict["walk"])))[2])
        assert next(p for p in walked["properties"] if p["name"] == "Consistent")["status"] == "violated"
    finally:
        code, out, err = stop_command(proc)
    assert code == 0 and "Traceback" not in err


def test_every_initial_state_is_offered(tmp_path):
    text = Path(SEED).read_text().replace('truncation = "high-watermark"',
                                          'truncation = "high-watermark"\ninitial_leader = "any"')
    assert 'initial_leader = "any"' in text
    path = tmp_path / "any.toml"
    path.write_text(text)
    spec = load_spec(path)
    model = spec.model()
    explorer = Explorer(model, spec.properties(), view=KafkaView(model))
    doc = explorer.spec_doc()
    assert doc["initial_states"] == 2
    assert doc["initial_labels"] == ["0: A leads at epoch 0", "1: B leads at epoch 0"]
    second = explorer.state_doc(1, [])
    assert [e["action"] for e in second["enabled"]][0] == "Produce(B)"
    from kmc.app import explore_page

    assert 'id="initial"' in explore_page.PAGE and "initial_labels" in explore_page.SCRIPT


def _names(doc):
    return [e["action"] for e in doc["enabled"]]


def test_a_trap_is_shown_once_the_search_has_decided():
    """docs/model.md's trap in 4 states (specs/avail-c2-elr.toml): Produce(A), ShrinkIsr(B),
    Crash(A) losing r0. Before the search decides PartitionRecoverable the state is only
    "not a goal"; after, a trap. Both replicas crashed before any record is no trap: a
    Restart, one step, makes an election possible again (an Available state)."""
    spec = load_spec(TRAP_SPEC)
    model = spec.model()
    props = spec.properties()
    explorer = Explorer(model, props, view=KafkaView(model))
    start = explorer.state_doc(0, [])
    produce = _names(start).index("Produce(A)")
    after_produce = explorer.state_doc(0, [produce])
    shrink = _names(after_produce).index("ShrinkIsr(B)")
    after_shrink = explorer.state_doc(0, [produce, shrink])
    crash = next(i for i, n in enumerate(_names(after_shrink)) if n.startswith("Crash(A") and "keeps 0" in n)
    trap_walk = [produce, shrink, crash]
    crash_a = _names(start).index("Crash(A, keeps 0)")
    both_down = [crash_a, _names(explorer.state_doc(0, [crash_a])).index("Crash(B, keeps 0)")]

    def status(choices):
        doc = explorer.state_doc(0, choices)
        return next((p["status"], p["reason"]) for p in doc["properties"] if p["name"] == "PartitionRecoverable")

    assert status(trap_walk)[0] == "not a goal"  # undecided yet
    engine = make_engine(model, props)
    explorer.start_search(lambda progress: (setattr(engine, "progress", progress), engine.run())[1], engine.cancel)
    for _ in range(600):
        if explorer.search_doc()["state"] != "running":
            break
        time.sleep(0.05)
    search = explorer.search_doc()
    assert search["state"] == "done" and search["verdicts"]["PartitionRecoverable"]["verdict"] == "violated"
    assert status(trap_walk) == ("trap", "no goal state is reachable from here: a trap")
    assert status(both_down) == ("not a goal", "the nearest goal state is 1 step away")
    assert status([crash_a])[0] == "goal"  # B may be elected
    assert status([])[0] == "goal"


def test_a_broken_walk_keeps_its_valid_prefix_and_says_where(toy_server):
    port = toy_server.port

    def state(walk):
        status, _, body = get(port, "/api/state?prefix=1&walk=" + walk)
        assert status == 200, body
        doc = json.loads(body)
        return doc["walk"], doc["broken"]

    assert state("0.0.1") == ([0, 0, 1], None)
    walk, broken = state("0.0.9.1")  # state 3 has IncX and IncY: no action number 9
    assert walk == [0, 0] and broken["step"] == 3 and broken["kept"] == 2
    assert broken["error"] == "the walk breaks at state 3: no action number 9 (state 2 has 2 enabled)"
    walk, broken = state("0.1.x.0")
    assert walk == [0, 1] and broken["step"] == 3 and "'x', not a number" in broken["error"]
    walk, broken = state("4.0")
    assert walk == [0] and broken["step"] == 1 and "no initial state number 4 (the model has 1)" in broken["error"]
    assert parse_walk_prefix("0.2.") == (0, [2], "step 3 of the walk is '', not a number: a walk is numbers "
                                                   "joined by dots")
    # without prefix=1 the API stays strict: the page's own clicks never send a broken walk
    status, _, body = get(port, "/api/state?walk=0.0.9")
    assert status == 400 and json.loads(body) == {"error": "trace replay failed at step 3: no action number 9"}


def test_the_favicon_is_served(toy_server):
    from kmc.app import explore_page

    for target in ("/favicon.ico", "/favicon.svg"):
        status, ctype, body = get(toy_server.port, target)
        assert status == 200 and ctype == "image/svg+xml" and body.startswith(b"<svg")
    assert '<link rel="icon" href="/favicon.svg"' in explore_page.PAGE


class _Broken(toy.TwoCounters):
    """The toy model whose actions fail once x reaches 2."""

    def actions(self, state):
        if state.x >= 2:
            raise RuntimeError("no actions past x = 2")
        return super().actions(state)


def test_a_model_that_fails_in_a_walk_is_a_500_and_one_line(capsys):
    model = _Broken()
    srv = ExploreServer(Explorer(model, model.properties(), view=GenericView(model)), "127.0.0.1", 0)
    srv.serve_in_thread()
    try:
        assert get(srv.port, "/api/state?walk=0.0")[0] == 200
        status, _, body = get(srv.port, "/api/state?walk=0.0.0")
        assert (status, json.loads(body)) == (500, {"error": "the model failed: RuntimeError: no actions past x = 2"})
        assert get(srv.port, "/api/spec")[0] == 200  # and the server goes on
    finally:
        srv.shutdown()
        srv.server_close()
    err = capsys.readouterr().err
    assert err == "kmc: explore: a request from 127.0.0.1 failed: RuntimeError: no actions past x = 2\n"


def test_a_trace_of_a_model_with_other_parameters_is_refused(tmp_path, capsys):
    """A saved trace records its model (reference, parameters, source digest): a trace of
    the two-phase commit with 2 RMs does not load on 3."""
    from kmc.app.user_model import load_model_spec

    ref = f"{TWO_PHASE}:two_phase"
    identity = load_model_spec(ref, {"rms": 2, "eager": True}).identity()
    result = tmp_path / "r.json"
    trace = {"property": "Consistent", "trace": {"init_index": 0, "choices": [0]}}
    result.write_text(json.dumps({"schema_version": 1, "model": identity, "violations": [trace]}))
    code = main(["explore", "--model", ref, "--param", "rms=3", "--param", "eager=true", "--port", "0",
                 "--trace", str(result)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == EXIT_BAD_INPUT
    assert err == [f"kmc: error: --trace: {result}: its model's parameters differ from --model {ref}'s"]
    identity["sha256"] = "0" * 64  # the same parameters, another source
    identity["params"] = {"rms": 3, "eager": True}
    result.write_text(json.dumps({"schema_version": 1, "model": identity, "violations": [trace]}))
    code = main(["explore", "--model", ref, "--param", "rms=3", "--param", "eager=true", "--port", "0",
                 "--trace", str(result)])
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"kmc: error: --trace: {result}: its model's source differs (SHA-256) from --model {ref}'s"]
