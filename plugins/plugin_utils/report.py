# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the drift report renderers share: cell texts, the component x host
grid, the one-line summary and one drift as a line."""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError
from ansible_collections.lockstep.gpu.plugins.plugin_utils.components import is_error


def check_report(report, who):
    if not isinstance(report, Mapping) or not all(
        k in report for k in ("hosts", "components", "drifts", "by_component")
    ):
        raise AnsibleFilterError(
            f"{who}: expects the report returned by lockstep.gpu.drift, got {str(report)[:200]!r}"
        )


def format_value(value):
    """Text form of a fact value for tables."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if is_error(value):
        return f"unreadable: {value['error']}"
    return str(value)


def format_expected(value, source="declared", absent=False):
    """Text form of an expectation, constraints spelled out."""
    if absent:
        return "(absent)"
    if source == "none":
        return "(none)"
    if isinstance(value, Mapping):
        parts = []
        if "equals" in value:
            parts.append(format_value(value["equals"]))
        if "one_of" in value:
            parts.append("one of " + ", ".join(format_value(v) for v in value["one_of"]))
        if "version_prefix" in value:
            parts.append(f"{value['version_prefix']}*")
        if "min" in value:
            parts.append(f">= {value['min']}")
        if "max" in value:
            parts.append(f"<= {value['max']}")
        return " and ".join(parts) or str(dict(value))
    return format_value(value)


def format_actual(drift):
    if drift["reason"] == "missing":
        return "(missing)"
    return format_value(drift["actual"])


def drift_line(drift):
    """One drift as a line: ``dp3: nccl.package expected X, actual Y (differs)``."""
    if not isinstance(drift, Mapping) or not all(
        k in drift for k in ("host", "component", "expected", "reason")
    ):
        raise AnsibleFilterError(
            f"drift_line: expects one entry of a report's drifts, got {str(drift)[:200]!r}"
        )
    return (
        f"{drift['host']}: {drift['component']} expected {format_expected(drift['expected'])}, "
        f"actual {format_actual(drift)} ({drift['reason']})"
    )


def grid(report, drift_only):
    """Rows/columns and per-cell (text, drifted) for the matrix renderers."""
    by_component = report["by_component"]
    drift_at = {(d["host"], d["component"]): d for d in report["drifts"]}
    components = list(report["components"])
    hosts = list(report["hosts"])
    if drift_only:
        drifted_c = {d["component"] for d in report["drifts"]}
        drifted_h = {d["host"] for d in report["drifts"]}
        components = [c for c in components if c in drifted_c]
        hosts = [h for h in hosts if h in drifted_h]
    cells = {}
    for c in components:
        info = by_component.get(c, {})
        for entry in info.get("values", ()):
            text = format_value(entry["value"])
            for h in entry["hosts"]:
                cells[(h, c)] = text
    rows = []
    for c in components:
        info = by_component.get(c, {})
        exp = format_expected(
            info.get("expected"), info.get("source", "declared"), info.get("absent", False)
        )
        row = []
        for h in hosts:
            d = drift_at.get((h, c))
            if d is not None:
                row.append((format_actual(d), True))
            else:
                row.append((cells.get((h, c), "-"), False))
        rows.append((c, exp, row))
    return hosts, rows


def fold(hosts, rows):
    """Hosts whose column is the same in every row, as one column each.

    Returns ``(groups, rows)``: ``groups`` lists the hosts of each folded
    column (first seen first, drifted columns before the others), ``rows``
    is ``rows`` with one cell per group. A cluster of thousands of nodes that
    agree becomes a handful of columns.
    """
    columns = {}
    for index, host in enumerate(hosts):
        key = tuple(row[index] for _c, _exp, row in rows)
        columns.setdefault(key, []).append(host)
    keys = sorted(columns, key=lambda k: not any(drifted for _text, drifted in k))
    groups = [columns[k] for k in keys]
    folded = [(c, exp, [k[i] for k in keys]) for i, (c, exp, _row) in enumerate(rows)]
    return groups, folded


def group_label(hosts):
    """``dp1`` or ``dp1 +4999`` for a folded column."""
    return str(hosts[0]) if len(hosts) == 1 else f"{hosts[0]} +{len(hosts) - 1}"


def clip(text, width):
    text = " ".join(str(text).split())  # no newlines/tabs in a fixed-width table
    if width and len(text) > width:
        return text[: max(1, width - 1)] + "~"
    return text


def summary(report):
    drifts = report["drifts"]
    hosts = {d["host"] for d in drifts}
    comps = {d["component"] for d in drifts}
    if not drifts:
        return (
            f"No drift: {len(report['hosts'])} host(s) agree on "
            f"{len(report['components'])} component(s)."
        )
    return (
        f"{len(drifts)} drift(s) on {len(hosts)} of {len(report['hosts'])} host(s) "
        f"in {len(comps)} of {len(report['components'])} component(s)."
    )
