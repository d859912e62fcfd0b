//! `--save-dir`: a resource named `img.png` whose content is a PNG is saved as `img.png`, then
//! `img-1.png` (the first kept), and never outside the folder.

use kelson_server::Uri;
use kelson_types::{BlobResourceContents, Resource, ResourceContents};

use crate::harness::HttpServer;

#[test]
fn a_name_keeps_its_own_extension_when_the_content_is_of_its_type() {
    let server = HttpServer::start();
    for (uri, mime) in [
        ("file:///photos/img.png", "image/png"),
        ("file:///photos/mislabelled.txt", "image/png"),
    ] {
        let resource = Resource::new(uri, uri.rsplit('/').next().unwrap()).with_mime_type(mime);
        server
            .server
            .add_resource(resource, move |uri: Uri| async move {
                ResourceContents::from(
                    BlobResourceContents::new(uri.0, kelson_examples::conformance::PNG_1X1)
                        .with_mime_type(mime),
                )
            })
            .expect("the resource registers");
    }
    let dir = std::env::temp_dir().join(format!("mcp-cli-it-save-dir-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let dir_text = dir.to_str().unwrap();

    let run = server.run(
        &["read", "file:///photos/img.png", "--save-dir", dir_text],
        "",
    );
    run.expect_code(0);
    let first = dir.join("img.png");
    assert!(
        run.stdout
            .contains(&format!("saved to {}\n", first.display())),
        "{}",
        run.stdout
    );
    assert_eq!(&std::fs::read(&first).unwrap()[..4], b"\x89PNG");

    // Again: a number before the extension, the first file kept.
    let run = server.run(
        &["read", "file:///photos/img.png", "--save-dir", dir_text],
        "",
    );
    run.expect_code(0);
    assert!(
        run.stdout.contains(&format!(
            "saved to {} (img.png exists and was kept)",
            dir.join("img-1.png").display()
        )),
        "{}",
        run.stdout
    );

    // Another type's extension is not kept: the content's type decides.
    let run = server.run(
        &[
            "read",
            "file:///photos/mislabelled.txt",
            "--save-dir",
            dir_text,
        ],
        "",
    );
    run.expect_code(0);
    assert!(dir.join("mislabelled_txt.png").exists(), "{}", run.stdout);

    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["img-1.png", "img.png", "mislabelled_txt.png"]);
    std::fs::remove_dir_all(&dir).unwrap();
}
