"""A drift report in a real browser: Debian's Chromium, headless.

Used by tests/tooling/test_report_browser.py (a 500-host report) and the
drift scenario (molecule/drift/tests/test_drift.py: the live cluster's
report, and the screenshot reports/drift.png). No browser driver: Chromium
runs as a command (`--dump-dom`, `--screenshot`), as scripts/bootstrap
installs it (`chromium`, no recommended packages).

``probe(page)`` opens a copy of the page with PROBE_JS appended: the script
runs in the browser after the page's own, reads the DOM the browser built
(cells, their computed colour and position, the column headers), clicks the
filters, and writes what it found as JSON into the DOM, which --dump-dom
prints. So the checks are the browser's own querySelector, innerText,
getComputedStyle and click, not a parser standing in for it.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import struct
import tempfile
import time
import zlib
from collections import Counter
from pathlib import Path

import limits

WINDOW = (1280, 1400)

PROBE_JS = r"""
(function () {
  function visible(el) { return !!(el && el.getClientRects().length); }
  function shown(selector, attr) {
    return [].filter.call(document.querySelectorAll(selector), visible).map(function (el) {
      return el.getAttribute(attr);
    });
  }
  document.body.offsetHeight;  // style and layout of the whole report are done
  var out = {loaded_ms: performance.now(), title: document.title,
             resources: performance.getEntriesByType('resource').map(function (e) { return e.name; }),
             summary: document.getElementById('summary').innerText,
             filters_shown: !document.getElementById('filters').hidden,
             changes: (document.getElementById('changes') || {innerText: null}).innerText};
  out.columns = [].map.call(document.querySelectorAll('#grid thead th.host'), function (th) {
    return {hosts: th.getAttribute('data-hosts').split(' '), count: +th.getAttribute('data-count'),
            text: th.innerText, title: th.title};
  });
  out.cells = [].map.call(document.querySelectorAll('#grid td.cell'), function (td) {
    var r = td.getBoundingClientRect();
    return {host: td.getAttribute('data-host'), count: +td.getAttribute('data-count'),
            component: td.getAttribute('data-component'), state: td.getAttribute('data-state'),
            reason: td.getAttribute('data-reason'), new: td.getAttribute('data-new') === 'true',
            text: td.innerText, title: td.title, background: getComputedStyle(td).backgroundColor,
            rect: [r.left, r.top, r.width, r.height], visible: visible(td)};
  });
  out.rows = shown('#grid tr[data-component]', 'data-component');
  var only = document.getElementById('only-drifts');
  only.click();
  out.only_drifts = {rows: shown('#grid tr[data-component]', 'data-component'),
                     columns: shown('#grid thead th.host', 'data-hosts')};
  only.click();
  out.layers = {};
  [].forEach.call(document.querySelectorAll('#filters input[data-layer]'), function (box) {
    box.click();
    out.layers[box.getAttribute('data-layer')] = shown('#grid tr[data-component]', 'data-component');
    box.click();
  });
  out.rows_after = shown('#grid tr[data-component]', 'data-component');
  var pre = document.createElement('pre');
  pre.id = 'lockstep-probe';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
"""


def chromium():
    """The Chromium command (LOCKSTEP_CHROMIUM, else Debian's chromium), or None."""
    return os.environ.get("LOCKSTEP_CHROMIUM") or shutil.which("chromium")


def _run(args, window, cpu_s):
    with tempfile.TemporaryDirectory(prefix="lockstep-chromium-") as profile:
        cmd = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
               "--no-first-run", "--disable-extensions", "--hide-scrollbars", "--force-device-scale-factor=1",
               f"--user-data-dir={profile}", f"--window-size={window[0]},{window[1]}", *args]
        start = time.monotonic()
        proc = limits.run(cmd, capture_output=True, text=True, cpu_s=cpu_s, check=False,
                          env=dict(os.environ, HOME=profile))
        seconds = time.monotonic() - start
    if proc.returncode != 0:
        raise AssertionError(f"chromium failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return proc.stdout, seconds


def dump_dom(page, window=WINDOW, cpu_s=120):
    """The DOM Chromium built from ``page`` (its scripts run), serialised; and the seconds it took."""
    return _run(["--dump-dom", Path(page).resolve().as_uri()], window, cpu_s)


def screenshot(page, png, window=WINDOW, cpu_s=120):
    """A PNG of the page's first ``window`` pixels; returns the seconds it took."""
    Path(png).parent.mkdir(parents=True, exist_ok=True)
    _out, seconds = _run([f"--screenshot={Path(png).resolve()}", Path(page).resolve().as_uri()], window, cpu_s)
    assert Path(png).is_file(), f"chromium wrote no {png}"
    return seconds


def probe(page, window=WINDOW, cpu_s=120):
    """What PROBE_JS found in the page, as a dict (plus ``wall_s``: Chromium's whole run)."""
    with tempfile.TemporaryDirectory(prefix="lockstep-probe-") as tmp:
        copy = Path(tmp) / Path(page).name
        text = Path(page).read_text(encoding="utf-8")
        at = text.rindex("</body>")
        copy.write_text(text[:at] + f"<script>{PROBE_JS}</script>\n" + text[at:], encoding="utf-8")
        dom, seconds = dump_dom(copy, window, cpu_s)
    found = re.search(r'<pre id="lockstep-probe">(.*?)</pre>', dom, re.S)
    assert found, f"the probe did not run: {dom[-1500:]}"
    result = json.loads(html.unescape(found.group(1)))
    result["wall_s"] = seconds
    return result


def png_pixels(png, upto=None):
    """(width, height, rows of (r, g, b)) of an 8-bit RGB/RGBA PNG, as Chromium writes them;
    only the first ``upto`` rows are decoded when given."""
    data = Path(png).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{png} is not a PNG"
    pos, chunks, header = 8, [], None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            chunks.append(body)
        pos += 12 + length
    width, height, depth, colour, _c, _f, interlace = header
    assert depth == 8 and colour in (2, 6) and interlace == 0, f"unexpected PNG format {header}"
    channels = 3 if colour == 2 else 4
    raw = zlib.decompress(b"".join(chunks))
    stride = width * channels
    rows, previous = [], bytearray(stride)
    for y in range(min(height, upto or height)):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            corner = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 0xFF
        rows.append([tuple(line[x:x + 3]) for x in range(0, stride, channels)])
        previous = line
    return width, height, rows


def css_rgb(value):
    """``rgb(253, 226, 225)`` -> (253, 226, 225)."""
    return tuple(int(v) for v in re.findall(r"\d+", value)[:3])


def colour_in(rows, rect, inset=6):
    """The most common colour in the lower right corner of ``rect`` ([left, top, width, height])
    of a screenshot: a cell's background, away from its text and borders."""
    left, top, width, height = (int(v) for v in rect)
    xs = range(left + width - inset - 4, left + width - inset)
    ys = range(top + height - inset - 4, top + height - inset)
    return Counter(rows[y][x] for y in ys for x in xs).most_common(1)[0][0]
