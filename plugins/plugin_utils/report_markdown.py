# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The drift report as Markdown: summary, per-component table, one row per drift."""

from __future__ import annotations

from ansible_collections.lockstep.gpu.plugins.plugin_utils.report import (
    changes_summary,
    check_report,
    drift_line,
    format_actual,
    format_expected,
    summary,
)


def _md(text):
    text = " ".join(str(text).split())
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("`", "\\`")


def drift_markdown(report):
    """Markdown: summary, a per-component table and one row per drift."""
    check_report(report, "drift_markdown")
    by_component = report["by_component"]
    out = ["# Lockstep drift report", "", summary(report), ""]
    run = report.get("run") or {}
    stamp = [f"Run {run['time']}" if run.get("time") else "",
             f"Lockstep {report['lockstep_version']}" if report.get("lockstep_version") else ""]
    if any(stamp):
        out += [", ".join(p for p in stamp if p) + ".", ""]
    changes = report.get("changes")
    if changes:
        out += [_md(changes_summary(changes)), ""]
        for key, word in (("new", "new"), ("resolved", "resolved"), ("changed", "another value")):
            out += [f"- {word}: {_md(drift_line(d))}" for d in changes.get(key) or ()]
        if any(changes.get(k) for k in ("new", "resolved", "changed")):
            out.append("")
    out += [
        "| component | expected | source | deviating hosts |",
        "| --- | --- | --- | --- |",
    ]
    for c in report["components"]:
        info = by_component.get(c, {})
        exp = format_expected(
            info.get("expected"), info.get("source", "declared"), info.get("absent", False)
        )
        dev = info.get("deviating_hosts", [])
        source = info.get("source", "") + (" (tie)" if info.get("tie") else "")
        out.append(
            f"| {_md(c)} | {_md(exp)} | {_md(source)} | {_md(', '.join(map(str, dev))) or '-'} |"
        )
    out.append("")
    if report["drifts"]:
        out += [
            "## Drifts",
            "",
            "| host | component | expected | actual | reason |",
            "| --- | --- | --- | --- | --- |",
        ]
        for d in report["drifts"]:
            info = by_component.get(d["component"], {})
            exp = format_expected(
                d["expected"], info.get("source", "declared"), info.get("absent", False)
            )
            out.append(
                f"| {_md(d['host'])} | {_md(d['component'])} | {_md(exp)} | "
                f"{_md(format_actual(d))} | {_md(d['reason'])} |"
            )
        out.append("")
    return "\n".join(out)
