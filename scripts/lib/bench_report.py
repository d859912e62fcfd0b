"""Summarises a scripts/bench-compare run into BENCHMARKS.md and an SVG bar chart.

Usage: bench_report.py OUT_DIR BENCHMARKS_MD SVG_PATH ROUNDS DURATION PINNED CPUS CPU_MODEL
"""
import glob
import json
import os
import statistics
import sys
from datetime import date


def load(out_dir):
    runs = {}
    for path in glob.glob(os.path.join(out_dir, "*.json")):
        name = os.path.basename(path)[:-5]
        parts = name.split("-")
        kind = parts[0]
        with open(path) as f:
            report = json.load(f)
        if kind == "http":
            # http-<server>-c<conns>-r<round>
            server = "-".join(parts[1:-2])
            setting = int(parts[-2][1:])
        elif kind == "auth":
            # auth-<server>-c<conns>-r<round>
            server = "-".join(parts[1:-2])
            setting = int(parts[-2][1:])
        elif kind == "legacy":
            # legacy-<mode>-<server>-c<conns>-r<round>
            kind = f"legacy-{parts[1]}"
            server = "-".join(parts[2:-2])
            setting = int(parts[-2][1:])
        else:
            # stdio-<server>-r<round>
            server = "-".join(parts[1:-1])
            setting = 32
        runs.setdefault((kind, server, setting), []).append(report)
    return runs


def median(reports, key):
    if key == "throughput":
        return statistics.median(r["throughput"] for r in reports)
    return statistics.median(r["latency_us"][key] for r in reports)


def errors(reports):
    return sum(sum(r["errors"].values()) for r in reports)


# The servers of the main table, in its order: kelson-text is echo-server's text-only `echo_text`.
SERVERS = ("kelson", "kelson-text", "rmcp", "ceiling")


def svg_chart(rows, path):
    """A grouped bar chart of throughput: one group per setting, one bar per server."""
    colors = {"kelson": "#d9480f", "kelson-text": "#f08c00", "rmcp": "#1c7ed6", "ceiling": "#868e96"}
    shown = [server for server in SERVERS if any(server in values for _, values in rows)]
    groups = [(label, values) for label, values in rows]
    width, height = 760, 360
    left, bottom, top = 70, 60, 40
    plot_w, plot_h = width - left - 20, height - bottom - top
    peak = max(v for _, values in groups for v in values.values()) or 1
    group_w = plot_w / len(groups)
    bar_w = group_w / (len(shown) + 1)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{width / 2}" y="22" text-anchor="middle" font-size="15">'
        "tools/call echo: throughput (requests/s, higher is better)</text>",
    ]
    for i in range(6):
        value = peak * i / 5
        y = top + plot_h - plot_h * i / 5
        out.append(f'<line x1="{left}" x2="{width - 20}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e9ecef"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{value:,.0f}</text>')
    for g, (label, values) in enumerate(groups):
        x0 = left + g * group_w + bar_w / 2
        for b, server in enumerate(shown):
            if server not in values:
                continue
            h = plot_h * values[server] / peak
            x = x0 + b * bar_w
            y = top + plot_h - h
            out.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar_w - 2:.1f}" height="{h:.1f}" '
                f'fill="{colors[server]}"><title>{server}: {values[server]:,.0f} req/s</title></rect>'
            )
        out.append(
            f'<text x="{left + g * group_w + group_w / 2:.1f}" y="{top + plot_h + 18}" '
            f'text-anchor="middle">{label}</text>'
        )
    for i, server in enumerate(shown):
        x = left + i * 170
        y = height - 18
        out.append(f'<rect x="{x}" y="{y - 10}" width="12" height="12" fill="{colors[server]}"/>')
        name = {"ceiling": "bare hyper (ceiling)", "rmcp": "rmcp 3.11", "kelson": "kelson",
                "kelson-text": "kelson, echo_text"}[server]
        out.append(f'<text x="{x + 18}" y="{y}">{name}</text>')
    out.append("</svg>")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def keep_other_sections(md_path, document):
    """`document` with the `## ` sections of the old file that it does not write itself appended:
    those of the other scripts (compare-sql-servers, bench-cluster), which each replace their own."""
    try:
        with open(md_path) as f:
            old = f.read().splitlines(keepends=True)
    except FileNotFoundError:
        return document
    ours = {line.rstrip("\n") for line in document.splitlines() if line.startswith("## ")}
    starts = [i for i, line in enumerate(old) if line.startswith("## ")] + [len(old)]
    kept = []
    for a, b in zip(starts, starts[1:]):
        if old[a].rstrip("\n") not in ours:
            kept.append("".join(old[a:b]).rstrip("\n") + "\n")
    if not kept:
        return document
    return document.rstrip("\n") + "\n\n" + "\n".join(kept)


def main():
    out_dir, md_path, svg_path, rounds, duration, pinned, cpus, cpu_model = sys.argv[1:9]
    runs = load(out_dir)
    lines = []
    chart_rows = []
    table = []
    for kind, settings in (("http", [1, 16, 64]), ("stdio", [32])):
        for setting in settings:
            values = {}
            row = {}
            for server in SERVERS:
                reports = runs.get((kind, server, setting))
                if not reports:
                    continue
                row[server] = {
                    "throughput": median(reports, "throughput"),
                    "p50": median(reports, "p50"),
                    "p99": median(reports, "p99"),
                    "errors": errors(reports),
                }
                values[server] = row[server]["throughput"]
            label = f"HTTP c={setting}" if kind == "http" else f"stdio {setting} in flight"
            chart_rows.append((label, values))
            table.append((label, row))

    def fmt_ms(us):
        return f"{us / 1000:.3f}"

    text_measured = any("kelson-text" in row for _, row in table)

    lines.append("# Benchmarks")
    lines.append("")
    lines.append(
        "The same `echo` tool (one string argument, returned as text and as `structuredContent`) served by "
        "kelson (`echo-server`), by rmcp 3.11 (the official Rust SDK) in its stateless 2026-07-28 mode with "
        "JSON responses, and by a bare hyper server that reads the body and returns a fixed response (the "
        "ceiling: it does no protocol work). Every server is driven by `kelson bench`, which checks every "
        "answer (id, `resultType`, no error) and counts anything else as an error."
        + (" Over HTTP, `kelson-text` is the same `echo-server` called on `echo_text`, which returns the "
           "text only (no `outputSchema`, no `structuredContent`): the workload of peers whose tools "
           "answer with text, measured in the same rounds." if text_measured else "")
    )
    lines.append("")
    command = "scripts/bench-compare --micro" if os.path.isdir(os.path.join(out_dir, "micro")) else "scripts/bench-compare"
    lines.append(f"Reproduce: `{command}` (this run: {rounds} round(s) of {duration} s per "
                 f"server and setting after a 1 s warm-up, servers alternating; medians reported).")
    lines.append("")
    lines.append(
        f"Machine: {cpus} CPUs ({cpu_model}); "
        + ("servers pinned to CPU 0 and the load tool to CPU 1 (`taskset`)." if pinned == "1"
           else "no CPU pinning.")
        + f" Measured on {date.today().isoformat()}. These machines are shared and noisy: compare the "
        "ratios, which are measured in the same run, rather than the absolute figures."
    )
    lines.append("")
    lines.append("![throughput](benchmarks/throughput.svg)")
    lines.append("")
    lines.append("| setting | server | req/s | p50 ms | p99 ms | errors |")
    lines.append("|---|---|---:|---:|---:|---:|")
    for label, row in table:
        for server in SERVERS:
            if server in row:
                r = row[server]
                lines.append(
                    f"| {label} | {server} | {r['throughput']:,.0f} | {fmt_ms(r['p50'])} | "
                    f"{fmt_ms(r['p99'])} | {r['errors']} |"
                )
    lines.append("")
    def over(a, b):
        return f"{a['throughput'] / b['throughput']:.2f}x" if a and b else "n/a"

    if text_measured:
        lines.append("| setting | kelson / rmcp (throughput) | kelson / ceiling (throughput) | "
                     "kelson-text / ceiling | kelson / kelson-text | p99 kelson vs rmcp |")
        lines.append("|---|---:|---:|---:|---:|---|")
    else:
        lines.append("| setting | kelson / rmcp (throughput) | kelson / ceiling (throughput) | p99 kelson vs rmcp |")
        lines.append("|---|---:|---:|---|")
    for label, row in table:
        ours = row.get("kelson")
        rmcp = row.get("rmcp")
        ceiling = row.get("ceiling")
        text = row.get("kelson-text")
        p99 = "n/a"
        if ours and rmcp:
            p99 = f"{fmt_ms(ours['p99'])} vs {fmt_ms(rmcp['p99'])} ms"
        if text_measured:
            lines.append(f"| {label} | {over(ours, rmcp)} | {over(ours, ceiling)} | {over(text, ceiling)} | "
                         f"{over(ours, text)} | {p99} |")
        else:
            lines.append(f"| {label} | {over(ours, rmcp)} | {over(ours, ceiling)} | {p99} |")
    lines.append("")
    auth_rows = []
    for setting in (1, 16, 64):
        row = {}
        for server in ("kelson", "kelson-auth", "rmcp", "rmcp-bearer"):
            reports = runs.get(("auth", server, setting))
            if reports:
                row[server] = {
                    "throughput": median(reports, "throughput"),
                    "p99": median(reports, "p99"),
                    "errors": errors(reports),
                }
        if row:
            auth_rows.append((setting, row))
    if auth_rows:
        lines.append("## With a bearer token")
        lines.append("")
        lines.append(
            "`tools/call` of the same `echo` tool with `Authorization: Bearer`. kelson checks a real JWT "
            "(RS256, issued by oidc-provider from `peers/` through the client-credentials grant with an RFC 8707 "
            "resource indicator) with kelson-auth: signature against the authorization server's JWKS, issuer, "
            "audience, expiry, scopes (`echo-server --auth-issuer URL --auth-resource URL`; the keys and "
            "each validated token are cached, so this is the steady state of a client reusing its token). "
            "rmcp ships no token validator; its authorization examples compare the header with a stored "
            "token, so rmcp is measured behind an axum middleware that does just that: a floor for what "
            "authorization costs there, far less work than a JWT check. Each pair is measured in the same "
            "rounds, alternating."
        )
        lines.append("")
        lines.append(
            "| connections | kelson req/s | kelson + JWT req/s | with / without | rmcp req/s | "
            "rmcp + fixed token req/s | with / without | kelson + JWT / rmcp + token | p99 kelson + JWT vs "
            "rmcp + token | errors |"
        )
        lines.append("|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|")

        def ratio(a, b):
            return f"{a['throughput'] / b['throughput']:.2f}x" if a and b else "n/a"

        def tput(r):
            return f"{r['throughput']:,.0f}" if r else "n/a"

        for setting, row in auth_rows:
            ours, ours_auth = row.get("kelson"), row.get("kelson-auth")
            rmcp, rmcp_auth = row.get("rmcp"), row.get("rmcp-bearer")
            p99 = (f"{fmt_ms(ours_auth['p99'])} vs {fmt_ms(rmcp_auth['p99'])} ms"
                   if ours_auth and rmcp_auth else "n/a")
            errs = sum(r["errors"] for r in row.values())
            lines.append(
                f"| {setting} | {tput(ours)} | {tput(ours_auth)} | {ratio(ours_auth, ours)} | {tput(rmcp)} | "
                f"{tput(rmcp_auth)} | {ratio(rmcp_auth, rmcp)} | {ratio(ours_auth, rmcp_auth)} | {p99} | {errs} |"
            )
        lines.append("")
        lines.append(
            "The cost of the check itself, without HTTP: `cargo bench -p kelson-auth --bench validate` "
            "(a token seen before, and a token's first sight with RS256 and ES256 signatures)."
        )
        lines.append("")
    legacy_rows = []
    for mode in ("sessions", "stateless"):
        for setting in (16, 64):
            row = {}
            for server in ("kelson", "rmcp"):
                reports = runs.get((f"legacy-{mode}", server, setting))
                if reports:
                    row[server] = {
                        "throughput": median(reports, "throughput"),
                        "p99": median(reports, "p99"),
                        "errors": errors(reports),
                    }
            if row:
                legacy_rows.append((mode, setting, row))
    if legacy_rows:
        lines.append("## The handshake era")
        lines.append("")
        lines.append(
            "`tools/call` of the same `echo` tool from 2025-11-25 clients: `kelson bench --era legacy` opens one "
            "session per connection (`initialize`, `notifications/initialized`) before the clock starts, then "
            "sends each request with its `Mcp-Session-Id` and `MCP-Protocol-Version`. kelson serves both eras "
            "from one registration (`echo-server --http`, and `--legacy-stateless` for the sessionless mode); "
            "rmcp 3.11 with its in-process session manager (`legacy_session_mode: true`) and without sessions "
            "(`legacy_session_mode: false`), JSON responses in both."
        )
        lines.append("")
        lines.append("| mode | connections | kelson req/s | rmcp req/s | kelson / rmcp | p99 kelson vs rmcp | errors |")
        lines.append("|---|---:|---:|---:|---:|---|---:|")
        for mode, setting, row in legacy_rows:
            ours, rmcp = row.get("kelson"), row.get("rmcp")
            ratio = f"{ours['throughput'] / rmcp['throughput']:.2f}x" if ours and rmcp else "n/a"
            p99 = f"{fmt_ms(ours['p99'])} vs {fmt_ms(rmcp['p99'])} ms" if ours and rmcp else "n/a"
            errs = sum(r["errors"] for r in row.values())
            lines.append(
                f"| {mode} | {setting} | {ours['throughput'] if ours else 0:,.0f} | "
                f"{rmcp['throughput'] if rmcp else 0:,.0f} | {ratio} | {p99} | {errs} |"
            )
        lines.append("")
    sessions_path = os.path.join(out_dir, "sessions-rss.json")
    if os.path.exists(sessions_path):
        with open(sessions_path) as f:
            sess = json.load(f)
        waves = sess["waves"]
        lines.append(
            f"Memory of abandoned sessions (`scripts/bench-sessions --sessions {sess['sessions']:,} --waves "
            f"{len(waves)}`, `kelson serve` on the sample): {sess['bytes_per_session']:,} B per session while open; "
            f"once they expire the memory goes back to the allocator and the next waves reuse it (RSS "
            f"{waves[0]['with_sessions_kib'] / 1024:.1f} MiB with the first wave open, "
            f"{waves[-1]['after_idle_kib'] / 1024:.1f} MiB after the last has expired; "
            f"{sess['rss_before_kib'] / 1024:.1f} MiB before any)."
        )
        lines.append("")
    rss_runs = []
    for name in ("listen-rss-h1.json", "listen-rss-h2.json"):
        path = os.path.join(out_dir, name)
        if os.path.exists(path):
            with open(path) as f:
                rss_runs.append(json.load(f))
    if rss_runs:
        lines.append("## Idle listen streams")
        lines.append("")
        lines.append(
            "Resident memory that idle `subscriptions/listen` streams add to `echo-server --http` (VmRSS "
            "after the streams are acknowledged minus VmRSS before, after a warm-up). Over HTTP/1.1 every "
            "stream holds a connection of its own (served by kelson's own HTTP/1.1 loop, which holds no "
            "buffer while a connection waits); over h2c the streams share connections. Reproduce: "
            "`scripts/bench-listen-rss` and `scripts/bench-listen-rss --h2`."
        )
        lines.append("")
        lines.append("| protocol | streams | connections | still open | RSS added | per stream |")
        lines.append("|---|---:|---:|---:|---:|---:|")
        for rss in rss_runs:
            lines.append(
                f"| {rss['protocol']} | {rss['streams']:,} | {rss['connections']:,} | {rss['alive']:,} | "
                f"{rss['added_kib'] / 1024:.1f} MiB | {rss['per_stream_bytes']:,} B |"
            )
        lines.append("")
        idle = {}
        for who in ("ours", "ceiling"):
            path = os.path.join(out_dir, f"idle-rss-{who}.json")
            if os.path.exists(path):
                with open(path) as f:
                    idle[who] = json.load(f)
        if idle:
            lines.append(
                "What a connection costs before any stream, measured the same way: 1,000 idle keep-alive "
                "HTTP/1.1 connections, each after one `tools/call` (`scripts/bench-listen-rss --idle`):"
            )
            lines.append("")
            lines.append("| server | connections | RSS added | per connection |")
            lines.append("|---|---:|---:|---:|")
            for who, label in (("ours", "kelson"), ("ceiling", "bare hyper")):
                if who in idle:
                    r = idle[who]
                    lines.append(f"| {label} | {r['connections']:,} | {r['added_kib'] / 1024:.1f} MiB | "
                                 f"{r['per_stream_bytes']:,} B |")
            lines.append("")
    micro_dir = os.path.join(out_dir, "micro")
    if os.path.isdir(micro_dir):
        lines.append("## Micro-benchmarks (criterion)")
        lines.append("")
        lines.append("Reproduce: `cargo bench -p kelson-server --bench hot_path` and "
                     "`cargo bench -p kelson-http --features server --bench service`.")
        lines.append("")
        lines.append("| benchmark | what it measures | mean |")
        lines.append("|---|---|---:|")
        what = {
            "validate_typical_call": "input-schema validation of a typical tool call's arguments",
            "handle_tools_call_echo": "one `tools/call` through `Server::handle`: decode, route, validate, call, encode",
            "handle_tools_call_echo_fn": "the same through the function API: typed arguments decoded by the extractor, a `String` result",
            "handle_tools_list_1000": "`tools/list` with 1,002 registered tools (a cached, pre-encoded page)",
            "service_tools_call_echo": "one `tools/call` through the HTTP service: headers, body, checks, dispatch, response",
        }
        for name, text in what.items():
            path = os.path.join(micro_dir, name + ".json")
            if not os.path.exists(path):
                continue
            with open(path) as f:
                ns = json.load(f)["mean"]["point_estimate"]
            shown = f"{ns:,.0f} ns" if ns < 10_000 else f"{ns / 1000:,.1f} µs"
            lines.append(f"| `{name.replace('_', '/', 1)}` | {text} | {shown} |")
        lines.append("")
    with open(md_path, "w") as f:
        f.write(keep_other_sections(md_path, "\n".join(lines) + "\n"))
    svg_chart(chart_rows, svg_path)
    print("\n".join(lines[lines.index("| setting | server | req/s | p50 ms | p99 ms | errors |"):]))


if __name__ == "__main__":
    main()
