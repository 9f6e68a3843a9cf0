# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The drift report as one self-contained HTML page."""

from __future__ import annotations

import html

from ansible_collections.lockstep.gpu.plugins.plugin_utils.report import (
    check_report,
    fold,
    format_actual,
    format_expected,
    grid,
    group_label,
    summary,
)


_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 1.5rem; color: #1b1b1b; }
h1 { font-size: 1.4rem; } h2 { font-size: 1.15rem; margin-top: 2rem; }
p.summary { font-weight: 600; } p.ok { color: #1a7f37; } p.bad { color: #b3261e; }
.scroll { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; font-size: 0.85rem; }
th, td { border: 1px solid #d0d7de; padding: 0.25rem 0.5rem; text-align: left; vertical-align: top; white-space: nowrap; }
th { background: #f6f8fa; position: sticky; top: 0; }
td.drift { background: #ffebe9; color: #82071e; font-weight: 600; }
td.expected { color: #57606a; font-style: italic; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; }
""".strip()


def _esc(value):
    return html.escape(str(value), quote=True)


def drift_html(report, title="Lockstep drift report", drift_only=False, fold_above=12):
    """One self-contained HTML page: the matrix (drifted cells class ``drift``) and every drift.

    With more than ``fold_above`` hosts, hosts whose columns are identical
    fold into one column headed ``dp1 +499`` (every host named in its title).
    """
    check_report(report, "drift_html")
    hosts, rows = grid(report, drift_only)
    groups = [[h] for h in hosts]
    if fold_above and len(hosts) > fold_above:
        groups, rows = fold(hosts, rows)
    by_component = report["by_component"]
    ok = not report["drifts"]
    out = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f"<title>{_esc(title)}</title>",
        f"<style>\n{_CSS}\n</style>",
        "</head>",
        "<body>",
        f"<h1>{_esc(title)}</h1>",
        f'<p class="summary {"ok" if ok else "bad"}">{_esc(summary(report))}</p>',
        "<h2>Components by host</h2>",
    ]
    if drift_only:
        out.append("<p>Only components and hosts with drift are shown.</p>")
    out.append('<div class="scroll"><table class="matrix">')
    out.append(
        "<thead><tr><th>component</th><th>expected</th>"
        + "".join(f'<th title="{_esc(", ".join(map(str, g)))}">{_esc(group_label(g))}</th>' for g in groups)
        + "</tr></thead>"
    )
    out.append("<tbody>")
    for c, exp, row in rows:
        cells = [f"<th>{_esc(c)}</th>", f'<td class="expected">{_esc(exp)}</td>']
        for text, drifted in row:
            cls = ' class="drift"' if drifted else ""
            cells.append(f"<td{cls}>{_esc(text)}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table></div>")

    out.append(f"<h2>Drifts ({len(report['drifts'])})</h2>")
    if report["drifts"]:
        out.append('<div class="scroll"><table class="drifts">')
        out.append(
            "<thead><tr><th>host</th><th>component</th><th>expected</th>"
            "<th>actual</th><th>reason</th></tr></thead><tbody>"
        )
        for d in report["drifts"]:
            info = by_component.get(d["component"], {})
            exp = format_expected(
                d["expected"], info.get("source", "declared"), info.get("absent", False)
            )
            out.append(
                f"<tr><td>{_esc(d['host'])}</td><td>{_esc(d['component'])}</td>"
                f'<td>{_esc(exp)}</td><td class="drift">{_esc(format_actual(d))}</td>'
                f"<td>{_esc(d['reason'])}</td></tr>"
            )
        out.append("</tbody></table></div>")
    else:
        out.append("<p>None.</p>")
    out += ["</body>", "</html>", ""]
    return "\n".join(out)
