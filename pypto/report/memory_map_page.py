"""The memory map's HTML page: one self-contained file (inline CSS and JS, data as JSON).

The page renders from the embedded ``#mm-data`` JSON: the dump text down the left, one
lane per memory space to its right (width proportional to capacity, address across), one
row per dump line so a box spans exactly the lines its tiles live. Clicking a box
highlights its lifetime and the defining lines; clicking a line highlights the boxes live
there. Script errors are collected into ``#mm-errors`` (``data-count``), and
``body[data-rendered]`` is set once drawing finished — what the browser tests read.
"""

from __future__ import annotations

import html
import json
from typing import Any

_CSS = """
body{font:13px/1.35 system-ui,sans-serif;margin:0;color:#222;background:#fafafa}
header{padding:10px 16px;background:#fff;border-bottom:1px solid #ddd}
header h1{font-size:16px;margin:0 0 4px}
table.summary{border-collapse:collapse;margin-top:6px}
table.summary td,table.summary th{border:1px solid #ddd;padding:2px 8px;text-align:right}
#legend span{display:inline-block;margin-right:14px}
.sw{display:inline-block;width:12px;height:12px;vertical-align:-2px;margin-right:4px;border:1px solid #555}
#main{display:flex;align-items:flex-start;padding:0 16px 16px}
#ir{font:12px/18px ui-monospace,monospace;white-space:pre;background:#fff;border:1px solid #ddd;
    border-top:none;min-width:420px;max-width:720px;overflow-x:auto}
.ln{height:18px;cursor:pointer;padding-right:8px}
.ln .no{display:inline-block;width:38px;color:#999;text-align:right;margin-right:8px}
.ln.live{background:#fff3c4}.ln.def{background:#ffd36e}
#lanes{display:flex;gap:10px;margin-left:12px}
.lane{position:relative;flex:none}
.lane-head{height:40px;font-size:12px;border-bottom:1px solid #aaa;position:relative}
.lane-body{position:relative;border:1px solid #ccc;border-top:none;
           background:repeating-linear-gradient(90deg,#fff 0,#fff 49.8%,#eee 50%,#fff 50.2%)}
.band{position:absolute;left:0;right:0;background:rgba(80,120,200,.06);border-top:1px dashed #9ab}
.band span{position:absolute;right:2px;top:0;font-size:10px;color:#678}
.hw{position:absolute;border-left:2px dashed #c33;width:0}
.box{position:absolute;box-sizing:border-box;border:1px solid #246;background:rgba(70,130,200,.55);
     color:#fff;font-size:11px;overflow:hidden;cursor:pointer;padding:1px 3px;min-width:3px}
.box.conflict{background:rgba(220,40,40,.75);border-color:#800}
.box.live,.box.selected{outline:3px solid #f90;z-index:2}
.slot{position:absolute;top:0;bottom:0;border-left:1px dotted #fff}
.view{position:absolute;top:1px;bottom:1px;border:1px dashed #ff0;box-sizing:border-box}
#info{margin:8px 16px;padding:8px;background:#fff;border:1px solid #ddd;min-height:18px;white-space:pre-wrap}
#mm-errors{color:#b00}
"""

_JS = r"""
(function () {
  const data = JSON.parse(document.getElementById('mm-data').textContent);
  const LH = 18, WIDTH = 900, MIN_LANE = 90;
  const kib = (b) => (b / 1024).toFixed(1) + ' KiB';
  const ir = document.getElementById('ir');
  data.lines.forEach((text, i) => {
    const row = document.createElement('div');
    row.className = 'ln'; row.dataset.line = String(i + 1);
    const no = document.createElement('span'); no.className = 'no'; no.textContent = String(i + 1);
    row.append(no, document.createTextNode(text));
    row.addEventListener('click', () => selectLine(i + 1));
    ir.append(row);
  });
  const total = data.spaces.reduce((s, sp) => s + sp.capacity, 0) || 1;
  const lanes = document.getElementById('lanes');
  const height = data.lines.length * LH;
  const boxes = [];
  data.spaces.forEach((sp) => lanes.append(drawLane(sp)));
  function drawLane(sp) {
    const lane = document.createElement('div');
    lane.className = 'lane'; lane.dataset.space = sp.name;
    lane.style.width = Math.max(MIN_LANE, Math.round(WIDTH * sp.capacity / total)) + 'px';
    const head = document.createElement('div'); head.className = 'lane-head';
    head.textContent = sp.name + ' · used ' + kib(sp.high_water) + ' / ' + kib(sp.capacity);
    head.title = 'address 0 … ' + sp.capacity + ' B (left to right); high-water mark dashed red';
    const body = document.createElement('div'); body.className = 'lane-body';
    body.style.height = height + 'px';
    data.functions.forEach((fn) => drawFunction(body, sp, fn));
    lane.append(head, body);
    return lane;
  }
  function place(el, first, last) {
    el.style.top = (first - 1) * LH + 'px';
    el.style.height = (last - first + 1) * LH + 'px';
  }
  function drawFunction(body, sp, fn) {
    const band = document.createElement('div'); band.className = 'band';
    place(band, fn.first, fn.last);
    const name = document.createElement('span'); name.textContent = fn.name; band.append(name);
    body.append(band);
    const hw = fn.high_water[sp.name];
    if (hw) {
      const mark = document.createElement('div'); mark.className = 'hw';
      mark.style.left = (100 * hw / sp.capacity) + '%'; place(mark, fn.first, fn.last);
      mark.title = fn.name + ': high water ' + kib(hw) + ' of ' + kib(sp.capacity);
      body.append(mark);
    }
    fn.boxes.filter((b) => b.space === sp.name).forEach((b) => body.append(drawBox(b, sp, fn)));
  }
  function drawBox(b, sp, fn) {
    const el = document.createElement('div');
    el.className = 'box' + (b.conflicts.length ? ' conflict' : '');
    el.id = b.id;
    const names = b.tiles.map((t) => t.name + (t.view ? ' (view)' : ''));
    Object.assign(el.dataset, {space: b.space, buffer: b.buffer, start: b.start, end: b.end,
      first: b.first, last: b.last, slots: b.slots, function: fn.name,
      tiles: b.tiles.map((t) => t.name).join(','), conflict: String(b.conflicts.length > 0)});
    el.style.left = (100 * b.start / sp.capacity) + '%';
    el.style.width = (100 * (b.end - b.start) / sp.capacity) + '%';
    place(el, b.first, b.last);
    el.textContent = names.join(', ');
    const clash = b.conflicts.length ? '\nCONFLICT with ' + b.conflicts.join(', ') : '';
    el.title = b.buffer + ' [' + b.start + ', ' + b.end + ') B, lines ' + b.first + '–' + b.last +
      '\naliases: ' + names.join(', ') + clash;
    for (let k = 1; k < b.slots; k++) {
      const s = document.createElement('div'); s.className = 'slot';
      s.style.left = (100 * k * b.slot_bytes / (b.end - b.start)) + '%'; el.append(s);
    }
    b.tiles.filter((t) => t.view).forEach((t) => {
      const v = document.createElement('div'); v.className = 'view'; v.dataset.tile = t.name;
      v.style.left = (100 * (t.start - b.start) / (b.end - b.start)) + '%';
      v.style.width = (100 * (t.end - t.start) / (b.end - b.start)) + '%'; el.append(v);
    });
    el.addEventListener('click', (ev) => { ev.stopPropagation(); selectBox(b, el); });
    boxes.push({b, el});
    return el;
  }
  function clear() {
    document.querySelectorAll('.ln.live,.ln.def').forEach((n) => n.classList.remove('live', 'def'));
    document.querySelectorAll('.box.live,.box.selected')
      .forEach((n) => n.classList.remove('live', 'selected'));
  }
  function lineEl(n) { return ir.children[n - 1]; }
  function selectBox(b, el) {
    clear(); el.classList.add('selected');
    for (let n = b.first; n <= b.last; n++) lineEl(n) && lineEl(n).classList.add('live');
    b.tiles.forEach((t) => lineEl(t.def_line) && lineEl(t.def_line).classList.add('def'));
    document.getElementById('info').textContent = el.title;
  }
  function selectLine(n) {
    clear(); lineEl(n).classList.add('def');
    const live = boxes.filter(({b}) => b.first <= n && n <= b.last);
    live.forEach(({el}) => el.classList.add('live'));
    const what = live.map(({b}) => b.tiles.map((t) => t.name).join('/') + ' in ' + b.buffer);
    document.getElementById('info').textContent = 'line ' + n + ': ' + (what.join('; ') || 'no tile live');
  }
  document.body.dataset.rendered = 'true';
})();
"""

_ERRORS = """window.mmErrors = [];
function mmError(text) {
  window.mmErrors.push(String(text));
  var el = document.getElementById('mm-errors');
  el.textContent = window.mmErrors.join('\\n'); el.dataset.count = String(window.mmErrors.length);
}
window.addEventListener('error', function (e) { mmError(e.message); });
var mmConsoleError = console.error.bind(console);
console.error = function () {
  mmError(Array.prototype.join.call(arguments, ' ')); mmConsoleError.apply(null, arguments);
};"""


def _summary(spaces: list[dict[str, Any]]) -> str:
    rows = "".join(
        f"<tr><th>{html.escape(s['name'])}</th><td>{s['high_water']}</td><td>{s['capacity']}</td>"
        f"<td>{100 * s['high_water'] / max(s['capacity'], 1):.1f}%</td></tr>"
        for s in spaces
    )
    return (
        '<table class="summary"><tr><th>space</th><th>high water (B)</th><th>limit (B)</th>'
        f"<th>used</th></tr>{rows}</table>"
    )


def render_page(data: dict[str, Any]) -> str:
    """The whole page for the model data (``memory_model.to_json`` plus header fields)."""
    payload = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    title = html.escape(f"memory map — {data['program']}")
    legend = (
        '<div id="legend"><span><i class="sw" style="background:rgba(70,130,200,.55)"></i>buffer '
        '(aliases share a box; dotted: slots; dashed yellow: views)</span><span><i class="sw" '
        'style="background:rgba(220,40,40,.75)"></i>conflict: different buffers live on the same '
        'bytes</span><span><i class="sw" style="border:1px dashed #c33"></i>high-water mark</span></div>'
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title><style>{_CSS}</style></head>
<body>
<div id="mm-errors" data-count="0"></div>
<script>{_ERRORS}</script>
<header><h1>{title}</h1>
<div>{html.escape(data["source"])} · platform {html.escape(data["platform"])} ·
address across, dump line (lifetime) down · click a box or a line</div>
{legend}{_summary(data["spaces"])}</header>
<div id="info"></div>
<div id="main"><div><div class="lane-head">IR: the dump, one row per line</div><div id="ir"></div></div>
<div id="lanes"></div></div>
<script type="application/json" id="mm-data">{payload}</script>
<script>{_JS}</script>
</body></html>
"""
