# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the drift report renderers share: cell texts and states, the layer
of a component, the component x host grid and the folding of identical
hosts, the one-line summary and one drift as a line."""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError
from ansible_collections.lockstep.gpu.plugins.plugin_utils.components import is_error

# The layers of a node's stack, in the order the report shows them, each
# with the component prefixes it holds (the first matching prefix wins).
# ``conda``, ``net``, ``rdma`` and ``pkg`` alone are the components a
# section yields when it could not be read at all.
LAYERS = (
    ("os", "OS", ("os.",)),
    ("gpu", "Driver and GPU", ("driver.", "gpu.")),
    ("cuda", "CUDA", ("cuda.",)),
    ("nccl", "NCCL and cuDNN", ("nccl.", "nccl_conf.", "cudnn.")),
    ("docker", "Docker", ("docker.",)),
    ("conda", "conda", ("conda.", "conda")),
    ("network", "Network", ("net.", "rdma.", "net", "rdma")),
    ("storage", "Storage", ("storage.",)),
    ("scheduler", "Scheduler", ("slurm.", "scheduler.")),
    ("other", "Other", ()),
)
LAYER_LABELS = {key: label for key, label, _prefixes in LAYERS}
_LAYER_ORDER = {key: index for index, (key, _label, _prefixes) in enumerate(LAYERS)}

# Cell states: the value agrees, drifts (differs, missing or unexpected),
# could not be read, or the host does not have the component (as expected).
OK, DRIFT, UNREADABLE, ABSENT = "ok", "drift", "unreadable", "absent"


def check_report(report, who):
    if not isinstance(report, Mapping) or not all(
        k in report for k in ("hosts", "components", "drifts", "by_component")
    ):
        raise AnsibleFilterError(
            f"{who}: expects the report returned by lockstep.gpu.drift, got {str(report)[:200]!r}"
        )


def plural(count, word, words=None):
    """``1 host``, ``2 hosts``."""
    return f"{count} {word if count == 1 else (words or word + 's')}"


def layer(component):
    """The layer key of a component: ``nccl.package`` -> ``nccl``; unknown prefixes -> ``other``."""
    name = str(component)
    for key, _label, prefixes in LAYERS:
        for prefix in prefixes:
            if name == prefix or (prefix.endswith(".") and name.startswith(prefix)):
                return key
    return "other"


def layer_order(component):
    """Sort key: layer in stack order, then the component name."""
    return (_LAYER_ORDER[layer(component)], str(component))


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


def expected_text(report, component):
    """The expectation of a component of ``report`` as text."""
    info = report["by_component"].get(component, {})
    return format_expected(info.get("expected"), info.get("source", "declared"), info.get("absent", False))


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
    line = f"{drift['host']}: {drift['component']} expected {format_expected(drift['expected'])}, actual {format_actual(drift)}"
    # "actual (missing)" says it once; other reasons follow in parentheses.
    return line if drift["reason"] == "missing" else f"{line} ({drift['reason']})"


def new_drifts(report):
    """{(host, component)} of the drifts that are new since the previous run (report['changes'])."""
    changes = report.get("changes") or {}
    return {(d["host"], d["component"]) for d in changes.get("new") or ()}


def grid(report, drift_only=False, drifts_first=False):
    """The component x host matrix the table and the HTML draw.

    Returns ``(hosts, rows)``; each row is ``(component, expected text,
    cells)`` with one cell per host, a tuple ``(state, text, reason, new)``:
    ``state`` is OK, DRIFT, UNREADABLE or ABSENT, ``text`` the host's value
    (``(missing)`` for a missing one, ``-`` for an absent one), ``reason``
    the drift's reason or None and ``new`` whether the drift is new since the
    previous run. Cells are tuples so that identical columns can fold.
    ``drift_only`` keeps the components and hosts with a drift;
    ``drifts_first`` puts them before the others.
    """
    by_component = report["by_component"]
    drift_at = {(d["host"], d["component"]): d for d in report["drifts"]}
    new = new_drifts(report)
    drifted_c = {d["component"] for d in report["drifts"]}
    drifted_h = {d["host"] for d in report["drifts"]}
    components = list(report["components"])
    hosts = list(report["hosts"])
    if drift_only:
        components = [c for c in components if c in drifted_c]
        hosts = [h for h in hosts if h in drifted_h]
    if drifts_first:
        components.sort(key=lambda c: c not in drifted_c)
        hosts.sort(key=lambda h: h not in drifted_h)
    values = {}
    for c in components:
        for entry in by_component.get(c, {}).get("values", ()):
            text = format_value(entry["value"])
            for h in entry["hosts"]:
                values[(h, c)] = text
    rows = []
    for c in components:
        cells = []
        for h in hosts:
            d = drift_at.get((h, c))
            if d is not None:
                state = UNREADABLE if d["reason"] == "unreadable" else DRIFT
                cells.append((state, format_actual(d), d["reason"], (h, c) in new))
            elif (h, c) in values:
                cells.append((OK, values[(h, c)], None, False))
            else:
                cells.append((ABSENT, "-", None, False))
        rows.append((c, expected_text(report, c), cells))
    return hosts, rows


def drifted(cell):
    return cell[0] in (DRIFT, UNREADABLE)


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
    keys = sorted(columns, key=lambda k: not any(drifted(cell) for cell in k))
    groups = [columns[k] for k in keys]
    folded = [(c, exp, [k[i] for k in keys]) for i, (c, exp, _row) in enumerate(rows)]
    return groups, folded


def group_label(hosts):
    """``dp1`` or ``dp1 +4999`` for a folded column."""
    return str(hosts[0]) if len(hosts) == 1 else f"{hosts[0]} +{len(hosts) - 1}"


ELLIPSIS = "\u2026"


def clip(text, width):
    """One line of at most ``width`` characters; a longer text ends with an ellipsis."""
    text = " ".join(str(text).split())  # no newlines/tabs in a fixed-width table
    if width and len(text) > width:
        return text[: max(0, width - 1)] + ELLIPSIS
    return text


def format_time(stamp):
    """``2025-06-01T12:00:00.123456Z`` -> ``2025-06-01 12:00:00 UTC``; other text as it is."""
    text = str(stamp)
    if len(text) >= 19 and text[10] == "T":
        return f"{text[:10]} {text[11:19]}" + (" UTC" if text.endswith("Z") else "")
    return text


def summary(report):
    """``3 hosts agree on 24 components.`` or ``2 drifts on 1 of 3 hosts, in 2 of 24 components.``"""
    drifts = report["drifts"]
    n_hosts, n_components = len(report["hosts"]), len(report["components"])
    if not drifts:
        verb = "agrees" if n_hosts == 1 else "agree"
        return f"{plural(n_hosts, 'host')} {verb} on {plural(n_components, 'component')}."
    hosts = {d["host"] for d in drifts}
    comps = {d["component"] for d in drifts}
    return (
        f"{plural(len(drifts), 'drift')} on {len(hosts)} of {plural(n_hosts, 'host')}, "
        f"in {len(comps)} of {plural(n_components, 'component')}."
    )


def changes_summary(changes):
    """``Since the previous run (2025-06-01T12:00:00Z): 1 new drift, 0 resolved.``"""
    if not changes:
        return ""
    if changes.get("first_run"):
        return "First recorded run: nothing to compare with."
    if changes.get("error"):
        return f"Not compared with the previous run: {changes['error']}."
    when = f" ({format_time(changes['previous'])})" if changes.get("previous") else ""
    if not any(changes.get(key) for key in ("new", "resolved", "changed", "hosts_added", "hosts_removed")):
        return f"Since the previous run{when}: no change."
    parts = [f"{plural(len(changes.get('new') or ()), 'new drift')}",
             f"{len(changes.get('resolved') or ())} resolved"]
    if changes.get("changed"):
        parts.append(f"{len(changes['changed'])} with another value")
    for key, word in (("hosts_added", "added"), ("hosts_removed", "gone")):
        if changes.get(key):
            parts.append(f"{plural(len(changes[key]), 'host')} {word}")
    return f"Since the previous run{when}: {', '.join(parts)}."
