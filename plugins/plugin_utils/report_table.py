# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The drift report as a fixed-width text table (components down, hosts across)."""

from __future__ import annotations

from ansible_collections.lockstep.gpu.plugins.plugin_utils.report import check_report, clip, fold, grid, group_label, summary


def drift_table(report, drift_only=False, max_cell=40, max_hosts=None):
    """Fixed-width text table, components down, hosts across; drifted cells as ``*value*``.

    With more than ``max_hosts`` hosts, hosts whose columns are identical
    fold into one column (``dp1 +4999``), drifted ones first, and at most
    ``max_hosts`` columns are printed; the summary line counts them all.
    """
    check_report(report, "drift_table")
    hosts, rows = grid(report, drift_only)
    labels = [str(h) for h in hosts]
    hidden = 0
    if max_hosts and len(hosts) > max_hosts:
        groups, rows = fold(hosts, rows)
        hidden = sum(len(g) for g in groups[max_hosts:])
        groups = groups[:max_hosts]
        rows = [(c, exp, row[:max_hosts]) for c, exp, row in rows]
        labels = [group_label(g) for g in groups]
    header = ["component", "expected"] + labels
    body = []
    for c, exp, row in rows:
        line = [clip(c, max_cell), clip(exp, max_cell)]
        for text, drifted in row:
            text = clip(text, max_cell)
            line.append(f"*{text}*" if drifted else text)
        body.append(line)
    widths = [len(h) for h in header]
    for line in body:
        for i, cell in enumerate(line):
            widths[i] = max(widths[i], len(cell))

    def fmt(line):
        return "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(line)).rstrip()

    out = [fmt(header), "  ".join("-" * w for w in widths)]
    out.extend(fmt(line) for line in body)
    out.append("")
    out.append(
        summary(report) + (" Drifted cells are marked *value*." if report["drifts"] else "")
        + (f" {hidden} more host(s) with other identical stacks are not shown." if hidden else "")
    )
    return "\n".join(out)
