//! The filesystem's settings: the roots (`[[roots]]` and `--root`) and the limits of `[files]`.

use std::path::{Path, PathBuf};

use kelson_fs::{FsLimits, RootConfig};
use kelson_server::Scopes;

use super::{Root, check_min, scopes};
use crate::serve::ServeArgs;
use crate::serve::file::FileConfig;

/// The file's roots (whose relative paths `in_file` resolves), then the flags', and the limits
/// of reading them.
pub(super) fn resolve(
    args: &ServeArgs,
    file: &FileConfig,
    in_file: &dyn Fn(&Path) -> PathBuf,
) -> Result<(Vec<Root>, FsLimits), String> {
    let mut roots = Vec::new();
    for (i, root) in file.roots.iter().enumerate() {
        let mut config = RootConfig::new(in_file(&root.path)).with_scopes(scopes(
            root.scope.as_deref(),
            &format!("roots[{i}].scope"),
            default_root_scopes,
        )?);
        config.name = root.name.clone();
        roots.push(Root {
            config,
            key: format!("roots[{i}].path"),
        });
    }
    for dir in &args.roots {
        roots.push(Root {
            config: RootConfig::new(dir).with_scopes(default_root_scopes()),
            key: "--root".to_owned(),
        });
    }
    let mut fs_limits = FsLimits::default();
    if let Some(n) = file.files.max_file_bytes {
        fs_limits.max_file_bytes = check_min(n, 1, "files.max_file_bytes")?;
    }
    if let Some(n) = file.files.max_dir_entries {
        fs_limits.max_dir_entries = check_min(n, 1, "files.max_dir_entries")?;
    }
    if let Some(n) = file.files.max_listed_entries {
        fs_limits.max_listed_entries = n;
    }
    Ok((roots, fs_limits))
}

/// The scopes a filesystem root needs by default.
fn default_root_scopes() -> Scopes {
    Scopes::all(["files:read"])
}
