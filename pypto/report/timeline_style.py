"""The timeline page's stylesheet and legend (kept apart from its script)."""

from __future__ import annotations

CSS = """
body{font:13px/1.35 system-ui,sans-serif;margin:0;color:#222;background:#fafafa}
header{padding:8px 14px;background:#fff;border-bottom:1px solid #ddd}
header h1{font-size:16px;margin:0 0 2px}
#bar{padding:6px 14px;display:flex;gap:8px;align-items:center;font-size:12px;color:#555}
#bar button{font:12px system-ui;padding:2px 8px}
#view{display:flex;position:relative;margin:0 14px;border:1px solid #ccc;background:#fff}
#labels{flex:none;width:150px;position:relative;border-right:1px solid #ccc;font-size:11px}
#labels div{position:absolute;left:0;right:0;padding-left:6px;white-space:nowrap;overflow:hidden;
  box-sizing:border-box;border-bottom:1px solid #f0f0f0;line-height:16px}
#labels .head{font-weight:600;background:#f3f3f3}
#labels .task{color:#444}
#labels .group,#labels .head[data-core]{cursor:pointer}
#labels .group{font-weight:600;background:#e8eef6}
#wrap{flex:1;position:relative;overflow:hidden}
canvas{display:block;cursor:grab}
canvas.drag{cursor:grabbing}
#tip{position:fixed;display:none;pointer-events:none;background:#222;color:#fff;font-size:12px;
  padding:5px 8px;border-radius:3px;white-space:pre;z-index:9;max-width:640px}
#src{margin:8px 14px;background:#fff;border:1px solid #ddd;min-height:24px}
#src .where{padding:4px 8px;border-bottom:1px solid #eee;font-size:12px}
#src pre{margin:0;font:12px/17px ui-monospace,monospace;padding:4px 0}
#src pre span{display:block;padding:0 8px}
#src pre span.hit{background:#ffe08a}
#legend span{margin-right:10px}
.sw{display:inline-block;width:10px;height:10px;margin-right:3px;vertical-align:-1px}
#tl-errors{color:#b00;padding:0 14px}
#hotspots{margin:8px 14px}
#hotspots h2{font-size:14px;margin:4px 0}
#hot{border-collapse:collapse;background:#fff;font-size:12px}
#hot td,#hot th{border:1px solid #ddd;padding:2px 8px;text-align:right}
#hot td:first-child,#hot th:first-child{text-align:left;font-family:ui-monospace,monospace}
#hot tbody tr{cursor:pointer}
#hot tbody tr:hover{background:#ffe08a}
"""


def legend() -> str:
    colors = {"MTE2": "#4e79a7", "MTE1": "#76b7b2", "CUBE": "#e15759", "VECTOR": "#59a14f",
              "FIXPIPE": "#d4a017", "MTE3": "#f28e2b", "SCALAR": "#9c8f8a", "flags": "#888"}  # fmt: skip
    return "".join(f'<span><i class="sw" style="background:{c}"></i>{p}</span>' for p, c in colors.items())
