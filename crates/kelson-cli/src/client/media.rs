//! Where images, audio and binary resources from results are saved.
//!
//! Without `--save-dir` every run uses one per-user folder, `$XDG_CACHE_HOME/kelson/media` (else
//! `~/.cache/kelson/media`, else `kelson-media` in the temp dir), private to the user, from which
//! files older than [`KEEP`] are removed when a run first saves there: no folder is left behind
//! per run, and the folder does not grow for ever. A file is never overwritten, there or in
//! `--save-dir`: a taken name gets a number (`image-1.png`), and the caller prints both names.

use std::fs::OpenOptions;
use std::io::{ErrorKind, Write as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use base64::Engine as _;

/// How long a file stays in the default folder.
pub(crate) const KEEP: Duration = Duration::from_secs(24 * 60 * 60);

/// The most numbered names tried for one file before giving up.
const MAX_TRIES: usize = 10_000;

/// Where media from results go: `--save-dir`, or the per-user default folder.
#[derive(Debug)]
pub(crate) struct Media {
    /// `--save-dir`, when given.
    dir: Option<PathBuf>,
    /// The folder in use, once the first file was saved.
    chosen: Option<PathBuf>,
}

/// A file written.
#[derive(Debug)]
pub(crate) struct Saved {
    pub(crate) path: PathBuf,
    pub(crate) len: usize,
    /// The name the file would have had, when a file by that name exists (and was kept).
    pub(crate) taken: Option<String>,
}

impl Media {
    pub(crate) fn new(dir: Option<PathBuf>) -> Media {
        Media { dir, chosen: None }
    }

    /// The folder, created on first use; the default one is pruned then.
    fn folder(&mut self) -> std::io::Result<PathBuf> {
        if let Some(dir) = &self.chosen {
            return Ok(dir.clone());
        }
        let dir = match &self.dir {
            Some(dir) => {
                std::fs::create_dir_all(dir)?;
                dir.clone()
            }
            None => {
                let dir = default_folder();
                create_private(&dir)?;
                prune(&dir, SystemTime::now());
                dir
            }
        };
        self.chosen = Some(dir.clone());
        Ok(dir)
    }

    /// Decodes base64 `data` and writes it to a new file named after `stem` and the MIME type:
    /// `stem`'s own extension is kept when it is one of the type's (`img.png` as `image/png`
    /// stays `img.png`, `photo.jpeg` as `image/jpeg` stays `photo.jpeg`); any other is part of
    /// the stem (`notes.txt` as `image/png` is `notes_txt.png`).
    pub(crate) fn save(
        &mut self,
        stem: &str,
        mime: Option<&str>,
        data: &str,
    ) -> Result<Saved, String> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data.trim())
            .map_err(|e| format!("the base64 data does not decode: {e}"))?;
        let dir = self
            .folder()
            .map_err(|e| format!("cannot create the folder: {e}"))?;
        let (stem, ext) = file_name(stem, mime);
        let first = format!("{stem}.{ext}");
        for n in 0..MAX_TRIES {
            let name = if n == 0 {
                first.clone()
            } else {
                format!("{stem}-{n}.{ext}")
            };
            let path = dir.join(&name);
            // create_new fails on any existing entry, a dangling symlink included, so nothing that
            // is there is ever written through or replaced.
            match OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(mut file) => {
                    file.write_all(&bytes)
                        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
                    return Ok(Saved {
                        path,
                        len: bytes.len(),
                        taken: (n > 0).then_some(first),
                    });
                }
                Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(format!("cannot write {}: {e}", path.display())),
            }
        }
        Err(format!(
            "{first} and {MAX_TRIES} numbered names are taken in {}",
            dir.display()
        ))
    }
}

/// The default folder: the user's cache folder, else the temp dir.
fn default_folder() -> PathBuf {
    let absolute = |name: &str| {
        std::env::var_os(name)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    match absolute("XDG_CACHE_HOME").or_else(|| absolute("HOME").map(|h| h.join(".cache"))) {
        Some(cache) => cache.join("kelson").join("media"),
        None => std::env::temp_dir().join("kelson-media"),
    }
}

/// Creates `dir` (and its parents) with the last level readable by the user only: results may be
/// private, and the temp dir fallback is shared.
fn create_private(dir: &Path) -> std::io::Result<()> {
    if let Some(parent) = dir.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let mut builder = std::fs::DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    match builder.create(dir) {
        Err(e) if e.kind() == ErrorKind::AlreadyExists && dir.is_dir() => Ok(()),
        other => other,
    }
}

/// Removes the regular files of `dir` last modified more than [`KEEP`] before `now`; best effort
/// (another run may be removing them too). Symlinks and folders are left alone.
fn prune(dir: &Path, now: SystemTime) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let Ok(meta) = entry.metadata() else { continue };
        let old = meta
            .modified()
            .ok()
            .and_then(|m| now.duration_since(m).ok())
            .is_some_and(|age| age > KEEP);
        if meta.is_file() && old {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// `stem` reduced to a safe file name: letters, digits, `-` and `_`, at most 60 characters.
fn file_stem(stem: &str) -> String {
    let stem: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(60)
        .collect();
    if stem.is_empty() {
        "content".to_owned()
    } else {
        stem
    }
}

/// The safe stem and the extension of the file for `name` (a tool's name, the last segment of a
/// URI) holding content of type `mime`. The extension always comes from [`extensions`], never
/// from the server as such: `name`'s own is used only when it is one the type has (compared
/// without case, kept as written, so `IMG.PNG` stays `IMG.PNG`), and it is plain ASCII then.
fn file_name(name: &str, mime: Option<&str>) -> (String, String) {
    let known = extensions(mime);
    if let Some((stem, own)) = name.rsplit_once('.')
        && !stem.is_empty()
        && known.iter().any(|ext| own.eq_ignore_ascii_case(ext))
    {
        return (file_stem(stem), own.to_owned());
    }
    (file_stem(name), known[0].to_owned())
}

/// The file extensions of a MIME type, the usual one first; `bin` for a type not listed here.
fn extensions(mime: Option<&str>) -> &'static [&'static str] {
    let mime = mime.unwrap_or("").split(';').next().unwrap_or("").trim();
    match mime.to_ascii_lowercase().as_str() {
        "image/png" => &["png"],
        "image/jpeg" | "image/jpg" => &["jpg", "jpeg", "jpe"],
        "image/gif" => &["gif"],
        "image/webp" => &["webp"],
        "image/svg+xml" => &["svg"],
        "audio/wav" | "audio/x-wav" | "audio/wave" => &["wav"],
        "audio/mpeg" | "audio/mp3" => &["mp3"],
        "audio/ogg" => &["ogg", "oga"],
        "audio/flac" => &["flac"],
        "application/pdf" => &["pdf"],
        "application/json" => &["json"],
        "text/plain" => &["txt", "text"],
        "text/html" => &["html", "htm"],
        "text/markdown" => &["md", "markdown"],
        _ => &["bin"],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("mcp-cli-media-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn taken_names_get_a_number_and_nothing_is_overwritten() {
        let dir = scratch("names");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("pic.png"), b"mine").unwrap();
        let mut media = Media::new(Some(dir.clone()));
        let saved = media.save("pic", Some("image/png"), "aGk=").unwrap();
        assert_eq!(saved.path, dir.join("pic-1.png"));
        assert_eq!(saved.taken.as_deref(), Some("pic.png"));
        assert_eq!(saved.len, 2);
        let again = media.save("pic", Some("image/png"), "aGk=").unwrap();
        assert_eq!(again.path, dir.join("pic-2.png"));
        assert_eq!(std::fs::read(dir.join("pic.png")).unwrap(), b"mine");
        let fresh = media.save("other thing", None, "aGk=").unwrap();
        assert_eq!(fresh.path, dir.join("other_thing.bin"));
        assert!(fresh.taken.is_none());
        // A dangling symlink is a taken name too: nothing is written through it.
        #[cfg(unix)]
        {
            let target = dir.join("elsewhere");
            std::os::unix::fs::symlink(&target, dir.join("link.png")).unwrap();
            let saved = media.save("link", Some("image/png"), "aGk=").unwrap();
            assert_eq!(saved.path, dir.join("link-1.png"));
            assert!(!target.exists());
        }
        assert!(media.save("pic", None, "not base64!").is_err());
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn old_files_are_pruned_and_the_rest_kept() {
        let dir = scratch("prune");
        create_private(&dir).unwrap();
        create_private(&dir).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o700);
        }
        std::fs::write(dir.join("old.png"), b"x").unwrap();
        std::fs::write(dir.join("new.png"), b"x").unwrap();
        std::fs::create_dir(dir.join("sub")).unwrap();
        let now = SystemTime::now();
        let old = std::fs::File::options()
            .write(true)
            .open(dir.join("old.png"))
            .unwrap();
        old.set_modified(now - KEEP - Duration::from_secs(60))
            .unwrap();
        prune(&dir, now);
        assert!(!dir.join("old.png").exists());
        assert!(dir.join("new.png").exists() && dir.join("sub").is_dir());
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn extensions_and_stems() {
        assert_eq!(extensions(Some("image/png; charset=x")), ["png"]);
        assert_eq!(extensions(Some("IMAGE/PNG")), ["png"]);
        assert_eq!(extensions(None), ["bin"]);
        assert_eq!(file_stem("a/b c"), "a_b_c");
        assert_eq!(file_stem(""), "content");
        // The printed file name never carries what a terminal acts on, whatever the name was.
        assert_eq!(file_stem("x\x1b]0;t\x07\u{202e}\r"), "x__0_t___");
    }

    #[test]
    fn a_name_keeps_its_extension_when_it_is_the_types() {
        let name = |n: &str, mime: Option<&str>| {
            let (stem, ext) = file_name(n, mime);
            format!("{stem}.{ext}")
        };
        assert_eq!(name("img.png", Some("image/png")), "img.png");
        assert_eq!(name("IMG.PNG", Some("image/png")), "IMG.PNG");
        assert_eq!(name("photo.jpeg", Some("image/jpeg")), "photo.jpeg");
        assert_eq!(name("photo.jpg", Some("image/jpeg")), "photo.jpg");
        assert_eq!(
            name("my report.v2.pdf", Some("application/pdf")),
            "my_report_v2.pdf"
        );
        // Another type's extension is part of the stem: the content decides the extension.
        assert_eq!(name("notes.txt", Some("image/png")), "notes_txt.png");
        assert_eq!(name("img.png", Some("image/jpeg")), "img_png.jpg");
        assert_eq!(name("run.sh", None), "run_sh.bin");
        assert_eq!(name("data.bin", None), "data.bin");
        // No stem before the dot, or none after it: nothing to keep.
        assert_eq!(name(".png", Some("image/png")), "_png.png");
        assert_eq!(name("img.", Some("image/png")), "img_.png");
        assert_eq!(name("img", Some("image/png")), "img.png");
        // Whatever the name holds, what reaches the file system is plain: no separator, no
        // parent, nothing a terminal acts on.
        assert_eq!(
            name("../../etc/x.png", Some("image/png")),
            "______etc_x.png"
        );
        assert_eq!(name("a\x1b[2J.png", Some("image/png")), "a__2J.png");
        assert_eq!(name("x.p\u{202e}ng", Some("image/png")), "x_p_ng.png");
    }

    #[test]
    fn a_kept_extension_is_numbered_before_it_and_nothing_escapes_the_folder() {
        let dir = scratch("own-ext");
        let mut media = Media::new(Some(dir.clone()));
        let first = media.save("img.png", Some("image/png"), "aGk=").unwrap();
        assert_eq!(first.path, dir.join("img.png"));
        assert!(first.taken.is_none());
        let second = media.save("img.png", Some("image/png"), "aGk=").unwrap();
        assert_eq!(second.path, dir.join("img-1.png"));
        assert_eq!(second.taken.as_deref(), Some("img.png"));
        let up = media.save("../img.png", Some("image/png"), "aGk=").unwrap();
        assert_eq!(up.path, dir.join("___img.png"));
        for entry in std::fs::read_dir(&dir).unwrap() {
            assert_eq!(entry.unwrap().path().parent(), Some(dir.as_path()));
        }
        std::fs::remove_dir_all(dir).unwrap();
    }
}
