//! A hostile server cannot drive the terminal: a scripted stdio server in POSIX sh puts terminal
//! control sequences (CSI colours, cursor moves and screen clearing, OSC 0 titles, OSC 8 links,
//! OSC 52 clipboard writes, BEL, backspaces, a bare CR, a C1 CSI, bidi controls, DEL) in
//! everything it says, and the human output of `kelson` shows them as visible stand-ins, on stdout
//! and on stderr, while `--json` keeps the server's text exactly.

use std::path::PathBuf;
use std::sync::OnceLock;

use kelson_types::{
    ElicitRequestFormParams, ElicitRequestURLParams, EnumOption, InputRequest, InputRequiredResult,
    RequestedSchema, StringSchema, TitledSingleSelectEnumSchema,
};
use serde_json::{Value, json};

use crate::harness::{Run, mcp};

/// What the server puts in its text: clear the screen and home the cursor, set the window title,
/// write the clipboard, a hyperlink whose text is not its target, backspaces and a bare CR that
/// overwrite what came before, a C1 CSI, a right-to-left override, an isolate, a zero width space
/// and DEL.
const EVIL: &str = "\u{1b}[2J\u{1b}[H\u{1b}]0;pwned\u{7}\u{1b}]52;c;cm0gLXJmIH4=\u{7}\
                    \u{1b}]8;;https://evil.example\u{1b}\\link\u{1b}]8;;\u{1b}\\ok\u{8}\u{8}\rFAKE\
                    \u{9b}31m \u{202e}fdp.exe\u{2066}\u{200b}\u{7f}";

/// How `kelson` shows [`EVIL`]: every control as a Control Picture, every invisible character as its
/// code point.
const SHOWN: &str = "␛[2J␛[H␛]0;pwned␇␛]52;c;cm0gLXJmIH4=␇␛]8;;https://evil.example␛\\link\
                     ␛]8;;␛\\ok␈␈␍FAKE<U+009B>31m <U+202E>fdp.exe<U+2066><U+200B>␡";

/// A URL that, with its right-to-left override acting, would read as another site's.
const EVIL_URL: &str = "https://evil.example/\u{202e}moc.elpmaxe.doog//:sptth";

/// Panics when `text` holds a character that a terminal acts on or that hides or reorders text:
/// C0 controls but line feed and tab, DEL, C1 controls, bidi controls, invisible format characters.
#[track_caller]
fn assert_inert(what: &str, text: &str) {
    let bad = text.chars().find(|&c| {
        let code = u32::from(c);
        (c.is_control() && c != '\n' && c != '\t')
            || matches!(
                code,
                0x061c | 0x200b | 0x200e | 0x200f | 0x2028 | 0x2029 | 0xfeff
            )
            || (0x202a..=0x202e).contains(&code)
            || (0x2060..=0x206f).contains(&code)
    });
    if let Some(c) = bad {
        panic!("{what} holds {c:?}:\n{text}");
    }
}

#[track_caller]
fn assert_all_inert(run: &Run) {
    assert_inert("stdout", &run.stdout);
    assert_inert("stderr", &run.stderr);
}

/// One line of the script: `reply ID 'RESULT'` (or `fail`, `say`), the JSON inside single quotes.
fn quoted(value: &Value) -> String {
    let text = serde_json::to_string(value).expect("JSON");
    assert!(
        !text.contains('\''),
        "the shell quoting would break: {text}"
    );
    format!("'{text}'")
}

/// The server: answers by method (and by tool name for calls), with results built here, so that
/// the hostile text is exactly [`EVIL`]. Ids are read with sed: the client's are numbers; the
/// progress token of a call is its id.
fn script() -> String {
    let discover = json!({
        "resultType": "complete",
        "supportedVersions": ["2026-07-28"],
        "capabilities": {"tools": {}, "resources": {}, "prompts": {}, "completions": {}, "logging": {}},
        "instructions": format!("Use me.\n{EVIL}\nThe end."),
        "ttlMs": 0,
        "cacheScope": "public",
        "_meta": {"io.modelcontextprotocol/serverInfo": {
            "name": format!("evil{EVIL}"),
            "version": "1\u{1b}[8m",
            "title": EVIL,
            "description": format!("first\n{EVIL}"),
        }},
    });
    let tools = json!({
        "resultType": "complete",
        "tools": [
            {
                "name": "hostile_text",
                "title": EVIL,
                "description": format!("{EVIL}\nsecond line"),
                "inputSchema": {"type": "object", "properties": {"q\u{1b}[31m": {"type": "string"}}},
            },
            {"name": "hostile_error", "inputSchema": {"type": "object"}},
            {"name": "hostile_is_error", "inputSchema": {"type": "object"}},
            {"name": "hostile_form", "inputSchema": {"type": "object"}},
            {"name": "hostile_url", "inputSchema": {"type": "object"}},
            {"name": "evil\u{1b}[2Jname\nfake row", "inputSchema": {"type": "object"}},
        ],
        "ttlMs": 0,
        "cacheScope": "public",
    });
    let text = |text: String| json!({"resultType": "complete", "content": [{"type": "text", "text": text}]});
    let log = json!({
        "jsonrpc": "2.0",
        "method": "notifications/message",
        "params": {"level": "warning", "logger": "log\u{1b}]0;t\u{7}", "data": format!("log: {EVIL}")},
    });
    let progress_message = json!(format!("step {EVIL}"));
    let error = json!({
        "code": -32603,
        "message": format!("boom {EVIL}"),
        "data": {"why": "\u{9b}2J \u{202e}gnp.exe"},
    });
    let mut is_error = text(format!("failed {EVIL}"));
    is_error["isError"] = json!(true);
    let mut name = StringSchema::new().with_title(format!("Name {EVIL}"));
    name.description = Some(format!("Describe {EVIL}"));
    let size = TitledSingleSelectEnumSchema::new(vec![
        EnumOption::new("s\u{1b}[31m", format!("Small {EVIL}")),
        EnumOption::new("l", "Large\nfake line"),
    ]);
    let form = ElicitRequestFormParams::new(
        format!("Approve {EVIL}"),
        RequestedSchema::new()
            .required_property("name", name)
            .required_property("size", size),
    );
    let form = InputRequiredResult::new()
        .with_input_request("form", InputRequest::elicit(form))
        .with_request_state("s1");
    let url = InputRequiredResult::new()
        .with_input_request(
            "visit",
            InputRequest::elicit(ElicitRequestURLParams::new(
                format!("Visit {EVIL}"),
                EVIL_URL,
            )),
        )
        .with_request_state("s2");
    let read = json!({
        "resultType": "complete",
        "contents": [{"uri": "test://x\u{1b}[2J", "mimeType": "text/plain", "text": format!("read {EVIL}")}],
    });
    let complete = json!({
        "resultType": "complete",
        "completion": {"values": ["ok", "two\nlines", EVIL], "hasMore": false},
    });
    let prompt = json!({
        "resultType": "complete",
        "description": format!("prompt {EVIL}"),
        "messages": [{"role": "user", "content": {"type": "text", "text": format!("say {EVIL}")}}],
    });
    let form = serde_json::to_value(form).expect("JSON");
    let url = serde_json::to_value(url).expect("JSON");
    format!(
        r#"
reply() {{ printf '{{"jsonrpc":"2.0","id":%s,"result":%s}}\n' "$1" "$2"; }}
fail() {{ printf '{{"jsonrpc":"2.0","id":%s,"error":%s}}\n' "$1" "$2"; }}
while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p')
  tok=$(printf '%s' "$line" | sed -n 's/.*"progressToken":\([0-9][0-9]*\).*/\1/p')
  case "$line" in
    *'"method":"server/discover"'*) reply "$id" {discover};;
    *'"method":"tools/list"'*) reply "$id" {tools};;
    *'"method":"tools/call"'*'"name":"hostile_text"'*)
      printf '%s\n' {log}
      printf '{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"progressToken":%s,"progress":1,"total":2,"message":%s}}}}\n' "$tok" {progress_message}
      reply "$id" {result};;
    *'"method":"tools/call"'*'"name":"hostile_error"'*) fail "$id" {error};;
    *'"method":"tools/call"'*'"name":"hostile_is_error"'*) reply "$id" {is_error};;
    *'"method":"tools/call"'*'"name":"hostile_form"'*|*'"method":"tools/call"'*'"name":"hostile_url"'*)
      case "$line" in
        *inputResponses*)
          answer=$(printf '%s' "$line" | sed 's/\\/\\\\/g; s/"/\\"/g')
          printf '{{"jsonrpc":"2.0","id":%s,"result":{{"resultType":"complete","content":[{{"type":"text","text":"%s"}}]}}}}\n' "$id" "$answer";;
        *'"name":"hostile_form"'*) reply "$id" {form};;
        *) reply "$id" {url};;
      esac;;
    *'"method":"resources/read"'*) reply "$id" {read};;
    *'"method":"completion/complete"'*) reply "$id" {complete};;
    *'"method":"prompts/get"'*) reply "$id" {prompt};;
    *'"id":'*) fail "$id" '{{"code":-32601,"message":"Method not found"}}';;
  esac
done
"#,
        discover = quoted(&discover),
        tools = quoted(&tools),
        log = quoted(&log),
        progress_message = quoted(&progress_message),
        result = quoted(&text(format!("first line\n{EVIL}\nlast line"))),
        error = quoted(&error),
        is_error = quoted(&is_error),
        form = quoted(&form),
        url = quoted(&url),
        read = quoted(&read),
        complete = quoted(&complete),
        prompt = quoted(&prompt),
    )
}

/// The `--stdio` line of the server. The script is written once per test run to one shared path,
/// through a rename, so a run never reads a script another one is still writing.
fn hostile_server() -> String {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    let path = PATH.get_or_init(|| {
        let dir = std::env::temp_dir();
        let path = dir.join("mcp-cli-it-hostile-server.sh");
        let partial = dir.join(format!(
            "mcp-cli-it-hostile-server.sh.{}",
            std::process::id()
        ));
        std::fs::write(&partial, script()).expect("the script is written");
        std::fs::rename(&partial, &path).expect("the script is in place");
        path
    });
    format!("sh '{}'", path.to_str().expect("a UTF-8 path"))
}

#[test]
fn discover_and_lists_show_the_servers_text_inert() {
    let server = hostile_server();
    let run = mcp(&["discover", "--stdio", &server], "");
    run.expect_code(0);
    assert_all_inert(&run);
    let out = &run.stdout;
    assert!(
        out.contains(&format!("evil{SHOWN} 1␛[8m ({SHOWN})\n")),
        "{out}"
    );
    // Each line of the description and of the instructions is indented, under its heading.
    assert!(
        out.contains(&format!("              first\n              {SHOWN}\n")),
        "{out}"
    );
    assert!(
        out.contains(&format!("instructions\n  Use me.\n  {SHOWN}\n  The end.\n")),
        "{out}"
    );

    let run = mcp(&["tools", "--stdio", &server], "");
    run.expect_code(0);
    assert_all_inert(&run);
    let out = &run.stdout;
    // One row per tool, the header included: a line break in a name does not add a row.
    assert_eq!(out.lines().count(), 7, "{out}");
    let row = out
        .lines()
        .find(|l| l.starts_with("hostile_text"))
        .expect("a row for hostile_text");
    assert!(row.contains(SHOWN), "{row}");
    assert!(row.contains("q␛[31m: string"), "{row}");
    assert!(out.contains("evil␛[2Jname↵fake row"), "{out}");

    // One tool in full: its title, every line of its description, its argument's name.
    let run = mcp(&["tools", "hostile_text", "--stdio", &server], "");
    run.expect_code(0);
    assert_all_inert(&run);
    let out = &run.stdout;
    assert!(out.contains(&format!("title       {SHOWN}\n")), "{out}");
    assert!(
        out.contains(&format!("description {SHOWN}\n            second line\n")),
        "{out}"
    );
    assert!(out.contains("  q␛[31m: string\n"), "{out}");
    // And a name that is not there, with the closest, in our error line.
    let run = mcp(&["tools", "evil\u{1b}[2Jname", "--stdio", &server], "");
    run.expect_code(4);
    assert_all_inert(&run);
}

#[test]
fn results_logs_progress_and_errors_are_inert() {
    let server = hostile_server();
    let run = mcp(
        &["call", "hostile_text", "--log", "debug", "--stdio", &server],
        "",
    );
    run.expect_code(0);
    assert_all_inert(&run);
    // A result's lines stay lines; only what is not text is shown as a stand-in.
    assert_eq!(run.stdout, format!("first line\n{SHOWN}\nlast line\n"));
    assert!(
        run.stderr
            .contains(&format!("[warning log␛]0;t␇] log: {SHOWN}\n")),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains(&format!("progress: 1/2 (50%) step {SHOWN} [")),
        "{}",
        run.stderr
    );

    // A JSON-RPC error: its message and data, after our label.
    let run = mcp(&["call", "hostile_error", "--stdio", &server], "");
    run.expect_code(2);
    assert_all_inert(&run);
    assert!(
        run.stderr.starts_with(&format!(
            "error: tools/call: JSON-RPC error -32603: boom {SHOWN}\n  data: \
             {{\"why\":\"<U+009B>2J <U+202E>gnp.exe\"}}"
        )),
        "{}",
        run.stderr
    );

    // A tool's own error (isError).
    let run = mcp(&["call", "hostile_is_error", "--stdio", &server], "");
    run.expect_code(1);
    assert_all_inert(&run);
    assert_eq!(run.stdout, format!("failed {SHOWN}\n"));
}

#[test]
fn elicitation_prompts_are_inert_and_answers_are_the_servers_values() {
    let server = hostile_server();
    let run = mcp(&["call", "hostile_form", "--stdio", &server], "Ada\n1\n");
    run.expect_code(0);
    assert_all_inert(&run);
    let asked = &run.stderr;
    assert!(
        asked.contains(&format!("The server asks: Approve {SHOWN}\n")),
        "{asked}"
    );
    assert!(
        asked.contains(&format!("Name {SHOWN} * (name)\n")),
        "{asked}"
    );
    assert!(asked.contains(&format!("  Describe {SHOWN}\n")), "{asked}");
    assert!(
        asked.contains(&format!("    1) Small {SHOWN} [s␛[31m]\n")),
        "{asked}"
    );
    assert!(asked.contains("    2) Large↵fake line [l]\n"), "{asked}");
    // The server echoes the request that answered it: the chosen value went back as the server
    // gave it (JSON-escaped on the wire), not as it was shown.
    assert!(
        run.stdout
            .contains(r#""content":{"name":"Ada","size":"s\u001b[31m"}"#),
        "{}",
        run.stdout
    );

    // A URL elicitation: the URL cannot pass for another site's.
    let run = mcp(&["call", "hostile_url", "--stdio", &server], "n\n");
    run.expect_code(0);
    assert_all_inert(&run);
    assert!(
        run.stderr.contains(&format!(
            "The server asks you to open a URL: Visit {SHOWN}\n  URL: \
             https://evil.example/<U+202E>moc.elpmaxe.doog//:sptth\n"
        )),
        "{}",
        run.stderr
    );
    assert!(
        run.stdout.contains(r#""action":"decline""#),
        "{}",
        run.stdout
    );

    // Declined without asking, the note says the same.
    let run = mcp(
        &["call", "hostile_url", "--no-input", "--stdio", &server],
        "",
    );
    run.expect_code(0);
    assert_all_inert(&run);
    assert!(
        run.stderr.contains(&format!(
            "elicitation declined (--no-input): Visit {SHOWN} \
             (https://evil.example/<U+202E>moc.elpmaxe.doog//:sptth)\n"
        )),
        "{}",
        run.stderr
    );
}

#[test]
fn resources_completions_and_prompts_are_inert() {
    let server = hostile_server();
    let run = mcp(&["read", "test://x", "--stdio", &server], "");
    run.expect_code(0);
    assert_all_inert(&run);
    assert_eq!(run.stdout, format!("read {SHOWN}\n"));

    // One value per line: the line break inside the second is shown, not a third value.
    let run = mcp(
        &["complete", "--prompt", "p", "arg", "--stdio", &server],
        "",
    );
    run.expect_code(0);
    assert_all_inert(&run);
    assert_eq!(run.stdout, format!("ok\ntwo↵lines\n{SHOWN}\n"));

    let run = mcp(&["prompt", "p", "--stdio", &server], "");
    run.expect_code(0);
    assert_all_inert(&run);
    assert_eq!(run.stdout, format!("prompt {SHOWN}\nuser:\nsay {SHOWN}\n"));
}

#[test]
fn json_output_keeps_the_servers_text_exactly() {
    let server = hostile_server();
    let run = mcp(&["call", "hostile_text", "--json", "--stdio", &server], "");
    run.expect_code(0);
    // JSON escapes the C0 controls: none reaches the terminal raw ...
    assert!(
        !run.stdout
            .chars()
            .any(|c| c.is_ascii_control() && c != '\n' && c != '\u{7f}'),
        "{}",
        run.stdout
    );
    // ... and the text is the server's, to the character.
    let value = run.json();
    assert_eq!(
        value["content"][0]["text"],
        format!("first line\n{EVIL}\nlast line")
    );

    let run = mcp(&["tools", "--json", "--stdio", &server], "");
    run.expect_code(0);
    let value = run.json();
    assert_eq!(value["tools"][0]["title"], EVIL);
    assert_eq!(value["tools"][5]["name"], "evil\u{1b}[2Jname\nfake row");

    let run = mcp(&["call", "hostile_error", "--json", "--stdio", &server], "");
    run.expect_code(2);
    assert_eq!(run.json()["error"]["message"], format!("boom {EVIL}"));
}
