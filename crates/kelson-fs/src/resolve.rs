//! Containment: opening a path below a root so that nothing outside the root is ever read.
//!
//! The names come from [`crate::uri::parse_relative`], so they are plain names (no `.`, `..`,
//! separators or NUL). Then, for one request:
//!
//! 1. `root/name/...` is resolved with `canonicalize` (every symlink followed), and the result must
//!    lie under the root's own canonical path (compared by components, so `/srv/data2` is not under
//!    `/srv/data`). A symlink to another place inside the root is fine; one that leads out is not,
//!    and neither is a path through such a symlink that comes back into the root: each symlink on
//!    the way is resolved on its own and must lead inside.
//! 2. The resolved path is `lstat`ed: only a regular file or a directory goes on. Devices, FIFOs and
//!    sockets are refused before they are opened, because opening one can block or have effects.
//! 3. It is opened with `O_NOFOLLOW | O_NONBLOCK | O_NOCTTY` (plus `O_DIRECTORY` for a directory):
//!    a last component swapped for a symlink fails, and a FIFO swapped in cannot block the open.
//! 4. The opened descriptor is checked, which is what closes the race between steps 1 and 3: its
//!    `fstat` must be the same file type, device and inode as step 2 saw, and on Linux the path the
//!    kernel reports for it (`/proc/self/fd/N`) must still lie under the root. (Where `/proc` is not
//!    available, the path is canonicalised again and must lead under the root to the same inode.)
//!    If a directory on the way was swapped for a symlink after step 1, the file actually opened is
//!    somewhere else and this check refuses it.
//! 5. Everything is then read from that descriptor (a directory through `/proc/self/fd/N` on Linux),
//!    never by path again, and a file is read with a hard cap even if it grows after `fstat`.
//!
//! What this does not defend against: hard links (a hard link inside the root to a file outside it
//! *is* inside the root; only someone who can already write into the root and read the target can
//! make one), and bind mounts the operator set up.

use std::fs::{self, File};
use std::io::{self, Read as _};
use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

use crate::uri::PATH_MAX;

/// A file or directory opened under a root.
#[derive(Debug)]
pub(crate) enum Opened {
    /// A regular file and its size when opened.
    File { file: File, len: u64 },
    /// A directory and its canonical path.
    Dir { file: File, path: PathBuf },
}

/// Opens `root/segments...`, where `root` is canonical, or returns `None` if it does not exist, is
/// not a regular file or directory, or leads outside `root` in any way.
pub(crate) fn open_beneath(root: &Path, segments: &[String]) -> Option<Opened> {
    let mut joined = root.to_path_buf();
    for segment in segments {
        joined.push(segment);
    }
    if joined.as_os_str().len() >= PATH_MAX {
        return None;
    }
    // Step 1.
    let canonical = fs::canonicalize(&joined).ok()?;
    if !canonical.starts_with(root) {
        return None;
    }
    // Every symlink on the way must itself lead inside the root, so a path that leaves the root
    // and comes back in (`link-to-parent/root/file`) is refused too.
    let mut prefix = root.to_path_buf();
    for segment in segments {
        prefix.push(segment);
        if fs::symlink_metadata(&prefix).ok()?.file_type().is_symlink()
            && !fs::canonicalize(&prefix).ok()?.starts_with(root)
        {
            return None;
        }
    }
    // Step 2.
    let before = fs::symlink_metadata(&canonical).ok()?;
    let dir = if before.file_type().is_file() {
        false
    } else if before.file_type().is_dir() {
        true
    } else {
        return None;
    };
    // Step 3.
    let mut flags = libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY;
    if dir {
        flags |= libc::O_DIRECTORY;
    }
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(&canonical)
        .ok()?;
    // Step 4.
    let (real, after) = check_opened(root, &file, &canonical, &before)?;
    Some(if dir {
        Opened::Dir { file, path: real }
    } else {
        Opened::File {
            file,
            len: after.len(),
        }
    })
}

/// Step 4: the opened `file` must be the inode `before` described (seen at `canonical`), and
/// really lie under `root`. Returns its real path and its metadata.
fn check_opened(
    root: &Path,
    file: &File,
    canonical: &Path,
    before: &fs::Metadata,
) -> Option<(PathBuf, fs::Metadata)> {
    let after = file.metadata().ok()?;
    if after.file_type() != before.file_type()
        || after.dev() != before.dev()
        || after.ino() != before.ino()
    {
        return None;
    }
    let real = opened_path(file, canonical, &after)?;
    real.starts_with(root).then_some((real, after))
}

/// Where the opened file really is.
fn opened_path(file: &File, canonical: &Path, meta: &fs::Metadata) -> Option<PathBuf> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd as _;
        if let Ok(path) = fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())) {
            return Some(path);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = file;
    // Without /proc: the path must still resolve to the very inode that was opened.
    let again = fs::canonicalize(canonical).ok()?;
    let now = fs::symlink_metadata(&again).ok()?;
    (now.dev() == meta.dev() && now.ino() == meta.ino()).then_some(again)
}

/// The path through which an opened directory is listed: its descriptor on Linux, so the listing
/// is of the directory that was checked, or its checked path elsewhere.
pub(crate) fn listing_path(file: &File, checked: &Path) -> PathBuf {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd as _;
        let fd = PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
        if fd.exists() {
            return fd;
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = file;
    checked.to_path_buf()
}

/// Why a file could not be read.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// The file is larger than the cap; the size seen, which may be a lower bound.
    TooLarge(u64),
    /// The read failed.
    Io(io::Error),
}

/// Reads an opened file whole, refusing (not truncating) one larger than `max` bytes, even if it
/// grew after it was opened.
pub(crate) fn read_capped(file: File, len: u64, max: u64) -> Result<Vec<u8>, ReadError> {
    if len > max {
        return Err(ReadError::TooLarge(len));
    }
    let mut buf = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    file.take(max.saturating_add(1))
        .read_to_end(&mut buf)
        .map_err(ReadError::Io)?;
    let read = buf.len() as u64;
    if read > max {
        return Err(ReadError::TooLarge(read));
    }
    Ok(buf)
}

/// What a directory entry is, seen from inside the root.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EntryKind {
    File,
    Dir,
}

/// Classifies the entry `name` of the directory at canonical path `dir`: a regular file or a
/// directory, or a symlink that resolves to one inside `root`. Anything else (devices, FIFOs,
/// sockets, dangling links, links that lead out) is `None`, so a listing never mentions what could
/// not be read.
pub(crate) fn classify(
    root: &Path,
    dir: &Path,
    name: &str,
    file_type: fs::FileType,
) -> Option<EntryKind> {
    if file_type.is_file() {
        return Some(EntryKind::File);
    }
    if file_type.is_dir() {
        return Some(EntryKind::Dir);
    }
    if !file_type.is_symlink() {
        return None;
    }
    let target = fs::canonicalize(dir.join(name)).ok()?;
    if !target.starts_with(root) {
        return None;
    }
    let meta = fs::symlink_metadata(&target).ok()?;
    if meta.is_file() {
        Some(EntryKind::File)
    } else if meta.is_dir() {
        Some(EntryKind::Dir)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    struct Scratch(PathBuf);

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn scratch(tag: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("mcp-fs-unit-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        Scratch(fs::canonicalize(&dir).unwrap())
    }

    fn names(s: &[&str]) -> Vec<String> {
        s.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn opens_inside_and_refuses_outside() {
        let s = scratch("open");
        let root = s.0.join("root");
        fs::create_dir_all(root.join("sub")).unwrap();
        fs::write(root.join("sub/a.txt"), "a").unwrap();
        fs::write(s.0.join("secret.txt"), "secret").unwrap();
        symlink(root.join("sub/a.txt"), root.join("inner-link")).unwrap();
        symlink(s.0.join("secret.txt"), root.join("outer-link")).unwrap();
        symlink(&s.0, root.join("up")).unwrap();
        symlink("loop", root.join("loop")).unwrap();

        assert!(matches!(
            open_beneath(&root, &names(&["sub", "a.txt"])),
            Some(Opened::File { len: 1, .. })
        ));
        assert!(matches!(
            open_beneath(&root, &names(&["inner-link"])),
            Some(Opened::File { len: 1, .. })
        ));
        assert!(matches!(open_beneath(&root, &[]), Some(Opened::Dir { .. })));
        for path in [
            &["outer-link"][..],
            &["up", "secret.txt"],
            &["up"],
            &["loop"],
            &["missing"],
            &["sub", "a.txt", "x"],
        ] {
            assert!(open_beneath(&root, &names(path)).is_none(), "{path:?}");
        }
        assert_eq!(
            classify(
                &root,
                &root,
                "inner-link",
                fs::symlink_metadata(root.join("inner-link"))
                    .unwrap()
                    .file_type()
            ),
            Some(EntryKind::File)
        );
        assert_eq!(
            classify(
                &root,
                &root,
                "up",
                fs::symlink_metadata(root.join("up")).unwrap().file_type()
            ),
            None
        );
    }

    /// The race the post-open check closes: what was checked is not what got opened.
    #[test]
    fn a_file_swapped_before_open_is_refused() {
        let s = scratch("swap");
        let root = s.0.join("root");
        fs::create_dir_all(&root).unwrap();
        fs::write(root.join("a.txt"), "a").unwrap();
        fs::write(s.0.join("outside.txt"), "secret").unwrap();
        let inside = root.join("a.txt");
        let outside = s.0.join("outside.txt");
        let inside_meta = fs::symlink_metadata(&inside).unwrap();
        let outside_meta = fs::symlink_metadata(&outside).unwrap();

        let good = File::open(&inside).unwrap();
        assert!(check_opened(&root, &good, &inside, &inside_meta).is_some());
        // Another inode than the one checked.
        let swapped = File::open(&outside).unwrap();
        assert!(check_opened(&root, &swapped, &inside, &inside_meta).is_none());
        // The same inode as checked, but it is not under the root (a directory on the way was
        // swapped for a symlink before both the lstat and the open).
        assert!(check_opened(&root, &swapped, &inside, &outside_meta).is_none());
    }

    #[test]
    fn sockets_are_refused() {
        let s = scratch("sock");
        let _listener = std::os::unix::net::UnixListener::bind(s.0.join("sock")).unwrap();
        assert!(open_beneath(&s.0, &names(&["sock"])).is_none());
    }

    #[test]
    fn reads_are_capped_not_truncated() {
        let s = scratch("cap");
        fs::write(s.0.join("f"), "0123456789").unwrap();
        let open = |len| {
            let f = File::open(s.0.join("f")).unwrap();
            read_capped(f, len, 10)
        };
        assert_eq!(open(10).unwrap(), b"0123456789");
        assert!(matches!(open(11), Err(ReadError::TooLarge(11))));
        // The file grew after fstat: still refused.
        fs::write(s.0.join("f"), "0123456789ab").unwrap();
        assert!(matches!(open(10), Err(ReadError::TooLarge(11))));
    }
}
