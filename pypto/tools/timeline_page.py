"""The timeline's HTML page: one self-contained file (inline CSS and JS, data as JSON).

Layout, top to bottom: a cycle ruler; the task swimlane (one row per core, a bar per task,
blue arrows from each task a task waited for);
then per core a header and one lane per pipe it used, a box per instruction, and arrows from
each ``set_flag`` to the ``wait_flag`` it released. Everything right of the labels is one
canvas; the labels are DOM rows (``.lane`` with ``data-core``/``data-pipe``/``data-y``).

Wheel zooms around the pointer, drag pans, double-click or "fit" shows the whole run; hover
shows the instruction, its source line, cycles and bytes; a click opens the source line in
the panel below (the Python files are embedded). ``body[data-rendered]`` is set after the
first draw with counts in ``data-*``; script errors land in ``#tl-errors``. Opened with
``#selftest``, the page drives its own handlers with real DOM events and writes what
happened to ``#tl-selftest`` (the browser test reads it).
"""

from __future__ import annotations

import html
import json
from typing import Any

from pypto.tools.timeline_style import CSS, legend

_ERRORS = r"""
(function () {
  var el = document.getElementById('tl-errors');
  function add(msg) {
    el.dataset.count = String(Number(el.dataset.count) + 1);
    el.appendChild(document.createTextNode(String(msg) + '\n'));
  }
  window.addEventListener('error', function (e) { add(e.message); });
  window.addEventListener('unhandledrejection', function (e) { add(e.reason); });
  window.__tlError = add;
})();
"""

_JS = r"""
(function () {
  const D = JSON.parse(document.getElementById('tl-data').textContent);
  const COLORS = {MTE2:'#4e79a7', MTE1:'#76b7b2', CUBE:'#e15759', VECTOR:'#59a14f',
                  FIXPIPE:'#d4a017', MTE3:'#f28e2b', SCALAR:'#9c8f8a'};
  const SYNC = ['', 'set_flag', 'wait_flag', 'barrier'];
  const AXIS = 24, TASK_H = 18, HEAD_H = 18, LANE_H = 16;
  const S = (i) => D.strings[i];
  const wrap = document.getElementById('wrap'), labels = document.getElementById('labels');
  const canvas = document.getElementById('tl'), ctx = canvas.getContext('2d');
  const tip = document.getElementById('tip'), src = document.getElementById('src');
  const total = Math.max(1, D.cycles, ...D.events.map(e => e[3]), ...D.tasks.map(t => t.end));

  // rows: the task swimlane (one per core), then each core's header and pipe lanes
  const rows = [], laneRow = {}, taskRow = {};
  let y = AXIS;
  const label = (cls, text, h, data) => {
    const div = document.createElement('div');
    div.className = cls; div.textContent = text;
    div.style.top = y + 'px'; div.style.height = h + 'px';
    Object.assign(div.dataset, data, {y: String(y)});
    labels.appendChild(div);
  };
  label('head', 'tasks', HEAD_H, {}); y += HEAD_H;
  D.cores.forEach((core, c) => {
    taskRow[c] = rows.length;
    rows.push({kind: 'task', core: c, y: y, h: TASK_H});
    label('task', core, TASK_H, {core: core}); y += TASK_H;
  });
  D.cores.forEach((core, c) => {
    if (!D.lanes[c].length) return;
    label('head', core, HEAD_H, {core: core}); y += HEAD_H;
    D.lanes[c].forEach((pipe, l) => {
      laneRow[c + ':' + l] = rows.length;
      rows.push({kind: 'lane', core: c, lane: l, pipe: pipe, y: y, h: LANE_H});
      label('lane', pipe, LANE_H, {core: core, pipe: pipe,
            events: String(D.events.filter(e => e[0] === c && e[1] === l).length)});
      y += LANE_H;
    });
  });
  const height = y + 6;
  labels.style.height = height + 'px';

  // per lane, event indices by start (hit tests); per core, task indices
  const byLane = {};
  D.events.forEach((e, i) => { (byLane[e[0] + ':' + e[1]] = byLane[e[0] + ':' + e[1]] || []).push(i); });
  Object.values(byLane).forEach(list => list.sort((a, b) => D.events[a][2] - D.events[b][2]));
  const laneY = (c, l) => { const r = rows[laneRow[c + ':' + l]]; return r.y + r.h / 2; };

  const view = {t0: 0, t1: total * 1.02, w: 800};
  let selected = -1, drawn = 0;
  const X = (t) => (t - view.t0) / (view.t1 - view.t0) * view.w;
  const T = (x) => view.t0 + x / view.w * (view.t1 - view.t0);
  const kernelColor = (name) => {
    let h = 0; for (const ch of name) h = (h * 31 + ch.charCodeAt(0)) % 360;
    return 'hsl(' + h + ',55%,62%)';
  };

  function resize() {
    view.w = Math.max(200, wrap.clientWidth);
    canvas.width = view.w; canvas.height = height;
    draw();
  }

  function ruler() {
    ctx.fillStyle = '#f7f7f7'; ctx.fillRect(0, 0, view.w, AXIS);
    const span = view.t1 - view.t0, raw = span / 8, p = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 5, 10].map(m => m * p).find(s => s >= raw) || raw;
    ctx.fillStyle = '#555'; ctx.strokeStyle = '#e4e4e4'; ctx.font = '10px system-ui';
    for (let t = Math.ceil(view.t0 / step) * step; t <= view.t1; t += step) {
      const x = Math.round(X(t)) + 0.5;
      ctx.beginPath(); ctx.moveTo(x, AXIS - 6); ctx.lineTo(x, height); ctx.stroke();
      ctx.fillText(String(Math.round(t)), x + 2, 12);
    }
  }

  function box(x0, x1, yy, h, fill) {
    const a = Math.max(x0, -2), b = Math.min(x1, view.w + 2);
    if (b < 0 || a > view.w) return false;
    ctx.fillStyle = fill; ctx.fillRect(a, yy, Math.max(1, b - a), h);
    return true;
  }

  function draw() {
    drawn = 0;
    ctx.clearRect(0, 0, view.w, height);
    rows.forEach((r, i) => { if (i % 2) { ctx.fillStyle = '#fbfbfb'; ctx.fillRect(0, r.y, view.w, r.h); } });
    ruler();
    ctx.font = '11px system-ui'; ctx.textBaseline = 'middle';
    D.tasks.forEach(t => {
      const r = rows[taskRow[t.core]], x0 = X(t.start), x1 = X(t.end);
      if (box(x0, x1, r.y + 2, r.h - 4, kernelColor(t.kernel))) {
        drawn++;
        if (x1 - x0 > 40) {
          ctx.fillStyle = '#111'; ctx.fillText(t.kernel, Math.max(x0, 0) + 3, r.y + r.h / 2);
        }
      }
    });
    D.events.forEach((e, i) => {
      const r = rows[laneRow[e[0] + ':' + e[1]]];
      const fill = e[7] ? '#888' : COLORS[D.lanes[e[0]][e[1]]];
      const inset = e[7] ? 5 : 2;
      if (box(X(e[2]), X(e[3]), r.y + inset, r.h - 2 * inset, fill)) drawn++;
    });
    flows();
    taskFlows();
    if (selected >= 0) {
      const e = D.events[selected], r = rows[laneRow[e[0] + ':' + e[1]]];
      ctx.strokeStyle = '#000'; ctx.lineWidth = 2;
      ctx.strokeRect(X(e[2]) - 1, r.y + 1, Math.max(2, X(e[3]) - X(e[2])) + 2, r.h - 2);
      ctx.lineWidth = 1;
    }
    document.body.dataset.drawn = String(drawn);
    document.body.dataset.view = Math.round(view.t0) + ',' + Math.round(view.t1);
  }

  function flows() {
    ctx.strokeStyle = 'rgba(200,30,30,.75)'; ctx.fillStyle = 'rgba(200,30,30,.75)';
    let n = 0;
    for (const [a, b] of D.flows) {
      const s = D.events[a], w = D.events[b];
      const x0 = X(s[3]), x1 = X(w[2]);
      if ((x0 < 0 && x1 < 0) || (x0 > view.w && x1 > view.w)) continue;
      if (++n > 5000) break;
      const y0 = laneY(s[0], s[1]), y1 = laneY(w[0], w[1]);
      ctx.beginPath(); ctx.moveTo(x0, y0); ctx.lineTo(x1, y1); ctx.stroke();
      const ang = Math.atan2(y1 - y0, x1 - x0);
      ctx.beginPath(); ctx.moveTo(x1, y1);
      ctx.lineTo(x1 - 6 * Math.cos(ang - 0.4), y1 - 6 * Math.sin(ang - 0.4));
      ctx.lineTo(x1 - 6 * Math.cos(ang + 0.4), y1 - 6 * Math.sin(ang + 0.4));
      ctx.fill();
    }
    document.body.dataset.flowsDrawn = String(n);
  }

  function taskFlows() {  // a task's dependencies: from each dep's end to the task's start
    ctx.strokeStyle = 'rgba(40,60,160,.8)'; ctx.fillStyle = 'rgba(40,60,160,.8)';
    let n = 0;
    D.tasks.forEach(t => (t.deps || []).forEach(d => {
      const from = D.tasks[d], a = rows[taskRow[from.core]], b = rows[taskRow[t.core]];
      const x0 = X(from.end), x1 = X(t.start), y0 = a.y + a.h / 2, y1 = b.y + b.h / 2;
      ctx.beginPath(); ctx.moveTo(x0, y0); ctx.lineTo(x1, y1); ctx.stroke();
      ctx.beginPath(); ctx.arc(x1, y1, 2.5, 0, 2 * Math.PI); ctx.fill();
      n++;
    }));
    document.body.dataset.taskFlowsDrawn = String(n);
  }

  function hit(px, py) {
    const r = rows.find(r => py >= r.y && py < r.y + r.h);
    if (!r) return null;
    const t = T(px), tol = 3 * (view.t1 - view.t0) / view.w;
    if (r.kind === 'task') {
      const i = D.tasks.findIndex(k => k.core === r.core && k.start - tol <= t && t <= k.end + tol);
      return i < 0 ? null : {task: i};
    }
    const list = byLane[r.core + ':' + r.lane] || [];
    let lo = 0, hi = list.length;
    while (lo < hi) {
      const m = (lo + hi) >> 1;
      if (D.events[list[m]][2] <= t + tol) lo = m + 1; else hi = m;
    }
    for (let k = lo - 1; k >= 0 && k >= lo - 64; k--) {
      const e = D.events[list[k]];
      if (e[2] - tol <= t && t <= e[3] + tol) return {event: list[k]};
    }
    return null;
  }

  function describe(h) {
    if (h.task !== undefined) {
      const t = D.tasks[h.task];
      return 'task ' + t.kernel + ' on ' + D.cores[t.core] + '\n' + t.start + ' - ' + t.end +
             ' (' + (t.end - t.start) + ' cycles)';
    }
    const e = D.events[h.event];
    const what = e[7] ? SYNC[e[7]] + ' ' + S(e[4]) : S(e[4]);
    return what + '\n' + D.cores[e[0]] + ' ' + D.lanes[e[0]][e[1]] + '\nsource ' + (S(e[5]) || '-') +
           '\ncycles ' + (e[3] - e[2]) + '  (' + e[2] + ' - ' + e[3] + ')' + '\nbytes ' + e[6];
  }

  function showSource(i) {
    const loc = S(D.events[i][5]) || '', parts = loc.split(':');
    src.innerHTML = '';
    const where = document.createElement('div'); where.className = 'where';
    if (parts.length < 3 || !D.sources[parts.slice(0, -2).join(':')]) {
      where.textContent = S(D.events[i][4]) + ': no source line recorded';
      src.appendChild(where); src.dataset.line = ''; return;
    }
    const file = parts.slice(0, -2).join(':'), line = Number(parts[parts.length - 2]);
    const link = document.createElement('a');
    link.href = 'file://' + file; link.textContent = loc;
    where.append(document.createTextNode(S(D.events[i][4]) + ' at '), link);
    const pre = document.createElement('pre'), lines = D.sources[file];
    for (let n = Math.max(1, line - 4); n <= Math.min(lines.length, line + 4); n++) {
      const span = document.createElement('span');
      span.textContent = String(n).padStart(5) + '  ' + lines[n - 1];
      if (n === line) span.className = 'hit';
      pre.appendChild(span);
    }
    src.append(where, pre);
    src.dataset.line = loc;
  }

  const local = (ev) => {
    const b = canvas.getBoundingClientRect();
    return [ev.clientX - b.left, ev.clientY - b.top];
  };
  function zoom(factor, px) {
    const t = T(px), span = Math.min(total * 4, Math.max(10, (view.t1 - view.t0) * factor));
    view.t0 = t - px / view.w * span; view.t1 = view.t0 + span; draw();
  }
  function fit() { view.t0 = 0; view.t1 = total * 1.02; draw(); }
  let drag = null;
  canvas.addEventListener('wheel', (ev) => {
    ev.preventDefault();
    if (ev.shiftKey || Math.abs(ev.deltaX) > Math.abs(ev.deltaY)) {
      const dt = (ev.deltaX || ev.deltaY) / view.w * (view.t1 - view.t0);
      view.t0 += dt; view.t1 += dt; draw();
    } else zoom(Math.exp(ev.deltaY * 0.002), local(ev)[0]);
  }, {passive: false});
  canvas.addEventListener('mousedown', (ev) => {
    drag = {x: ev.clientX, t0: view.t0, t1: view.t1, moved: false}; canvas.classList.add('drag');
  });
  window.addEventListener('mouseup', (ev) => {
    if (drag && !drag.moved) {
      const [px, py] = local(ev), h = hit(px, py);
      if (h && h.event !== undefined) { selected = h.event; showSource(h.event); draw(); }
    }
    drag = null; canvas.classList.remove('drag');
  });
  window.addEventListener('mousemove', (ev) => {
    if (drag) {
      const dx = ev.clientX - drag.x;
      if (Math.abs(dx) > 2) drag.moved = true;
      const dt = dx / view.w * (drag.t1 - drag.t0);
      view.t0 = drag.t0 - dt; view.t1 = drag.t1 - dt; draw();
      return;
    }
    if (ev.target !== canvas) { tip.style.display = 'none'; return; }
    const [px, py] = local(ev), h = hit(px, py);
    if (!h) { tip.style.display = 'none'; tip.textContent = ''; return; }
    tip.textContent = describe(h);
    tip.style.display = 'block';
    tip.style.left = (ev.clientX + 14) + 'px'; tip.style.top = (ev.clientY + 12) + 'px';
  });
  canvas.addEventListener('dblclick', fit);
  document.getElementById('fit').addEventListener('click', fit);
  document.getElementById('zin').addEventListener('click', () => zoom(0.5, view.w / 2));
  document.getElementById('zout').addEventListener('click', () => zoom(2, view.w / 2));
  window.addEventListener('resize', resize);
  resize();
  Object.assign(document.body.dataset, {
    rendered: 'true', cores: String(D.cores.length), tasks: String(D.tasks.length),
    events: String(D.events.length), flows: String(D.flows.length),
    taskDeps: String(D.tasks.reduce((n, t) => n + (t.deps || []).length, 0)),
    lanes: String(rows.filter(r => r.kind === 'lane').length),
  });
  if (location.hash === '#selftest') selftest();

  function selftest() {
    const b = canvas.getBoundingClientRect(), out = {};
    const at = (type, x, y, extra) => {
      const Ev = type === 'wheel' ? WheelEvent : MouseEvent;
      (type === 'mousemove' || type === 'mouseup' ? window : canvas).dispatchEvent(
        new Ev(type, Object.assign({clientX: b.left + x, clientY: b.top + y, bubbles: true,
                                    cancelable: true}, extra)));
    };
    const span = () => view.t1 - view.t0;
    out.full = [view.t0, view.t1];
    at('wheel', view.w / 2, AXIS + 5, {deltaY: -400});
    out.zoomed = [view.t0, view.t1];
    const before = view.t0;
    at('mousedown', view.w / 2, AXIS + 5);
    at('mousemove', view.w / 2 + 100, AXIS + 5);
    at('mouseup', view.w / 2 + 100, AXIS + 5);
    out.panned_by = before - view.t0;
    out.pan_expected = 100 / view.w * span();
    fit();
    const i = D.events.findIndex(e => !e[7] && S(e[5]).includes(':'));
    if (i >= 0) {
      const e = D.events[i];
      view.t0 = Math.max(0, e[2] - (e[3] - e[2])); view.t1 = e[3] + (e[3] - e[2]); draw();
      const x = (X(e[2]) + X(e[3])) / 2, yy = laneY(e[0], e[1]);
      canvas.dispatchEvent(new MouseEvent('mousemove',
                                          {clientX: b.left + x, clientY: b.top + yy, bubbles: true}));
      out.tip = tip.textContent; out.tip_shown = tip.style.display === 'block';
      at('mousedown', x, yy); at('mouseup', x, yy);
      out.source_line = src.dataset.line;
      out.source_hit = (src.querySelector('.hit') || {}).textContent || '';
      out.event = {name: S(e[4]), source: S(e[5]), cycles: e[3] - e[2], bytes: e[6]};
      out.selected = selected === i;
    }
    const k = D.tasks.length ? D.tasks[0] : null;
    if (k) {
      fit();
      const r = rows[taskRow[k.core]];
      canvas.dispatchEvent(new MouseEvent('mousemove', {clientX: b.left + (X(k.start) + X(k.end)) / 2,
                                                         clientY: b.top + r.y + r.h / 2, bubbles: true}));
      out.task_tip = tip.textContent;
    }
    fit();
    document.getElementById('tl-selftest').textContent = JSON.stringify(out);
  }
})();
"""


def render_page(data: dict[str, Any]) -> str:
    """The page for ``data`` (``Model.to_json()``)."""
    payload = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    title = html.escape(data["title"])
    us = data["cycles"] / data["clock_hz"] * 1e6 if data["clock_hz"] else 0.0
    summary = (
        f"{html.escape(data['platform'] or 'trace')}: {data['cycles']} cycles ({us:.2f} us), "
        f"{len(data['tasks'])} task(s) on {len(data['cores'])} core(s), {len(data['events'])} instructions"
    )
    bound = f"<div>bound: {html.escape(data['bound'])}</div>" if data.get("bound") else ""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title} - pypto timeline</title>
<style>{CSS}</style></head>
<body data-rendered="false">
<div id="tl-errors" data-count="0"></div>
<script>{_ERRORS}</script>
<header><h1>{title}</h1><div>{summary}</div>{bound}<div id="legend">{legend()}</div></header>
<div id="bar"><button id="zin">zoom in</button><button id="zout">zoom out</button>
<button id="fit">fit</button><span>wheel: zoom · drag: pan · double-click: fit ·
hover: details · click an instruction: its source line</span></div>
<div id="view"><div id="labels"></div><div id="wrap"><canvas id="tl"></canvas></div></div>
<div id="src" data-line=""><div class="where">click an instruction to see its source line</div></div>
<div id="tip"></div>
<pre id="tl-selftest" hidden></pre>
<script type="application/json" id="tl-data">{payload}</script>
<script>{_JS}</script>
</body></html>
"""
