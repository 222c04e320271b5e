//! Where a command stores its results, decided once — right after the
//! command line is parsed — from `--db PATH` (or `JITTERLAB_DB`) and
//! `--no-db`, and handed to the checks and the runner as one value
//! instead of a path and a flag looked at in several places.

use std::path::{Path, PathBuf};

use anyhow::Result;

use super::Store;

/// The results database a run is stored in, or none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Db {
    /// Stored in the SQLite database at this path.
    At(PathBuf),
    /// Not stored: `--no-db`, or the inner run of a container cell,
    /// whose host side stores the result.
    Off,
}

impl Db {
    /// The database of `--db PATH`, or none with `--no-db`.
    pub fn new(path: &Path, no_db: bool) -> Db {
        match no_db {
            true => Db::Off,
            false => Db::At(path.to_path_buf()),
        }
    }

    /// The database's path; `None` when nothing is stored.
    pub fn path(&self) -> Option<&Path> {
        match self {
            Db::At(p) => Some(p),
            Db::Off => None,
        }
    }

    /// Refuses, before anything runs, a database a run could not be
    /// stored in: a path that is not a regular file or cannot be written
    /// in place (`crate::out_files::check_database`), and a file the store
    /// would refuse to write (`super::check_for_writing`). Nothing to
    /// check when nothing is stored.
    pub fn check_for_writing(&self) -> Result<()> {
        match self {
            Db::At(p) => {
                crate::out_files::check_database(p)?;
                super::check_for_writing(p)
            }
            Db::Off => Ok(()),
        }
    }

    /// Opens the database to write the run in; `None` when nothing is
    /// stored.
    pub fn open(&self) -> Result<Option<Store>> {
        self.path().map(Store::open).transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_db_decides_that_nothing_is_stored() {
        assert_eq!(Db::new(Path::new("x.db"), true), Db::Off);
        assert_eq!(Db::new(Path::new("x.db"), true).path(), None);
        assert!(Db::Off.open().unwrap().is_none());
        assert!(Db::Off.check_for_writing().is_ok());
    }

    #[test]
    fn a_database_keeps_its_path() {
        let db = Db::new(Path::new("runs/x.db"), false);
        assert_eq!(db, Db::At(PathBuf::from("runs/x.db")));
        assert_eq!(db.path(), Some(Path::new("runs/x.db")));
    }

    #[test]
    fn a_database_in_a_missing_directory_is_refused_by_the_database_check() {
        let db = Db::new(Path::new("/nonexistent-jitterlab-dir/x.db"), false);
        let e = db.check_for_writing().unwrap_err();
        assert_eq!(
            e.to_string(),
            "--db /nonexistent-jitterlab-dir/x.db: directory /nonexistent-jitterlab-dir does not exist; create it or choose another path"
        );
        assert!(e.is::<crate::error::BadInput>());
    }
}
