# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The drift report as one self-contained HTML page: a component x host grid
grouped by layer, each cell coloured and labelled (agrees, drifted with
expected and actual, unreadable naming the file or command, not present),
hosts with identical stacks folded into one column, filters, what changed
since the previous run, the expectations and their source, the run's time
and Lockstep's version. Style and script are inline (report_html_assets)."""

from __future__ import annotations

import html

from ansible_collections.lockstep.gpu.plugins.plugin_utils.drift import LOCKSTEP_VERSION
from ansible_collections.lockstep.gpu.plugins.plugin_utils.report import (
    ABSENT,
    DRIFT,
    LAYER_LABELS,
    OK,
    UNREADABLE,
    changes_summary,
    check_report,
    drift_line,
    drifted,
    expected_text,
    fold,
    format_actual,
    format_time,
    grid,
    group_label,
    layer,
    layer_order,
    plural,
    summary,
)
from ansible_collections.lockstep.gpu.plugins.plugin_utils.report_html_assets import CSS, JS

# What a cell says besides its colour: a symbol (hidden from screen readers)
# and a word (for them).
SYMBOLS = {OK: "\u2713", DRIFT: "\u2717", UNREADABLE: "\u26a0", ABSENT: "\u2013"}
WORDS = {OK: "agrees", DRIFT: "drifted", UNREADABLE: "unreadable", ABSENT: "not present"}
_SOURCES = {"declared": "declared", "lock": "lock", "majority": "majority", "none": "none"}


def _esc(value):
    return html.escape(str(value), quote=True)


def _cell(cell, component, hosts, expected, extra=""):
    state, text, reason, new = cell
    label = group_label(hosts)
    shown = "not present" if state == ABSENT else text
    if state == DRIFT:
        hover = f"{label} \u00b7 {component}: expected {expected}, actual {text} ({reason})"
    elif state == UNREADABLE:
        hover = f"{label} \u00b7 {component}: {text} (expected {expected})"
    elif state == ABSENT:
        hover = f"{label} \u00b7 {component}: not present (expected {expected})"
    else:
        hover = f"{label} \u00b7 {component}: {text} (agrees with {expected})"
    attrs = (f'class="{extra}cell {state}" data-state="{state}" data-host="{_esc(hosts[0])}" data-count="{len(hosts)}" '
             f'data-component="{_esc(component)}" title="{_esc(hover)}"')
    if reason:
        attrs += f' data-reason="{_esc(reason)}"'
    if new:
        attrs += ' data-new="true"'
    inner = f'<span aria-hidden="true">{SYMBOLS[state]}</span><span class="sr">{WORDS[state]}: </span> {_esc(shown)}'
    if state in (DRIFT, UNREADABLE):
        inner += f'<span class="exp">expected {_esc(expected)}</span>'
    if new:
        inner += '<span class="badge new">new</span>'
    return f"<td {attrs}>{inner}</td>"


def _header(report, title, groups):
    run = report.get("run") or {}
    version = report.get("lockstep_version") or LOCKSTEP_VERSION
    ok = not report["drifts"]
    by_component = report["by_component"]
    declared = sum(1 for info in by_component.values() if info.get("source") == "declared")
    locked = sum(1 for info in by_component.values() if info.get("source") == "lock")
    meta = []
    if run.get("time"):
        meta.append(("Run", f'<time datetime="{_esc(run["time"])}">{_esc(format_time(run["time"]))}</time>'))
    meta.append(("Lockstep", _esc(version)))
    columns = f" in {plural(len(groups), 'column')}" if len(groups) != len(report["hosts"]) else ""
    meta.append(("Hosts", f"{len(report['hosts'])}{columns}"))
    from_lock = f"{locked} from the stack lock, " if report.get("locked") else ""
    meta.append(("Components", f"{len(report['components'])} ({declared} declared, {from_lock}"
                               f"{len(report['components']) - declared - locked} by majority)"))
    if report.get("new"):
        meta.append(("New", _esc("not in the stack lock: " + ", ".join(map(str, report["new"])))))
    if report.get("retaken"):
        meta.append(("Retaken", _esc("by majority, the lock written anew after a clean run: "
                                     + ", ".join(map(str, report["retaken"])))))
    if report.get("ignored"):
        meta.append(("Ignored", _esc(", ".join(map(str, report["ignored"])))))
    return [
        "<header>",
        f"<h1>{_esc(title)}</h1>",
        f'<p class="summary {"ok" if ok else "bad"}" id="summary"><span aria-hidden="true">'
        f'{SYMBOLS[OK] if ok else SYMBOLS[DRIFT]}</span> {_esc(summary(report))}</p>',
        '<dl class="meta">' + "".join(f"<div><dt>{k}</dt><dd>{v}</dd></div>" for k, v in meta) + "</dl>",
        "</header>",
    ]


def _changes(report):
    changes = report.get("changes")
    if not changes:
        return []
    out = ['<section class="changes" id="changes">', "<h2>Changes</h2>",
           f"<p>{_esc(changes_summary(changes))}</p>"]
    items = []
    for key, cls, word, sym in (("new", "new", "New", "+"), ("resolved", "resolved", "Resolved", SYMBOLS[OK]),
                                ("changed", "changed", "Another value", "~")):
        for d in changes.get(key) or ():
            items.append(f'<li class="{cls}" data-change="{cls}" data-host="{_esc(d["host"])}" '
                         f'data-component="{_esc(d["component"])}"><span aria-hidden="true">{sym}</span> '
                         f"{word}: {_esc(drift_line(d))}</li>")
    if items:
        out.append("<ul>" + "".join(items) + "</ul>")
    out.append("</section>")
    return out


def _legend(with_changes):
    items = [f'<li><span class="cell {s}"><span aria-hidden="true">{SYMBOLS[s]}</span> {w}</span></li>'
             for s, w in ((OK, "agrees"), (DRIFT, "drifted: actual, then expected"),
                          (UNREADABLE, "unreadable: the file or command"), (ABSENT, "not present"))]
    if with_changes:
        items.append('<li><span class="badge new">new</span> since the previous run</li>')
    return '<ul class="legend" aria-label="Legend">' + "".join(items) + "</ul>"


def _grid(report, rows, groups):
    layers = {}
    for row in sorted(rows, key=lambda r: layer_order(r[0])):
        layers.setdefault(layer(row[0]), []).append(row)
    col_drift = [any(drifted(row[j]) for _c, _e, row in rows) for j in range(len(groups))]
    out = ['<form class="filters" id="filters" hidden aria-label="Filters">',
           '<label><input type="checkbox" id="only-drifts"> Only drifts</label>',
           "<fieldset><legend>Layers</legend>"]
    for key, layer_rows in layers.items():
        out.append(f'<label><input type="checkbox" data-layer="{key}" checked> {_esc(LAYER_LABELS[key])} '
                   f"({len(layer_rows)})</label>")
    out += ["</fieldset>", "</form>", _legend(bool(report.get("changes")))]
    out.append('<div class="scroll"><table class="grid" id="grid">')
    out.append("<caption class=\"sr\">Components by layer (rows) and hosts (columns)</caption>")
    head = ['<th scope="col" class="component">component</th>', '<th scope="col">expected</th>']
    for j, hosts in enumerate(groups):
        cls = "host" + ("" if col_drift[j] else " col-agree")
        more = ""
        if len(hosts) > 1:
            more = (f'<span class="more"><span aria-hidden="true">+{len(hosts) - 1}</span>'
                    f'<span class="sr"> and {len(hosts) - 1} more hosts</span></span>'
                    f'<span class="count" aria-hidden="true">{len(hosts)} hosts</span>')
        head.append(f'<th scope="col" class="{cls}" data-hosts="{_esc(" ".join(map(str, hosts)))}" '
                    f'data-count="{len(hosts)}" title="{_esc(", ".join(map(str, hosts)))}">{_esc(hosts[0])}{more}</th>')
    out.append("<thead><tr>" + "".join(head) + "</tr></thead>")
    by_component = report["by_component"]
    for key, layer_rows in layers.items():
        n_drifted = sum(1 for _c, _e, row in layer_rows if any(drifted(cell) for cell in row))
        agree = "" if n_drifted else ' class="agree"'
        out.append(f'<tbody data-layer="{key}"{agree}>')
        out.append(f'<tr class="layer"><th colspan="{2 + len(groups)}" scope="rowgroup">{_esc(LAYER_LABELS[key])}'
                   f'<span class="n">{plural(len(layer_rows), "component")}, {n_drifted} drifted</span></th></tr>')
        for c, exp, row in layer_rows:
            info = by_component.get(c, {})
            source = _SOURCES.get(info.get("source"), "majority") + (" tie" if info.get("tie") else "")
            row_drift = any(drifted(cell) for cell in row)
            cells = [f'<th scope="row" class="component">{_esc(c)}</th>',
                     f'<td class="expected">{_esc(exp)}<span class="badge src {source}">{source}</span></td>']
            for j, cell in enumerate(row):
                cells.append(_cell(cell, c, groups[j], exp, "" if col_drift[j] else "col-agree "))
            out.append(f'<tr class="{"drifted" if row_drift else "agree"}" data-component="{_esc(c)}">'
                       + "".join(cells) + "</tr>")
        out.append("</tbody>")
    out.append("</table></div>")
    return out


def _drift_list(report):
    new = {(d["host"], d["component"]) for d in (report.get("changes") or {}).get("new") or ()}
    out = [f'<section id="drifts"><h2>Drifts ({len(report["drifts"])})</h2>']
    if not report["drifts"]:
        return out + ["<p>None: every host agrees on every component.</p>", "</section>"]
    out.append('<div class="scroll"><table class="list drifts"><thead><tr><th scope="col">host</th>'
               '<th scope="col">component</th><th scope="col">expected</th><th scope="col">actual</th>'
               '<th scope="col">reason</th></tr></thead><tbody>')
    for d in report["drifts"]:
        state = UNREADABLE if d["reason"] == "unreadable" else DRIFT
        badge = '<span class="badge new">new</span>' if (d["host"], d["component"]) in new else ""
        out.append(f'<tr data-host="{_esc(d["host"])}" data-component="{_esc(d["component"])}" '
                   f'data-state="{state}"><td>{_esc(d["host"])}</td><td class="mono">{_esc(d["component"])}</td>'
                   f'<td class="mono">{_esc(expected_text(report, d["component"]))}</td>'
                   f'<td class="mono state-{state}">{_esc(format_actual(d))}</td><td>{_esc(d["reason"])}{badge}</td></tr>')
    return out + ["</tbody></table></div>", "</section>"]


def _expectations(report):
    by_component = report["by_component"]
    n_hosts = len(report["hosts"])
    out = ['<section id="expectations"><h2>Expectations</h2>',
           "<p>A component declared in the inventory (<code>verify_expected</code>) is checked on every host; "
           "so is one the stack lock records (<code>stack-lock.yml</code>, written by <code>lock.yml</code>); "
           "any other must agree with the majority of the hosts that could be read.</p>",
           '<div class="scroll"><table class="list expectations"><thead><tr><th scope="col">component</th>'
           '<th scope="col">layer</th><th scope="col">expected</th><th scope="col">source</th>'
           '<th scope="col">hosts that agree</th></tr></thead><tbody>']
    for c in sorted(report["components"], key=layer_order):
        info = by_component.get(c, {})
        source = {"declared": "declared in the inventory", "lock": "the stack lock",
                  "none": "none: no host could be read"}.get(info.get("source"), "majority of the hosts")
        if info.get("new"):
            source += " (new: not in the stack lock)"
        if info.get("retaken"):
            source += " (retaken: in the stack lock, written anew after a clean run)"
        if info.get("tie"):
            source += " (a tie: the first host's value)"
        agree = n_hosts - len(info.get("deviating_hosts") or ())
        out.append(f'<tr data-component="{_esc(c)}" data-source="{_esc(info.get("source", ""))}">'
                   f'<td class="mono">{_esc(c)}</td><td>{_esc(LAYER_LABELS[layer(c)])}</td>'
                   f'<td class="mono">{_esc(expected_text(report, c))}</td><td>{_esc(source)}</td>'
                   f"<td>{agree} of {n_hosts}</td></tr>")
    return out + ["</tbody></table></div>", "</section>"]


def _columns(groups):
    if all(len(g) == 1 for g in groups):
        return []
    out = ['<section id="columns"><h2>Host columns</h2>',
           "<p>Hosts whose every component is the same share one column.</p><ol>"]
    for hosts in groups:
        out.append(f"<li><strong>{_esc(group_label(hosts))}</strong> ({plural(len(hosts), 'host')}): "
                   f'<span class="mono">{_esc(", ".join(map(str, hosts)))}</span></li>')
    return out + ["</ol>", "</section>"]


def drift_html(report, title="Lockstep drift report", drift_only=False, fold_above=12):
    """One self-contained HTML page; see the module docstring.

    With more than ``fold_above`` hosts, hosts whose columns are identical
    fold into one column headed ``dp1 +499`` (every host named in its title
    and under "Host columns"). ``drift_only`` keeps only the components and
    hosts with a drift in the grid.
    """
    check_report(report, "drift_html")
    hosts, rows = grid(report, drift_only)
    groups = [[h] for h in hosts]
    if fold_above and len(hosts) > fold_above:
        groups, rows = fold(hosts, rows)
    version = report.get("lockstep_version") or LOCKSTEP_VERSION
    out = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           f'<meta name="generator" content="Lockstep {_esc(version)}">',
           f"<title>{_esc(title)}</title>", f"<style>\n{CSS}\n</style>", "</head>", "<body>"]
    out += _header(report, title, groups)
    out += ["<main>"] + _changes(report)
    out.append('<section id="matrix"><h2>Components by host</h2>')
    if drift_only:
        out.append('<p class="note">Only the components and hosts with a drift are shown.</p>')
    if rows and groups:
        out += _grid(report, rows, groups)
    else:
        out.append("<p>Nothing to show.</p>")
    out.append("</section>")
    out += _drift_list(report) + _expectations(report) + _columns(groups) + ["</main>"]
    out.append(f"<footer>Lockstep {_esc(version)} (lockstep.gpu.drift_html). One self-contained file: it loads "
               "nothing from the network. The filters need JavaScript; without it every row and column shows."
               "</footer>")
    out += [f"<script>\n{JS}\n</script>", "</body>", "</html>", ""]
    return "\n".join(out)
