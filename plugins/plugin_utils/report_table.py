# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The drift report as a fixed-width text table (components down, hosts across)
that fits a terminal: no line longer than ``width``, so no callback or
terminal ever wraps a cell."""

from __future__ import annotations

import textwrap

from ansible_collections.lockstep.gpu.plugins.plugin_utils.report import (
    ABSENT,
    UNREADABLE,
    changes_summary,
    check_report,
    clip,
    drift_line,
    drifted,
    fold,
    grid,
    group_label,
    plural,
    summary,
)

SEP = "  "
# A value column is not made narrower than this (or its own width, if less);
# host columns that cannot get it are left out and counted in a note.
MIN_COLUMN = 10
# Each list of changes (new, resolved, another value) prints at most this many lines.
MAX_CHANGE_LINES = 20


def _cell_text(cell, width):
    """``value``, ``*drifted value*`` or ``-``, at most ``width`` characters (0: any).

    An unreadable cell names what could not be read, the part of the message
    before its first colon (``*unreadable: docker-info.json*``); the whole
    message is in the drift lines and the reports.
    """
    state, text, _reason, _new = cell
    if state == ABSENT:
        return "-"
    if state == UNREADABLE:
        text = "unreadable: " + text[len("unreadable: "):].partition(": ")[0]
    if drifted(cell):
        return f"*{clip(text, width - 2 if width else 0)}*"
    return clip(text, width)


def _water_fill(natural, room):
    """Widths for columns of ``natural`` widths sharing ``room``: narrow columns keep
    their width, the wide ones share the rest equally."""
    widths = list(natural)
    if sum(natural) <= room:
        return widths
    order = sorted(range(len(natural)), key=natural.__getitem__)
    left, count = room, len(natural)
    for position, index in enumerate(order):
        share = left // (count - position)
        if natural[index] <= share:
            left -= natural[index]
            continue
        rest = order[position:]
        extra = left - share * len(rest)
        for n, i in enumerate(rest):
            widths[i] = share + (1 if n < extra else 0)
        break
    return widths


def _fit(header, body, width):
    """Column widths so that every line is at most ``width``; returns (widths, columns kept).

    Component names stay whole while the expected value and one host still
    fit. Host columns (drifted hosts come first) that do not fit at
    MIN_COLUMN are left out, and so are hosts without a drift while the
    drifted cells do not fit whole. The columns left share the room in two
    rounds: first each gets its drifted cells' width and at most MIN_COLUMN
    for the others, so that drifts are cut last; what is left goes to the
    cells that agree.
    """
    columns = len(header)
    natural = [len(h) for h in header]
    urgent = [min(len(h), MIN_COLUMN) for h in header]
    has_drift = [False] * columns
    for line in body:
        for i, (text, cell) in enumerate(line):
            natural[i] = max(natural[i], len(text))
            hot = cell is not None and drifted(cell)
            has_drift[i] = has_drift[i] or hot
            urgent[i] = max(urgent[i], len(text) if hot else min(len(text), MIN_COLUMN))
    if not width or sum(natural) + len(SEP) * (columns - 1) <= width:
        return natural, columns
    first = min(natural[0], max(MIN_COLUMN, width - 2 * (MIN_COLUMN + len(SEP))))
    minimum = [min(n, MIN_COLUMN) for n in natural]

    def need(widths, kept):
        return first + sum(widths[1:kept]) + len(SEP) * (kept - 1)

    kept = columns
    while kept > 2 and need(minimum, kept) > width:
        kept -= 1
    while kept > 3 and need(urgent, kept) > width and not has_drift[kept - 1]:
        kept -= 1
    room = max(0, width - first - len(SEP) * (kept - 1))
    widths = _water_fill(urgent[1:kept], room)
    spare = room - sum(widths)
    if spare > 0:
        extra = _water_fill([n - w for n, w in zip(natural[1:kept], widths)], spare)
        widths = [w + e for w, e in zip(widths, extra)]
    return [first] + widths, kept


def _prose(text, width):
    if not width:
        return [text]
    return textwrap.wrap(text, width, break_long_words=True, break_on_hyphens=False) or [""]


def _change_lines(changes, width):
    lines = []
    for key, word in (("new", "new"), ("resolved", "resolved"), ("changed", "another value")):
        entries = changes.get(key) or []
        for d in entries[:MAX_CHANGE_LINES]:
            lines.append("  " + clip(f"{word}: {drift_line(d)}", width - 2 if width else 0))
        if len(entries) > MAX_CHANGE_LINES:
            more = f"... and {len(entries) - MAX_CHANGE_LINES} more {word} (see the reports)"
            lines.append("  " + clip(more, width - 2 if width else 0))
    return lines


def drift_table(report, drift_only=False, max_cell=40, max_hosts=None, width=0, changes=True):
    """Fixed-width text table, components down, hosts across; drifted cells as ``*value*``.

    Components and hosts with a drift come first. With more than
    ``max_hosts`` hosts, hosts whose columns are identical fold into one
    column (``dp1 +4999``) and at most ``max_hosts`` columns are printed.
    With ``width``, no line is longer: cells are shortened with an ellipsis
    and host columns that do not fit are left out (a note counts them). The
    report's changes since the previous run follow (``changes``), then the
    summary line. ``drift_only`` with no drift prints no table at all.
    """
    check_report(report, "drift_table")
    hosts, rows = grid(report, drift_only, drifts_first=True)
    groups = [[h] for h in hosts]
    hidden = 0
    if max_hosts and len(hosts) > max_hosts:
        groups, rows = fold(hosts, rows)
        hidden = sum(len(g) for g in groups[max_hosts:])
        groups = groups[:max_hosts]
        rows = [(c, exp, row[:max_hosts]) for c, exp, row in rows]
    header = ["component", "expected"] + [group_label(g) for g in groups]
    body = []
    for c, exp, row in rows:
        line = [(clip(c, max_cell), None), (clip(exp, max_cell), None)]
        for cell in row:
            line.append((_cell_text(cell, max_cell), cell))
        body.append(line)

    out = []
    if rows and (groups or not drift_only):
        widths, kept = _fit(header, body, width)
        hidden += sum(len(g) for g in groups[kept - 2:])

        def fmt(cells):
            return SEP.join(cell.ljust(widths[i]) for i, cell in enumerate(cells[:kept])).rstrip()

        out.append(fmt([clip(h, w) for h, w in zip(header, widths)]))
        out.append(SEP.join("-" * w for w in widths[:kept]))
        for line in body:
            texts = []
            for i, (text, cell) in enumerate(line[:kept]):
                texts.append(clip(text, widths[i]) if cell is None else _cell_text(cell, widths[i]))
            out.append(fmt(texts))
        out.append("")
    if changes and report.get("changes"):
        out.extend(_prose(changes_summary(report["changes"]), width))
        out.extend(_change_lines(report["changes"], width))
    text = summary(report)
    if report["drifts"] and out:
        text += " Drifted cells are marked *value*."
    if hidden:
        text += f" {plural(hidden, 'more host')} not shown (see the HTML report)."
    out.extend(_prose(text, width))
    return "\n".join(out)
