"""Fast tests of scripts/bench-compare's report (no server): the text-only `echo_text` row beside
the structured `echo`. `python3 -m unittest discover -s scripts/lib -p 'test_*.py'`."""
import io
import json
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stdout
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_report  # noqa: E402


def write_run(out_dir, name, throughput):
    report = {"throughput": throughput, "latency_us": {"p50": 100.0, "p99": 200.0}, "errors": {}}
    with open(os.path.join(out_dir, name + ".json"), "w") as f:
        json.dump(report, f)


def report(out_dir, tmp):
    md = os.path.join(tmp, "BENCHMARKS.md")
    svg = os.path.join(tmp, "benchmarks", "throughput.svg")
    argv = ["bench_report.py", out_dir, md, svg, "1", "2", "1", "2", "a CPU"]
    with mock.patch.object(sys, "argv", argv), redirect_stdout(io.StringIO()):
        bench_report.main()
    with open(md) as f, open(svg) as g:
        return f.read(), g.read()


class TextOnlyRow(unittest.TestCase):
    def test_the_text_row_and_its_ratios(self):
        with tempfile.TemporaryDirectory() as tmp:
            out_dir = os.path.join(tmp, "run")
            os.makedirs(out_dir)
            for server, rate in (("kelson", 900), ("kelson-text", 1000), ("rmcp", 400), ("ceiling", 1250)):
                write_run(out_dir, f"http-{server}-c1-r1", rate)
            md, svg = report(out_dir, tmp)
        self.assertIn("| HTTP c=1 | kelson-text | 1,000 | 0.100 | 0.200 | 0 |", md)
        self.assertIn("| kelson-text / ceiling | kelson / kelson-text |", md)
        # kelson / rmcp, kelson / ceiling, kelson-text / ceiling, kelson / kelson-text.
        self.assertIn("| HTTP c=1 | 2.25x | 0.72x | 0.80x | 0.90x | 0.200 vs 0.200 ms |", md)
        self.assertIn("kelson, echo_text", svg)

    def test_without_the_text_row_the_table_is_as_before(self):
        with tempfile.TemporaryDirectory() as tmp:
            out_dir = os.path.join(tmp, "run")
            os.makedirs(out_dir)
            for server, rate in (("kelson", 900), ("rmcp", 400), ("ceiling", 1250)):
                write_run(out_dir, f"http-{server}-c1-r1", rate)
            md, svg = report(out_dir, tmp)
        self.assertNotIn("kelson-text", md)
        self.assertIn("| setting | kelson / rmcp (throughput) | kelson / ceiling (throughput) | "
                      "p99 kelson vs rmcp |", md)
        self.assertIn("| HTTP c=1 | 2.25x | 0.72x | 0.200 vs 0.200 ms |", md)
        self.assertNotIn("echo_text", svg)


if __name__ == "__main__":
    unittest.main()
