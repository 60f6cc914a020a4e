"""The header every picture of a result shows (terminal, HTML, Mermaid, SVG): the
configuration in labelled lines, its options that differ from their defaults as flags, and
the counts of a check or of a saved result."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import attrs
from kmc.model.describe import plural

if TYPE_CHECKING:  # for the annotations only
    from kmc.checker.core.result import Stats
    from kmc.model.config import Config

# The constants every header shows in its own lines (replicas, truncation, bounds); every
# other field of the configuration that differs from its default is a flag.
# attrs' stubs declare Factory a function (so that ``x: list = Factory(list)`` checks); it is a class.
_FACTORY = cast(type[Any], attrs.Factory)
_OWN_LINES = ("replicas", "max_messages", "max_crashes", "max_leader_epoch", "truncation", "min_insync_replicas")


def config_flags(config: Config) -> list[str]:
    """Every option of ``config`` that changes the model from its default, in the order
    the configuration declares them: a switched-on option by its name, any other value as
    ``name = value`` (``acks = all``). Read from the configuration's fields, so that an
    option added to it later appears in every header (terminal, HTML, Mermaid) unasked."""
    out = []
    for field in attrs.fields(type(config)):
        if field.name in _OWN_LINES:
            continue
        default = field.default.factory() if isinstance(field.default, _FACTORY) else field.default
        value = getattr(config, field.name)
        if value == default:
            continue
        if value is True:
            out.append(field.name)
        elif value is False:
            out.append(f"{field.name} = false")
        elif isinstance(value, tuple):  # a list of ids (fetch_bugs) or of values (min_isr_changes)
            out.append(f"{field.name} = [{', '.join(str(v) for v in value)}]")
        else:
            out.append(f"{field.name} = {value}")
    return out


def config_summary(config: Config) -> str:
    """The configuration on one line (a Mermaid comment, a title's second line)."""
    return " · ".join(f"{label} {value}" for label, value in config_lines(config))


def config_lines(config: Config) -> list[tuple[str, str]]:
    """The configuration as ``(label, value)`` pairs, as the terminal's header shows it."""
    flags = config_flags(config)
    return [
        ("replicas", f"{', '.join(config.replicas)} (min ISR {config.min_insync_replicas})"),
        ("truncation", config.truncation),
        (
            "bounds",
            f"≤ {plural(config.max_messages, 'message')} · ≤ {plural(config.max_crashes, 'crash')} · "
            f"leader epochs ≤ {config.max_leader_epoch}",
        ),
        ("flags", ", ".join(flags) if flags else "none"),
    ]


def counts_from_stats(stats: Stats) -> list[tuple[str, str]]:
    """A check's counts (``checker.core.result.Stats``) as ``(label, value)`` pairs."""
    return [
        ("distinct states", f"{stats.distinct:,}"),
        ("generated", f"{stats.generated:,}"),
        ("depth", str(stats.depth)),
        ("time", f"{stats.seconds:.2f} s"),
    ]


def counts_from_document(doc: dict[str, Any]) -> list[tuple[str, str]]:
    """The counts a saved result holds (``kmc check --json`` or ``kmc simulate --json``),
    as ``(label, value)`` pairs; ``[]`` when it holds none that can be read."""
    stats = doc.get("stats")
    if not isinstance(stats, dict):
        return []
    keys = (
        ("distinct_states", "distinct states"),
        ("states_generated", "generated"),
        ("depth", "depth"),
        ("runs", "walks"),
        ("steps", "steps"),
    )
    out = []
    for key, label in keys:
        value = stats.get(key)
        if type(value) is int:
            out.append((label, f"{value:,}"))
    return out
