"""The conformance report as one self-contained HTML page: inline CSS and inline SVG charts, no
script, no external asset. Renders a report (the gateway's or ``check``'s) and a run's digest;
every value is redacted, then escaped. No I/O.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from html import escape
from typing import Any

from ..core import jsonio
from ..execution.redaction import Redactor

__all__ = ["render_html"]

_EXAMPLES_SHOWN = 3
_TIMELINE_BARS = 60
_DIRECTION_NAMES = {"client_to_server": "client → server", "server_to_client": "server → client"}
_PARTIES = {"client": "client_to_server", "upstream": "server_to_client"}

_CSS = """
:root{--ink:#1d2330;--mute:#5d6676;--line:#dde2ea;--bg:#f6f8fb;--card:#fff;--bad:#c0392b;--bad-bg:#fdecea;
--good:#1e8449;--good-bg:#e9f7ef;--bar:#4a6fa5;--warn:#b9770e}
*{box-sizing:border-box}body{margin:0;background:var(--bg);color:var(--ink);
font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
main{max-width:1180px;margin:0 auto;padding:24px}h1{font-size:22px;margin:0 0 4px}
h2{font-size:17px;margin:0 0 12px}h3{font-size:14px;margin:16px 0 6px}
.sub{color:var(--mute);margin:0 0 16px;word-break:break-all}
section{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:16px 20px;margin:16px 0}
.banner{border-radius:8px;padding:16px 20px;font-size:18px;font-weight:600;margin:16px 0;border:1px solid}
.banner.bad{background:var(--bad-bg);color:var(--bad);border-color:#f1b0a8}
.banner.good{background:var(--good-bg);color:var(--good);border-color:#a9dfbf}
.banner small{display:block;font-weight:400;font-size:13px;color:var(--ink);margin-top:4px}
.tiles{display:grid;grid-template-columns:repeat(auto-fit,minmax(150px,1fr));gap:12px}
.tile{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:10px 14px}
.tile b{display:block;font-size:22px}.tile span{color:var(--mute);font-size:12px}
table{border-collapse:collapse;width:100%;margin:4px 0}th,td{text-align:left;padding:5px 8px;
border-bottom:1px solid var(--line);vertical-align:top}th{color:var(--mute);font-weight:600;font-size:12px}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
code,pre{font:12px/1.4 ui-monospace,Menlo,Consolas,monospace}
pre{background:#f0f2f6;border-radius:6px;padding:8px;white-space:pre-wrap;word-break:break-all;margin:4px 0}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(320px,1fr));gap:16px}
details{border:1px solid var(--line);border-radius:6px;padding:6px 10px;margin:8px 0}
summary{cursor:pointer;font-weight:600}.rule{color:var(--bad);font-weight:600}.muted{color:var(--mute)}
.diff div{font:12px/1.5 ui-monospace,Menlo,Consolas,monospace;padding:1px 6px;border-radius:3px}
.diff .add{background:#e6f4ea}.diff .remove{background:#fce8e6}.diff .replace{background:#fef7e0}
.tag{display:inline-block;padding:0 6px;border-radius:10px;background:#eef1f6;font-size:12px}
.tag.denied,.tag.error{background:var(--bad-bg);color:var(--bad)}.tag.allowed{background:var(--good-bg);color:var(--good)}
.tag.held{background:#fef5e7;color:var(--warn)}svg text{font:11px system-ui,sans-serif;fill:var(--ink)}
.nowrap{white-space:nowrap}footer{color:var(--mute);font-size:12px;margin:24px 0}
"""


def _e(value: Any) -> str:
    """Any value as escaped text (``None`` as a dash)."""
    return "—" if value is None else escape(str(value), quote=True)


def _direction(name: Any) -> str:
    return _DIRECTION_NAMES.get(str(name), str(name))


def _total(table: Mapping[str, Mapping[str, int]]) -> int:
    return sum(sum(inner.values()) for inner in table.values())


def _summed(table: Mapping[str, Mapping[str, int]]) -> Counter[str]:
    """``{rule: {x: n}}`` → ``{x: n over every rule}``."""
    summed: Counter[str] = Counter()
    for inner in table.values():
        summed.update(inner)
    return summed


def render_html(document: Mapping[str, Any], digest: Mapping[str, Any] | None, *, redactor: Redactor) -> str:
    """The page for a report ``document`` and, when the run's events were read, its ``digest``."""
    document = redactor.redact_record(dict(document))[0]
    digest = None if digest is None else redactor.redact_record(dict(digest))[0]
    source = document.get("upstream") or document.get("capture") or "(unknown)"
    kind = "gateway" if "upstream" in document else "check"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>MCP conformance report: {_e(source)}</title><style>{_CSS}</style></head><body><main>",
        "<h1>MCP conformance report</h1>",
        f'<p class="sub">{"Gateway in front of" if kind == "gateway" else "Recorded session"} '
        f"<code>{_e(source)}</code>"
        + (f" · mode {_e(document.get('mode'))}" if kind == "gateway" else "")
        + (f" · started {_e(document.get('started'))}" if document.get("started") else "")
        + "</p>",
        _banner(document),
        _tiles(document, digest),
        _violations(document),
        _examples(document),
        _timeline(digest),
        _tool_changes(document, digest),
        _latency(digest),
        _policy(document, digest),
        _versions(document, digest),
        _servers(document),
        _sessions(document),
        "<footer>Made by mcp-server on "
        f"{datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}. Secrets are redacted as in the logs.</footer>",
        "</main></body></html>",
    ]
    return "\n".join(part for part in parts if part) + "\n"


def _banner(document: Mapping[str, Any]) -> str:
    violations = document.get("violations", {})
    total = sum(violations.values())
    if not total:
        return (
            '<div class="banner good" data-verdict="clean">✔ Conformant: no violation'
            f'<small><span data-total="violations">0</span> violations in '
            f"{_total(document.get('frames', {}))} frames.</small></div>"
        )
    parties = _summed(document.get("violations_by_party", {}))
    blame = ", ".join(f"{_e(party)} {count}" for party, count in parties.most_common())
    worst = max(violations.items(), key=lambda item: item[1])
    return (
        f'<div class="banner bad" data-verdict="violations">✘ Not conformant: <span data-total="violations">'
        f"{total}</span> violation{'s' if total != 1 else ''} of {len(violations)} "
        f"rule{'s' if len(violations) != 1 else ''}<small>Most often broken: <b>{_e(worst[0])}</b> ({worst[1]})"
        + (f" · at fault: {blame}" if blame else "")
        + "</small></div>"
    )


def _tiles(document: Mapping[str, Any], digest: Mapping[str, Any] | None) -> str:
    frames = document.get("frames", {})
    tiles = [
        (f'<b data-total="frames">{_total(frames)}</b>', "frames"),
        (f"<b>{sum(document.get('violations', {}).values())}</b>", "violations"),
        (f"<b>{len(document.get('violations', {}))}</b>", "rules broken"),
        (f"<b>{_e(document.get('protocol_version'))}</b>", "protocol version"),
    ]
    if "sessions" in document:
        tiles.append((f"<b>{len(document['sessions'])}</b>", "sessions"))
    latency = (digest or {}).get("added_latency_ms", {})
    worst = max((spread["p99"] for spread in latency.values()), default=None)
    if worst is not None and not (digest or {}).get("deterministic"):
        tiles.append((f"<b>{worst:.3f} ms</b>", "p99 time added"))
    cells = "".join(f'<div class="tile">{value}<span>{label}</span></div>' for value, label in tiles)
    return f'<div class="tiles">{cells}</div>'


def _bars(
    rows: Sequence[tuple[str, float]], *, unit: str = "", color: str = "var(--bar)", label_width: int = 230
) -> str:
    """A horizontal bar chart in inline SVG: one labelled bar per row, its value at its end."""
    if not rows:
        return ""
    width, row_height, room = 640, 22, 70
    top = max(value for _, value in rows) or 1
    span = width - label_width - room
    out = [
        f'<svg role="img" viewBox="0 0 {width} {row_height * len(rows) + 4}" width="100%" style="max-width:{width}px">'
    ]
    for index, (label, value) in enumerate(rows):
        y = index * row_height + 2
        length = max(1.0, span * value / top) if value else 0.0
        shown = f"{value:.3f}" if isinstance(value, float) and not float(value).is_integer() else f"{value:g}"
        out.append(
            f'<text x="{label_width - 6}" y="{y + 15}" text-anchor="end">{_e(label[:40])}</text>'
            f'<rect x="{label_width}" y="{y + 3}" width="{length:.1f}" height="{row_height - 7}" rx="2" '
            f'fill="{color}"><title>{_e(label)}: {shown}{_e(unit)}</title></rect>'
            f'<text x="{label_width + length + 5:.1f}" y="{y + 15}">{shown}{_e(unit)}</text>'
        )
    out.append("</svg>")
    return "".join(out)


def _counts_table(title: str, attribute: str, counts: Counter[str], header: str) -> str:
    """Counts by one key, largest first, each with a bar drawn to scale."""
    top = max(counts.values(), default=1)
    rows = "".join(
        f'<tr data-{attribute}="{_e(name)}"><td><code>{_e(name)}</code></td><td class="n">{count}</td>'
        f'<td><svg width="120" height="10" role="img"><rect width="{max(2, 120 * count // top)}" height="10" '
        'rx="2" fill="var(--bad)"/></svg></td></tr>'
        for name, count in sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    )
    head = f'<tr><th>{header}</th><th class="n">violations</th><th></th></tr>'
    return f"<div><h3>{title}</h3><table>{head}{rows}</table></div>"


def _violations(document: Mapping[str, Any]) -> str:
    violations = document.get("violations", {})
    if not violations:
        return ""
    by_method, by_tool = document.get("violations_by_method", {}), document.get("violations_by_tool", {})
    by_party = document.get("violations_by_party", {})
    by_direction = document.get("violations_by_direction") or {
        rule: {_PARTIES.get(party, party): count for party, count in parties.items()}
        for rule, parties in by_party.items()
    }
    rows = []
    for rule, count in sorted(violations.items(), key=lambda item: (-item[1], item[0])):
        rows.append(
            f'<tr data-rule="{_e(rule)}"><td class="rule">{_e(rule)}</td><td class="n">{count}</td>'
            f"<td>{_listing(by_direction.get(rule, {}), _direction)}</td>"
            f"<td>{_listing(by_method.get(rule, {}))}</td><td>{_listing(by_tool.get(rule, {}))}</td></tr>"
        )
    directions = Counter({_direction(name): n for name, n in _summed(by_direction).items()})
    return (
        "<section><h2>Violations by rule</h2><table><tr><th>rule</th><th class='n'>count</th><th>direction</th>"
        f"<th>methods</th><th>tools</th></tr>{''.join(rows)}</table><div class='grid'>"
        + _counts_table("By method", "method", _summed(by_method), "method")
        + (_counts_table("By tool", "tool", _summed(by_tool), "tool") if by_tool else "")
        + (_counts_table("By direction", "direction", directions, "direction") if directions else "")
        + "</div></section>"
    )


def _listing(counts: Mapping[str, int], name: Any = str) -> str:
    return ", ".join(f"<code>{_e(name(key))}</code> {count}" for key, count in counts.items()) or "—"


def _examples(document: Mapping[str, Any]) -> str:
    examples = document.get("examples", {})
    if not examples:
        return ""
    blocks = []
    for rule in sorted(examples, key=lambda rule: -document.get("violations", {}).get(rule, 0)):
        shown = "".join(_example(example) for example in examples[rule][:_EXAMPLES_SHOWN])
        count = document.get("violations", {}).get(rule, len(examples[rule]))
        summary = f'<summary><span class="rule">{_e(rule)}</span> · {count}</summary>'
        blocks.append(f"<details open>{summary}{shown}</details>")
    return "<section><h2>First examples</h2>" + "".join(blocks) + "</section>"


def _example(example: Mapping[str, Any]) -> str:
    where = " · ".join(
        part
        for part in (
            f"line {_e(example['line'])}" if "line" in example else "",
            _e(_direction(example.get("direction"))) if example.get("direction") else "",
            f"<code>{_e(example.get('method'))}</code>" if example.get("method") else "",
            f"tool <code>{_e(example.get('tool'))}</code>" if example.get("tool") else "",
            f"id <code>{_e(example.get('id'))}</code>" if example.get("id") is not None else "",
            f"session <code>{_e(example.get('session'))}</code>" if example.get("session") else "",
            f"action {_e(example.get('action'))}" if example.get("action") else "",
        )
        if part
    )
    errors = [entry for entry in example.get("errors", []) if isinstance(entry, Mapping)]
    rows = "".join(
        f"<tr><td><code>{_e(entry.get('path') or '/')}</code></td><td>{_e(entry.get('msg'))}</td>"
        f"<td><code>{_e(entry.get('schemaPath') or entry.get('keyword') or '')}</code></td></tr>"
        for entry in errors
    )
    table = f"<table><tr><th>path (RFC 6901)</th><th>the schema says</th><th>schema path</th></tr>{rows}</table>"
    excerpt = f"<pre>{_e(example['excerpt'])}</pre>" if example.get("excerpt") else ""
    patch = _diff(example["patch"]) if isinstance(example.get("patch"), list) else ""
    return f"<div><p>{where}</p>{excerpt}{table if rows else ''}{patch}</div>"


def _diff(patch: Iterable[Any]) -> str:
    """An RFC 6902 patch as a diff a person reads: what was added, removed, replaced, and where."""
    signs = {"add": "+", "remove": "-", "replace": "~"}
    lines = []
    for op in patch:
        if not isinstance(op, Mapping):
            continue
        kind = str(op.get("op"))
        value = f" → {jsonio.dumps(op['value']).decode()}" if "value" in op else ""
        where = f"<b>{_e(op.get('path') or '/')}</b>"
        lines.append(f'<div class="{_e(kind)}">{signs.get(kind, "?")} {_e(kind)} {where}{_e(value)}</div>')
    return f'<div class="diff">{"".join(lines)}</div>'


def _missing(what: str, digest: Mapping[str, Any] | None) -> str:
    why = "these come from a run's event log, and none was read" if digest is None else "the run recorded none"
    return f'<p class="muted">No {what}: {why}.</p>'


def _timeline(digest: Mapping[str, Any] | None) -> str:
    timeline = (digest or {}).get("timeline", {})
    frames, violations = timeline.get("frames", []), timeline.get("violations", [])
    if not frames:
        return f"<section><h2>Timeline</h2>{_missing('timeline', digest)}</section>"
    assert digest is not None
    step = -(-len(frames) // _TIMELINE_BARS)
    seconds = round(timeline.get("bin_seconds", 1) * step, 3)
    frames = [sum(frames[i : i + step]) for i in range(0, len(frames), step)]
    violations = [sum(violations[i : i + step]) for i in range(0, len(violations), step)]
    width, height, top = 900, 140, max(frames + violations) or 1
    bar = width / len(frames)
    shapes = []
    for index, (count, bad) in enumerate(zip(frames, violations, strict=False)):
        x, tall, red = index * bar, 110 * count / top, 110 * bad / top
        label = f"{index * seconds:g} to {(index + 1) * seconds:g} s: {count} frames, {bad} violations"
        shapes.append(
            f'<g><title>{_e(label)}</title><rect x="{x + 1:.1f}" y="{120 - tall:.1f}" width="{max(bar - 2, 1):.1f}" '
            f'height="{tall:.1f}" fill="var(--bar)"/><rect x="{x + 1:.1f}" y="{120 - red:.1f}" '
            f'width="{max(bar - 2, 1):.1f}" height="{red:.1f}" fill="var(--bad)"/></g>'
        )
    svg = (
        f'<svg role="img" viewBox="0 0 {width} {height}" width="100%">'
        f'<line x1="0" y1="120" x2="{width}" y2="120" stroke="#999"/>{"".join(shapes)}'
        f'<text x="0" y="136">{_e(digest.get("first"))}</text>'
        f'<text x="{width}" y="136" text-anchor="end">{_e(digest.get("last"))}</text></svg>'
    )
    legend = f'<p class="muted">Frames (blue) and violations (red) per {seconds:g} s.</p>'
    return f"<section><h2>Timeline</h2>{svg}{legend}{_moments(digest)}</section>"


def _moments(digest: Mapping[str, Any]) -> str:
    rows = "".join(
        f"<tr><td><code>{_e(m.get('ts'))}</code></td><td>{_e(m.get('event'))}</td>"
        f"<td>{_e(m.get('rule') or m.get('status'))}</td>"
        f"<td>{_e(_direction(m['direction']) if m.get('direction') else '')}</td>"
        f"<td><code>{_e(m.get('method') or '')}</code></td><td><code>{_e(m.get('tool') or '')}</code></td>"
        f"<td>{_e(m.get('request_id') if m.get('request_id') is not None else '')}</td></tr>"
        for m in digest.get("moments", [])
    )
    more = digest.get("left_off", {}).get("moments")
    tail = f'<p class="muted">and {more} more (in the event log)</p>' if more else ""
    return (
        f"<details><summary>Events ({len(digest.get('moments', []))})</summary><table><tr><th>time</th>"
        f"<th>event</th><th>rule / status</th><th>direction</th><th>method</th><th>tool</th><th>id</th></tr>"
        f"{rows}</table>{tail}</details>"
    )


def _tool_changes(document: Mapping[str, Any], digest: Mapping[str, Any] | None) -> str:
    changes = list((digest or {}).get("tool_changes", []))
    if not changes:  # without the log: the report's own examples of the rule
        changes = [
            {"ts": None, "tool": e.get("tool"), "request_id": e.get("id"), "patch": e.get("patch", [])}
            for e in document.get("examples", {}).get("tool_definition_changed", [])
        ]
    if not changes:
        return '<section><h2>Tool definition changes</h2><p class="muted">No tool changed its definition.</p></section>'
    blocks = "".join(
        f"<h3>tool <code>{_e(change.get('tool'))}</code> <span class='muted'>{_e(change.get('ts') or '')} "
        f"tools/list id {_e(change.get('request_id'))}</span></h3>{_diff(change.get('patch') or [])}"
        for change in changes
    )
    return f"<section><h2>Tool definition changes</h2>{blocks}</section>"


def _latency(digest: Mapping[str, Any] | None) -> str:
    latency = (digest or {}).get("added_latency_ms", {})
    if not latency:
        return f"<section><h2>Time the gateway added</h2>{_missing('timings', digest)}</section>"
    assert digest is not None
    if digest.get("deterministic"):
        return '<section><h2>Time the gateway added</h2><p class="muted">A deterministic run: no timings.</p></section>'
    rows, bars = [], []
    for direction, spread in latency.items():
        rows.append(
            f'<tr data-latency="{_e(direction)}"><td>{_e(_direction(direction))}</td>'
            f'<td class="n">{spread["frames"]}</td>'
            + "".join(f'<td class="n">{spread[name]:.3f}</td>' for name in ("p50", "p90", "p99", "max"))
            + "</tr>"
        )
        bars += [(f"{_direction(direction)} {name}", float(spread[name])) for name in ("p50", "p90", "p99")]
    return (
        "<section><h2>Time the gateway added</h2><p class='muted'>Per frame, from its bytes read to its "
        "verdict acted on (milliseconds).</p><table><tr><th>direction</th><th class='n'>frames</th>"
        "<th class='n'>p50</th><th class='n'>p90</th><th class='n'>p99</th><th class='n'>max</th></tr>"
        f"{''.join(rows)}</table>{_bars(bars, unit=' ms')}</section>"
    )


def _policy(document: Mapping[str, Any], digest: Mapping[str, Any] | None) -> str:
    statuses = (digest or {}).get("policy", {})
    decisions = (digest or {}).get("decisions", [])
    if not statuses:
        return f"<section><h2>Policy decisions</h2>{_missing('policy decision', digest)}</section>"
    tags = " ".join(f'<span class="tag {_e(s)}" data-policy="{_e(s)}">{_e(s)} {n}</span>' for s, n in statuses.items())
    rows = "".join(
        f"<tr><td><code>{_e(d.get('ts'))}</code></td><td><span class='tag {_e(d.get('status'))}'>{_e(d.get('status'))}"
        f"</span></td><td><code>{_e(d.get('method') or '')}</code></td><td><code>{_e(d.get('tool') or '')}</code></td>"
        f"<td>{_e('; '.join(str(e.get('msg')) for e in d.get('errors', []) if isinstance(e, Mapping)))}</td></tr>"
        for d in decisions
    )
    return (
        f"<section><h2>Policy decisions</h2><p>{tags}</p><table><tr><th>time</th><th>decision</th><th>method</th>"
        f"<th>tool</th><th>why</th></tr>{rows}</table></section>"
    )


def _versions(document: Mapping[str, Any], digest: Mapping[str, Any] | None) -> str:
    seen = (digest or {}).get("protocol_versions") or {}
    if not seen and document.get("protocol_version"):
        seen = {document["protocol_version"]: None}
    versions = "".join(
        f'<tr data-version="{_e(v)}"><td><code>{_e(v)}</code></td><td class="n">{_e(n)}</td></tr>'
        for v, n in seen.items()
    )
    schemas = document.get("schemas") or (digest or {}).get("schemas") or []
    rows = "".join(
        f"<tr><td><code class='nowrap'>{_e(s.get('version'))}</code></td>"
        f"<td>{_e(s.get('repository') or 'unrecorded')}</td>"
        f"<td><code>{_e((s.get('commit') or '')[:12])}</code></td>"
        f"<td><code title='{_e(s.get('sha256'))}'>{_e(str(s.get('sha256'))[:16])}…</code></td></tr>"
        for s in schemas
        if isinstance(s, Mapping)
    )
    return (
        "<section><h2>Protocol versions and schemas</h2><div><h3>Versions seen</h3><table><tr>"
        f"<th>version</th><th class='n'>frames</th></tr>{versions}</table></div><div><h3>Bundled schemas</h3>"
        "<table><tr><th>version</th><th>source</th><th>commit</th><th>SHA-256</th></tr>"
        f"{rows}</table></div></section>"
    )


def _servers(document: Mapping[str, Any]) -> str:
    """An aggregate's page: a section per server, so a team sees which server breaks which rule."""
    blocks = []
    for entry in document.get("servers", []):
        server = entry.get("name")
        violations = entry.get("violations", {})
        by_party = entry.get("violations_by_party", {})
        rows = "".join(
            f'<tr data-rule="{_e(rule)}"><td class="rule">{_e(rule)}</td><td class="n">{count}</td>'
            f"<td>{_listing(by_party.get(rule, {}))}</td></tr>"
            for rule, count in sorted(violations.items(), key=lambda item: (-item[1], item[0]))
        )
        table = (
            f"<table><tr><th>rule</th><th class='n'>violations</th><th>party</th></tr>{rows}</table>"
            if rows
            else '<p class="muted">No violation.</p>'
        )
        blocks.append(
            f'<section data-server="{_e(server)}"><h2>Server <code>{_e(server)}</code></h2>'
            f'<p class="sub">protocol {_e(", ".join(entry.get("protocol_versions", [])) or None)} · '
            f"{len(entry.get('sessions', []))} session(s) · {_e(entry.get('frames'))} frames · "
            f'<span data-total="violations">{sum(violations.values())}</span> violations</p>{table}</section>'
        )
    return "".join(blocks)


def _sessions(document: Mapping[str, Any]) -> str:
    sessions = document.get("sessions", [])
    if not sessions and not document.get("unanswered"):
        return ""
    rows = "".join(
        f"<tr><td><code>{_e(s.get('id'))}</code></td><td>{_e(s.get('server'))}</td><td>{_e(s.get('transport'))}</td>"
        f"<td>{_e(s.get('protocol_version'))}</td><td class='n'>{_total(s.get('frames', {}))}</td>"
        f"<td class='n'>{sum(s.get('violations', {}).values())}</td>"
        f"<td>{_e(', '.join(f'{k}={v}' for k, v in s.get('unanswered', {}).items()))}</td></tr>"
        for s in sessions
    )
    unanswered = "".join(
        f"<tr><td>{_e(_direction(u.get('direction')))}</td><td><code>{_e(u.get('id'))}</code></td>"
        f"<td><code>{_e(u.get('method'))}</code></td><td>{_e(u.get('reason'))}</td></tr>"
        for u in document.get("unanswered", [])
    )
    ended = (
        "<h3>Requests ended without an answer</h3><table><tr><th>direction</th><th>id</th><th>method</th>"
        f"<th>reason</th></tr>{unanswered}</table>"
        if unanswered
        else ""
    )
    return (
        "<section><h2>Sessions</h2><table><tr><th>session</th><th>server</th><th>transport</th><th>version</th>"
        f"<th class='n'>frames</th><th class='n'>violations</th><th>unanswered</th></tr>{rows}</table>{ended}</section>"
    )
