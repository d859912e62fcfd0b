//! A hand-written 2025-era stdio server in POSIX sh: it answers with members our types do not know,
//! without `resultType`, with a JSON-RPC error carrying data, and asks for a form whose fields are
//! not in alphabetical order (answered through `elicitation/create`, a server-to-client request).

use std::path::PathBuf;
use std::sync::OnceLock;

/// The server. Ids are read with sed: the client's are numbers; the one request it sends is "e1".
const SCRIPT: &str = r#"
call=""
while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p')
  case "$line" in
    *'"method":"server/discover"'*)
      printf '{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}\n' "$id";;
    *'"method":"initialize"'*)
      printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"sh-legacy","version":"1"}}}\n' "$id";;
    *'"method":"tools/list"'*)
      printf '{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"legacy_echo","inputSchema":{"type":"object"},"execution":{"taskSupport":"optional"}},{"name":"legacy_form","inputSchema":{"type":"object"}}]}}\n' "$id";;
    *'"method":"tools/call"'*'"name":"legacy_echo"'*)
      printf '{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"hi"}],"zeta":1.50,"alpha":{"later":true}}}\n' "$id";;
    *'"method":"tools/call"'*'"name":"legacy_fail"'*)
      printf '{"jsonrpc":"2.0","id":%s,"error":{"code":-32602,"message":"Unknown tool: legacy_fail","data":{"tool":"legacy_fail"}}}\n' "$id";;
    *'"method":"tools/call"'*'"name":"legacy_form"'*)
      call="$id"
      printf '{"jsonrpc":"2.0","id":"e1","method":"elicitation/create","params":{"message":"Who are you?","requestedSchema":{"type":"object","properties":{"name":{"type":"string","title":"Name"},"age":{"type":"integer","title":"Age"},"city":{"type":"string","title":"City"}},"required":["name"]}}}\n';;
    *'"id":"e1"'*)
      answer=$(printf '%s' "$line" | sed 's/\\/\\\\/g; s/"/\\"/g')
      printf '{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"%s"}]}}\n' "$call" "$answer";;
  esac
done
"#;

/// The `--stdio` command line of the server. The script is written once per test run to one path
/// shared by every run (so none leaves a file of its own behind), through a rename, so a run never
/// reads a script another one is still writing.
pub fn legacy_server() -> String {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    let path = PATH.get_or_init(|| {
        let dir = std::env::temp_dir();
        let path = dir.join("mcp-cli-it-legacy-server.sh");
        let partial = dir.join(format!(
            "mcp-cli-it-legacy-server.sh.{}",
            std::process::id()
        ));
        std::fs::write(&partial, SCRIPT).expect("the script is written");
        std::fs::rename(&partial, &path).expect("the script is in place");
        path
    });
    format!("sh '{}'", path.to_str().expect("a UTF-8 path"))
}
