"""What differs between checking a Kafka spec and a model of the user's own (``kmc check``):
the files an output must not replace, what a checkpoint records of the target, and the
views of the result (``kmc.app.render`` for a spec, ``render.generic`` for a model)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, cast

import attrs
from kmc.checker.base.errors import UsageError
from kmc.checker.base.text import safe_text

if TYPE_CHECKING:  # for the annotations only
    import argparse

    from kmc.checker.contract.protocol import Model
    from kmc.checker.core.options import Options
    from kmc.checker.core.result import CheckResult
    from kmc.model.kafka import KafkaModel
    from kmc.model.spec import Spec
    from rich.console import RenderableType

    from ..user_model import ModelSpec


@attrs.define
class CheckViews:
    """What differs between checking a Kafka spec and a model of the user's own: the
    files an output must not replace, what a checkpoint's header records of it (compared
    on resume, and only recorded), and the views of the result (``kmc.app.render`` for a
    spec, ``render.generic`` for a model)."""

    files: list[str]
    identity: dict[str, Any]
    recorded: dict[str, Any]
    generic: bool
    spec: Any  # a model.spec.Spec, or a user_model.ModelSpec when generic
    expected: dict[str, Any] | None = None  # a model's expect(), read by prepare

    @classmethod
    def of(cls, spec: Spec | ModelSpec) -> CheckViews:
        from ..user_model import ModelSpec

        if isinstance(spec, ModelSpec):
            return cls([spec.source] if spec.source else [], spec.checkpoint_identity(), {}, True, spec)
        return cls([spec.path], {"spec_sha256": spec.sha256}, {"spec_path": os.path.abspath(spec.path)}, False, spec)

    def prepare(self, args: argparse.Namespace, model: Model) -> None:
        """Before the search: a model's expectations are read (and checked) now, and
        ``--check-expect`` with a model that declares none is refused."""
        if not self.generic:
            return
        from ..user_model import EXPECT_HOW, expectations

        self.expected = expectations(self.spec, model)
        if args.check_expect and self.expected is None:
            raise UsageError(f"--check-expect: {self.spec.ref} declares no expectations; {EXPECT_HOW}")

    def expectation(self, model: Model, result: CheckResult, options: Options) -> dict[str, Any] | None:
        """The comparison with the expectations (``None``: a model that declares none)."""
        if not self.generic:
            from kmc.app.render import expectation as spec_expectation

            return spec_expectation(self.spec, result)
        from ..user_model import expectation

        return None if self.expected is None else expectation(self.expected, result, options.symmetry)

    def show(
        self, args: argparse.Namespace, model: Model, result: CheckResult, options: Options, exp: dict[str, Any] | None
    ) -> RenderableType:
        if not self.generic:
            from kmc.app.render import ResultView

            return ResultView(
                self.spec,
                cast("KafkaModel", model),  # a spec's model (Spec.model())
                result,
                diff=args.diff,
                show_traces=not args.no_trace,
                max_states=options.max_states,
                coverage=args.coverage,
            )
        from kmc.app.render import generic

        view = generic.result_view(
            self.spec, model, result, show_traces=not args.no_trace, diff=args.diff, coverage=args.coverage
        )
        if exp is None:
            return view
        from rich.console import Group
        from rich.text import Text

        undecided = [n for n in exp["expected"] if exp["got"].get(n) == "unknown"]
        if exp["matched"]:
            skipped = f" (not compared: {safe_text(', '.join(exp['unchecked']))})" if exp["unchecked"] else ""
            line = Text(f"This matches the model's expectation{skipped}.", "green")
        elif len(undecided) == len(exp["mismatches"]):  # nothing contradicts it (as for a spec)
            line = Text(
                "The model's expectation is not confirmed yet: the search stopped before deciding "
                f"{safe_text(', '.join(undecided))}.",
                "yellow",
            )
        else:
            line = Text(
                "This does NOT match the model's expectation: " + safe_text("; ".join(exp["mismatches"])) + ".",
                "bold red",
            )
        return Group(view, line)

    def document(self, model: Model, result: CheckResult, exp: dict[str, Any] | None) -> dict[str, Any]:
        if not self.generic:
            from kmc.app.render import result_to_dict

            return result_to_dict(self.spec, cast("KafkaModel", model), result)  # a spec's model
        from kmc.app.render import generic

        doc = generic.result_dict(self.spec, model, result)
        if exp is not None:
            doc["expectation"] = exp
        return doc

    def page(self, model: Model, result: CheckResult, command: str) -> str:
        from kmc.app.render import generic, pictures

        page: str = (generic if self.generic else pictures).result_page(self.spec, model, result, command)
        return page

    def mermaid(self, model: Model, result: CheckResult) -> str:
        from kmc.app.render import generic, pictures

        text: str = (generic if self.generic else pictures).result_mermaid(self.spec, model, result)
        return text
