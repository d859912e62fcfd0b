//! `kelson serve --root DIR`: files as resources, path escapes refused, and a change reaching
//! `kelson listen --resource URI`.

use super::support::{Serve, TempDir};
use crate::harness::Live;

#[test]
fn roots_serve_files_and_refuse_escapes() {
    let scratch = TempDir::new();
    let root = scratch.join("docs");
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::write(root.join("notes.txt"), "hello from the root\n").unwrap();
    std::fs::write(root.join("sub/deep.md"), "# deep\n").unwrap();
    std::fs::write(scratch.join("secret.txt"), "outside the root\n").unwrap();
    std::os::unix::fs::symlink(scratch.join("secret.txt"), root.join("link.txt")).unwrap();
    let serve = Serve::start(&scratch.join("data"), &["--root", root.to_str().unwrap()]);
    let base = format!("file://{}/", root.display());

    let run = serve.run(&["resources"], "");
    run.expect_code(0);
    assert!(
        run.stdout.contains(&format!("{base}notes.txt")),
        "{}",
        run.stdout
    );
    // The sample database is still served next to the root.
    assert!(
        run.stdout.contains("sql://sample/main/orders"),
        "{}",
        run.stdout
    );

    let run = serve.run(&["read", &format!("{base}notes.txt")], "");
    run.expect_code(0);
    assert!(run.stdout.contains("hello from the root"), "{}", run.stdout);
    let run = serve.run(&["read", &format!("{base}sub/deep.md")], "");
    run.expect_code(0);
    assert!(run.stdout.contains("# deep"), "{}", run.stdout);
    let run = serve.run(&["read", &base], "");
    run.expect_code(0);
    assert!(run.stdout.contains("sub/"), "{}", run.stdout);

    let secret = scratch.join("secret.txt");
    for uri in [
        format!("{base}../secret.txt"),
        format!("{base}%2e%2e/secret.txt"),
        format!("{base}sub%2F..%2F..%2Fsecret.txt"),
        format!("{base}sub/..%5C..%5Csecret.txt"),
        format!("{base}link.txt"),
        format!("file://{}", secret.display()),
        format!("FILE://{}/notes.txt", root.display()),
        format!("file://localhost{}/notes.txt", root.display()),
        "file:///etc/passwd".to_owned(),
    ] {
        let run = serve.run(&["read", &uri], "");
        run.expect_code(2);
        assert!(
            run.stderr.contains("not found") && !run.stdout.contains("outside the root"),
            "{uri}: {}{}",
            run.stdout,
            run.stderr
        );
    }
}

#[test]
fn a_file_change_reaches_a_listener() {
    let scratch = TempDir::new();
    let root = scratch.join("docs");
    std::fs::create_dir_all(&root).unwrap();
    let file = root.join("status.txt");
    std::fs::write(&file, "v1\n").unwrap();
    let serve = Serve::start(&scratch.join("data"), &["--root", root.to_str().unwrap()]);
    let uri = format!("file://{}", file.display());
    let live = Live::start(&["listen", "--resource", &uri, "--url", &serve.url]);
    Live::wait_for(&live.stderr, "listening for");
    std::fs::write(&file, "v2\n").unwrap();
    Live::wait_for(&live.stdout, &format!("resource updated: {uri}"));
    let (status, _) = live.interrupt();
    assert!(status.success(), "{status:?}");
    let run = serve.run(&["read", &uri], "");
    assert!(run.stdout.contains("v2"), "{}", run.stdout);
}
