"""The timeline's HTML page: one self-contained file (inline CSS and JS, the data inside).

Layout, top to bottom: a cycle ruler; the task swimlane (one row per core, a bar per task,
blue arrows from each task a task waited for); then the cores grouped by kind (AIC, AIV),
per core a header and one lane per pipe it used, labelled with the share of the run the pipe
was busy; under the lanes, the hot spots by source line. Everything right of the labels is
one canvas; the labels are DOM rows (``.lane`` with ``data-core``/``data-pipe``/``data-events``).
A click on a kind's or a core's header collapses or opens its lanes.

Level of detail: where a lane has more instructions in view than half its width in pixels,
it draws, per pixel column, a bar as tall as the share of those cycles the pipe was busy;
otherwise a box per instruction (and the flag arrows once few enough are in view). The
instructions travel as base64 of packed little-endian integers, one ``<script>`` per column
(``data-type`` u8/u16/u32/f64, the narrowest that holds the column), decoded into typed arrays.

Wheel zooms around the pointer, drag pans, double-click or "fit" shows the whole run; hover
shows the instruction, its source line, cycles and bytes; a click opens the source line in
the panel below (the Python files are embedded). ``body[data-rendered]`` is set after the
first draw with counts in ``data-*`` and ``data-first-paint-ms`` (milliseconds from the start
of the navigation); script errors land in ``#tl-errors``. Opened with ``#selftest``, the page
drives its own handlers with real DOM events and writes what happened to ``#tl-selftest``
(the browser tests read it).
"""

from __future__ import annotations

import base64
import html
import json
from typing import Any

import numpy as np

from pypto.report.timeline_style import CSS, legend

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
  const M = JSON.parse(document.getElementById('tl-data').textContent);
  const COLORS = {MTE2:'#4e79a7', MTE1:'#76b7b2', CUBE:'#e15759', VECTOR:'#59a14f',
                  FIXPIPE:'#d4a017', MTE3:'#f28e2b', SCALAR:'#9c8f8a'};
  const SYNC = ['', 'set_flag', 'wait_flag', 'barrier'];
  const AXIS = 24, TASK_H = 18, HEAD_H = 18, LANE_H = 16;
  const TYPES = {u8: Uint8Array, u16: Uint16Array, u32: Uint32Array, f64: Float64Array};
  function column(name) {
    const el = document.getElementById('c-' + name), bin = atob(el.textContent);
    const bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    return new TYPES[el.dataset.type](bytes.buffer);
  }
  const N = M.events, dur = column('dur'), site = column('site'), bcode = column('bytes');
  const flows = column('flows'), start = new Float64Array(N), dstart = column('dstart');
  M.lanes.forEach(l => {  // starts come as differences within each lane
    let t = 0;
    for (let i = l.off; i < l.off + l.n; i++) { t += dstart[i]; start[i] = t; }
  });
  const laneOf = new Uint32Array(N);
  M.lanes.forEach((l, k) => laneOf.fill(k, l.off, l.off + l.n));
  const kindOf = (i) => M.sites[site[i]][2], nameOf = (i) => M.sites[site[i]][0];
  const sourceOf = (i) => M.sites[site[i]][1], bytesOf = (i) => M.byte_values[bcode[i]];
  const total = M.cycles;
  const wrap = document.getElementById('wrap'), labels = document.getElementById('labels');
  const canvas = document.getElementById('tl'), ctx = canvas.getContext('2d');
  const tip = document.getElementById('tip'), src = document.getElementById('src');
  const kindName = (core) => /^AIC/.test(core) ? 'AIC' : /^AIV/.test(core) ? 'AIV' : 'other';
  const lanesOf = M.cores.map(() => []);
  M.lanes.forEach((l, k) => lanesOf[l.core].push(k));
  const closed = new Set();  // 'kind:AIC', 'core:3' collapsed by the user

  // rows: the task swimlane (one per core), then per kind of core its cores' pipe lanes
  let rows = [], laneRow = {}, taskRow = {}, height = 0;
  function layout() {
    rows = []; laneRow = {}; taskRow = {}; labels.textContent = '';
    let y = AXIS;
    const label = (cls, text, h, data, toggle) => {
      const div = document.createElement('div');
      div.className = cls; div.textContent = text;
      div.style.top = y + 'px'; div.style.height = h + 'px';
      Object.assign(div.dataset, data, {y: String(y)});
      if (toggle) div.addEventListener('click', () => {
        closed.has(toggle) ? closed.delete(toggle) : closed.add(toggle); layout(); draw();
      });
      labels.appendChild(div);
      return div;
    };
    label('head', 'tasks', HEAD_H, {}); y += HEAD_H;
    M.cores.forEach((core, c) => {
      taskRow[c] = rows.length;
      rows.push({kind: 'task', core: c, y: y, h: TASK_H});
      label('task', core, TASK_H, {core: core}); y += TASK_H;
    });
    for (const kind of ['AIC', 'AIV', 'other']) {
      const cores = M.cores.map((core, c) => c)
        .filter(c => kindName(M.cores[c]) === kind && lanesOf[c].length);
      if (!cores.length) continue;
      const open = !closed.has('kind:' + kind);
      label('group', (open ? '\u25be ' : '\u25b8 ') + kind + ' cores (' + cores.length + ')', HEAD_H,
            {group: kind}, 'kind:' + kind);
      y += HEAD_H;
      if (!open) continue;
      for (const c of cores) {
        const coreOpen = !closed.has('core:' + c);
        const mark = coreOpen ? '\u25be ' : '\u25b8 ';
        label('head', mark + M.cores[c], HEAD_H, {core: M.cores[c]}, 'core:' + c);
        y += HEAD_H;
        if (!coreOpen) continue;
        for (const k of lanesOf[c]) {
          const l = M.lanes[k], busy = l.busy / Math.max(1, total);
          laneRow[k] = rows.length;
          rows.push({kind: 'lane', core: c, lane: k, y: y, h: LANE_H});
          label('lane', l.pipe + ' ' + (100 * busy).toFixed(1) + '%', LANE_H,
                {core: M.cores[c], pipe: l.pipe, events: String(l.n), busy: busy.toFixed(4)});
          y += LANE_H;
        }
      }
    }
    height = y + 6;
    labels.style.height = height + 'px';
    canvas.width = view.w; canvas.height = height;
  }

  const view = {t0: 0, t1: total * 1.02, w: 800};
  let selected = -1, drawn = 0;
  const X = (t) => (t - view.t0) / (view.t1 - view.t0) * view.w;
  const T = (x) => view.t0 + x / view.w * (view.t1 - view.t0);
  const kernelColor = (name) => {
    let h = 0; for (const ch of name) h = (h * 31 + ch.charCodeAt(0)) % 360;
    return 'hsl(' + h + ',55%,62%)';
  };
  // the first event of lane l whose start is >= t
  function firstAt(l, t) {
    let lo = l.off, hi = l.off + l.n;
    while (lo < hi) { const m = (lo + hi) >> 1; if (start[m] < t) lo = m + 1; else hi = m; }
    return lo;
  }
  const visible = (l) => [firstAt(l, view.t0 - l.maxdur), firstAt(l, view.t1 + 1)];

  function resize() {
    view.w = Math.max(200, wrap.clientWidth);
    layout(); draw();
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

  // zoomed out: per pixel column the share of its cycles the pipe was busy, as a bar
  function density(r, l, lo, hi) {
    const w = view.w, per = (view.t1 - view.t0) / w, busy = new Float64Array(w + 1);
    for (let i = lo; i < hi; i++) {
      if (kindOf(i)) continue;
      let a = (start[i] - view.t0) / per, b = a + dur[i] / per;
      if (b <= 0 || a >= w) continue;
      a = Math.max(0, a); b = Math.min(w, b);
      let px = Math.floor(a);
      while (px + 1 <= b) { busy[px] += px + 1 - a; a = ++px; }
      if (b > a) busy[px] += b - a;
    }
    ctx.fillStyle = COLORS[l.pipe]; ctx.beginPath();
    const full = r.h - 2;
    for (let px = 0; px < w; px++) {
      if (busy[px] <= 0) continue;
      const h = Math.max(1, Math.round(Math.min(1, busy[px]) * full));
      ctx.rect(px, r.y + 1 + full - h, 1, h);
    }
    ctx.fill();
  }

  function draw() {
    drawn = 0;
    ctx.clearRect(0, 0, view.w, height);
    rows.forEach((r, i) => { if (i % 2) { ctx.fillStyle = '#fbfbfb'; ctx.fillRect(0, r.y, view.w, r.h); } });
    ruler();
    ctx.font = '11px system-ui'; ctx.textBaseline = 'middle';
    M.tasks.forEach(t => {
      const r = rows[taskRow[t.core]], x0 = X(t.start), x1 = X(t.end);
      if (box(x0, x1, r.y + 2, r.h - 4, kernelColor(t.kernel))) {
        drawn++;
        if (x1 - x0 > 40) {
          ctx.fillStyle = '#111'; ctx.fillText(t.kernel, Math.max(x0, 0) + 3, r.y + r.h / 2);
        }
      }
    });
    let inView = 0, dense = 0;
    for (const r of rows) {
      if (r.kind !== 'lane') continue;
      const l = M.lanes[r.lane], [lo, hi] = visible(l);
      inView += hi - lo;
      if (hi - lo > view.w / 2) { density(r, l, lo, hi); dense++; drawn += hi - lo; continue; }
      for (const sync of [0, 1]) {  // operations, then flags: one fill colour set per pass
        const inset = sync ? 5 : 2;
        ctx.fillStyle = sync ? '#888' : COLORS[l.pipe];
        for (let i = lo; i < hi; i++) {
          if ((kindOf(i) !== 0) !== !!sync) continue;
          const a = Math.max(X(start[i]), -2), b = Math.min(X(start[i] + dur[i]), view.w + 2);
          if (b < 0 || a > view.w) continue;
          ctx.fillRect(a, r.y + inset, Math.max(1, b - a), r.h - 2 * inset);
          drawn++;
        }
      }
    }
    drawFlows(inView);
    taskFlows();
    if (selected >= 0 && laneRow[laneOf[selected]] !== undefined) {
      const r = rows[laneRow[laneOf[selected]]], i = selected;
      ctx.strokeStyle = '#000'; ctx.lineWidth = 2;
      ctx.strokeRect(X(start[i]) - 1, r.y + 1, Math.max(2, X(start[i] + dur[i]) - X(start[i])) + 2, r.h - 2);
      ctx.lineWidth = 1;
    }
    Object.assign(document.body.dataset, {drawn: String(drawn), denseLanes: String(dense),
      view: Math.round(view.t0) + ',' + Math.round(view.t1)});
  }

  function drawFlows(inView) {  // only once few enough instructions are in view to tell apart
    let n = 0;
    if (inView <= 20000) {
      const lines = new Path2D(), heads = new Path2D();  // one stroke and one fill for all
      for (let f = 0; f < flows.length && n < 5000; f += 2) {
        const s = flows[f], w = flows[f + 1], rs = laneRow[laneOf[s]], rw = laneRow[laneOf[w]];
        if (rs === undefined || rw === undefined) continue;
        const x0 = X(start[s] + dur[s]), x1 = X(start[w]);
        if ((x0 < 0 && x1 < 0) || (x0 > view.w && x1 > view.w)) continue;
        n++;
        const y0 = rows[rs].y + LANE_H / 2, y1 = rows[rw].y + LANE_H / 2;
        lines.moveTo(x0, y0); lines.lineTo(x1, y1);
        const ang = Math.atan2(y1 - y0, x1 - x0);
        heads.moveTo(x1, y1);
        heads.lineTo(x1 - 6 * Math.cos(ang - 0.4), y1 - 6 * Math.sin(ang - 0.4));
        heads.lineTo(x1 - 6 * Math.cos(ang + 0.4), y1 - 6 * Math.sin(ang + 0.4));
        heads.closePath();
      }
      ctx.strokeStyle = 'rgba(200,30,30,.75)'; ctx.fillStyle = 'rgba(200,30,30,.75)';
      ctx.stroke(lines); ctx.fill(heads);
    }
    document.body.dataset.flowsDrawn = String(n);
  }

  function taskFlows() {  // a task's dependencies: from each dep's end to the task's start
    ctx.strokeStyle = 'rgba(40,60,160,.8)'; ctx.fillStyle = 'rgba(40,60,160,.8)';
    let n = 0;
    M.tasks.forEach(t => (t.deps || []).forEach(d => {
      const from = M.tasks[d], a = rows[taskRow[from.core]], b = rows[taskRow[t.core]];
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
      const i = M.tasks.findIndex(k => k.core === r.core && k.start - tol <= t && t <= k.end + tol);
      return i < 0 ? null : {task: i};
    }
    const l = M.lanes[r.lane], lo = firstAt(l, t - l.maxdur - tol), hi = firstAt(l, t + tol + 1);
    for (let i = hi - 1; i >= lo; i--) {
      if (start[i] - tol <= t && t <= start[i] + dur[i] + tol) return {event: i};
    }
    return null;
  }

  function describe(h) {
    if (h.task !== undefined) {
      const t = M.tasks[h.task];
      return 'task ' + t.kernel + ' on ' + M.cores[t.core] + '\n' + t.start + ' - ' + t.end +
             ' (' + (t.end - t.start) + ' cycles)';
    }
    const i = h.event, l = M.lanes[laneOf[i]], kind = kindOf(i);
    const what = kind ? SYNC[kind] + ' ' + nameOf(i) : nameOf(i);
    return what + '\n' + M.cores[l.core] + ' ' + l.pipe + '\nsource ' + (sourceOf(i) || '-') +
           '\ncycles ' + dur[i] + '  (' + start[i] + ' - ' + (start[i] + dur[i]) + ')' +
           '\nbytes ' + bytesOf(i);
  }

  function showSource(loc, what) {
    const parts = loc.split(':');
    src.innerHTML = '';
    const where = document.createElement('div'); where.className = 'where';
    if (parts.length < 3 || !M.sources[parts.slice(0, -2).join(':')]) {
      where.textContent = what + ': no source line recorded';
      src.appendChild(where); src.dataset.line = ''; return;
    }
    const file = parts.slice(0, -2).join(':'), line = Number(parts[parts.length - 2]);
    const link = document.createElement('a');
    link.href = 'file://' + file; link.textContent = loc;
    where.append(document.createTextNode(what + ' at '), link);
    const pre = document.createElement('pre'), lines = M.sources[file];
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
      if (h && h.event !== undefined) {
        selected = h.event; showSource(sourceOf(h.event), nameOf(h.event)); draw();
      }
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
  document.querySelectorAll('#hot tr[data-source]').forEach(tr => tr.addEventListener('click',
    () => showSource(tr.dataset.source, tr.dataset.pipe)));
  window.addEventListener('resize', resize);
  resize();
  Object.assign(document.body.dataset, {
    rendered: 'true', cores: String(M.cores.length), tasks: String(M.tasks.length),
    events: String(N), flows: String(flows.length / 2),
    taskDeps: String(M.tasks.reduce((n, t) => n + (t.deps || []).length, 0)),
    lanes: String(rows.filter(r => r.kind === 'lane').length),
    firstPaintMs: performance.now().toFixed(0),
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
    out.dense_full = Number(document.body.dataset.denseLanes);
    let t = performance.now();
    at('wheel', view.w / 2, AXIS + 5, {deltaY: -400});
    out.zoomed = [view.t0, view.t1];
    out.zoom_ms = performance.now() - t;
    const before = view.t0;
    t = performance.now();
    at('mousedown', view.w / 2, AXIS + 5);
    at('mousemove', view.w / 2 + 100, AXIS + 5);
    at('mouseup', view.w / 2 + 100, AXIS + 5);
    out.pan_ms = performance.now() - t;
    out.panned_by = before - view.t0;
    out.pan_expected = 100 / view.w * span();
    fit();
    let i = -1;
    for (let k = 0; k < N && i < 0; k++) {
      if (!kindOf(k) && sourceOf(k).includes(':') && laneRow[laneOf[k]] !== undefined) i = k;
    }
    if (i >= 0) {
      const d = Math.max(1, dur[i]);
      view.t0 = Math.max(0, start[i] - d); view.t1 = start[i] + 2 * d; draw();
      out.dense_zoomed = Number(document.body.dataset.denseLanes);
      const x = (X(start[i]) + X(start[i] + dur[i])) / 2, yy = rows[laneRow[laneOf[i]]].y + LANE_H / 2;
      canvas.dispatchEvent(new MouseEvent('mousemove',
                                          {clientX: b.left + x, clientY: b.top + yy, bubbles: true}));
      out.tip = tip.textContent; out.tip_shown = tip.style.display === 'block';
      at('mousedown', x, yy); at('mouseup', x, yy);
      out.source_line = src.dataset.line;
      out.source_hit = (src.querySelector('.hit') || {}).textContent || '';
      out.event = {name: nameOf(i), source: sourceOf(i), cycles: dur[i], bytes: bytesOf(i)};
      out.selected = selected === i;
    }
    const k = M.tasks.length ? M.tasks[0] : null;
    if (k) {
      fit();
      const r = rows[taskRow[k.core]];
      canvas.dispatchEvent(new MouseEvent('mousemove', {clientX: b.left + (X(k.start) + X(k.end)) / 2,
                                                         clientY: b.top + r.y + r.h / 2, bubbles: true}));
      out.task_tip = tip.textContent;
    }
    const group = labels.querySelector('.group');
    if (group) {
      const open = rows.filter(r => r.kind === 'lane').length;
      group.click();
      out.collapsed_lanes = [open, rows.filter(r => r.kind === 'lane').length];
      labels.querySelector('.group').click();
    }
    fit();
    document.getElementById('tl-selftest').textContent = JSON.stringify(out);
  }
})();
"""


def _packed(values: np.ndarray) -> tuple[str, str]:
    """(type, base64) of a non-negative integer column in its narrowest little-endian type."""
    top = int(values.max()) if len(values) else 0
    for name, dtype in (("u8", "<u1"), ("u16", "<u2"), ("u32", "<u4")):
        if top < 1 << (8 * np.dtype(dtype).itemsize):
            return name, base64.b64encode(values.astype(dtype).tobytes()).decode()
    return "f64", base64.b64encode(values.astype("<f8").tobytes()).decode()


def _hot_table(hot: list[dict[str, Any]]) -> str:
    if not hot:
        return ""
    rows = "".join(
        f'<tr data-source="{html.escape(r["source"])}" data-pipe="{r["pipe"]}"><td>{html.escape(r["source"])}'
        f"</td><td>{r['pipe']}</td><td>{r['cycles']:,}</td><td>{100 * r['share']:.1f}%</td>"
        f"<td>{r['count']:,}</td></tr>"
        for r in hot
    )
    return (
        '<h2>hot spots by source line</h2><table id="hot"><thead><tr><th>source line</th><th>pipe</th>'
        f"<th>cycles</th><th>share</th><th>instructions</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def render_page(meta: dict[str, Any], columns: dict[str, np.ndarray]) -> str:
    """The page for ``Model.to_page()``: its metadata as JSON and its packed columns."""
    payload = json.dumps(meta, separators=(",", ":")).replace("</", "<\\/")
    packed = "".join(
        '<script type="application/octet-stream" id="c-{}" data-type="{}">{}</script>\n'.format(
            name, *_packed(col)
        )
        for name, col in columns.items()
    )
    title = html.escape(meta["title"])
    us = meta["cycles"] / meta["clock_hz"] * 1e6 if meta["clock_hz"] else 0.0
    summary = (
        f"{html.escape(meta['platform'] or 'trace')}: {meta['cycles']} cycles ({us:.2f} us), "
        f"{len(meta['tasks'])} task(s) on {len(meta['cores'])} core(s), {meta['events']} instructions"
    )
    bound = f"<div>bound: {html.escape(meta['bound'])}</div>" if meta.get("bound") else ""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title} - pypto timeline</title>
<style>{CSS}</style></head>
<body data-rendered="false">
<div id="tl-errors" data-count="0"></div>
<script>{_ERRORS}</script>
<header><h1>{title}</h1><div>{summary}</div>{bound}<div id="legend">{legend()}</div></header>
<div id="bar"><button id="zin">zoom in</button><button id="zout">zoom out</button>
<button id="fit">fit</button><span>wheel: zoom · drag: pan · double-click: fit ·
hover: details · click an instruction: its source line · click a core or kind: fold its lanes</span></div>
<div id="view"><div id="labels"></div><div id="wrap"><canvas id="tl"></canvas></div></div>
<div id="src" data-line=""><div class="where">click an instruction to see its source line</div></div>
<div id="hotspots">{_hot_table(meta["hot"])}</div>
<div id="tip"></div>
<pre id="tl-selftest" hidden></pre>
<script type="application/json" id="tl-data">{payload}</script>
{packed}<script>{_JS}</script>
</body></html>
"""
