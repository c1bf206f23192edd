"""The report page: one self-contained HTML file drawn with plotly from overview.Overview.

plotly.js is inlined once (nothing is fetched when the page is opened: no CDN, no MathJax, no
fonts), gzip-compressed and in base64: 4.8 MB of script is some 2.0 MB of page. The page
inflates it with the browser's own DecompressionStream('gzip') (Chromium 80, Firefox 113,
Safari 16.4 and later), runs it, then draws each chart from its figure's JSON; a browser without
it gets a line saying so instead of the charts (the tables are plain HTML and need no script).
Each chart is a plotly figure, zoomable. Time series are written as plotly's typed arrays
(base64) with `x0`/`dx`, so a chart costs a few bytes a bucket. Where the rows the page lists
(histories, the timeline around an instant, a fleet's tables) would take it past PAGE_LIMIT, they
are cut, latest kept, until the page fits, and the page says so.
"""

from __future__ import annotations

import base64
import functools
import gzip
import html
import json
import sys
from array import array
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import plotly.graph_objects as go
import plotly.io as pio
from plotly.offline import get_plotlyjs
from plotly.subplots import make_subplots

from .overview import OTHERS, Around, Event, KeyFigures, Overview, Series

#: the page's size limit in bytes (issue 28: under 5 MB for a 4M-event capture, whatever its shape)
PAGE_LIMIT = 4_990_000
#: (history events per key, events around the instant) tried in turn until the page fits
DETAIL_STEPS = [(20, 300), (10, 150), (5, 60), (0, 0)]
#: per-table rows listed at each of those steps (a fleet has hosts x tables of them)
TABLE_ROWS = [200, 100, 50, 20]
FIELDS_WIDTH = 120
OP_DASH = {"SET": "solid", "DEL": "dot", "notification": "dashdot"}
OP_SYMBOL = {"SET": "circle", "DEL": "x", "notification": "diamond"}
OP_COLOR = {"SET": "#1f77b4", "DEL": "#d62728", "notification": "#2ca02c"}
PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
           "#bcbd22", "#17becf", "#393b79", "#637939"]
#: the chart divs, for a reader of the page (tests, scripts)
DIV_CHANGES, DIV_KEYS, DIV_FLAPS, DIV_AROUND = "changes", "top-keys", "flapping-keys", "around"

_STYLE = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:1.5em auto;max-width:1400px;color:#222;
padding:0 1em}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:.85em;margin:.5em 0}
th,td{border:1px solid #ddd;padding:2px 6px;text-align:left;vertical-align:top}
td.n,th.n{text-align:right}td{white-space:nowrap}td.w{white-space:normal}th{background:#f4f4f4}
code,.mono{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.95em}
details>summary{cursor:pointer;color:#1f5fa8}details[open]{background:#fafcff}
.note{color:#666;font-size:.85em}
"""

#: the chart library's script element, holding it gzip-compressed in base64
PLOTLY_ID = "swssd-plotly"
#: the class of the script elements that hold a chart's figure (data-div names its div)
FIGURE_CLASS = "swssd-figure"
CONFIG = {"displaylogo": False, "responsive": True}

# Inflates plotly.js, runs it as an inline script (nothing fetched), draws every figure, hooks a
# click on a key's bar to its history; then marks <body data-drawn> ("yes", or the error's text,
# which the page also shows), for a reader that waits for the charts (the browser test).
_LOADER = """
(async function(){
const done=function(what){document.body.dataset.drawn=what;};
try{
if(typeof DecompressionStream==='undefined')throw new Error('this browser has no DecompressionStream');
const packed=atob(document.getElementById('%(plotly)s').textContent.trim());
const bytes=new Uint8Array(packed.length);for(let i=0;i<packed.length;i++)bytes[i]=packed.charCodeAt(i);
const text=await new Response(new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'))).text();
const s=document.createElement('script');s.textContent=text;document.head.appendChild(s);
for(const el of document.querySelectorAll('script.%(figure)s')){
const fig=JSON.parse(el.textContent);await Plotly.newPlot(el.dataset.div,fig.data,fig.layout,%(config)s);}
for(const id of ['%(keys)s','%(flaps)s']){const gd=document.getElementById(id);if(!gd||!gd.on)continue;
gd.on('plotly_click',function(ev){const el=document.getElementById(ev.points[0].customdata);
if(el){el.open=true;el.scrollIntoView({behavior:'smooth',block:'center'});}});}
done('yes');
}catch(e){
for(const el of document.querySelectorAll('script.%(figure)s')){const d=document.getElementById(el.dataset.div);
if(d)d.textContent='The charts could not be drawn here ('+e.message+'): '
+'open the page in a recent Chromium, Firefox or Safari.';}
done(String(e.message||e));console.error(e);}
})();
"""
_LOADER_NAMES = {"plotly": PLOTLY_ID, "figure": FIGURE_CLASS, "config": json.dumps(CONFIG), "keys": DIV_KEYS,
                 "flaps": DIV_FLAPS}


def iso(us: int) -> str:
    """UTC with microseconds, as the capture writes it."""
    return datetime.fromtimestamp(us / 1_000_000, UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{us % 1_000_000:06d}Z"


def _plot_time(us: int) -> str:
    """An instant as plotly's date axes read it (no zone: the axes are UTC)."""
    return datetime.fromtimestamp(us // 1_000_000, UTC).strftime("%Y-%m-%d %H:%M:%S.") + f"{us % 1_000_000:06d}"


def duration(us: int) -> str:
    """A bucket or window length as a person writes it (200 ms, 15 s, 1 h)."""
    for unit, size in (("d", 86_400_000_000), ("h", 3_600_000_000), ("min", 60_000_000), ("s", 1_000_000),
                       ("ms", 1_000)):
        if us >= size and us % size == 0:
            return f"{us // size} {unit}"
    return f"{us / 1_000_000:g} s" if us >= 1_000_000 else f"{us} µs"


def typed(counts: Sequence[int]) -> dict[str, str]:
    """A plotly typed array (base64 of little-endian unsigned integers, the narrowest that fits)."""
    top = max(counts, default=0)
    code, dtype = ("B", "u1") if top < 1 << 8 else ("H", "u2") if top < 1 << 16 else ("I", "u4")
    data = array(code, counts)
    if sys.byteorder == "big":
        data.byteswap()
    return {"dtype": dtype, "bdata": base64.b64encode(data.tobytes()).decode("ascii")}


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _cut(text: str, width: int = FIELDS_WIDTH) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def fields_text(fvs: Sequence[tuple[str, str]]) -> str:
    """field=value pairs in the record's order, as `history` prints them."""
    return " ".join(f"{f}={v}" for f, v in fvs)


def _table(headers: Sequence[str], rows: Sequence[Sequence[object]], numeric: set[int] | None = None) -> str:
    numeric = numeric or set()
    head = "".join(f'<th class="n">{_e(h)}</th>' if i in numeric else f"<th>{_e(h)}</th>"
                   for i, h in enumerate(headers))
    body = "".join(
        "<tr>" + "".join(
            (f'<td class="n">{_e(c)}</td>' if i in numeric else f"<td>{c}</td>" if isinstance(c, _Raw)
             else f"<td>{_e(c)}</td>") for i, c in enumerate(row)) + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


class _Raw(str):
    """HTML already escaped (a cell holding markup)."""


#: plotly's default template is some 7 kB of JSON in every figure; this one says what the page needs
TEMPLATE = {"layout": {"font": {"family": "system-ui, sans-serif", "size": 12}, "paper_bgcolor": "white",
                       "plot_bgcolor": "white", "colorway": PALETTE,
                       "xaxis": {"gridcolor": "#eee", "linecolor": "#999", "zeroline": False},
                       "yaxis": {"gridcolor": "#eee", "linecolor": "#999", "zerolinecolor": "#ccc"}}}


def _figure_html(fig: go.Figure, div_id: str) -> str:
    """The chart's div and its figure as JSON, which the page's loader draws once plotly.js is inflated."""
    fig.layout.template = TEMPLATE  # assigned, not updated: nothing of the default is kept
    height = f"{fig.layout.height}px" if fig.layout.height else "100%"
    figure = str(pio.to_json(fig, validate=False)).replace("</", "<\\/")
    return (f'<div id="{div_id}" class="plotly-graph-div" style="height:{height};width:100%"></div>'
            f'<script type="application/json" class="{FIGURE_CLASS}" data-div="{div_id}">{figure}</script>')


@functools.cache
def packed_plotlyjs() -> str:
    """plotly.js, gzip-compressed (the same bytes on every run) and in base64, as the page carries it."""
    return base64.b64encode(gzip.compress(get_plotlyjs().encode(), compresslevel=9, mtime=0)).decode("ascii")


def _colors(names: Sequence[str]) -> dict[str, str]:
    return {n: "#999999" if n in OTHERS.values() else PALETTE[i % len(PALETTE)] for i, n in enumerate(names)}


def _series_traces(fig: go.Figure, series: list[Series], row: int, start: str, step_ms: float,
                   step_text: str, legend: str) -> None:
    names = list(dict.fromkeys(s.name for s in series))
    colors = _colors(names)
    for s in series:
        fig.add_trace(go.Scatter(
            name=f"{s.name} {s.op}", legendgroup=f"{legend}:{s.name}", legend=legend,
            x0=start, dx=step_ms, y=typed(s.counts), mode="lines", line_shape="hv",
            line={"color": colors[s.name], "dash": OP_DASH.get(s.op, "solid"), "width": 1.5},
            hovertemplate=f"%{{x}}<br>%{{y}} {_e(s.op)} in {_e(s.name)} per {step_text}<extra></extra>",
        ), row=row, col=1)


def changes_figure(ov: Overview) -> go.Figure | None:
    """Events over time per table (and per host when several), SET solid, DEL dotted; one x axis."""
    tl = ov.timeline
    if tl is None:
        return None
    several = len(ov.hosts) > 1
    fig = make_subplots(
        rows=2 if several else 1, cols=1, shared_xaxes=True, vertical_spacing=0.08,
        subplot_titles=["per table", "per host"] if several else None,
    )
    start, step_ms, step_text = _plot_time(tl.start_us), tl.step_us / 1000, duration(tl.step_us)
    _series_traces(fig, tl.per_table, 1, start, step_ms, step_text, "legend")
    if several:
        _series_traces(fig, tl.per_host, 2, start, step_ms, step_text, "legend2")
    fig.update_xaxes(type="date")
    fig.update_yaxes(title_text=f"events / {step_text}", rangemode="tozero")
    layout: dict[str, Any] = {
        "height": 700 if several else 420, "margin": {"l": 60, "r": 20, "t": 40, "b": 40},
        "hovermode": "closest",
        "legend": {"title": {"text": "tables (click to hide)"}, "y": 1, "yanchor": "top", "x": 1.02},
    }
    if several:
        layout["legend"]["y"], layout["legend"]["yanchor"] = 1.0, "top"
        layout["legend2"] = {"title": {"text": "hosts"}, "y": 0.45, "yanchor": "top", "x": 1.02}
    fig.update_layout(**layout)
    return fig


def _key_label(k: KeyFigures, hosts: int) -> str:
    label = f"{k.table} {k.key}"
    return _cut(f"{k.host} · {label}" if hosts > 1 else label, 60)


def keys_figure(keys: list[KeyFigures], parts: list[tuple[str, str, str]], hosts: int, prefix: str) -> go.Figure:
    """Horizontal stacked bars, the first key on top; a click opens its history below the chart."""
    labels = [f"{i + 1}. {_key_label(k, hosts)}" for i, k in enumerate(keys)]
    fig = go.Figure()
    for attr, name, color in parts:
        fig.add_trace(go.Bar(
            name=name, orientation="h", y=labels, x=[getattr(k, attr) for k in keys], marker_color=color,
            customdata=[f"{prefix}-{i}" for i in range(len(keys))],
            hovertemplate=f"%{{y}}<br>%{{x}} {name}<extra>click: history</extra>",
        ))
    fig.update_layout(barmode="stack", height=max(200, 60 + 22 * len(keys)),
                      margin={"l": 20, "r": 20, "t": 20, "b": 30},
                      yaxis={"autorange": "reversed", "automargin": True}, legend={"orientation": "h"})
    return fig


def _op(e: Event) -> str:
    dead = (" (dead letter)" + (f" reason: {e.reason}" if e.reason else "")) if e.dead_letter else ""
    return e.op + (f" ({e.kind})" if e.kind != "state" else "") + dead


def _dead_letters(ov: Overview) -> str:
    """The dead-lettered tasks with the reason each was given up, in replay order."""
    if not ov.dead_letters:
        return "<p>None.</p>"
    shown = len(ov.dead_letters)
    note = (f'<p class="note">{ov.dead_letters_total} tasks the daemon gave up on'
            + (f"; the first {shown} listed (all: <code>swssd replay history</code>)" if shown < ov.dead_letters_total
               else "") + ". On the switch, <code>swssd dead-letters list</code> shows those it still keeps.</p>")
    rows = [(iso(e.us), e.host, e.db, e.table, _Raw(f"<span class=mono>{_e(e.key)}</span>"),
             e.op + (f" ({e.kind})" if e.kind != "state" else ""), e.reason or "", _cut(fields_text(e.fvs)))
            for e in ov.dead_letters]
    return note + _table(["ts", "host", "db", "table", "key", "op", "reason", "fields"], rows)


def _history(k: KeyFigures, prefix: str, i: int, shown: int) -> str:
    events = k.history[-shown:] if shown else []
    rows = [(iso(e.us), _op(e), _cut(fields_text(e.fvs))) for e in events]
    told = f"history: the latest {len(events)} of {k.events} events" if events else (
        f"history: {k.events} events (none listed: the page's size limit)")
    more = (f'<p class="note">all of them: <code>swssd replay history INPUT... --only-host {_e(k.host)} '
            f"--table {_e(k.table)} --key {_e(k.key)}</code></p>")
    table = _table(["ts", "op", "fields"], rows) if rows else ""
    return f'<details id="{prefix}-{i}"><summary>{told}</summary>{table}{more}</details>'


def _keys_table(keys: list[KeyFigures], prefix: str, shown: int) -> str:
    rows = [
        (i + 1, k.host, k.db, k.table, _Raw(f"<span class=mono>{_e(k.key)}</span>"), k.events, k.sets, k.dels,
         k.dead_letters, k.alternations, k.reversions, k.flaps, iso(k.first_us), iso(k.last_us),
         _Raw(_history(k, prefix, i, shown)))
        for i, k in enumerate(keys)
    ]
    return _table(["#", "host", "db", "table", "key", "events", "SET", "DEL", "dead", "SET/DEL alt.",
                   "reversions", "flaps", "first", "last", "history"], rows,
                  numeric={0, 5, 6, 7, 8, 9, 10, 11})


def around_figure(a: Around, events: list[Event], hosts: int) -> go.Figure:
    """Every event of the window as a point: time across, host and table down, one colour per op class."""
    fig = go.Figure()
    by_op: dict[str, list[Event]] = {}
    for e in events:
        by_op.setdefault("notification" if e.kind == "notification" else e.op, []).append(e)
    for op, evs in by_op.items():
        fig.add_trace(go.Scatter(
            name=op, mode="markers", x=[_plot_time(e.us) for e in evs],
            y=[f"{e.host} · {e.table}" if hosts > 1 else e.table for e in evs],
            text=[_cut(f"{e.key}<br>{_op(e)} {fields_text(e.fvs)}", 160) for e in evs],
            marker={"symbol": OP_SYMBOL.get(op, "diamond"), "color": OP_COLOR.get(op, "#2ca02c"), "size": 9},
            hovertemplate="%{x}<br>%{y}<br>%{text}<extra></extra>",
        ))
    at = _plot_time(a.at_us)
    fig.add_shape(type="line", x0=at, x1=at, yref="paper", y0=0, y1=1, line={"color": "#444", "dash": "dash"})
    fig.update_layout(
        margin={"l": 20, "r": 20, "t": 20, "b": 40}, hovermode="closest",
        xaxis={"type": "date", "range": [_plot_time(a.at_us - a.window_us), _plot_time(a.at_us + a.window_us)]},
        yaxis={"automargin": True, "type": "category", "categoryorder": "category descending"},
    )
    fig.update_layout(height=max(260, 120 + 26 * len({(e.host, e.table) for e in events})))
    return fig


def _summary(ov: Overview, title: dict[str, str]) -> str:
    c = ov.counts
    where = (f"written to <code>{_e(ov.rejects_path)}</code>" if ov.rejects_path else "none written")
    reasons = _table(["reason", "lines"], ov.reject_reasons, numeric={1}) if ov.reject_reasons else ""
    rows = [
        ("lines read", c.get("lines", 0)), ("events", c.get("events", 0)),
        ("'recording started' markers", c.get("markers", 0)), ("blank lines", c.get("blank", 0)),
        ("rejected lines", c.get("rejects", 0)), ("events after the filters", ov.events),
        ("hosts", len(ov.hosts)), ("keys (tables' entries)", ov.keys_total),
    ]
    span = (f"from {iso(ov.first_us)} to {iso(ov.last_us)}" if ov.first_us is not None and ov.last_us is not None
            else "no events")
    sources = _table(["file", "events"], [(_Raw(f"<span class=mono>{_e(s)}</span>"), n) for s, n in ov.sources[:50]],
                     numeric={1})
    more = f'<p class="note">and {len(ov.sources) - 50} more files</p>' if len(ov.sources) > 50 else ""
    given = "".join(f"<tr><th>{_e(k)}</th><td class=mono>{_e(v)}</td></tr>" for k, v in title.items())
    return (
        f"<table>{given}</table>"
        f"<p>Events {span}.</p>"
        + _table(["", "count"], rows, numeric={1})
        + f"<p>Rejected lines: {c.get('rejects', 0)}, {where}.</p>{reasons}"
        + f"<details><summary>events per input file ({len(ov.sources)} files)</summary>{sources}{more}</details>"
    )


def _tables(ov: Overview, most: int) -> str:
    rows = sorted(ov.tables, key=lambda r: (-r["events"], r["host"], r["db"], r["table"]))
    shown = rows[:most]
    body = _table(
        ["host", "db", "table", "events", "SET", "DEL", "notifications", "dead letters", "keys", "first", "last"],
        [(r["host"], r["db"], r["table"], r["events"], r["sets"], r["dels"], r["notifications"], r["dead_letters"],
          r["distinct_keys"], iso(r["first_us"]), iso(r["last_us"])) for r in shown],
        numeric={3, 4, 5, 6, 7, 8},
    )
    more = (f'<p class="note">the {most} busiest of {len(rows)}; every one is in the '
            "report's Parquet output (report/tables)</p>") if len(rows) > most else ""
    return body + more


def data_block(ov: Overview, history: int, around: int, table_rows: int) -> dict[str, Any]:
    """The page's figures as JSON (<script id="swssd-report-data">), for a program that reads the page."""
    def key(k: KeyFigures) -> dict[str, Any]:
        return {"host": k.host, "db": k.db, "table": k.table, "key": k.key, "events": k.events, "sets": k.sets,
                "dels": k.dels, "dead_letters": k.dead_letters, "alternations": k.alternations,
                "reversions": k.reversions, "flaps": k.flaps, "history_shown": min(history, len(k.history))}

    shown = sorted(ov.tables, key=lambda r: (-r["events"], r["host"], r["db"], r["table"]))[:table_rows]
    return {
        "counts": ov.counts, "rejects_path": ov.rejects_path, "reject_reasons": dict(ov.reject_reasons),
        "events": ov.events, "hosts": ov.hosts, "keys": ov.keys_total, "flapping_keys": ov.flapping_total,
        "tables": [{k: r[k] for k in ("host", "db", "table", "events", "sets", "dels", "notifications",
                                      "dead_letters", "distinct_keys")} for r in shown],
        "tables_total": len(ov.tables),
        "top_keys": [key(k) for k in ov.top_keys],
        "flapping": [key(k) for k in ov.flapping],
        "around": None if ov.around is None else {
            "at": iso(ov.around.at_us), "window_us": ov.around.window_us, "events": ov.around.total,
            "shown": min(around, len(ov.around.events))},
        "bucket_us": None if ov.timeline is None else ov.timeline.step_us,
        "dead_letters": [{"ts": iso(e.us), "host": e.host, "db": e.db, "table": e.table, "key": e.key, "op": e.op,
                          "reason": e.reason} for e in ov.dead_letters],
        "dead_letters_total": ov.dead_letters_total,
    }


def _page(ov: Overview, title: dict[str, str], history: int, around_n: int, table_rows: int, cut: bool) -> str:
    parts = ["<h1>swssd replay report</h1>",
             f'<p class="note">written {iso(int(datetime.now(UTC).timestamp() * 1_000_000))[:19]}Z'
             " by swssd replay report; times are UTC</p>"]
    if cut:
        parts.append('<p class="note">Some lists were shortened to keep this page under '
                      f"{PAGE_LIMIT / 1e6:g} MB (histories: {history} events a key, the timeline: {around_n} "
                      f"events, per table: {table_rows} rows).</p>")
    parts.append('<h2 id="summary-h">Input</h2>' + _summary(ov, title))
    fig = changes_figure(ov)
    parts.append('<h2>Changes over time</h2><p class="note">SET solid, DEL dotted, notifications dash-dot; drag to '
                 "zoom, double-click to zoom out; click a legend entry to hide it.</p>"
                 + (_figure_html(fig, DIV_CHANGES) if fig is not None else "<p>No events.</p>"))
    parts.append("<h2>Per table</h2>" + _tables(ov, table_rows))
    parts.append('<h2 id="dead-letters-h">Dead letters</h2>' + _dead_letters(ov))
    hosts = len(ov.hosts)
    parts.append(f"<h2>Most changed keys</h2><p class=note>{ov.keys_total} keys; the {len(ov.top_keys)} with the "
                 "most events (SET and DEL, as <code>stats</code> counts them). Click a bar for its history.</p>")
    if ov.top_keys:
        parts.append(_figure_html(keys_figure(ov.top_keys, [("sets", "SET", OP_COLOR["SET"]),
                                                            ("dels", "DEL", OP_COLOR["DEL"])], hosts, "churn"),
                                  DIV_KEYS))
        parts.append(_keys_table(ov.top_keys, "churn", history))
    parts.append(
        f"<h2>Flapping keys</h2><p class=note>{ov.flapping_total} keys flap. Flaps = SET/DEL alternations "
        "(consecutive records, one SET and one DEL) + reversions (a field set back to the value it had before "
        "its last change: A→B→A), over records not dead-lettered. Click a bar for its history.</p>")
    if ov.flapping:
        parts.append(_figure_html(keys_figure(ov.flapping, [("alternations", "SET/DEL alternations", "#9467bd"),
                                                            ("reversions", "value reversions", "#ff7f0e")],
                                              hosts, "flap"), DIV_FLAPS))
        parts.append(_keys_table(ov.flapping, "flap", history))
    a = ov.around
    if a is not None:
        events = a.events[:around_n]
        parts.append(f"<h2>Around {iso(a.at_us)} (± {duration(a.window_us)})</h2>"
                     f"<p class=note>{a.total} events on every host in the window"
                     + (f"; the first {len(events)} listed" if len(events) < a.total else "") + ".</p>")
        if events:
            parts.append(_figure_html(around_figure(a, events, hosts), DIV_AROUND))
            parts.append(_table(["ts", "host", "db", "table", "key", "op", "fields"],
                                [(iso(e.us), e.host, e.db, e.table, e.key, _op(e), _cut(fields_text(e.fvs)))
                                 for e in events]))
    data = json.dumps(data_block(ov, history, around_n, table_rows), separators=(",", ":")).replace("</", "<\\/")
    return (
        "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8><title>swssd replay report</title>"
        f'<meta name=viewport content="width=device-width"><style>{_STYLE}</style>'
        "</head><body>"
        + "\n".join(parts)
        + f'<script type="application/json" id="swssd-report-data">{data}</script>'
        + f'<script type="application/gzip;base64" id="{PLOTLY_ID}">{packed_plotlyjs()}</script>'
        + f"<script>{_LOADER % _LOADER_NAMES}</script></body></html>\n"
    )


def render(ov: Overview, title: dict[str, str], limit: int = PAGE_LIMIT) -> str:
    """The page, with as much detail as fits in `limit` bytes (DETAIL_STEPS)."""
    text = ""
    for i, ((history, around_n), table_rows) in enumerate(zip(DETAIL_STEPS, TABLE_ROWS)):
        text = _page(ov, title, history, around_n, table_rows, cut=i > 0)
        if len(text.encode()) <= limit:
            return text
    return text
