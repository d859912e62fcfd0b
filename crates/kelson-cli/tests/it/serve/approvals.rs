//! Used write approvals stay used: a replayed approval is refused by the server that ran it, and
//! again after that server restarts with the same state key.

use serde_json::{Value, json};

use super::support::{Serve, TempDir, meta, post, sqlite_scalar};

/// `tools/call` of `execute` with `extra` fields (inputResponses, requestState) merged in.
fn execute(url: &str, arguments: &Value, extra: Value) -> Value {
    let mut params = json!({"name": "execute", "arguments": arguments, "_meta": meta(true)});
    for (k, v) in extra.as_object().expect("an object") {
        params[k] = v.clone();
    }
    post(url, "tools/call", Some("execute"), params)["result"].clone()
}

#[test]
fn a_used_approval_is_refused_after_a_restart() {
    let scratch = TempDir::new();
    let key = scratch.join("state.key");
    std::fs::write(&key, [9u8; 32]).unwrap();
    std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let data = scratch.join("data");
    let flags = ["--allow-write", "--state-key-file", key.to_str().unwrap()];
    let stock = || {
        sqlite_scalar(
            &data.join("sample.db"),
            "select stock from products where id = 1",
        )
    };

    let mut serve = Serve::start(&data, &flags);
    let arguments = json!({"sql": "update products set stock = stock + 1 where id = 1"});
    let asked = execute(&serve.url, &arguments, json!({}));
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    let input_key = asked["inputRequests"]
        .as_object()
        .and_then(|r| r.keys().next())
        .expect("an input request")
        .clone();
    let approval = json!({
        "inputResponses": {input_key: {"action": "accept", "content": {"approve": true}}},
        "requestState": asked["requestState"],
    });
    let before: i64 = stock().parse().unwrap();
    let ran = execute(&serve.url, &arguments, approval.clone());
    assert_eq!(ran["structuredContent"]["rows_affected"], 1, "{ran}");
    let replayed = execute(&serve.url, &arguments, approval.clone());
    assert_eq!(replayed["isError"], json!(true), "{replayed}");
    assert!(
        replayed["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("already used"),
        "{replayed}"
    );

    // The same key, the same data folder: the approval is still spent.
    serve.stop();
    let serve = Serve::start(&data, &flags);
    let after_restart = execute(&serve.url, &arguments, approval);
    assert_eq!(after_restart["isError"], json!(true), "{after_restart}");
    assert!(
        after_restart["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("already used"),
        "{after_restart}"
    );
    assert_eq!(stock().parse::<i64>().unwrap(), before + 1);
    assert!(
        serve.log().contains("used write approvals are recorded in"),
        "{}",
        serve.log()
    );
}
