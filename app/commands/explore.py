"""``kmc explore SPEC``: walk a model in the browser (``render.explorer``, served by
``checker.app.explore_server``)."""

from __future__ import annotations

import argparse
import errno
import time
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import attrs
from kmc.checker.base.errors import UsageError
from kmc.checker.base.text import safe_text

from .common import add_kafka_arguments, add_model_arguments, load_target, options_from

if TYPE_CHECKING:  # for the annotations only: imported on first use
    from kmc.checker.contract.protocol import Model, Property
    from kmc.checker.core.driver import Engine
    from kmc.checker.core.result import CheckResult, Path, Stats, Violation
    from rich.console import Console


def register(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Start a local web server for one spec (or a model of your own, --model) and print its "
        "URL. The page shows the state "
        "(the replica table and the swimlane of the path so far), every enabled next step as a button, "
        "every action not enabled with the conditions of its guard that fail, "
        "every property's status in the current state, and the verdicts of a search run in the "
        "background, each linked to its counterexample; a liveness counterexample (of the search or of "
        "--trace) is walked as a lasso, its cycle marked and a step back to the cycle's start at its end. "
        "The path is in the URL: a link reproduces it. Ctrl-C stops the server."
    )
    p.epilog = 'The JSON API the page uses is documented in README.md ("Walk a scenario").'
    p.add_argument(
        "spec", metavar="SPEC", nargs="?", help="the spec file (TOML), e.g. specs/hw-data-loss.toml (or --model)"
    )
    p.add_argument(
        "--host",
        default="127.0.0.1",
        help="the address to bind: a loopback address (default 127.0.0.1; ::1, localhost), this machine "
        "only; any other (0.0.0.0, ::, a LAN address) needs --allow-remote",
    )
    p.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow --host to be an address other machines can reach: anyone who reaches it can walk the "
        "model and run its search (a warning is printed)",
    )
    p.add_argument("--port", type=_port, default=8470, help="the port (default 8470; 0: any free port)")
    p.add_argument(
        "--trace",
        metavar="FILE",
        action="append",
        default=[],
        help="a saved trace to load as a path (kmc check --json, kmc simulate --json, "
        "kmc replay --format json); may be given more than once",
    )
    p.add_argument("--no-search", action="store_true", help="do not run the search in the background")
    add_model_arguments(p)
    add_kafka_arguments(p)
    p.set_defaults(run=run)


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r} (0 to 65535)")
    return port


@attrs.frozen
class SavedTrace:
    """A trace of a file the user named: its walk, and its violation entry as the file
    holds it (the property, and for a liveness counterexample its ``lasso``)."""

    init: int
    choices: list[int]
    entry: dict[str, Any] = attrs.field(eq=False, repr=False)


def load_traces(paths: Sequence[str], model: Any, identity: dict[str, Any] | None = None) -> dict[str, SavedTrace]:
    """``{name: SavedTrace}`` of the traces in the files the user named: data only
    (nothing a file names is imported). ``identity``: a model of the user's own
    (``ModelSpec.identity``), whose parameters and source digest a file's recorded model
    must match."""
    from kmc.app.render import generic

    from .replay_files import ReplayError, load_document, violations_of

    out = {}
    for path in paths:
        try:
            doc = load_document(path)
        except ReplayError as e:
            raise UsageError(f"--trace: {e}") from None
        if identity is None and (doc.get("schema") == generic.SCHEMA or isinstance(doc.get("model"), dict)):
            # A model's result names its model's code; a file is data: nothing it names is
            # imported (the user names the model with --model, checked against the file below).
            raise UsageError(f"--trace: {path}: the result of a model of your own: explore it with --model")
        try:
            found = violations_of(path, doc)
        except ReplayError as e:
            raise UsageError(f"--trace: {e}") from None
        if identity is None:
            saved = doc.get("spec", {}).get("model") if isinstance(doc.get("spec"), dict) else None
            if saved is not None and saved != model.config.as_dict():
                raise UsageError(f"--trace: {path}: its model's constants differ from the spec's")
        else:
            recorded = doc.get("model")
            if not isinstance(recorded, dict):
                raise UsageError(f"--trace: {path}: records no model: not a result of --model {identity['ref']}")
            factory = str(recorded.get("ref", "")).rpartition(":")[2]
            if factory != str(identity.get("ref", "")).rpartition(":")[2]:
                raise UsageError(f"--trace: {path}: its model's factory differs from --model {identity['ref']}'s")
            for key, what in (("params", "parameters differ"), ("sha256", "source differs (SHA-256)")):
                if recorded.get(key) != identity.get(key):
                    raise UsageError(f"--trace: {path}: its model's {what} from --model {identity['ref']}'s")
        if not found:
            raise UsageError(f"--trace: {path}: holds no trace")
        for v in found:
            trace = v["trace"]
            init, choices = trace.get("init_index"), trace.get("choices")
            if (
                not isinstance(init, int)
                or not isinstance(choices, list)
                or not all(isinstance(c, int) and not isinstance(c, bool) for c in choices)
            ):
                raise UsageError(f"--trace: {path}: the trace of {v['property']} needs 'init_index' and 'choices'")
            name = f"{path} ({v['property']})" if len(paths) > 1 or len(found) > 1 else f"{path}"
            out[name] = SavedTrace(init, choices, v)
    return out


def trace_lasso(
    name: str, saved: SavedTrace, path: Path, model: Model, properties: Iterable[Property]
) -> Violation | None:
    """The liveness counterexample of a saved trace (``checker.core.result.Violation`` with its
    ``loop``), checked real, fair and violating by re-executing it and its explanation
    recomputed (``replay_checks.replay_lasso``), or ``None`` for a trace of another kind.

    Raises:
        UsageError: the trace claims a lasso that is not one, or names a liveness property
            the model does not have.
    """
    from kmc.checker.contract.protocol import LIVENESS

    from .replay_checks import replay_lasso
    from .replay_files import ReplayError

    entry = saved.entry
    if "lasso" not in entry and entry.get("kind") not in LIVENESS:
        return None
    known = {p.name: p for p in model.properties()}
    known.update((p.name, p) for p in properties)
    if isinstance(model, _kafka_model()):  # every property of the Kafka model, checked or not
        from kmc.invariants import BY_NAME

        known = {**BY_NAME, **known}
    wanted: Any = entry.get("property")  # a file's value: any JSON
    prop = known.get(wanted)
    if prop is None or prop.kind not in LIVENESS:
        named = safe_text(repr(entry.get("property")))[:80]
        raise UsageError(f"--trace: {name}: its lasso names {named}, no liveness property of this model")
    try:
        return replay_lasso(name, model, prop, entry, path)
    except ReplayError as e:
        raise UsageError(f"--trace: {e}") from None


def _kafka_model() -> type:
    from kmc.model.kafka import KafkaModel

    return KafkaModel


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    from kmc.app.render.explorer import Explorer, WalkError
    from kmc.app.render.explorer_views import GenericView, KafkaView
    from kmc.checker.engines import make_engine

    from ..explore_hosts import bind_address, remote_warning
    from ..explore_server import ExploreServer
    from ..user_model import ModelSpec

    bind = bind_address(args.host, args.allow_remote)  # before anything is loaded or bound
    spec = load_target(args)
    model = spec.model()
    properties = spec.properties()
    own = spec if isinstance(spec, ModelSpec) else None  # a model of the user's own
    traces = load_traces(args.trace, model, own.identity() if own is not None else None)
    from kmc.model.kafka import KafkaModel

    view = KafkaView(model) if isinstance(model, KafkaModel) else GenericView(model)
    title = spec.title
    if own is not None and own.params:
        title = f"{own.ref} ({', '.join(f'{k}={v}' for k, v in own.params.items())})"
    elif own is not None:
        title = own.ref
    walks = {name: (t.init, t.choices) for name, t in traces.items()}
    explorer = Explorer(model, properties, view=view, title=title, path=spec.path, traces=walks)
    for name, saved in traces.items():
        try:
            path = explorer.walk(saved.init, saved.choices)
        except WalkError as e:
            raise UsageError(f"--trace: {name}: does not replay on {spec.path}: {e}") from None
        lasso = trace_lasso(name, saved, path, explorer.model, properties)
        if lasso is not None:
            explorer.add_lasso(lasso)
    try:
        server = ExploreServer(explorer, args.host, args.port, allow_remote=args.allow_remote)
    except OSError as e:
        if e.errno in (errno.EADDRINUSE, errno.EACCES):
            raise UsageError(
                f"--port {args.port}: cannot listen on {args.host} ({e.strerror or e}); "
                "choose another port (--port 0: any free one)"
            ) from None
        raise UsageError(f"--host {args.host}: cannot listen there ({e.strerror or e})") from None
    if not bind.loopback:
        err.print(
            safe_text(remote_warning(bind)),
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    thread = None
    try:  # from here on, Ctrl-C (at any moment) stops the server and the search
        if not args.no_search:
            options = options_from(spec, args)  # the spec's options: kmc explore offers none of its own
            engine = make_engine(model, properties, options)
            explorer.start_search(lambda progress: _run(engine, progress), engine.cancel)
        thread = server.serve_in_thread()
        out.print(
            f"kmc explore {safe_text(spec.path)}: open {server.url()}  (Ctrl-C stops)",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        out.file.flush()
        while thread.is_alive():
            time.sleep(0.2)
    except KeyboardInterrupt:
        pass
    finally:
        if thread is not None:  # (shutdown waits for a serve_forever that has started)
            server.shutdown()
        server.server_close()
        explorer.close()
    out.print("kmc explore: stopped", markup=False, highlight=False)
    return 0


def _run(engine: Engine, progress: Callable[[Stats], None]) -> CheckResult:
    engine.progress = progress
    return engine.run()
