//! What `kelson call` prints: the content for a person, structured content only where it adds
//! something, and media files.

use std::ffi::OsStr;
use std::time::{Duration, SystemTime};

use crate::harness::{HttpServer, mcp_env};
use crate::serve::support::{Serve, TempDir};

/// 1,000 rows from the sample database, without depending on its tables' sizes.
const THOUSAND: &str = "sql=with recursive n(i) as (select 1 union all select i + 1 from n where i < 1000) select i from n";

#[test]
fn a_query_prints_its_rows_once() {
    let data = TempDir::new();
    let serve = Serve::start(data.path(), &[]);
    let run = serve.run(&["call", "query", "--arg", THOUSAND], "");
    run.expect_code(0);
    // The table: a header, a rule, the rows, the count.
    assert!(run.stdout.contains("(1000 rows)"), "{}", run.stdout);
    assert!(
        run.stdout.lines().count() < 1_010,
        "{}",
        run.stdout.lines().count()
    );
    assert!(!run.stdout.contains("structured content"), "{}", run.stdout);
    assert!(
        run.stderr.contains("--structured prints it"),
        "{}",
        run.stderr
    );

    let run = serve.run(&["call", "query", "--arg", THOUSAND, "--structured"], "");
    run.expect_code(0);
    let (table, structured) = run
        .stdout
        .split_once("structured content:\n")
        .expect("the structured content follows the table");
    assert!(table.contains("(1000 rows)"));
    let value: serde_json::Value = serde_json::from_str(structured).expect("JSON");
    assert_eq!(value["row_count"], 1000);
}

#[test]
fn structured_content_repeated_as_text_is_shown_once() {
    let server = HttpServer::start();
    let run = server.run(&["call", "cli_echo", "--arg", "count=2"], "");
    run.expect_code(0);
    assert_eq!(run.stdout, "{\n  \"count\": 2\n}\n");
    assert!(!run.stderr.contains("--structured"), "{}", run.stderr);
}

#[test]
fn media_go_to_one_folder_and_never_overwrite() {
    let server = HttpServer::start();
    let scratch = TempDir::new();
    let cache = scratch.join("cache");
    let media = cache.join("kelson/media");
    let env = [("XDG_CACHE_HOME", cache.as_os_str())];
    let call = |extra: &[&str], env: &[(&str, &OsStr)]| {
        let mut args = vec!["call", "test_image_content", "--url", &server.url];
        args.extend_from_slice(extra);
        let run = mcp_env(&args, "", env);
        run.expect_code(0);
        run.stdout
    };

    // Without --save-dir: the per-user folder, the same one run after run.
    let first = call(&[], &env);
    assert!(
        first.contains(&format!(
            "saved to {}",
            media.join("test_image_content.png").display()
        )),
        "{first}"
    );
    // A file older than a day goes when a run next saves there; newer ones stay.
    let stale = media.join("stale.png");
    std::fs::write(&stale, b"x").unwrap();
    std::fs::File::options()
        .write(true)
        .open(&stale)
        .unwrap()
        .set_modified(SystemTime::now() - Duration::from_secs(2 * 24 * 60 * 60))
        .unwrap();
    let second = call(&[], &env);
    assert!(
        second.contains(&format!(
            "saved to {} (test_image_content.png exists and was kept)",
            media.join("test_image_content-1.png").display()
        )),
        "{second}"
    );
    assert!(!stale.exists());
    let mut names: Vec<String> = std::fs::read_dir(&media)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["test_image_content-1.png", "test_image_content.png"]
    );
    assert_eq!(
        std::fs::read_dir(&cache).unwrap().count(),
        1,
        "only kelson/"
    );

    // --save-dir: an existing file is kept, the new one numbered.
    let dir = scratch.join("saved");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("test_image_content.png"), b"mine").unwrap();
    let dir_text = dir.to_str().unwrap();
    let out = call(&["--save-dir", dir_text], &env);
    assert!(
        out.contains("test_image_content-1.png (test_image_content.png exists and was kept)"),
        "{out}"
    );
    assert_eq!(
        std::fs::read(dir.join("test_image_content.png")).unwrap(),
        b"mine"
    );
    let png = std::fs::read(dir.join("test_image_content-1.png")).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
}
