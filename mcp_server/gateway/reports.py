"""A gateway run's conformance report: made once per run, written at the first stop signal (before
any upstream is waited for) and again, whole, at the end; SIGUSR1 writes it on demand."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from ..execution.redaction import Redactor
from ..observe.events import EventLog
from ..observe.report import ConformanceReport, render_table
from .config import GatewayConfig

__all__ = ["final_report", "new_report", "publish"]


def new_report(upstream: str, config: GatewayConfig, redactor: Redactor, events: EventLog | None) -> ConformanceReport:
    """A gateway run's conformance report, redacted by ``redactor`` (the policy's, and the upstream's
    command line's secrets); with ``events``, each violation is an event of the run's log too."""
    return ConformanceReport(upstream=upstream, mode=config.mode.value, redactor=redactor, events=events)


def final_report(report: ConformanceReport, runs_dir: Path) -> Callable[[], None]:
    """The run's report written at the first SIGINT/SIGTERM, before the gateway waits for any
    upstream, so that a supervisor's SIGKILL after its grace still finds one; ``publish`` at the end
    writes it again, whole (the requests the stop left unanswered included), over the same file."""

    def first() -> None:
        report.write(runs_dir)

    return first


def publish(report: ConformanceReport, runs_dir: Path) -> None:
    path = report.write(runs_dir)
    sys.stderr.write(render_table(report.to_document()))
    sys.stderr.write(f"mcp:report path={path}\n")
    sys.stderr.flush()
