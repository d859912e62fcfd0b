//! Writers of the Prometheus text exposition format (version 0.0.4), shared by the request metrics
//! and the connection metrics.

use std::fmt::Write as _;

/// Writes `# HELP` and `# TYPE` for a family. Help texts are ours: no backslash or newline.
pub(super) fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// Writes a label value with the escapes of the text format: backslash, double quote, newline.
pub(super) fn label_value(out: &mut String, value: &str) {
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}
