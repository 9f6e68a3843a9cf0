# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The style sheet and the script of the HTML drift report, inlined in every
page: the report fetches nothing, so it opens on an air-gapped laptop."""

from __future__ import annotations

CSS = """
:root { --ok-bg: #e7f5ec; --ok-fg: #14532d; --drift-bg: #fde2e1; --drift-fg: #8a0a1b; --drift-edge: #c81e1e;
  --unread-bg: #fff3c4; --unread-fg: #5c4300; --unread-edge: #b58100; --absent-bg: #f3f4f6; --absent-fg: #4b5563;
  --line: #d0d7de; --muted: #57606a; }
* { box-sizing: border-box; }
body { font-family: system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; margin: 1.25rem 1.5rem;
  color: #1b1b1b; background: #fff; line-height: 1.4; }
h1 { font-size: 1.45rem; margin: 0 0 .4rem; } h2 { font-size: 1.1rem; margin: 1.6rem 0 .5rem; }
code, .mono, td.cell, td.expected, th.component { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, monospace; }
p.summary { font-size: 1.1rem; font-weight: 700; margin: .2rem 0 .6rem; padding: .45rem .7rem; border-radius: 4px;
  display: inline-block; }
p.summary.ok { background: var(--ok-bg); color: var(--ok-fg); border: 1px solid #7cc49a; }
p.summary.bad { background: var(--drift-bg); color: var(--drift-fg); border: 2px solid var(--drift-edge); }
dl.meta { display: flex; flex-wrap: wrap; gap: .3rem 1.6rem; margin: .2rem 0 .8rem; color: var(--muted); }
dl.meta div { display: flex; gap: .4rem; } dl.meta dt { font-weight: 600; } dl.meta dd { margin: 0; color: #1b1b1b; }
.sr { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
ul.legend { list-style: none; padding: 0; margin: .3rem 0 .8rem; display: flex; flex-wrap: wrap; gap: .4rem 1rem;
  font-size: .85rem; }
ul.legend li span.cell { display: inline-block; padding: .1rem .45rem; border: 1px solid var(--line); }
.cell.ok { background: var(--ok-bg); color: var(--ok-fg); }
.cell.drift { background: var(--drift-bg); color: var(--drift-fg); font-weight: 700;
  border-left: 4px solid var(--drift-edge) !important; }
.cell.unreadable { background: var(--unread-bg); color: var(--unread-fg); font-style: italic;
  border-left: 4px dashed var(--unread-edge) !important; }
.cell.absent { background: var(--absent-bg); color: var(--absent-fg); }
.cell .exp { display: block; font-weight: 400; font-size: .8em; color: #3d3d3d; }
.badge { display: inline-block; font: 700 .7rem/1.2 system-ui, sans-serif; text-transform: uppercase;
  padding: 0 .3rem; border-radius: 3px; margin-left: .3rem; vertical-align: middle; }
.badge.new { background: #8a0a1b; color: #fff; } .badge.src { background: #eef1f4; color: var(--muted); }
.badge.declared { background: #dbeafe; color: #1e3a8a; }
form.filters { display: flex; flex-wrap: wrap; align-items: center; gap: .4rem 1rem; margin: .4rem 0 .6rem;
  padding: .45rem .7rem; border: 1px solid var(--line); border-radius: 4px; background: #f6f8fa; font-size: .9rem; }
form.filters fieldset { border: 0; margin: 0; padding: 0; display: flex; flex-wrap: wrap; gap: .2rem .8rem; }
form.filters legend { float: left; font-weight: 600; margin-right: .5rem; }
.scroll { overflow: auto; max-width: 100%; max-height: 85vh; }
table { border-collapse: collapse; font-size: .82rem; }
th, td { border: 1px solid var(--line); padding: .22rem .45rem; text-align: left; vertical-align: top; }
table.grid thead th { background: #f6f8fa; position: sticky; top: 0; z-index: 2; white-space: nowrap; }
table.grid th.component { position: sticky; left: 0; background: #fff; z-index: 1; white-space: nowrap;
  font-weight: 600; }
table.grid thead th:first-child { left: 0; z-index: 3; }
table.grid td.cell, table.grid td.expected { max-width: 24rem; overflow-wrap: anywhere; }
table.grid td.cell:hover { outline: 2px solid #1f6feb; outline-offset: -2px; }
table.grid tr.layer th { background: #24292f; color: #fff; text-align: left; font-size: .8rem; letter-spacing: .04em;
  text-transform: uppercase; }
table.grid tr.layer th .n { text-transform: none; font-weight: 400; opacity: .85; margin-left: .5rem; }
table.grid th.host .more { display: inline-block; margin-left: .3rem; padding: 0 .35rem; border-radius: 8px;
  background: #24292f; color: #fff; font-size: .75rem; }
table.grid th.host .count { display: block; font-weight: 400; font-size: .75rem; color: var(--muted); }
table.grid td.expected { color: #333; background: #fbfbfc; }
table.grid.only-drifts tr.agree, table.grid.only-drifts tbody.agree, table.grid.only-drifts .col-agree,
table.grid tbody.off { display: none; }
table.list td.state-drift { color: var(--drift-fg); font-weight: 700; }
table.list td.state-unreadable { color: var(--unread-fg); font-style: italic; }
section.changes ul { margin: .3rem 0; padding-left: 1.2rem; } section.changes li.new { color: var(--drift-fg); }
section.changes li.resolved { color: var(--ok-fg); }
p.note, footer { color: var(--muted); font-size: .85rem; }
footer { margin-top: 2rem; border-top: 1px solid var(--line); padding-top: .5rem; }
@media print {
  body { margin: 0; font-size: 9pt; } form.filters { display: none !important; }
  .scroll { overflow: visible; max-height: none; border: 0; }
  table.grid thead th, table.grid th.component, table.grid tr.layer th { position: static; }
  thead { display: table-header-group; } tr { break-inside: avoid; } h2 { break-after: avoid; }
  * { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
  table.grid td.cell:hover { outline: none; }
}
""".strip()

# Filters: "only drifts" and one box per layer. They toggle classes only; the
# page shows everything without the script, and the form stays hidden.
JS = """
(function () {
  var form = document.getElementById('filters'), grid = document.getElementById('grid');
  if (!form || !grid) { return; }
  form.hidden = false;
  var only = document.getElementById('only-drifts');
  function apply() {
    grid.classList.toggle('only-drifts', only.checked);
    form.querySelectorAll('input[data-layer]').forEach(function (box) {
      grid.querySelectorAll('tbody[data-layer="' + box.getAttribute('data-layer') + '"]').forEach(function (body) {
        body.classList.toggle('off', !box.checked);
      });
    });
  }
  form.addEventListener('change', apply);
  form.addEventListener('submit', function (event) { event.preventDefault(); });
  apply();
})();
""".strip()
