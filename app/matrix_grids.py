"""The grids of ``kmc matrix`` (``app.commands.matrix``): the default grid's
constants and its configurations, the versions grid (configurations × Kafka versions), the
verdicts docs/model.md knows for their rows, and checking one row.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from kmc.model.truncation import RULES

if TYPE_CHECKING:  # for the annotations only: imported on first use
    from kmc.model.config import Config

# One row to check (``run_row``): (row id, Config, Spec or None, max_states), optionally
# followed by the expected verdicts and the property names to check (the versions grid).
RowItem = tuple[Any, ...]

# replica count -> (max_messages, max_crashes, max_leader_epoch) of the default grid
BASE = {2: (2, 2, 2), 3: (2, 1, 2)}
FALLBACK_BASE = (2, 1, 2)  # for replica counts BASE does not name
DEFAULT_MAX_STATES = 2_000_000
# Every name ``--rules`` takes -> the rule's name: read from the truncation rules' registry
# (``model.truncation.RULES``), the one place those names are written.
RULE_ALIASES = RULES.aliases()

# docs/model.md, "Known verdicts": 2 replicas, min ISR 1, 2 messages, 2 crashes, epochs <= 2.
# (rule, unclean, unflushed) -> expected verdicts of CommittedNeverLost, LogsNeverDiverge.
KNOWN_CONSTANTS = dict(
    replicas=("A", "B"),
    max_messages=2,
    max_crashes=2,
    max_leader_epoch=2,
    min_insync_replicas=1,
    preferred_election=False,
)
_V, _H = "violated", "holds"
KNOWN_VERDICTS = {
    ("high-watermark", False, False): (_V, _V),
    ("leader-epoch", False, False): (_H, _H),
    ("leader-epoch-kip279", False, False): (_H, _H),
    ("high-watermark", False, True): (_V, _V),
    ("leader-epoch", False, True): (_V, _V),
    ("leader-epoch-kip279", False, True): (_V, _H),
    ("high-watermark", True, False): (_V, _V),
    ("leader-epoch", True, False): (_V, _V),
    ("leader-epoch-kip279", True, False): (_V, _H),
}


# -- "Kafka through the versions" (``--versions``) ------------------------------------------
# A separate grid, so that the default grid's rows (and reports/RESULTS.md) stay as they
# were: docs/model.md's configurations, each under the rule and options of successive Kafka
# versions, every row checked against all five properties (and AcknowledgedNeverLost on the
# rows with acks = "all").
from kmc.model.versions import (  # noqa: E402, F401
    ALTER_PARTITION_VERSIONS,
    COLUMNS,
    LAST_KNOWN_LEADER_VERSIONS,
    OPERATOR_CONFIGS,
    OPERATOR_VERSIONS,
    VERSION_CONFIGS,
    VERSIONS,
    applies,
)

# docs/model.md, both known-verdict tables, where they cover a cell of this grid:
# (config key, version key) -> {property: verdict}
_C, _N, _L = "CommittedNeverLost", "LogsNeverDiverge", "LeaderCandidateCompleteness"
_A = "AcknowledgedNeverLost"
_P = "PartitionRecoverable"
KNOWN_VERSION_VERDICTS = {
    ("c1", "hw"): {_C: _V, _N: _V},
    ("c1", "le"): {_C: _H, _N: _H},
    ("c1", "kip279"): {_C: _H, _N: _H},
    ("c1", "v21"): {_C: _H, _N: _H, _L: _H},
    ("c2", "hw"): {_C: _V, _N: _V},
    ("c2", "le"): {_C: _V, _N: _V},
    ("c2", "kip279"): {_C: _V, _N: _H},
    ("c2", "v21"): {_C: _V, _N: _H, _L: _V, _P: _H},
    ("c2", "v21-gate"): {_C: _V, _N: _H, _L: _V},
    ("c2", "v21-elr"): {_C: _H, _N: _H, _L: _H, _P: _V},
    ("c2", "v41"): {_C: _V, _L: _V, _P: _H},
    ("c3", "hw"): {_C: _V, _N: _V},
    ("c3", "le"): {_C: _V, _N: _V},
    ("c3", "kip279"): {_C: _V, _N: _H},
    ("c3", "v21"): {_C: _V, _N: _H, _L: _V, _P: _H},
    ("c4", "hw"): {_C: _V, _N: _V},
    ("c4", "le"): {_C: _H, _N: _V},
    ("c4", "kip279"): {_C: _H, _N: _H},
    ("c4", "v21"): {_C: _H, _N: _H, _L: _H},
    ("isr", "kip279"): {_C: _V},
    ("isr", "v21"): {_C: _H},
    ("lrs", "v21"): {_C: _V, _N: _H, _L: _V},
    ("lrs", "v21-gate"): {_C: _V, _N: _H, _L: _V},
    ("lrs", "v21-elr"): {_C: _H, _N: _H, _L: _H},
    ("lrs_acks", "v21"): {_C: _V, _A: _V},
    ("lrs_acks", "v21-gate"): {_C: _V, _A: _V},
    ("lrs_acks", "v21-elr"): {_C: _H, _A: _H},
    # docs/model.md, "Kafka 2.7+": AlterPartition alone moves no verdict; with the ELR and
    # broker epochs C2 holds
    ("c1", "v27"): {_C: _H, _N: _H, _L: _H},
    ("c2", "v27"): {_C: _V, _N: _H, _L: _V},
    ("c4", "v27"): {_C: _H, _N: _H, _L: _H},
    # docs/model.md, "Kafka 2.8+": C2 with the ELR, AlterPartition and broker epochs in the fetch
    # path with every fix in
    ("c2", "v21-elr-ap"): {_C: _H, _N: _H, _L: _H, "UncommittedNeverExposed": _H},
}


# -- under fairness (``--versions --liveness``) ----------------------------------------------
# The two liveness properties on the small configurations of the versions grid, one row per
# configuration and version: what a partition eventually does when the healing actions keep
# being taken (docs/model.md, "Liveness under fairness").
LIVENESS_VERSION_CONFIGS = ("c1", "c2")
_EL, _CER = "EventuallyLeader", "CommittedEventuallyReplicated"
LIVENESS_PROPERTIES = (_EL, _CER)
# docs/model.md's liveness table where its rows are cells of this grid (C1 is c1, C2 is c2;
# "none" is the 2.1 column, AP the 2.7 one, ELR KIP-966's, ELR + last_known_leader 4.1's)
KNOWN_LIVENESS_VERDICTS = {
    ("c1", "hw"): {_EL: _H, _CER: _V},
    ("c1", "v21"): {_EL: _H, _CER: _H},
    ("c2", "v21"): {_EL: _H, _CER: _V},
    ("c2", "v27"): {_EL: _H, _CER: _V},
    ("c2", "v21-elr"): {_EL: _V, _CER: _V},
    ("c2", "v41"): {_EL: _H, _CER: _V},
}


def liveness_grid(
    configs: Iterable[str] | None = None, versions: Iterable[str] | None = None
) -> list[tuple[str, Config, dict[str, str]]]:
    """``version_grid`` for the liveness rows: ``LIVENESS_VERSION_CONFIGS`` by default, each
    row's expectation from ``KNOWN_LIVENESS_VERDICTS``."""
    out = []
    for ck in configs or LIVENESS_VERSION_CONFIGS:
        for vk in versions or VERSIONS:
            ((rid, config, _),) = version_grid([ck], [vk])
            out.append((rid, config, dict(KNOWN_LIVENESS_VERDICTS.get((ck, vk), {}))))
    return out


def version_grid(
    configs: Iterable[str] | None = None, versions: Iterable[str] | None = None
) -> list[tuple[str, Config, dict[str, str]]]:
    """``[(row id, Config, expected verdicts)]`` of the versions grid, configuration-major:
    every cell ``model.versions.applies`` keeps (the operators' rows run on
    ``OPERATOR_VERSIONS`` only, a failed directory where the release has one).

    Args:
        configs, versions: keys of ``VERSION_CONFIGS`` and ``VERSIONS`` (default: all).
    """
    from kmc.model.versions import version_config

    out = []
    for ck in configs or VERSION_CONFIGS:
        _, constants = VERSION_CONFIGS[ck]
        for vk in versions or VERSIONS:
            if not applies(ck, vk):
                continue
            config = version_config(vk, constants)
            out.append((f"{ck}-{vk}", config, dict(KNOWN_VERSION_VERDICTS.get((ck, vk), {}))))
    return out


def row_id(config: Config) -> str:
    """``hw-r2-isr1-clean-flushed``: the rule, replicas, min ISR, unclean, unflushed loss."""
    return (
        f"{RULES[config.truncation].short}-r{config.n}-isr{config.min_insync_replicas}-"
        f"{'unclean' if config.unclean_leader_election else 'clean'}-"
        f"{'unflushed' if config.unflushed_loss else 'flushed'}"
    )


def grid(
    rules: Iterable[str],
    replicas: Iterable[int],
    min_isr: Iterable[int] | None,
    unclean: Iterable[bool],
    unflushed: Iterable[bool],
    messages: int | None = None,
    crashes: int | None = None,
    epochs: int | None = None,
) -> list[Config]:
    """The grid's configurations, in table order: rule, replicas, min ISR, unclean, unflushed.

    Args:
        rules: truncation rule names; replicas: replica counts; min_isr: values or ``None``
            for 1..replicas (values above a row's replica count are skipped); unclean,
            unflushed: lists of bools; messages, crashes, epochs: override ``BASE``.

    Returns:
        a list of ``model.config.Config``.
    """
    from kmc.model.config import Config

    out = []
    for rule in rules:
        for n in replicas:
            m, c, e = BASE.get(n, FALLBACK_BASE)
            m = m if messages is None else messages
            c = c if crashes is None else crashes
            e = e if epochs is None else epochs
            names = tuple(chr(ord("A") + i) for i in range(n))
            for isr in range(1, n + 1) if min_isr is None else [k for k in min_isr if k <= n]:
                for unc in unclean:
                    for unf in unflushed:
                        out.append(
                            Config(
                                replicas=names,
                                max_messages=m,
                                max_crashes=c,
                                max_leader_epoch=e,
                                truncation=rule,
                                min_insync_replicas=isr,
                                unclean_leader_election=unc,
                                unflushed_loss=unf,
                            )
                        )
    return out


def known_verdicts(config: Config) -> dict[str, str]:
    """docs/model.md's known verdicts for ``config``, or ``{}`` when its table has no such row."""
    for key, value in KNOWN_CONSTANTS.items():
        if getattr(config, key) != value:
            return {}
    found = KNOWN_VERDICTS.get((config.truncation, config.unclean_leader_election, config.unflushed_loss))
    if found is None:
        return {}
    return {"CommittedNeverLost": found[0], "LogsNeverDiverge": found[1]}


# -- running one row ------------------------------------------------------------------------


def run_row(item: RowItem) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """Check one configuration; returns ``(row dict, {invariant: trace document})``.

    ``item`` is ``(row id, Config, Spec or None, max_states)``, optionally followed by the
    expected verdicts and the property names to check (the versions grid). A module-level
    function of plain values, so ``--jobs`` can run it in another process.
    """
    from kmc.app.render.json_result import expectation, result_to_dict, verdicts
    from kmc.checker.local.states import LocalEngine, Options
    from kmc.invariants import BY_NAME, default_properties
    from kmc.model.kafka import KafkaModel

    rid, config, spec, max_states = item[:4]
    known = item[4] if len(item) > 4 else None
    names = item[5] if len(item) > 5 else None
    model = KafkaModel(config)
    limit = max_states
    if spec is not None and spec.max_states is not None:
        limit = min(limit, spec.max_states) if limit else spec.max_states
    options = Options(keep_going=True, max_states=limit, max_depth=spec.max_depth if spec is not None else None)
    # A pre-2.1 row checks the four classic properties, as it always has (so the published
    # rows stay reproducible); a row of the 2.1 rule or its options adds the fifth.
    props = [BY_NAME[n] for n in names] if names else list(default_properties(config))
    result = LocalEngine(model, props, options).run()
    if spec is not None:
        exp = expectation(spec, result)
        expected, source = exp["expected"], "spec"
    else:
        expected, source = (known_verdicts(config) if known is None else known), "docs/model.md"
        exp = expectation(None, result)
        got = exp["got"]
        exp["mismatches"] = [f"{n}: expected {w}, got {got.get(n)}" for n, w in expected.items() if got.get(n) != w]
    full = result_to_dict(spec, model, result)
    traces, counterexamples = {}, {}
    for v in full["violations"]:
        name = v["property"]
        doc = dict(full, violations=[v])
        traces[name] = doc
        counterexamples[name] = {
            "length": v["trace"]["length"],
            "kind": v["kind"],
            "explanation": v["explanation"],
            "trace": f"traces/{rid}-{name}.json",
        }
        if "trap_states" in v:  # an always-possibly property: its trap count
            counterexamples[name]["trap_states"] = v["trap_states"]
    st = result.stats
    row = {
        "id": rid,
        "spec": None if spec is None else spec.path,
        "title": "" if spec is None else spec.title,
        "model": config.as_dict(),
        "verdicts": verdicts(result),
        "expected": dict(expected),
        "expected_from": source if expected else None,
        "matched": (not exp["mismatches"]) if expected else None,
        "mismatches": list(exp["mismatches"]) if expected else [],
        "distinct_states": st.distinct,
        "states_generated": st.generated,
        "depth": st.depth,
        "seconds": round(st.seconds, 3),
        "complete": result.complete,
        "stopped": result.stopped,
        "counterexamples": counterexamples,
    }
    return row, traces


def check_rows(items: Sequence[RowItem], jobs: int) -> Iterator[tuple[dict[str, Any], dict[str, dict[str, Any]]]]:
    """Yield ``run_row``'s results in ``items`` order (in ``jobs`` processes when > 1)."""
    if jobs <= 1 or len(items) <= 1:
        for item in items:
            yield run_row(item)
        return
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=jobs) as pool:
        yield from pool.map(run_row, items)
