//! MIME types from file extensions, and the choice between `text` and `blob` contents.
//!
//! A small built-in table covers the common text and binary formats. A text type whose bytes are
//! not UTF-8 is still served, as a blob of that type. An unknown extension is sniffed: UTF-8
//! without NUL bytes is `text/plain`, anything else `application/octet-stream`.

use base64::Engine as _;
use kelson_types::{BlobResourceContents, ResourceContents, TextResourceContents};

/// The MIME type of a directory (spec 2026-07-28 server/resources: `file://` may use it).
pub(crate) const DIRECTORY: &str = "inode/directory";

const OCTET_STREAM: &str = "application/octet-stream";
const TEXT_PLAIN: &str = "text/plain";

/// `(extension, MIME type, served as text)`, extensions in lowercase.
const TABLE: &[(&str, &str, bool)] = &[
    // Text.
    ("txt", "text/plain", true),
    ("text", "text/plain", true),
    ("log", "text/plain", true),
    ("md", "text/markdown", true),
    ("markdown", "text/markdown", true),
    ("rst", "text/x-rst", true),
    ("adoc", "text/asciidoc", true),
    ("html", "text/html", true),
    ("htm", "text/html", true),
    ("css", "text/css", true),
    ("csv", "text/csv", true),
    ("tsv", "text/tab-separated-values", true),
    ("js", "text/javascript", true),
    ("mjs", "text/javascript", true),
    ("cjs", "text/javascript", true),
    ("ts", "text/x-typescript", true),
    ("tsx", "text/x-typescript", true),
    ("jsx", "text/javascript", true),
    ("json", "application/json", true),
    ("jsonl", "application/jsonl", true),
    ("ndjson", "application/x-ndjson", true),
    ("ipynb", "application/x-ipynb+json", true),
    ("xml", "application/xml", true),
    ("svg", "image/svg+xml", true),
    ("yaml", "application/yaml", true),
    ("yml", "application/yaml", true),
    ("toml", "application/toml", true),
    ("ini", "text/plain", true),
    ("cfg", "text/plain", true),
    ("conf", "text/plain", true),
    ("env", "text/plain", true),
    ("sql", "application/sql", true),
    ("sh", "application/x-sh", true),
    ("bash", "application/x-sh", true),
    ("rs", "text/x-rust", true),
    ("py", "text/x-python", true),
    ("rb", "text/x-ruby", true),
    ("go", "text/x-go", true),
    ("java", "text/x-java", true),
    ("kt", "text/x-kotlin", true),
    ("c", "text/x-c", true),
    ("h", "text/x-c", true),
    ("cc", "text/x-c++", true),
    ("cpp", "text/x-c++", true),
    ("hpp", "text/x-c++", true),
    ("cs", "text/x-csharp", true),
    ("swift", "text/x-swift", true),
    ("php", "text/x-php", true),
    ("lua", "text/x-lua", true),
    ("tex", "text/x-tex", true),
    ("diff", "text/x-diff", true),
    ("patch", "text/x-diff", true),
    // Binary.
    ("png", "image/png", false),
    ("jpg", "image/jpeg", false),
    ("jpeg", "image/jpeg", false),
    ("gif", "image/gif", false),
    ("webp", "image/webp", false),
    ("avif", "image/avif", false),
    ("bmp", "image/bmp", false),
    ("ico", "image/vnd.microsoft.icon", false),
    ("tif", "image/tiff", false),
    ("tiff", "image/tiff", false),
    ("pdf", "application/pdf", false),
    ("zip", "application/zip", false),
    ("gz", "application/gzip", false),
    ("tgz", "application/gzip", false),
    ("tar", "application/x-tar", false),
    ("bz2", "application/x-bzip2", false),
    ("xz", "application/x-xz", false),
    ("zst", "application/zstd", false),
    ("7z", "application/x-7z-compressed", false),
    ("wasm", "application/wasm", false),
    ("mp3", "audio/mpeg", false),
    ("wav", "audio/wav", false),
    ("ogg", "audio/ogg", false),
    ("flac", "audio/flac", false),
    ("mp4", "video/mp4", false),
    ("webm", "video/webm", false),
    ("woff", "font/woff", false),
    ("woff2", "font/woff2", false),
    ("ttf", "font/ttf", false),
    ("otf", "font/otf", false),
    ("sqlite", "application/vnd.sqlite3", false),
    ("db", "application/vnd.sqlite3", false),
    ("bin", OCTET_STREAM, false),
    ("exe", OCTET_STREAM, false),
    ("so", OCTET_STREAM, false),
    ("o", OCTET_STREAM, false),
    ("a", OCTET_STREAM, false),
];

/// The MIME type the table gives a file name, and whether it is served as text.
pub(crate) fn guess(name: &str) -> Option<(&'static str, bool)> {
    let (stem, ext) = name.rsplit_once('.')?;
    if stem.is_empty() {
        // A dotfile such as `.env` has no extension.
        return None;
    }
    TABLE
        .iter()
        .find(|(e, _, _)| e.eq_ignore_ascii_case(ext))
        .map(|&(_, mime, text)| (mime, text))
}

/// The contents of a file named `name` at `uri`.
pub(crate) fn contents(uri: String, name: &str, bytes: Vec<u8>) -> ResourceContents {
    let (mime, text) = match guess(name) {
        Some(found) => found,
        None if !bytes.contains(&0) && std::str::from_utf8(&bytes).is_ok() => (TEXT_PLAIN, true),
        None => (OCTET_STREAM, false),
    };
    let bytes = if text {
        match String::from_utf8(bytes) {
            Ok(text) => {
                return TextResourceContents::new(uri, text)
                    .with_mime_type(mime)
                    .into();
            }
            Err(e) => e.into_bytes(),
        }
    } else {
        bytes
    };
    let blob = base64::engine::general_purpose::STANDARD.encode(bytes);
    BlobResourceContents::new(uri, blob)
        .with_mime_type(mime)
        .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(c: &ResourceContents) -> (&'static str, String) {
        match c {
            ResourceContents::Text(t) => ("text", t.mime_type.clone().unwrap()),
            ResourceContents::Blob(b) => ("blob", b.mime_type.clone().unwrap()),
        }
    }

    #[test]
    fn extensions() {
        assert_eq!(guess("a.JSON"), Some(("application/json", true)));
        assert_eq!(guess("x.tar.gz"), Some(("application/gzip", false)));
        assert_eq!(guess(".env"), None);
        assert_eq!(guess("Makefile"), None);
        assert_eq!(guess("a.unknown"), None);
    }

    #[test]
    fn text_or_blob() {
        let u = || "file:///x".to_owned();
        assert_eq!(
            kind(&contents(u(), "a.md", b"# hi".to_vec())),
            ("text", "text/markdown".into())
        );
        assert_eq!(
            kind(&contents(u(), "a.png", b"plain".to_vec())),
            ("blob", "image/png".into())
        );
        // A text type that is not UTF-8 keeps its type but travels as a blob.
        assert_eq!(
            kind(&contents(u(), "a.txt", vec![0xff, 0xfe])),
            ("blob", "text/plain".into())
        );
        // Sniffing for unknown extensions.
        assert_eq!(
            kind(&contents(u(), "README", b"hello".to_vec())),
            ("text", "text/plain".into())
        );
        assert_eq!(
            kind(&contents(u(), "data", vec![1, 0, 2])),
            ("blob", "application/octet-stream".into())
        );
        let ResourceContents::Blob(b) = contents(u(), "x.bin", vec![0, 1, 2]) else {
            panic!("blob expected")
        };
        assert_eq!(b.blob, "AAEC");
    }
}
