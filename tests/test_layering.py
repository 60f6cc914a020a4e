"""What the packages may know of each other, and how the core asks a model what it can do."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from kmc.checker.engines import make_engine
from kmc.checker.base.errors import SpecError
from kmc.checker.contract.protocol import BatchKernel, KernelBase, KernelDefaults, ModelBase, batch_path, with_defaults

ROOT = Path(__file__).resolve().parent.parent


def _probes(path):
    """The ``hasattr``/``getattr`` calls of a module whose object is a model, a kernel or an
    engine (by its name)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("hasattr", "getattr"):
            target = ast.unparse(node.args[0]) if node.args else ""
            if any(word in target for word in ("model", "kernel", "engine", "search", "seen")):
                out.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    return out


def test_the_core_declares_capabilities_instead_of_probing_them():
    found = [probe for path in sorted((ROOT / "checker").rglob("*.py")) for probe in _probes(path)]
    assert found == []


def _asks(path):
    """The calls ``prop.check(...)`` / ``p.check(...)`` of a module: a property asked."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "check"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id in ("prop", "p", "property_")
        ):
            out.append(f"{path.name}:{node.lineno}")
    return out


def test_only_the_rules_of_a_level_ask_a_property():
    # checker.core.level asks properties for every search, the state graph and the walks;
    # checker.contract.kernel_check asks them to compare a kernel's masks with its model.
    allowed = {"level.py", "kernel_check.py"}
    found = [a for path in sorted((ROOT / "checker").rglob("*.py")) if path.name not in allowed for a in _asks(path)]
    assert found == []
    assert _asks(ROOT / "checker" / "core" / "level.py")  # the rule is there: the scan sees it


def test_every_search_is_composed_and_declared():
    from counter_kernels import KernelCounters
    from toy import TwoCounters

    from kmc.checker.core.parts import LevelSearch, Store

    from kmc.checker.core.options import Options

    for model, per_state in ((TwoCounters(), True), (KernelCounters(), False), (KernelCounters(), True)):
        for store in ("memory", "disk"):
            engine = make_engine(model, options=Options(store=store), per_state=per_state)
            assert isinstance(engine.search, LevelSearch)
            assert isinstance(engine.search.seen, Store) and engine.search.seen.kind == store


def test_the_batch_kernel_protocol_declares_goal_masks_and_fingerprints():
    assert {"goal_mask", "fingerprints"} <= set(dir(BatchKernel))


def test_kernel_base_gives_the_optional_members_their_defaults():
    class Bare(KernelBase):
        width = 8
        action_names = ()

    kernel = Bare()
    rows = np.zeros((2, 8), dtype=np.uint8)
    assert kernel.goal_mask("G", rows) is None and kernel.invariant_mask("I", rows) is None
    assert kernel.fair_codes(rows, None, None, None, None) is None and kernel.arrays
    assert len(set(kernel.fingerprints(rows).tolist())) == 1


def test_a_kernel_that_inherits_nothing_is_given_the_defaults_once():
    from counter_kernels import CountersKernel, KernelCounters

    class Own:  # a kernel of its own: CountersKernel's members, none of KernelBase's defaults
        def __init__(self, model):
            self.base = CountersKernel(model)
            self.width, self.action_names = self.base.width, self.base.action_names

        def init_rows(self, states):
            return self.base.init_rows(states)

        def encode(self, state):
            return self.base.encode(state)

        def decode(self, row):
            return self.base.decode(row)

        def expand(self, rows):
            return self.base.expand(rows)

        def invariant_mask(self, name, rows):
            return np.ones(len(rows), dtype=bool)  # its own member is kept over the default

    class OwnKernel(KernelCounters):
        def batch_kernel(self):
            return Own(self)

    kernel, why = batch_path(with_defaults(OwnKernel()))
    rows = kernel.init_rows(OwnKernel().init_states())
    assert isinstance(kernel, KernelDefaults) and why is None
    assert kernel.goal_mask("G", rows) is None and kernel.fair_codes(rows, None, None, None, None) is None
    assert kernel.invariant_mask("I", rows).all() and kernel.width == CountersKernel(OwnKernel()).width
    assert kernel.fingerprints(rows).tolist() == CountersKernel(OwnKernel()).fingerprints(rows).tolist()


def test_a_model_that_inherits_nothing_is_given_the_defaults_once():
    from toy import Ring, TwoCounters

    model = with_defaults(TwoCounters())
    assert isinstance(model, ModelBase) and with_defaults(model) is model
    assert batch_path(model) == (None, None) and model.symmetries() is None and model.fair_instances() == ()
    state = model.init_states()[0]
    assert model.successors(state) == [(a, model.next_state(state, a)) for a in model.actions(state)]
    assert model.format_action("x") == "x" and model.describe_step(state, "x", state) == ""
    assert model.limit == TwoCounters().limit  # the model's own attributes, for its properties
    ring = with_defaults(Ring())
    assert ring.fair_instances() == Ring().fair_instances()  # its own members are kept
    assert make_engine(TwoCounters()).path == "per-state"


def test_no_optional_capability_is_a_runtime_protocol():
    # Optional behaviour is ModelBase's and KernelBase's defaults, applied once; the core
    # asks no object whether it has a method.
    for path in sorted((ROOT / "checker").rglob("*.py")):
        text = path.read_text()
        assert "runtime_checkable" not in text or path.name == "parts.py" or "blobs" in path.parts, path.name
        assert "def capable(" not in text and "capable(" not in text, path.name


# -- the import graph of the installed packages ---------------------------------------------

PACKAGES = ("kmc.checker", "kmc.model", "kmc.invariants", "kmc.app.render", "kmc.app")
APPLICATION = "kmc.app"  # the Kafka application (its commands, spec files, matrix, atlas)


def _modules():
    """``{module name: path}`` of every module of the installed packages."""
    import importlib.util

    out = {}
    for package in PACKAGES:
        found = importlib.util.find_spec(package)
        if found is None:  # the application's package before it left the core
            continue
        root = Path(found.submodule_search_locations[0])
        for path in sorted(root.rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join([package, *parts])] = path
    return out


def _imports(name, path):
    """``(imported module, at module level)`` of every import in a module, relative ones
    resolved; ``from X import y`` counts as importing ``X.y`` when that is a module."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text())
    top = {id(node) for node in tree.body}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(alias.name, id(node) in top) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            out.append((module, id(node) in top))
            out += [(f"{module}.{alias.name}", id(node) in top) for alias in node.names]
    return out


def _graph():
    modules = _modules()
    return modules, {name: [(m, top) for m, top in _imports(name, path)] for name, path in modules.items()}


def _within(module, prefix):
    return module == prefix or module.startswith(prefix + ".")


def test_the_core_imports_no_kafka_module():
    _, graph = _graph()
    bad = [
        f"{name} imports {m}"
        for name, imports in graph.items()
        if _within(name, "kmc.checker")
        for m, _ in imports
        if any(_within(m, p) for p in ("kmc.model", "kmc.invariants", "kmc.app.render", APPLICATION, "kmc.checker.app"))
    ]
    assert bad == []


def test_the_model_imports_nothing_of_spark_or_the_runtime():
    _, graph = _graph()
    allowed = (
        "kmc.checker.base.errors",
        "kmc.checker.contract.protocol",
        "kmc.checker.core.result",
        "kmc.checker.base.units",
        "kmc.checker.engines",  # the engines' names (the spec's check.engine)
        "kmc.checker.stores.registry",  # the stores' names (the spec's check.store)
    )
    bad = [
        f"{name} imports {m}"
        for name, imports in graph.items()
        if _within(name, "kmc.model") or _within(name, "kmc.invariants")
        for m, _ in imports
        if (_within(m, "kmc.checker") and not any(_within(m, a) for a in allowed)) or _within(m, "pyspark")
    ]
    assert bad == []


def test_the_model_knows_nothing_of_spark():
    # Spark's settings (the spec's [spark] table, its master URL) are the application's:
    # no module of the model imports a Spark module or a Spark name, and a spec holds none.
    import attrs

    from kmc.model.spec import Spec, parse_spec

    _, graph = _graph()
    bad = [
        f"{name} imports {m}"
        for name, imports in graph.items()
        if _within(name, "kmc.model") or _within(name, "kmc.invariants")
        for m, _ in imports
        if any(word in m.lower() for word in ("spark", "master"))
    ]
    assert bad == []
    assert [f.name for f in attrs.fields(Spec) if "spark" in f.name] == []
    spec = b'[model]\nreplicas = 2\ntruncation = "high-watermark"\n[spark]\npartitions = 2\n'
    with pytest.raises(SpecError, match=r"unknown key \(allowed: title, description, model, check, expect\)"):
        parse_spec(spec)  # without the application, a [spark] table is an unknown key


def test_the_reports_do_not_import_the_application():
    _, graph = _graph()
    bad = [
        f"{name} imports {m}"
        for name, imports in graph.items()
        if _within(name, "kmc.app.render")
        for m, _ in imports
        if (_within(m, APPLICATION) and not _within(m, "kmc.app.render")) or _within(m, "kmc.checker.app")
    ]
    assert bad == []


def _layer(module):
    """The layers, lowest first: the core, the Kafka properties (``invariants/``: read a
    state through its own fields and methods), the Kafka model (``model/``: its state
    machine, which offers the properties as its defaults), the reports, the application."""
    if _within(module, APPLICATION) and not _within(module, "kmc.app.render"):
        return 4
    for layer, prefixes in enumerate((("kmc.checker",), ("kmc.invariants",), ("kmc.model",), ("kmc.app.render",))):
        if any(_within(module, p) for p in prefixes):
            return layer
    return None


def test_the_model_and_its_properties_import_each_other_one_way_only():
    _, graph = _graph()
    back = [
        f"{name} imports {m}"
        for name, imports in graph.items()
        if _within(name, "kmc.invariants")
        for m, _ in imports
        if _within(m, "kmc.model")
    ]
    hidden = [
        f"{name} imports {m} inside a function"
        for name, imports in graph.items()
        if _within(name, "kmc.model")
        for m, top in imports
        if _within(m, "kmc.invariants") and not top
    ]
    assert back == [] and hidden == []


def test_no_package_imports_a_higher_layer():
    _, graph = _graph()
    bad = [
        f"{name} imports {m}"
        for name, imports in graph.items()
        for m, _ in imports
        if _layer(m) is not None and _layer(m) > _layer(name)
    ]
    assert bad == []


def test_no_import_cycle_at_module_level():
    modules, graph = _graph()
    edges = {
        name: sorted({m for m, top in imports if top and m in modules and m != name}) for name, imports in graph.items()
    }
    # a package's __init__ importing its own modules is how Python builds it, not a cycle
    for name in edges:
        edges[name] = [m for m in edges[name] if not _within(m, name)]
    state: dict[str, int] = {}
    cycles = []

    def visit(node, stack):
        state[node] = 1
        for nxt in edges[node]:
            if state.get(nxt) == 1:
                cycles.append(" -> ".join(stack[stack.index(nxt) :] + [nxt]))
            elif nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = 2

    for name in sorted(edges):
        if name not in state:
            visit(name, [name])
    assert cycles == []


def test_modules_use_each_other_s_public_names_only():
    """A module takes what another one offers by its public name (a leading underscore is a
    module's own): the Spark store's paths and files, its tasks, the checkpoint's files."""
    modules = _modules()
    bad = []
    for name in sorted(modules):
        path = modules[name]
        package = (name if path.name == "__init__.py" else name.rpartition(".")[0]).split(".")
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom):
                continue
            module = node.module or ""
            if node.level:
                module = ".".join(package[: len(package) - node.level + 1] + ([module] if module else []))
            if module in modules and module != name:
                bad += [f"{name} imports {module}.{a.name}" for a in node.names if _private(a.name)]
    assert bad == []


def _private(name):
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))  # __version__: public


def test_the_spark_search_objects_keep_no_phase():
    """The Spark engine's search is one object per phase, swapped at the hand-over: no
    object says which phase it is in, and none needs the engine."""
    import inspect

    from kmc.checker.partitioned import levels
    from kmc.checker.spark import start

    for module in (levels, start):
        source = inspect.getsource(module)
        assert "self.phase" not in source and "self.engine" not in source
    assert not issubclass(levels.PartitionedLevels, start.Session)
