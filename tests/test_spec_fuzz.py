"""Spec files are untrusted input: fuzz the loader.

Every input either loads, and then every constant is within the documented bounds, or
raises ``SpecError`` with a one-line message that starts with the file's path and names
the key at fault (or the file-level problem). Never another exception, never a hang.
Inputs: random TOML documents of every TOML type, random edits of the shipped specs, and
random byte damage. The seed is fixed (``derandomize``), so a run is reproducible.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kmc.checker.base.errors import SpecError
from kmc.checker.core.result import HOLDS, VIOLATED
from kmc.model.truncation import TRUNCATION_RULES
from kmc.app.specs import PARTITIONS, load_spec, parse_spec, spark_table
from kmc.model.spec import ENGINES, LIMITS, MAX_REPLICAS, MODEL_BOOLS, MODEL_INTS, property_names

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = sorted((ROOT / "specs").glob("*.toml"))
PATH = "fuzz/spec.toml"
# A hang, measured as work rather than wall-clock time (which depends on the machine's
# load): loading may make at most this many Python function calls per input byte (plus a
# constant). The loader makes well under 10 per byte (a long TOML list) and about one
# per byte on a shipped spec; a quadratic blow-up on a fuzzed input passes the bound.
CALLS_PER_BYTE, CALLS_BASE = 100, 10_000

FUZZ = settings(derandomize=True, database=None, deadline=None, max_examples=150,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.filter_too_much])


# -- the property ------------------------------------------------------------------------------

def _counting_calls(fn):
    """``(fn's result or exception, the number of calls it made)``; deterministic."""
    calls = 0

    def trace(frame, event, arg):  # called for Python calls only; no per-line tracing
        nonlocal calls
        calls += 1

    previous = sys.gettrace()
    sys.settrace(trace)
    try:
        return fn(), None, calls
    except Exception as e:  # noqa: BLE001  (re-raised by the caller)
        return None, e, calls
    finally:
        sys.settrace(previous)


def assert_loads_or_one_line_error(data: bytes, path: str = PATH, load=None):
    spec, error, calls = _counting_calls(lambda: load(path) if load else parse_spec(data, path))
    assert calls <= CALLS_BASE + CALLS_PER_BYTE * len(data), f"{calls} calls to load {len(data)} bytes"
    try:
        if error is not None:
            raise error
    except SpecError as e:
        msg = str(e)
        assert msg.splitlines() == [msg], f"not one line: {msg!r}"
        assert msg.startswith(f"{path}: ") and len(msg) < 400, msg
        if e.key is not None:  # a key is named right after the path
            assert e.key.strip() and msg.startswith(f"{path}: {e.key}: "), msg
        else:
            assert e.detail.strip(), msg
    else:
        assert_within_bounds(spec)


def assert_within_bounds(spec):
    c = spec.config
    assert 1 <= len(c.replicas) <= MAX_REPLICAS and len(set(c.replicas)) == len(c.replicas)
    assert all(isinstance(r, str) and r for r in c.replicas)
    for key, (_, lo, hi) in MODEL_INTS.items():
        value = getattr(c, key)
        assert type(value) is int and lo <= value <= hi, (key, value)
    assert type(c.min_insync_replicas) is int and 1 <= c.min_insync_replicas <= len(c.replicas)
    assert c.truncation in TRUNCATION_RULES
    assert all(type(getattr(c, key)) is bool for key in MODEL_BOOLS)
    attrs_of = {"check.max_depth": "max_depth", "check.max_states": "max_states",
                "check.max_memory": "max_memory", "check.workers": "workers"}
    for key, (lo, hi) in LIMITS.items():
        value = getattr(spec, attrs_of[key])
        assert value is None or (type(value) is int and lo <= value <= hi), (key, value)
    spark = spark_table(spec)
    assert spark.partitions is None or (type(spark.partitions) is int and PARTITIONS[0] <= spark.partitions <= PARTITIONS[1])
    assert spec.invariants and set(spec.invariants) <= set(property_names())
    assert type(spec.keep_going) is bool and spec.engine in ENGINES
    assert spark.master is None or (isinstance(spark.master, str) and spark.master)
    assert set(spec.expect) <= set(spec.invariants) and set(spec.expect.values()) <= {HOLDS, VIOLATED}
    assert isinstance(spec.title, str) and isinstance(spec.description, str)
    model = spec.model()
    assert model.init_states() and len(spec.properties()) == len(spec.invariants)


# -- writing TOML (the standard library only reads it) -------------------------------------------

class Raw(str):
    """Literal TOML text for a value (huge integers, nan, deep nesting, hex, ...)."""


_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def toml_key(key: str) -> str:
    return key if _BARE.match(key) else toml_str(key)


def toml_str(s: str) -> str:
    # JSON escapes are TOML escapes, except that TOML also forbids a raw DEL.
    return json.dumps(s, ensure_ascii=False).replace("\x7f", "\\u007f")


def toml_value(v) -> str:
    if isinstance(v, Raw):
        return str(v)
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf") if math.isinf(v) else repr(v)
    if isinstance(v, str):
        return toml_str(v)
    if isinstance(v, (dt.datetime, dt.date, dt.time)):
        return v.isoformat()
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{toml_key(k)} = {toml_value(x)}" for k, x in v.items()) + "}"
    raise TypeError(type(v))


def toml_doc(doc: dict) -> str:
    lines = [f"{toml_key(k)} = {toml_value(v)}" for k, v in doc.items() if not isinstance(v, dict)]
    for k, v in doc.items():
        if isinstance(v, dict):
            lines.append(f"[{toml_key(k)}]")
            lines.extend(f"{toml_key(k2)} = {toml_value(v2)}" for k2, v2 in v.items())
    return "\n".join(lines) + "\n"


# -- strategies ------------------------------------------------------------------------------------

KNOWN_KEYS = sorted({"title", "description", "model", "check", "spark", "expect", "replicas",
                     "truncation", "min_insync_replicas", *MODEL_INTS, *MODEL_BOOLS, "invariants",
                     "keep_going", "max_depth", "max_states", "max_memory", "engine", "master",
                     "partitions", *property_names()})
text = st.text(st.characters(codec="utf-8"), max_size=30)
keys = st.one_of(st.sampled_from(KNOWN_KEYS), text)
numbers = st.one_of(
    st.integers(min_value=-(2**200), max_value=2**200),
    st.sampled_from([2**63, -(2**63) - 1, 2**64, 10**12 + 1, 1 << 50, -1, 0, 1, 2, 7, 8, 16, 17]),
    st.sampled_from([Raw("0x7fffffffffffffff"), Raw("0o777"), Raw("0b1010"), Raw("1_000_000")]),
)
# Rare, because one of them anywhere makes the whole document fail the same way.
rare = st.one_of(
    st.integers(4000, 6000).map(lambda n: Raw("9" * n)),  # past int()'s 4300-digit limit
    st.integers(1, 3000).map(lambda d: Raw("[" * d + "]" * d)),  # deep arrays
    st.integers(1, 3000).map(lambda d: Raw("{a = " * d + "1" + "}" * d)),  # deep tables
)
long_strings = st.builds(lambda c, n: c * n, st.characters(codec="utf-8"), st.integers(0, 100_000))
scalars = st.one_of(
    st.booleans(), numbers, st.floats(allow_nan=True, allow_infinity=True), text, long_strings,
    st.sampled_from(list(TRUNCATION_RULES) + list(ENGINES) + [HOLDS, VIOLATED, "A", "local[*]", "8G"]),
    st.datetimes(), st.dates(), st.times(), st.datetimes(timezones=st.just(dt.timezone.utc)),
    numbers, text,
)


def _values(leaves):
    return st.recursive(
        leaves,
        lambda inner: st.one_of(st.lists(inner, max_size=5), st.dictionaries(keys, inner, max_size=5)),
        max_leaves=12,
    )


def _documents(vals):
    return st.dictionaries(keys, st.one_of(vals, st.dictionaries(keys, vals, max_size=8)), max_size=8)


values = _values(scalars)
documents = st.one_of(_documents(values), _documents(values), _documents(_values(st.one_of(scalars, rare))))


def _paths(doc, prefix=()):
    """Every key path in a parsed document, tables included."""
    for k, v in doc.items():
        yield prefix + (k,)
        if isinstance(v, dict):
            yield from _paths(v, prefix + (k,))


def _parent(doc, path):
    for k in path[:-1]:
        doc = doc[k]
    return doc


@st.composite
def mutated_specs(draw):
    """A shipped spec with one to three edits: a key deleted, retyped, renamed, or a new key."""
    doc = tomllib.loads(draw(st.sampled_from(SHIPPED)).read_text())
    for _ in range(draw(st.integers(1, 3))):
        paths = list(_paths(doc))
        op = draw(st.sampled_from(["delete", "retype", "retype", "number", "number", "unknown", "rename", "rare"]))
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = _parent(doc, path)
        if op == "delete":
            del parent[path[-1]]
        elif op == "retype":
            parent[path[-1]] = draw(values)
        elif op == "number":
            parent[path[-1]] = draw(numbers)
        elif op == "rare":
            parent[path[-1]] = draw(rare)
        elif op == "unknown":
            target = parent[path[-1]] if isinstance(parent[path[-1]], dict) else parent
            target[draw(keys)] = draw(values)
        else:
            parent[draw(keys)] = parent.pop(path[-1])
    return toml_doc(doc).encode("utf-8")


@st.composite
def damaged_bytes(draw):
    """A shipped spec's bytes with garbage inserted, a slice cut, or cut short."""
    data = bytearray(draw(st.sampled_from(SHIPPED)).read_bytes())
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(data)))
        op = draw(st.sampled_from(["insert", "cut", "truncate", "overwrite", "repeat"]))
        if op == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=20))
        elif op == "cut":
            del data[at: at + draw(st.integers(1, 40))]
        elif op == "truncate":
            del data[at:]
        elif op == "overwrite":
            chunk = draw(st.binary(min_size=1, max_size=8))
            data[at: at + len(chunk)] = chunk
        else:
            data[at:at] = data[at: at + draw(st.integers(1, 60))]
    return bytes(data)


# -- the fuzz tests ----------------------------------------------------------------------------------

@pytest.mark.slow
@settings(FUZZ, max_examples=60)
@given(documents)
def test_random_toml_documents(doc):
    assert_loads_or_one_line_error(toml_doc(doc).encode("utf-8"))


@pytest.mark.slow
@FUZZ
@given(mutated_specs())
def test_edited_shipped_specs(data):
    assert_loads_or_one_line_error(data)


@FUZZ
@given(damaged_bytes())
def test_damaged_shipped_specs(data):
    assert_loads_or_one_line_error(data)


@pytest.mark.slow
@settings(FUZZ, max_examples=20)
@given(st.one_of(st.binary(max_size=200), documents.map(lambda d: toml_doc(d).encode("utf-8"))))
def test_through_a_file(tmp_path_factory, data):
    f = tmp_path_factory.mktemp("fuzz") / "spec.toml"
    f.write_bytes(data)
    assert_loads_or_one_line_error(data, str(f), load=load_spec)


def test_every_shipped_spec_loads():
    for f in SHIPPED:
        assert_within_bounds(load_spec(f))


# -- cases the fuzzer found, through the command line -----------------------------------------------

BASE = (ROOT / "specs" / "hw-data-loss.toml").read_text()
FOUND = {
    # tomllib raises a plain ValueError, not TOMLDecodeError, past int()'s digit limit
    "huge-int": BASE.replace("max_messages = 2", "max_messages = " + "9" * 5000),
    # a quoted key holding a newline made a two-line message
    "newline-key": BASE.replace("[check]", '[check]\n"max\\ndepth" = 1'),
    "newline-expect": BASE.replace("[expect]", '[expect]\n"Committed\\nNeverLost" = "holds"'),
    "deep-nesting": "model = " + "[" * 3000 + "]" * 3000 + "\n",
    "garbage": b"\x00\xff[model\n",
}


@pytest.mark.parametrize("name", sorted(FOUND))
def test_found_cases_exit_2_with_one_line(tmp_path, name, capsys):
    from kmc.app.cli import main

    f = tmp_path / f"{name}.toml"
    data = FOUND[name]
    f.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    assert main(["check", str(f), "--no-progress"]) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"kmc: error: {f}: "), err


def test_found_case_in_a_real_process(tmp_path):
    f = tmp_path / "huge.toml"
    f.write_text(FOUND["huge-int"])
    p = subprocess.run([sys.executable, "-m", "kmc.app.cli", "check", str(f), "--no-progress"],
                       cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert p.stderr.strip().splitlines() == [f"kmc: error: {f}: not valid TOML: an integer has too many digits"]
