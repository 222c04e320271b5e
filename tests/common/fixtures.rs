//! The fake `/sys`, `/proc` and `/dev` trees under `tests/fixtures/`, shared
//! by the unit tests of the binary (included with `#[path]`) and the CLI
//! tests, so both read and copy them the same way.

use std::fs;
use std::path::{Path, PathBuf};

/// The path of the fixture tree `name` (e.g. `sysroot-vm`), read-only.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// A private copy of the fixture tree `name` in a fresh temporary directory,
/// for tests that write to it.
pub fn copy_fixture(name: &str) -> tempfile::TempDir {
    fn copy(src: &Path, dst: &Path) {
        fs::create_dir_all(dst).unwrap();
        for entry in fs::read_dir(src).unwrap() {
            let entry = entry.unwrap();
            let to = dst.join(entry.file_name());
            if entry.file_type().unwrap().is_dir() {
                copy(&entry.path(), &to);
            } else {
                fs::copy(entry.path(), &to).unwrap();
            }
        }
    }
    let dir = tempfile::tempdir().unwrap();
    copy(&fixture(name), dir.path());
    dir
}
