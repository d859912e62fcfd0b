"""Fast tests of scripts/compare-sql-servers' own logic (no server, no database):
`python3 -m unittest discover -s scripts/lib -p 'test_*.py'`."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sql_compare as sc  # noqa: E402


class ReplaceSection(unittest.TestCase):
    def test_appends_when_missing(self):
        doc = "# Benchmarks\n\ntext\n"
        out = sc.replace_section(doc, sc.SECTION + "\n\nnew\n")
        self.assertEqual(out, "# Benchmarks\n\ntext\n\n" + sc.SECTION + "\n\nnew\n")

    def test_replaces_only_its_own_section(self):
        doc = ("# B\n\n## Before\n\na\n\n" + sc.SECTION + "\n\nold\n\n### Sub\n\nold too\n\n"
               "## After\n\nb\n")
        out = sc.replace_section(doc, sc.SECTION + "\n\nnew\n")
        self.assertEqual(out, "# B\n\n## Before\n\na\n\n" + sc.SECTION + "\n\nnew\n\n## After\n\nb\n")

    def test_replaces_a_last_section(self):
        doc = "# B\n\n" + sc.SECTION + "\n\nold\n"
        self.assertEqual(sc.replace_section(doc, sc.SECTION + "\n\nnew"), "# B\n\n" + sc.SECTION + "\n\nnew\n")

    def test_empty_document(self):
        self.assertEqual(sc.replace_section("", sc.SECTION + "\n"), sc.SECTION + "\n")

    def test_idempotent(self):
        doc = "# B\n\n## X\n\nx\n"
        once = sc.replace_section(doc, sc.SECTION + "\n\ns\n")
        self.assertEqual(sc.replace_section(once, sc.SECTION + "\n\ns\n"), once)


class BenchCompareKeepsOtherSections(unittest.TestCase):
    def test_rewritten_file_keeps_the_sections_it_does_not_write(self):
        import tempfile
        import bench_report
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "BENCHMARKS.md")
            with open(path, "w") as f:
                f.write("# B\n\n## X\n\nold\n\n" + sc.SECTION + "\n\nsql\n\n### Sub\n\nmore\n\n"
                        "## Several instances\n\nc\n\n## Micro\n\nm\n")
            out = bench_report.keep_other_sections(path, "# B\n\n## X\n\nnew\n\n## Micro\n\nm2\n")
            self.assertEqual(out, "# B\n\n## X\n\nnew\n\n## Micro\n\nm2\n\n" + sc.SECTION
                             + "\n\nsql\n\n### Sub\n\nmore\n\n## Several instances\n\nc\n")
            os.unlink(path)
            self.assertEqual(bench_report.keep_other_sections(path, "# B\n"), "# B\n")


class Changes(unittest.TestCase):
    base = {"tables": "accounts", "checksum": "1000|5005500.00"}

    def test_nothing(self):
        self.assertIsNone(sc.describe_change(self.base, dict(self.base)))

    def test_rows_deleted(self):
        self.assertEqual(sc.describe_change(self.base, {"tables": "accounts", "checksum": "0|0"}), "rows now 0")

    def test_table_dropped(self):
        self.assertEqual(sc.describe_change(self.base, {"tables": "", "checksum": None}), "table dropped")

    def test_table_created(self):
        after = {"tables": "accounts,scratch", "checksum": self.base["checksum"]}
        self.assertEqual(sc.describe_change(self.base, after), "table created")


class Outcomes(unittest.TestCase):
    def test_kinds(self):
        self.assertEqual(sc.tool_outcome(None), ("no answer", ""))
        self.assertEqual(sc.tool_outcome({"error": {"code": -32603, "message": "boom"}}),
                         ("json-rpc error", "boom"))
        ok = {"result": {"content": [{"type": "text", "text": "[]"}]}}
        self.assertEqual(sc.tool_outcome(ok), ("ok", "[]"))
        err = {"result": {"content": [{"type": "text", "text": "no"}], "isError": True}}
        self.assertEqual(sc.tool_outcome(err), ("tool error", "no"))

    def test_error_worded_as_a_result(self):
        answer = {"result": {"content": [{"type": "text", "text": "Error: Only SELECT queries"}]}}
        self.assertEqual(sc.tool_outcome(answer)[0], "ok")
        self.assertEqual(sc.tool_outcome(answer, ("Error:",))[0], "tool error")

    def test_row_counts(self):
        structured = {"result": {"structuredContent": {"rows": [[1], [2]], "truncated": True}}}
        self.assertEqual(sc.count_rows(structured, ""), (2, True))
        self.assertEqual(sc.count_rows({"result": {}}, '[{"g": 1}, {"g": 2}]'), (2, False))
        self.assertEqual(sc.count_rows({"result": {}}, "[{'x': 1}, {'x': 2}, {'x': 3}]"), (3, False))
        self.assertEqual(sc.count_rows({"result": {}}, "done"), (None, False))


class Verdicts(unittest.TestCase):
    def verdict(self, kind, outcome, change=None, seconds=1.0, rows=None, truncated=False, size=0,
                killed=False):
        return sc.classify(kind, outcome, "text", change, seconds, rows, truncated, size, killed, 6144)

    def test_write(self):
        self.assertEqual(self.verdict("write", "ok", change="rows now 0"),
                         ("**CHANGED DATA** (rows now 0)", True))
        self.assertEqual(self.verdict("write", "tool error"), ("refused", False))
        self.assertEqual(self.verdict("write", "json-rpc error"), ("refused", False))
        self.assertEqual(self.verdict("write", "ok"), ("ran, no change", False))
        # A refusal that changed data anyway is still a bypass.
        self.assertTrue(self.verdict("write", "tool error", change="table dropped")[1])

    def test_time(self):
        self.assertEqual(self.verdict("time", "ok", seconds=30.04), ("ran to the end: 30.0 s", True))
        self.assertEqual(self.verdict("time", "tool error", seconds=10.01), ("stopped after 10.0 s", False))
        self.assertEqual(self.verdict("time", "no answer", seconds=45.0), ("still running at the 45 s cap", True))

    def test_size(self):
        self.assertEqual(self.verdict("size", "ok", rows=1000, truncated=True, size=30_000),
                         ("cut to 1,000 rows (29 KB)", False))
        self.assertEqual(self.verdict("size", "ok", rows=10_000_000, size=300 << 20),
                         ("all 10,000,000 rows as one 300 MB message", True))
        self.assertTrue(self.verdict("size", "no answer", killed=True)[1])

    def test_read(self):
        self.assertEqual(self.verdict("read", "ok"), ("answered", False))
        self.assertEqual(self.verdict("read", "tool error")[0], "refused (text)")


class Cases(unittest.TestCase):
    def test_ids_unique_and_every_case_applies_somewhere(self):
        ids = [c[0] for c in sc.CASES]
        self.assertEqual(len(ids), len(set(ids)))
        for cid, _, pg, lite, kind in sc.CASES:
            self.assertTrue(pg or lite, cid)
            self.assertIn(kind, ("read", "write", "time", "size"))

    def test_fixture_sql(self):
        pg = sc.fixture_sql("app")
        self.assertTrue(pg[0].endswith("CASCADE"))
        self.assertEqual(pg[-1], "ALTER TABLE accounts OWNER TO app")
        self.assertFalse(any("CASCADE" in s or "OWNER" in s for s in sc.fixture_sql()))


class Ceilings(unittest.TestCase):
    PGBENCH = "transaction type: x\nnumber of failed transactions: 2 (0.001%)\ntps = 7513.25 (without initial connection time)\n"
    SLAP = ("Benchmark\n\tAverage number of seconds to run all queries: 0.400 seconds\n"
            "\tMinimum number of seconds to run all queries: 0.400 seconds\n")

    def test_pgbench(self):
        self.assertEqual(sc.ceiling_throughput("pgbench", self.PGBENCH), (7513.25, 2))
        self.assertIsNone(sc.ceiling_throughput("pgbench", "connection refused"))

    def test_mysqlslap(self):
        self.assertEqual(sc.ceiling_throughput("mysqlslap", self.SLAP, 4000), (10000.0, 0))
        self.assertIsNone(sc.ceiling_throughput("mysqlslap", self.SLAP, None))
        self.assertIsNone(sc.ceiling_throughput("mysqlslap", "Access denied", 4000))

    def test_ceiling_files_by_prefix(self):
        import json
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            for name, tput in (("ceiling-if1-r1", 1.0), ("ceiling-mariadb-if1-r1", 2.0),
                               ("ceiling-mariadb-if16-r2", 3.0)):
                with open(os.path.join(d, name + ".json"), "w") as f:
                    json.dump({"throughput": tput}, f)
            self.assertEqual(sc.ceiling_rows(d), {"if1": [{"throughput": 1.0}]})
            self.assertEqual(sc.ceiling_rows(d, "ceiling-mariadb"),
                             {"if1": [{"throughput": 2.0}], "if16": [{"throughput": 3.0}]})


class MariaDbRows(unittest.TestCase):
    @staticmethod
    def report(tput):
        return {"throughput": tput, "latency_us": {"p50": 500.0, "p99": 900.0}, "errors": {"x": 1}}

    def test_absent_when_not_measured(self):
        self.assertEqual(sc.mariadb_rows({("mcp-serve-postgres", "if1"): [self.report(1)]}, {}), [])

    def test_rows_and_shares(self):
        runs = {(sc.MARIADB, "if1"): [self.report(1000), self.report(3000), self.report(2000)],
                (sc.MARIADB, "if16"): [self.report(4000)]}
        ceilings = {"if1": [{"throughput": 10000.0}], "if16": [{"throughput": 40000.0}]}
        text = "\n".join(sc.mariadb_rows(runs, ceilings))
        self.assertIn("| MariaDB | kelson serve | 2,000 | 0.50 / 0.90 | 4,000 | 0.50 / 0.90 | 4 |", text)
        self.assertIn("| MariaDB | the database alone (`mysqlslap`, same statement and connections) | 10,000 |  | 40,000 |  | |", text)
        self.assertIn("with 1 in flight 0.20x; with 16 in flight 0.10x", text)
        self.assertNotIn("kelson serve's query", text)

    def test_the_guarded_ceiling_and_its_share(self):
        runs = {(sc.MARIADB, "if1"): [self.report(2000)], (sc.MARIADB, "if16"): [self.report(4000)]}
        ceilings = {"if1": [{"throughput": 10000.0}], "if16": [{"throughput": 40000.0}]}
        guarded = {"if1": [{"throughput": 5000.0}, {"throughput": 6000.0}, {"throughput": 4000.0}]}
        text = "\n".join(sc.mariadb_rows(runs, ceilings, guarded))
        self.assertIn("without the session reset) | 5,000 |  | n/a |  | |", text)
        self.assertIn("kelson serve against the database alone sending kelson serve's query: "
                      "with 1 in flight 0.40x.", text)

    def test_the_guarded_query_is_what_kelson_sends(self):
        q = sc.mariadb_guarded_query("SELECT 1;", 1500, 10)
        parts = q.split("; ")
        self.assertEqual(len(parts), 7)
        self.assertIn("max_statement_time = 1.500", parts[0])
        self.assertIn("lock_wait_timeout = 2", parts[0])
        self.assertIn("sql_select_limit = 11", parts[0])
        self.assertIn("@kelson_sql = CONVERT(X'53454c4543542031' USING utf8mb4)", parts[0])
        self.assertEqual(parts[1:], ["SET TRANSACTION READ ONLY", "XA START 'kelson-ceiling'",
                                     "PREPARE kelson_stmt FROM @kelson_sql", "EXECUTE kelson_stmt",
                                     "XA END 'kelson-ceiling'", "XA ROLLBACK 'kelson-ceiling'"])


class PgCeilings(unittest.TestCase):
    SERVERS = [{"name": "mcp-serve-postgres", "label": "kelson serve", "engine": "postgres"},
               {"name": "server-postgres", "label": "server-postgres", "engine": "postgres"},
               {"name": "mcp-serve-sqlite", "label": "kelson serve", "engine": "sqlite"}]

    @staticmethod
    def report(tput):
        return {"throughput": tput, "latency_us": {"p50": 500.0, "p99": 900.0}, "errors": {}}

    def test_both_ceilings_and_the_shares(self):
        runs = {("mcp-serve-postgres", "if1"): [self.report(3000)],
                ("server-postgres", "if1"): [self.report(1500)],
                ("mcp-serve-sqlite", "if1"): [self.report(9000)]}
        plain = {"if1": [{"throughput": 6000.0}]}
        guarded = {"if1": [{"throughput": 4000.0}, {"throughput": 5000.0}, {"throughput": 4500.0}]}
        text = "\n".join(sc.pg_ceiling_rows(self.SERVERS, runs, plain, guarded))
        self.assertIn("| PostgreSQL | the database alone (`pgbench -M extended`, same statement and connections) "
                      "| 6,000 |  | n/a |  | | | | | |", text)
        self.assertIn("kelson serve's statements (`pgbench`: the transaction, its limits, the statement, the "
                      "rollback and the reset pipelined) | 4,500 |", text)
        self.assertIn("Against the database alone: with 1 in flight, kelson serve 0.50x, server-postgres 0.25x.", text)
        self.assertIn("Against the database alone with kelson serve's statements: with 1 in flight, kelson serve "
                      "0.67x, server-postgres 0.33x.", text)

    def test_nothing_without_ceilings(self):
        self.assertEqual(sc.pg_ceiling_rows(self.SERVERS, {}, {}, {}), [])

    def test_the_guarded_script_is_one_pipeline_of_what_kelson_sends(self):
        script = sc.guarded_script("SELECT 1;", 1500).splitlines()
        self.assertEqual(script[0], "\\startpipeline")
        self.assertEqual(script[-1], "\\endpipeline")
        self.assertEqual(script[1], "START TRANSACTION READ ONLY;")
        self.assertIn("'1500'", script[2])
        self.assertIn("'61500'", script[2])
        self.assertEqual(script[3:7], ["SELECT 1;", "ROLLBACK;", "SELECT pg_advisory_unlock_all();",
                                       "DEALLOCATE ALL;"])


if __name__ == "__main__":
    unittest.main()
