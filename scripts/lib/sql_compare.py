"""The measuring half of scripts/compare-sql-servers: the SQL MCP servers users would pick instead
(the archived official SQLite and PostgreSQL reference servers) next to `kelson serve`, on the same
fixture databases.

Subcommands (the bash script calls them; each writes JSON into the run's folder):
  fixture-pg ADMIN_URL             (re)creates the fixture table in the comparison database
  fixture-sqlite FILE              (re)creates the SQLite fixture file
  bypass  --servers JSON --out F   the bypass suite through each server's read tool
  cold    --servers JSON --runs N --out F   spawn to first tools/list and first query answer
  bench   --out F -- KELSON_BENCH_ARGV...      runs `kelson bench --json` and samples the server's memory
  report  OUT_DIR BENCHMARKS_MD META_JSON   writes the "## SQL servers compared" section

The servers are spoken to over stdio with the handshake era (`initialize`, then
`notifications/initialized`), which all of them speak; the reference servers speak nothing else.
"""
import json
import os
import queue
import re
import signal
import sqlite3
import statistics
import subprocess
import sys
import threading
import time

SECTION = "## SQL servers compared"
ROWS = 1000          # fixture rows
CHECKSUM_SQL = "SELECT count(*), coalesce(sum(balance), 0) FROM accounts"
PROTOCOL = "2025-06-18"


# ---------------------------------------------------------------------------------------------
# Fixture and state


def psql(url, sql, timeout=30):
    """Runs SQL through psql (ON_ERROR_STOP) and returns its unaligned, tuples-only output."""
    done = subprocess.run(
        ["psql", url, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-tA", "-c", sql],
        capture_output=True, text=True, timeout=timeout,
        env=dict(os.environ, PGCONNECT_TIMEOUT="5"),
    )
    if done.returncode != 0:
        raise RuntimeError(f"psql failed ({done.returncode}): {done.stderr.strip()}")
    return done.stdout.strip()


def fixture_sql(owner=None):
    """The fixture: one table of accounts. `owner` (PostgreSQL) becomes its owner."""
    rows = ",".join(f"({i}, 'owner-{i}', {i * 10}.50)" for i in range(1, ROWS + 1))
    sql = [
        "DROP TABLE IF EXISTS accounts" + (" CASCADE" if owner else ""),
        "CREATE TABLE accounts (id integer PRIMARY KEY, owner text NOT NULL, balance numeric(12, 2) NOT NULL)",
        f"INSERT INTO accounts (id, owner, balance) VALUES {rows}",
    ]
    if owner:
        sql.append(f"ALTER TABLE accounts OWNER TO {owner}")
    return sql


def restore_pg(admin_url, owner):
    # A server killed at a cap may leave its statement running (pg_sleep, a huge read): end every
    # other session of the comparison database (ours alone) before the table is dropped.
    psql(admin_url, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid()")
    psql(admin_url, "BEGIN; " + "; ".join(fixture_sql(owner)) + "; COMMIT")


def restore_sqlite(path):
    for suffix in ("", "-wal", "-shm", "-journal"):
        try:
            os.unlink(path + suffix)
        except FileNotFoundError:
            pass
    conn = sqlite3.connect(path)
    try:
        for stmt in fixture_sql():
            conn.execute(stmt)
        conn.commit()
    finally:
        conn.close()


def state_pg(admin_url):
    """What a bypass could change: the tables of the schema and the accounts' checksum."""
    tables = psql(admin_url, "SELECT string_agg(tablename, ',' ORDER BY tablename) FROM pg_tables "
                             "WHERE schemaname = 'public'")
    checksum = None
    if "accounts" in tables.split(","):
        checksum = psql(admin_url, CHECKSUM_SQL)
    return {"tables": tables, "checksum": checksum}


def state_sqlite(path):
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = ",".join(r[0] for r in conn.execute(
            "SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name"))
        checksum = None
        if "accounts" in tables.split(","):
            checksum = "|".join(str(v) for v in conn.execute(CHECKSUM_SQL).fetchone())
    finally:
        conn.close()
    return {"tables": tables, "checksum": checksum}


def describe_change(before, after):
    """None when nothing changed, else a short account of what did."""
    if before == after:
        return None
    gone = set(filter(None, before["tables"].split(","))) - set(filter(None, after["tables"].split(",")))
    new = set(filter(None, after["tables"].split(","))) - set(filter(None, before["tables"].split(",")))
    parts = []
    if gone:
        parts.append("table dropped")
    if new:
        parts.append("table created")
    if not gone and before["checksum"] != after["checksum"]:
        count = (after["checksum"] or "0").split("|")[0]
        parts.append(f"rows now {count}")
    return ", ".join(parts) or "changed"


# ---------------------------------------------------------------------------------------------
# A minimal stdio client for the handshake era


def read_status(pid):
    """VmRSS and VmHWM of a process in KiB, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            text = f.read()
    except OSError:
        return None
    fields = {}
    for line in text.splitlines():
        if line.startswith(("VmRSS:", "VmHWM:")):
            name, value = line.split(":", 1)
            fields[name] = int(value.split()[0])
    return fields


class MemoryWatch:
    """Samples a process's resident memory every 20 ms; kills it above `cap_kib`."""

    def __init__(self, pid, cap_kib=None):
        self.pid = pid
        self.cap_kib = cap_kib
        self.peak_kib = 0
        self.killed_at_cap = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.is_set():
            status = read_status(self.pid)
            if status is None:
                return
            self.peak_kib = max(self.peak_kib, status.get("VmHWM", 0), status.get("VmRSS", 0))
            if self.cap_kib and status.get("VmRSS", 0) > self.cap_kib:
                self.killed_at_cap = True
                try:
                    os.kill(self.pid, signal.SIGKILL)
                except OSError:
                    pass
                return
            self._stop.wait(0.02)

    def stop(self):
        status = read_status(self.pid)
        if status:
            self.peak_kib = max(self.peak_kib, status.get("VmHWM", 0))
        self._stop.set()
        self._thread.join(1)
        return self.peak_kib


class StdioServer:
    """One server process, spoken to with newline-delimited JSON-RPC on its stdin and stdout."""

    def __init__(self, argv, stderr_path):
        self.started = time.monotonic()
        self._stderr = open(stderr_path, "ab")
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self._stderr, start_new_session=True)
        self._lines = queue.Queue()
        self._next_id = 0
        threading.Thread(target=self._reader, daemon=True).start()

    def _reader(self):
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def send(self, message):
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method, params, timeout):
        """Sends a request and waits for its answer: (message or None, size in bytes, seconds).

        None means no answer in time, or the server ended first. Messages the server sends
        meanwhile (log notifications, requests) are skipped; a request is answered with an error.
        """
        self._next_id += 1
        rid = self._next_id
        start = time.monotonic()
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        deadline = start + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None, 0, time.monotonic() - start
            try:
                line = self._lines.get(timeout=left)
            except queue.Empty:
                return None, 0, time.monotonic() - start
            if line is None:
                return None, 0, time.monotonic() - start
            size = len(line)
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if message.get("id") == rid and ("result" in message or "error" in message):
                return message, size, time.monotonic() - start
            if "method" in message and "id" in message:
                self.send({"jsonrpc": "2.0", "id": message["id"],
                           "error": {"code": -32601, "message": "not supported by this client"}})

    def handshake(self, timeout):
        answer, _, _ = self.request("initialize", {
            "protocolVersion": PROTOCOL, "capabilities": {},
            "clientInfo": {"name": "compare-sql-servers", "version": "1"}}, timeout)
        if not answer or "result" not in answer:
            raise RuntimeError(f"initialize failed: {answer}")
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return answer["result"]

    def close(self):
        """Closes stdin (the stdio way to stop), then SIGTERM, then SIGKILL."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        for sig, wait in ((None, 2), (signal.SIGTERM, 2), (signal.SIGKILL, 5)):
            if sig is not None:
                try:
                    os.killpg(self.proc.pid, sig)
                except OSError:
                    pass
            try:
                self.proc.wait(wait)
                break
            except subprocess.TimeoutExpired:
                continue
        self._stderr.close()


def tool_outcome(answer, error_prefixes=()):
    """'ok', 'tool error', 'json-rpc error' or 'no answer', and the text of the answer.

    `error_prefixes`: texts with which a server words an error in a result it does not flag
    `isError` (mcp-server-sqlite answers "Error: ..." and "Database error: ..." that way); such an
    answer counts as a tool error.
    """
    if answer is None:
        return "no answer", ""
    if "error" in answer:
        return "json-rpc error", str(answer["error"].get("message", ""))
    result = answer["result"]
    texts = [c.get("text", "") for c in result.get("content", []) if isinstance(c, dict)]
    text = "\n".join(texts)
    if result.get("isError") or (error_prefixes and text.startswith(tuple(error_prefixes))):
        return "tool error", text
    return "ok", text


def count_rows(answer, text):
    """How many rows an answer carried (structuredContent when given, else the text's shape)."""
    result = (answer or {}).get("result") or {}
    sc = result.get("structuredContent")
    if isinstance(sc, dict):
        rows = sc.get("rows")
        if isinstance(rows, list):
            return len(rows), bool(sc.get("truncated"))
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            return len(json.loads(stripped)), False
        except ValueError:
            pass
        # mcp-server-sqlite answers with Python's repr of a list of dicts.
        return stripped.count("{"), False
    return None, False


# ---------------------------------------------------------------------------------------------
# The bypass suite

# Each case: id, what it tries, SQL for PostgreSQL, SQL for SQLite (None: does not apply), kind.
#   write: a change persisting is a bypass; read: a legitimate read that should be answered;
#   time: a statement that runs long (a time limit should stop it); size: a huge result.
SQLITE_COUNTER = ("SELECT x FROM (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c "
                  "LIMIT {n}) SELECT x FROM c)")
CASES = [
    ("select", "plain `SELECT count(*)` (sanity)",
     "SELECT count(*) FROM accounts", "SELECT count(*) FROM accounts", "read"),
    ("with", "a legitimate `WITH ... SELECT`",
     "WITH t AS (SELECT balance FROM accounts) SELECT count(*), sum(balance) FROM t",
     "WITH t AS (SELECT balance FROM accounts) SELECT count(*), sum(balance) FROM t", "read"),
    ("delete", "`DELETE FROM accounts`", "DELETE FROM accounts", "DELETE FROM accounts", "write"),
    ("drop", "`DROP TABLE accounts`", "DROP TABLE accounts", "DROP TABLE accounts", "write"),
    ("commit-delete", "`COMMIT; DELETE FROM accounts`",
     "COMMIT; DELETE FROM accounts", "COMMIT; DELETE FROM accounts", "write"),
    ("commit-drop", "`COMMIT; DROP TABLE accounts`",
     "COMMIT; DROP TABLE accounts", "COMMIT; DROP TABLE accounts", "write"),
    ("stacked", "`SELECT 1; DELETE FROM accounts`",
     "SELECT 1; DELETE FROM accounts", "SELECT 1; DELETE FROM accounts", "write"),
    ("set-session", "`SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE; DELETE ...`",
     "SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE; DELETE FROM accounts", None, "write"),
    ("set-tx", "`SET TRANSACTION READ WRITE; DELETE ...`",
     "SET TRANSACTION READ WRITE; DELETE FROM accounts", None, "write"),
    ("commit-set-session", "`COMMIT; SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE; DELETE ...`",
     "COMMIT; SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE; DELETE FROM accounts", None, "write"),
    ("cte-delete", "data-modifying `WITH ... DELETE`",
     "WITH gone AS (DELETE FROM accounts RETURNING id) SELECT count(*) FROM gone",
     "WITH t AS (SELECT 1) DELETE FROM accounts", "write"),
    ("select-cte-delete", "the same behind a leading `SELECT` (`SELECT * FROM (WITH ... DELETE ...)`)",
     "SELECT * FROM (WITH gone AS (DELETE FROM accounts RETURNING id) SELECT count(*) FROM gone) AS s",
     None, "write"),
    ("temp", "`CREATE TEMP TABLE scratch AS SELECT ...`",
     "CREATE TEMP TABLE scratch AS SELECT * FROM accounts",
     "CREATE TEMP TABLE scratch AS SELECT * FROM accounts", "write"),
    ("copy-program", "`COMMIT; COPY accounts TO PROGRAM ...` (needs a privileged role)",
     "COMMIT; COPY accounts TO PROGRAM 'cat > /dev/null'", None, "write"),
    ("attach", "`ATTACH DATABASE` a new file",
     None, "ATTACH DATABASE '{attach}' AS side", "write"),
    ("sleep", "a long statement (`pg_sleep(30)`; SQLite: counting to 100 million)",
     "SELECT pg_sleep(30)",
     "SELECT count(*) FROM (" + SQLITE_COUNTER.format(n=100_000_000) + ")", "time"),
    ("huge", "ten million rows (`generate_series`; SQLite: a recursive CTE)",
     "SELECT g FROM generate_series(1, 10000000) AS g",
     SQLITE_COUNTER.format(n=10_000_000), "size"),
]


def classify(kind, outcome, text, change, seconds, rows, truncated, size, killed, cap_mib):
    """One cell of the bypass table: (short verdict, bypassed?)."""
    if kind == "write":
        if change:
            return f"**CHANGED DATA** ({change})", True
        if outcome in ("tool error", "json-rpc error"):
            return "refused", False
        if outcome == "no answer":
            return "no answer, no change", False
        return "ran, no change", False
    if kind == "read":
        if outcome == "ok":
            return "answered", False
        return f"refused ({first_line(text)})", False
    if kind == "time":
        if killed:
            return f"killed at the {seconds:.0f} s cap", True
        if outcome == "no answer":
            return f"still running at the {seconds:.0f} s cap", True
        if outcome == "ok":
            return f"ran to the end: {seconds:.1f} s", True
        return f"stopped after {seconds:.1f} s", False
    # size
    if killed:
        return f"killed at the {cap_mib:,} MiB memory cap after {seconds:.1f} s", True
    if outcome == "no answer":
        return f"no answer within {seconds:.0f} s", True
    if outcome != "ok":
        return f"refused ({first_line(text)})", False
    shown = f"{rows:,} rows" if rows is not None else "an answer"
    if truncated or (rows is not None and rows < 10_000_000):
        return f"cut to {shown} ({human_bytes(size)})", False
    return f"all {shown} as one {human_bytes(size)} message", True


def first_line(text, limit=70):
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    line = line.replace("|", "/")
    return line if len(line) <= limit else line[: limit - 3] + "..."


def human_bytes(n):
    if n >= 1 << 20:
        return f"{n / (1 << 20):,.0f} MB" if n >= 10 << 20 else f"{n / (1 << 20):.1f} MB"
    if n >= 1 << 10:
        return f"{n / 1024:,.0f} KB"
    return f"{n} B"


def run_case(server, case, work, log_dir, cap_mib):
    cid, _, pg_sql, sqlite_sql, kind = case
    sql = pg_sql if server["engine"] == "postgres" else sqlite_sql
    if sql is None:
        return None
    attach = os.path.join(work, "attached.db")
    if os.path.exists(attach):
        os.unlink(attach)
    sql = sql.replace("{attach}", attach)
    if server["engine"] == "postgres":
        restore_pg(server["admin_url"], server["owner"])
        before = state_pg(server["admin_url"])
    else:
        restore_sqlite(server["file"])
        before = state_sqlite(server["file"])
    timeout = {"time": 45, "size": 180}.get(kind, 30)
    srv = StdioServer(server["argv"], os.path.join(log_dir, f"{server['name']}.stderr"))
    watch = None
    try:
        srv.handshake(30)
        watch = MemoryWatch(srv.proc.pid, cap_mib * 1024)
        answer, size, seconds = srv.request(
            "tools/call", {"name": server["read_tool"], "arguments": {server["sql_arg"]: sql}}, timeout)
        if answer is None and watch.killed_at_cap:
            seconds = time.monotonic() - srv.started
    finally:
        peak = watch.stop() if watch else 0
        srv.close()
    killed = watch.killed_at_cap if watch else False
    outcome, text = tool_outcome(answer, server.get("error_prefixes", ()))
    rows, truncated = count_rows(answer, text) if outcome == "ok" else (None, False)
    after = state_pg(server["admin_url"]) if server["engine"] == "postgres" else state_sqlite(server["file"])
    change = describe_change(before, after)
    if cid == "attach" and os.path.exists(attach):
        change = (change + ", " if change else "") + "file created"
    verdict, bypassed = classify(kind, outcome, text, change, seconds, rows, truncated, size, killed, cap_mib)
    return {
        "case": cid, "kind": kind, "sql": sql, "outcome": outcome, "text": text[:300],
        "change": change, "seconds": round(seconds, 3), "bytes": size, "rows": rows,
        "truncated": truncated, "peak_rss_kib": peak, "killed_at_cap": killed,
        "verdict": verdict, "bypassed": bypassed,
    }


def cmd_bypass(args):
    servers = json.loads(open(args.servers).read())
    results = {}
    for case in CASES:
        if args.only and case[0] not in args.only.split(","):
            continue
        for server in servers:
            if case[2 if server["engine"] == "postgres" else 3] is None:
                continue
            r = run_case(server, case, args.work, args.work, args.cap_mib)
            print(f"   bypass {case[0]}: {server['name']}: {r['verdict']}", file=sys.stderr, flush=True)
            results.setdefault(server["name"], {})[case[0]] = r
    # Leave the fixtures as they were made.
    for server in servers:
        if server["engine"] == "postgres":
            restore_pg(server["admin_url"], server["owner"])
        else:
            restore_sqlite(server["file"])
    with open(args.out, "w") as f:
        json.dump(results, f, indent=1)


# ---------------------------------------------------------------------------------------------
# Privileged roles: does the server start as a superuser, and what runs then


def cmd_superuser(args):
    """Each PostgreSQL server started with the superuser's URL: refused at start, or what then?"""
    servers = json.loads(open(args.servers).read())
    results = {}
    # The program runs as the database server's OS user: the marker goes where that user may write.
    marker = os.path.join(args.marker_dir, "copy-to-program-ran")
    for server in servers:
        if server["engine"] != "postgres":
            continue
        if os.path.exists(marker):
            os.unlink(marker)
        argv = [a.replace(server["app_url"], server["admin_url"]) for a in server["argv"]]
        srv = StdioServer(argv, os.path.join(args.work, f"{server['name']}-superuser.stderr"))
        entry = {}
        try:
            try:
                srv.handshake(30)
                answer, _, _ = srv.request("tools/call", {"name": server["read_tool"], "arguments": {
                    server["sql_arg"]: f"COMMIT; COPY (SELECT 1) TO PROGRAM 'touch {marker}'"}}, 30)
                outcome, text = tool_outcome(answer)
                entry = {"started": True, "outcome": outcome, "text": text[:300]}
            except (RuntimeError, BrokenPipeError) as e:
                entry = {"started": False, "text": str(e)[:300]}
        finally:
            srv.close()
        if not entry.get("started"):
            with open(os.path.join(args.work, f"{server['name']}-superuser.stderr"), errors="replace") as f:
                lines = [l.strip() for l in f if l.strip()]
            entry["text"] = lines[-1][:1000] if lines else entry["text"]
        entry["program_ran"] = os.path.exists(marker)
        results[server["name"]] = entry
        print(f"   superuser: {server['name']}: {entry}", file=sys.stderr, flush=True)
    with open(args.out, "w") as f:
        json.dump(results, f, indent=1)


# ---------------------------------------------------------------------------------------------
# Cold start


def cmd_cold(args):
    servers = json.loads(open(args.servers).read())
    results = {}
    for run in range(args.runs):
        for server in (servers if run % 2 == 0 else list(reversed(servers))):
            srv = StdioServer(server["argv"], os.path.join(args.work, f"{server['name']}-cold.stderr"))
            try:
                srv.handshake(30)
                listed, _, _ = srv.request("tools/list", {}, 30)
                to_list = time.monotonic() - srv.started
                answer, _, _ = srv.request("tools/call", {"name": server["read_tool"], "arguments": {
                    server["sql_arg"]: server["bench_sql"]}}, 30)
                to_query = time.monotonic() - srv.started
                status = read_status(srv.proc.pid) or {}
            finally:
                srv.close()
            if not listed or "result" not in listed or tool_outcome(answer, server.get("error_prefixes", ()))[0] != "ok":
                raise SystemExit(f"cold start: {server['name']} did not answer tools/list and a query: "
                                 f"{listed} / {answer}")
            entry = results.setdefault(server["name"], {"to_list": [], "to_query": [], "rss_kib": []})
            entry["to_list"].append(to_list)
            entry["to_query"].append(to_query)
            entry["rss_kib"].append(status.get("VmRSS", 0))
    with open(args.out, "w") as f:
        json.dump(results, f, indent=1)
    for name, e in results.items():
        print(f"   cold {name}: tools/list {statistics.median(e['to_list']) * 1000:.0f} ms, "
              f"first query {statistics.median(e['to_query']) * 1000:.0f} ms, "
              f"RSS {statistics.median(e['rss_kib']) / 1024:.1f} MiB", file=sys.stderr)


# ---------------------------------------------------------------------------------------------
# Throughput with the server's memory


def descendants(pid):
    out = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                for child in f.read().split():
                    out.append(int(child))
                    out.extend(descendants(int(child)))
    except OSError:
        pass
    return out


def cmd_bench(args):
    """Runs `kelson bench ... --json` (its stdout into --out) and records the server's memory."""
    argv = args.argv[1:] if args.argv and args.argv[0] == "--" else args.argv
    with open(args.out, "w") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.PIPE, text=True)
        peak_hwm = 0
        last_rss = 0
        deadline = time.monotonic() + args.timeout
        while proc.poll() is None:
            if time.monotonic() > deadline:
                proc.kill()
                proc.wait()
                raise SystemExit(f"kelson bench did not finish within {args.timeout} s: {' '.join(argv)}")
            for child in descendants(proc.pid):
                status = read_status(child)
                if status:
                    peak_hwm = max(peak_hwm, status.get("VmHWM", 0))
                    last_rss = status.get("VmRSS", last_rss)
            time.sleep(0.1)
        stderr = proc.stderr.read()
    if proc.returncode != 0:
        sys.stderr.write(stderr[-3000:])
        raise SystemExit(f"kelson bench failed with exit code {proc.returncode}")
    with open(args.out) as f:
        report = json.load(f)
    report["server_memory"] = {"vmhwm_kib": peak_hwm, "vmrss_kib": last_rss}
    with open(args.out, "w") as f:
        json.dump(report, f, indent=1)


def ceiling_throughput(tool, stdout, queries=None):
    """Queries per second from the output of `pgbench` (its tps line) or of `mysqlslap` (the
    average seconds to run all `queries`), with the failures pgbench counted; None when absent."""
    if tool == "mysqlslap":
        m = re.search(r"Average number of seconds to run all queries: ([0-9.]+) seconds", stdout)
        if not m or not queries or float(m.group(1)) <= 0:
            return None
        return queries / float(m.group(1)), 0
    m = re.search(r"^tps = ([0-9.]+)", stdout, re.M)
    if not m:
        return None
    failed = re.search(r"number of failed transactions: (\d+)", stdout)
    return float(m.group(1)), int(failed.group(1)) if failed else 0


def cmd_ceiling(args):
    """Runs `pgbench ...` or `mysqlslap ...` and keeps its queries per second (into --out, as
    JSON)."""
    argv = args.argv[1:] if args.argv and args.argv[0] == "--" else args.argv
    tool = os.path.basename(argv[0]) if argv else "?"
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        raise SystemExit(f"{tool} did not finish within {args.timeout} s: {' '.join(argv)}")
    found = ceiling_throughput(tool, done.stdout, args.queries)
    if done.returncode != 0 or found is None:
        sys.stderr.write(done.stdout[-2000:] + done.stderr[-2000:])
        raise SystemExit(f"{tool} failed with exit code {done.returncode}")
    with open(args.out, "w") as f:
        json.dump({"throughput": found[0], "failed": found[1]}, f, indent=1)


def ceiling_rows(out_dir, prefix="ceiling"):
    """{setting: [reports]} from the <prefix>-<setting>-r<round>.json files."""
    rows = {}
    for name in sorted(os.listdir(out_dir)):
        m = re.fullmatch(re.escape(prefix) + r"-(if\d+)-r(\d+)\.json", name)
        if m:
            with open(os.path.join(out_dir, name)) as f:
                rows.setdefault(m.group(1), []).append(json.load(f))
    return rows


# ---------------------------------------------------------------------------------------------
# The report


def replace_section(document, section):
    """`document` with its SECTION (up to the next `## ` heading) replaced by `section`, or with
    `section` appended when it has none. Everything else is left as it was."""
    lines = document.splitlines(keepends=True)
    start = next((i for i, l in enumerate(lines) if l.rstrip("\n") == SECTION), None)
    body = section.rstrip("\n") + "\n"
    if start is None:
        head = document.rstrip("\n")
        return (head + "\n\n" if head else "") + body
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    rest = "".join(lines[end:])
    return "".join(lines[:start]) + body + ("\n" + rest if rest else "")


def bench_rows(out_dir):
    """{(server, setting): [reports]} from the bench-<server>-<setting>-r<round>.json files."""
    runs = {}
    for name in sorted(os.listdir(out_dir)):
        m = re.fullmatch(r"bench-(.+)-(if\d+|http\d+)-r(\d+)\.json", name)
        if m:
            with open(os.path.join(out_dir, name)) as f:
                runs.setdefault((m.group(1), m.group(2)), []).append(json.load(f))
    return runs


def median_of(reports, get):
    return statistics.median(get(r) for r in reports)


def report_notes(bypass, meta, runs=None):
    """What the tables need said beside them; each note only where the run showed it."""
    notes = []
    runs = runs or {}
    ours_names = {s["name"] for s in meta.get("servers", []) if s.get("ours")}

    def case(server, cid):
        return bypass.get(server, {}).get(cid) or {}

    ref = "mcp-server-sqlite"
    if ref in bypass:
        refuses_with = case(ref, "with").get("outcome") not in (None, "ok")
        notes.append(
            "mcp-server-sqlite also has `write_query` and `create_table`, which write with no approval step: a "
            "policy difference, not a bypass, so the suite targets its read tool `read_query`. That tool decides "
            "by the text: it refuses whatever does not start with `SELECT`"
            + (", legitimate `WITH` reads included" if refuses_with else "")
            + ", and Python's sqlite3 runs one statement per call. Its refusals come back as ordinary results "
            "(\"Error: ...\", without `isError`); they are counted as refusals here by their text.")
    ref = "server-postgres"
    if ref in bypass:
        escaped = [cid for cid in ("commit-delete", "commit-drop", "commit-set-session") if case(ref, cid).get("bypassed")]
        set_tx = case(ref, "set-tx")
        text = ("server-postgres sends the text as one simple-protocol query after `BEGIN TRANSACTION READ ONLY` "
                "(its pg client allows several statements in one call) and sends `ROLLBACK` after the answer.")
        if escaped:
            text += (" A `COMMIT` at the start ends the read-only transaction, and the statements after it run in "
                     "autocommit with all the rights of the role: with the application's role, its data is gone.")
        if set_tx.get("outcome") == "ok" and not set_tx.get("change"):
            text += (" `SET TRANSACTION READ WRITE` is accepted too, since no query has run yet in the "
                     "transaction; the `DELETE` after it then runs read-write and is undone only by that `ROLLBACK`.")
        notes.append(text)
    ours = [n for n in bypass if n in ours_names]
    if ours:
        changed = [f"{n}: {cid}" for n in ours for cid, r in bypass[n].items() if r.get("bypassed")]
        notes.append(
            "`kelson serve` runs exactly one statement per call, prepared, in a read-only transaction that is rolled "
            "back (PostgreSQL) or on a read-only connection with an authorizer that allows only reads (SQLite), "
            "and cuts every answer at 1,000 rows, 512 KiB and 10 s by default (`--max-rows`, `--max-bytes`, "
            "`--query-timeout`)"
            + (". Here it let nothing through." if not changed else f". Bypassed here: {', '.join(changed)}."))
    def tput(name, setting):
        reports = runs.get((name, setting))
        return median_of(reports, lambda r: r["throughput"]) if reports else None

    slower = [setting for setting in ("if1", "if16")
              if tput("mcp-serve-postgres", setting) and tput("server-postgres", setting)
              and tput("mcp-serve-postgres", setting) < tput("server-postgres", setting)]
    if slower:
        notes.append(
            "On PostgreSQL, server-postgres answers more queries per second than `kelson serve` ("
            + ", ".join(f"{tput('server-postgres', s):,.0f} against {tput('mcp-serve-postgres', s):,.0f} "
                        f"with {s[2:]} in flight" for s in slower)
            + "). Both spend one round trip to the database per call (`kelson serve` sends the read-only "
            "transaction, its limits and the prepared statement in one write, and its rollback and reset "
            "after the answer without waiting); `kelson serve` also checks every row against its limits "
            "and serves from a pool of 4 connections (`connections`) against server-postgres's 10.")
    notes.append(
        "Cold start: server-postgres connects to the database only at the first call, while `kelson serve` "
        "connects and checks the role's privileges before it answers `initialize`; \"start to first query\" "
        "compares the same work. The memory figures are the server process's own (VmRSS, VmHWM); the "
        "PostgreSQL backends are not counted for anyone.")
    notes.append(
        "The machine is shared and noisy (other work runs beside the measurement, and PostgreSQL runs on the "
        "same 2 CPUs): compare servers within the run rather than the absolute figures.")
    return notes


def ceiling_cells(ceilings):
    """The ceiling row's cells: the median queries per second at each setting, no latency."""
    cells = []
    for setting in ("if1", "if16"):
        reports = ceilings.get(setting)
        cells += [f"{median_of(reports, lambda r: r['throughput']):,.0f}" if reports else "n/a", ""]
    return cells


def rate_cells(reports):
    """A server's cells at one setting: median requests per second, and median p50 / p99 in ms."""
    return [f"{median_of(reports, lambda r: r['throughput']):,.0f}",
            f"{median_of(reports, lambda r: r['latency_us']['p50']) / 1000:.2f} / "
            f"{median_of(reports, lambda r: r['latency_us']['p99']) / 1000:.2f}"]


def guarded_script(sql, timeout_ms=10000):
    """A pgbench script of what `kelson serve` sends PostgreSQL for one read, pipelined in one
    Sync: the read-only transaction, the statement that sets its limits (and takes its first
    snapshot), the statement, the rollback and the session reset. What the database alone
    can do with every guarantee kept."""
    return "\n".join([
        "\\startpipeline",
        "START TRANSACTION READ ONLY;",
        f"SELECT set_config('statement_timeout', '{timeout_ms}', true), "
        f"set_config('lock_timeout', '{timeout_ms}', true), "
        f"set_config('idle_in_transaction_session_timeout', '{timeout_ms + 60000}', true);",
        sql.rstrip(";") + ";",
        "ROLLBACK;",
        "SELECT pg_advisory_unlock_all();",
        "DEALLOCATE ALL;",
        "\\endpipeline",
    ]) + "\n"


def pg_ceiling_rows(servers, runs, plain, guarded):
    """The PostgreSQL ceilings' rows (the statement alone, and with kelson serve's statements
    around it) and each PostgreSQL server's share of each; nothing without ceilings."""
    L = []
    kinds = [(plain, "the database alone (`pgbench -M extended`, same statement and connections)",
              "Against the database alone"),
             (guarded, "the database alone with kelson serve's statements (`pgbench`: the transaction, its "
              "limits, the statement, the rollback and the reset pipelined)",
              "Against the database alone with kelson serve's statements")]
    sentences = []
    for ceilings, label, lead in kinds:
        if not ceilings:
            continue
        L.append(f"| PostgreSQL | {label} | " + " | ".join(ceiling_cells(ceilings)) + " | | | | | |")
        parts = []
        for setting in ("if1", "if16"):
            reports = ceilings.get(setting)
            if not reports:
                continue
            ceiling = median_of(reports, lambda r: r["throughput"])
            shares = []
            for s in servers:
                if s["engine"] != "postgres" or not runs.get((s["name"], setting)):
                    continue
                mine = median_of(runs[(s["name"], setting)], lambda r: r["throughput"])
                shares.append(f"{s['label']} {mine / ceiling:.2f}x")
            parts.append(f"with {setting[2:]} in flight, " + ", ".join(shares))
        sentences.append(f"{lead}: " + "; ".join(parts) + ".")
    if sentences:
        L += [""] + sentences
    return L


MARIADB = "mcp-serve-mariadb"


def mariadb_guarded_query(sql, timeout_ms=10000, max_rows=1000):
    """The one multi-statement query `kelson serve` sends MariaDB for a read (crates/kelson-sql,
    mysql/calls.rs): the limits with the statement's text as a hex literal in a variable, the
    read-only XA transaction, the statement prepared and executed, the transaction ended and
    rolled back. For mysqlslap with a delimiter that is not `;`, so that it goes as one query. The
    session reset that follows each call is not in it (mysqlslap cannot send one), and the XA id
    is one literal, so only one client may run it at a time."""
    secs = -(-timeout_ms // 1000)
    hexed = sql.rstrip(";").encode().hex()
    return (f"SET SESSION max_statement_time = {timeout_ms / 1000:.3f}, SESSION lock_wait_timeout = {secs}, "
            f"SESSION innodb_lock_wait_timeout = {secs}, SESSION time_zone = '+00:00', "
            f"SESSION sql_select_limit = {max_rows + 1}, @kelson_sql = CONVERT(X'{hexed}' USING utf8mb4); "
            "SET TRANSACTION READ ONLY; XA START 'kelson-ceiling'; PREPARE kelson_stmt FROM @kelson_sql; "
            "EXECUTE kelson_stmt; XA END 'kelson-ceiling'; XA ROLLBACK 'kelson-ceiling'")


def mariadb_rows(runs, ceilings, guarded=None):
    """The lines on MariaDB: `kelson serve` (no reference server serves MariaDB) and the database
    alone through mysqlslap, the bare statement and, where measured, kelson serve's whole query,
    with kelson's share of each; nothing when MariaDB was not measured."""
    guarded = guarded or {}
    if not any(k[0] == MARIADB for k in runs):
        return []
    L = ["", "MariaDB (no reference server exists for it; the same table and statement, an account "
         "with SELECT only):", "",
         "| database | server | req/s, 1 in flight | p50 / p99 ms | req/s, 16 in flight | p50 / p99 ms | errors |",
         "|---|---|---:|---:|---:|---:|---:|"]
    cells, errors, shares, guarded_shares = [], 0, [], []
    for setting in ("if1", "if16"):
        reports = runs.get((MARIADB, setting))
        if not reports:
            cells += ["n/a", "n/a"]
            continue
        mine = median_of(reports, lambda r: r["throughput"])
        cells += rate_cells(reports)
        errors += sum(sum(r["errors"].values()) for r in reports)
        for ceiling, out in ((ceilings, shares), (guarded, guarded_shares)):
            if ceiling.get(setting):
                out.append(f"with {setting[2:]} in flight {mine / median_of(ceiling[setting], lambda r: r['throughput']):.2f}x")
    L.append("| MariaDB | kelson serve | " + " | ".join(cells) + f" | {errors} |")
    if ceilings:
        L.append("| MariaDB | the database alone (`mysqlslap`, same statement and connections) | "
                 + " | ".join(ceiling_cells(ceilings)) + " | |")
    if guarded:
        L.append("| MariaDB | the database alone with kelson serve's query (`mysqlslap`: the limits, the read-only "
                 "XA transaction, the statement prepared and executed, the end; one client, since the XA id is "
                 "one literal; without the session reset) | " + " | ".join(ceiling_cells(guarded)) + " | |")
    if shares:
        L += ["", "kelson serve against the database alone on MariaDB: " + "; ".join(shares) + ". mysqlslap "
              "sends the text as a plain query; kelson serve prepares it, runs it in a read-only XA transaction "
              "with its limits and resets the session after each call."]
    if guarded_shares:
        L += ["", "kelson serve against the database alone sending kelson serve's query: "
              + "; ".join(guarded_shares) + "."]
    return L


def cmd_report(args):
    out_dir = args.out_dir
    meta = json.loads(open(args.meta).read())
    servers = meta["servers"]          # [{name, label, engine}]
    bypass = json.loads(open(os.path.join(out_dir, "bypass.json")).read())
    cold = json.loads(open(os.path.join(out_dir, "cold.json")).read())
    superuser_path = os.path.join(out_dir, "superuser.json")
    superuser = json.loads(open(superuser_path).read()) if os.path.exists(superuser_path) else {}
    runs = bench_rows(out_dir)
    label = {s["name"]: s["label"] for s in servers}
    L = []
    L.append(SECTION)
    L.append("")
    L.append(
        "`kelson serve` next to the SQL MCP servers users would pick instead, on the same databases: the archived "
        "official reference servers, " + ", ".join(meta["versions"]) + ". A fixture table `accounts` "
        f"({ROWS:,} rows) in an SQLite file and in a fresh PostgreSQL database; the PostgreSQL servers "
        "connect as the same ordinary application role, which owns the table (it can write: what the "
        "server's read-only promise has to hold against), not a superuser. Everything goes through stdio "
        "with the handshake era, which the reference servers speak (the only era they know).")
    L.append("")
    L.append(f"Reproduce: `{meta['command']}` (this run: {meta['rounds']} round(s) of {meta['duration']} s per "
             f"server and setting after a 1 s warm-up, servers alternating, medians reported; cold start: median "
             f"of {meta['cold_runs']} starts). Machine: {meta['cpus']} CPUs ({meta['cpu']}), PostgreSQL "
             f"{meta['pg_version']}, SQLite {meta['sqlite_version']}, Node {meta['node_version']}, Python "
             f"{meta['python_version']}; measured on {meta['date']}. Raw results: `bench-out/`.")
    L.append("")
    L.append("### Bypass suite")
    L.append("")
    L.append(
        "Each attempt goes through the server's read tool (`query`; `read_query` for mcp-server-sqlite) with a "
        "fresh server and a freshly restored fixture, and the database is checked directly afterwards (its "
        "tables and the accounts' count and sum). **CHANGED DATA** means the write persisted: the read-only "
        "promise was bypassed. \"refused\" is an error answer with nothing changed; \"ran, no change\" an "
        "answer without error where nothing persisted. The long statement is capped at 45 s of wall time and "
        f"the huge result at {meta['cap_mib']:,} MiB of server memory (the server is killed there).")
    L.append("")
    for engine, title in (("sqlite", "SQLite"), ("postgres", "PostgreSQL")):
        names = [s["name"] for s in servers if s["engine"] == engine]
        if not names:
            continue
        L.append(f"{title}:")
        L.append("")
        L.append("| attempt | " + " | ".join(label[n] for n in names) + " |")
        L.append("|---|" + "---|" * len(names))
        for cid, what, pg_sql, sqlite_sql, kind in CASES:
            if (pg_sql if engine == "postgres" else sqlite_sql) is None:
                continue
            cells = []
            for n in names:
                r = bypass.get(n, {}).get(cid)
                if r is None:
                    cells.append("n/a")
                    continue
                cell = r["verdict"]
                if kind == "size":
                    cell += f"; peak RSS {r['peak_rss_kib'] / 1024:,.0f} MiB"
                cells.append(cell)
            L.append(f"| {what} | " + " | ".join(cells) + " |")
        L.append("")
        bypassed = {n: [cid for cid, r in bypass.get(n, {}).items() if r["bypassed"] and r["kind"] == "write"]
                    for n in names}
        what_of = {c[0]: c[1] for c in CASES}
        summary = "; ".join(f"{label[n]}: " + (f"{len(v)} of them (" + ", ".join(what_of[c] for c in v) + ")"
                                                if v else "none")
                            for n, v in bypassed.items())
        L.append(f"Writes that persisted through the read tool: {summary}.")
        L.append("")
    if superuser:
        L.append("Started with the superuser's URL (`postgres`), and then asked for "
                 "`COMMIT; COPY (SELECT 1) TO PROGRAM 'touch FILE'` through the read tool:")
        L.append("")
        L.append("| server | starts as a superuser | the program ran on the database host |")
        L.append("|---|---|---|")
        for n, e in superuser.items():
            started = "yes" if e.get("started") else f"no: `{first_line(e.get('text', '').split(';')[0], 300)}`"
            ran = "**yes**" if e.get("program_ran") else "no"
            L.append(f"| {label.get(n, n)} | {started} | {ran} |")
        L.append("")
    L.append("### Throughput, cold start, memory")
    L.append("")
    L.append(
        f"`kelson bench --stdio SERVER --era legacy` calls the read tool with `{meta['bench_sql']}` (one row), "
        "checking every answer, with 1 and with 16 requests in flight"
        + (" (and `kelson serve --http` with 16 connections)" if any(k[1].startswith("http") for k in runs) else "")
        + ". Cold start: from spawning the server to the answer to `tools/list` (after `initialize`), and "
        "to the first query's answer; RSS idle is the server's VmRSS after that first query. Peak RSS: "
        "the server's VmHWM over the throughput runs.")
    L.append("")
    L.append("| database | server | req/s, 1 in flight | p50 / p99 ms | req/s, 16 in flight | p50 / p99 ms | "
             "errors | start to `tools/list` | start to first query | RSS idle | peak RSS under load |")
    L.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for s in servers:
        n = s["name"]
        cells = []
        errors = 0
        peak = 0
        for setting in ("if1", "if16"):
            reports = runs.get((n, setting))
            if not reports:
                cells += ["n/a", "n/a"]
                continue
            cells += rate_cells(reports)
            errors += sum(sum(r["errors"].values()) for r in reports)
            peak = max([peak] + [r.get("server_memory", {}).get("vmhwm_kib", 0) for r in reports])
        c = cold.get(n)
        if c:
            cells += [str(errors), f"{statistics.median(c['to_list']) * 1000:,.0f} ms",
                      f"{statistics.median(c['to_query']) * 1000:,.0f} ms",
                      f"{statistics.median(c['rss_kib']) / 1024:.1f} MiB"]
        else:
            cells += [str(errors), "n/a", "n/a", "n/a"]
        cells.append(f"{peak / 1024:.1f} MiB" if peak else "n/a")
        engine = "SQLite" if s["engine"] == "sqlite" else "PostgreSQL"
        L.append(f"| {engine} | {s['label']} | " + " | ".join(cells) + " |")
    plain = ceiling_rows(args.out_dir)
    guarded = ceiling_rows(args.out_dir, "ceiling-guarded")
    L += pg_ceiling_rows(servers, runs, plain, guarded)
    L += mariadb_rows(runs, ceiling_rows(args.out_dir, "ceiling-mariadb"),
                      ceiling_rows(args.out_dir, "ceiling-mariadb-guarded"))
    http = sorted(k for k in runs if k[1].startswith("http"))
    for n, setting in http:
        reports = runs[(n, setting)]
        conns = setting[4:]
        L.append("")
        L.append(f"Over HTTP ({label.get(n, n)} with `--http`, `kelson bench --url ... --era legacy -c {conns}`): "
                 f"{median_of(reports, lambda r: r['throughput']):,.0f} req/s, p50 "
                 f"{median_of(reports, lambda r: r['latency_us']['p50']) / 1000:.2f} ms, p99 "
                 f"{median_of(reports, lambda r: r['latency_us']['p99']) / 1000:.2f} ms, "
                 f"{sum(sum(r['errors'].values()) for r in reports)} errors.")
    L.append("")
    notes = report_notes(bypass, meta, runs)
    if notes:
        L.append("Notes:")
        L.append("")
        for note in notes:
            L.append(f"- {note}")
        L.append("")
    section = "\n".join(L)
    try:
        with open(args.benchmarks) as f:
            document = f.read()
    except FileNotFoundError:
        document = ""
    with open(args.benchmarks, "w") as f:
        f.write(replace_section(document, section))
    print(section)


def main():
    import argparse
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("fixture-pg")
    p.add_argument("admin_url")
    p.add_argument("owner")
    p = sub.add_parser("fixture-sqlite")
    p.add_argument("file")
    p = sub.add_parser("bypass")
    p.add_argument("--servers", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--cap-mib", type=int, default=6144)
    p.add_argument("--only", default="")
    p = sub.add_parser("superuser")
    p.add_argument("--servers", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--marker-dir", required=True)
    p = sub.add_parser("cold")
    p.add_argument("--servers", required=True)
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--out", required=True)
    p.add_argument("--work", required=True)
    p = sub.add_parser("bench")
    p.add_argument("--out", required=True)
    p.add_argument("--timeout", type=float, default=120)
    p.add_argument("argv", nargs=argparse.REMAINDER)
    p = sub.add_parser("ceiling")
    p.add_argument("--out", required=True)
    p.add_argument("--timeout", type=float, default=120)
    p.add_argument("--queries", type=int, default=None, help="mysqlslap: the queries it runs in all")
    p.add_argument("argv", nargs=argparse.REMAINDER)
    p = sub.add_parser("report")
    p.add_argument("out_dir")
    p.add_argument("benchmarks")
    p.add_argument("meta")
    args = parser.parse_args()
    # Stopped by the script's cleanup: unwind, so that every server started here is closed.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if args.command == "fixture-pg":
        restore_pg(args.admin_url, args.owner)
    elif args.command == "fixture-sqlite":
        restore_sqlite(args.file)
    else:
        {"bypass": cmd_bypass, "superuser": cmd_superuser, "cold": cmd_cold, "bench": cmd_bench,
         "ceiling": cmd_ceiling, "report": cmd_report}[args.command](args)


if __name__ == "__main__":
    main()
