//! Which files of the repository are read for citations.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::source::Language;

/// Directories never read: build output, installed packages, and hidden
/// ones (`.git`, virtual environments).
fn skipped(name: &str) -> bool {
    matches!(name, "target" | "node_modules" | "__pycache__") || name.starts_with('.')
}

/// Every `.rs` and `.py` file under `root`, sorted, with its language.
/// Symbolic links are not followed.
pub fn sources(root: &Path) -> io::Result<Vec<(PathBuf, Language)>> {
    let mut found = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in fs::read_dir(&dir)? {
            let entry = entry?;
            let kind = entry.file_type()?;
            let path = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if kind.is_dir() {
                if !skipped(&name) {
                    dirs.push(path);
                }
            } else if kind.is_file() {
                let language = match path.extension().and_then(|e| e.to_str()) {
                    Some("rs") => Language::Rust,
                    Some("py") => Language::Python,
                    _ => continue,
                };
                found.push((path, language));
            }
        }
    }
    found.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(found)
}
