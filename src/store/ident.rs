//! Who ran what, where: a run's stable uid, the choice of runs a listing
//! shows, and the run a user names on the command line.
//!
//! **Run uids.** A run's integer id is its row in one database: the same
//! run imported into another database gets another id there. Its uid (a
//! UUID, stored hyphenated in `runs.uid`) is the same everywhere. A new run
//! gets a random one (version 4: nothing about the machine goes into it,
//! and two machines never need to agree on anything to stay apart). A run
//! stored before uids existed gets a name-based one (version 5, in
//! jitterlab's own namespace [`RUN_NAMESPACE`]) of what its row already
//! holds — the boot id, the process id and the start time, which one
//! process start has and no other — so two copies of one old database
//! migrated apart give each run the same uid, and importing both adds it
//! once.
//!
//! **Naming a run.** `jitterlab report` takes a run's id as `jitterlab
//! runs` lists it, or its uid, whole or a prefix of at least
//! [`MIN_UID_PREFIX`] characters (the listing shows the first 8). A number
//! is an id when the database has a run of that id (ids as before, so
//! scripts keep working), otherwise a uid prefix. A prefix that two runs
//! share is refused with both, rather than a guess.
//!
//! **Choosing runs.** [`RunFilter`] keeps the runs of one host — named by
//! its hostname, or by a prefix of its machine id (`hosts.machine_id`, see
//! `system::host::machine_id`) when two machines share a name — and of a
//! stretch of time, compared as instants (stored start times carry their
//! UTC offset and any number of fractional digits, so their text does not
//! sort as time does).

use anyhow::{bail, Result};
use rusqlite::params;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;
use uuid::Uuid;

use super::{RunRow, Store};

/// jitterlab's namespace of name-based run uids (a random UUID chosen once;
/// changing it would change the uid of every run migrated from schema 4).
pub const RUN_NAMESPACE: Uuid = Uuid::from_u128(0x173d4e56_de69_4fa2_952f_2e7eb6ece967);

/// The fewest characters of a uid that name a run.
pub const MIN_UID_PREFIX: usize = 4;

/// The uid of a new run: random (UUID version 4).
pub(super) fn new_run_uid() -> String {
    Uuid::new_v4().hyphenated().to_string()
}

/// The uid of a run stored before uids existed: UUID version 5 in
/// [`RUN_NAMESPACE`] of `"{boot_id} {pid} {started_at}"`, the row's own
/// text; `clash` (the row id) is appended as `" #{id}"` only for a second
/// row of one process start, which no jitterlab wrote but a hand-edited
/// file may hold.
pub(super) fn stored_run_uid(
    boot_id: &str,
    pid: i64,
    started_at: &str,
    clash: Option<i64>,
) -> String {
    let mut name = format!("{boot_id} {pid} {started_at}");
    if let Some(id) = clash {
        name.push_str(&format!(" #{id}"));
    }
    Uuid::new_v5(&RUN_NAMESPACE, name.as_bytes())
        .hyphenated()
        .to_string()
}

/// The first 8 characters of a uid or machine id, as listings show them;
/// `-` when unknown.
pub fn short_id(id: Option<&str>) -> String {
    match id {
        Some(id) if !id.is_empty() => id.chars().take(8).collect(),
        _ => "-".into(),
    }
}

/// Whether `text` has the shape of a run reference: an id (a number,
/// perhaps negative) or a uid prefix (at least [`MIN_UID_PREFIX`] hex
/// digits and hyphens). The error says what a run reference is.
pub fn check_run_ref(text: &str) -> std::result::Result<(), String> {
    let number = text.strip_prefix('-').unwrap_or(text);
    if !number.is_empty() && number.bytes().all(|b| b.is_ascii_digit()) {
        return Ok(());
    }
    if text.len() >= MIN_UID_PREFIX && text.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-') {
        return Ok(());
    }
    Err(format!(
        "not a run id or uid: give a run's id or at least {MIN_UID_PREFIX} characters of its uid, as jitterlab runs lists them"
    ))
}

/// Which runs a listing shows; `None` keeps every run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunFilter {
    /// A hostname (any case), or a prefix of at least [`MIN_UID_PREFIX`]
    /// hex digits of a machine id.
    pub host: Option<String>,
    /// Runs started at or after this.
    pub since: Option<OffsetDateTime>,
    /// Runs started before this.
    pub before: Option<OffsetDateTime>,
}

impl RunFilter {
    /// Whether `row` is kept. A start time that is not RFC 3339 (a file
    /// edited by hand) cannot be placed in time: a time filter leaves it
    /// out.
    pub fn keeps(&self, row: &RunRow) -> bool {
        if let Some(host) = &self.host {
            let by_name = row.hostname.eq_ignore_ascii_case(host);
            let by_machine = host.len() >= MIN_UID_PREFIX
                && host.bytes().all(|b| b.is_ascii_hexdigit())
                && row
                    .machine_id
                    .as_deref()
                    .is_some_and(|m| m.starts_with(&host.to_ascii_lowercase()));
            if !by_name && !by_machine {
                return false;
            }
        }
        if self.since.is_none() && self.before.is_none() {
            return true;
        }
        let Ok(started) = OffsetDateTime::parse(&row.started_at, &Rfc3339) else {
            return false;
        };
        self.since.is_none_or(|t| started >= t) && self.before.is_none_or(|t| started < t)
    }
}

impl Store {
    /// The work of [`Store::resolve_run`].
    pub(super) fn resolve_run_inner(&self, text: &str) -> Result<i64> {
        if let Ok(id) = text.parse::<i64>() {
            let found: bool = self.conn.query_row(
                "SELECT EXISTS (SELECT 1 FROM runs WHERE id = ?1)",
                [id],
                |r| r.get(0),
            )?;
            if found || text.len() < MIN_UID_PREFIX || id < 0 {
                return Ok(id);
            }
        }
        if check_run_ref(text).is_err() {
            bail!(
                "{text} is not a run id or uid: give a run's id or at least {MIN_UID_PREFIX} characters of its uid, as jitterlab runs lists them"
            );
        }
        let prefix = text.to_ascii_lowercase();
        let mut stmt = self.conn.prepare(
            "SELECT id, uid FROM runs WHERE substr(uid, 1, length(?1)) = ?1 ORDER BY id",
        )?;
        let found: Vec<(i64, String)> = stmt
            .query_map(params![prefix], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
        match found.as_slice() {
            [] => bail!(
                "there is no run {text} in the database (no id, and no uid that starts so); list the runs with: jitterlab runs"
            ),
            [(id, _)] => Ok(*id),
            many => {
                let runs: Vec<String> = many
                    .iter()
                    .map(|(id, uid)| format!("run {id} ({uid})"))
                    .collect();
                bail!(
                    "uid {text} is ambiguous: {}; give more of the uid",
                    runs.join(", ")
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_namespace_is_the_one_chosen() {
        assert_eq!(
            RUN_NAMESPACE.hyphenated().to_string(),
            "173d4e56-de69-4fa2-952f-2e7eb6ece967"
        );
    }

    #[test]
    fn stored_uids_are_name_based_and_exact() {
        let uid = stored_run_uid(
            "0b6e6b1c-7d8e-4a50-9f57-3a4d2c1e8f00",
            4242,
            "2026-11-21T12:00:00Z",
            None,
        );
        // Python's `uuid.uuid5(namespace, name)` gives the same.
        assert_eq!(uid, "a4055349-b802-500d-bb74-fd4047a7d8b6");
        assert_eq!(
            Uuid::parse_str(&uid).unwrap().get_version_num(),
            5,
            "name-based"
        );
        let again = stored_run_uid(
            "0b6e6b1c-7d8e-4a50-9f57-3a4d2c1e8f00",
            4242,
            "2026-11-21T12:00:00Z",
            Some(7),
        );
        assert_ne!(again, uid);
    }

    #[test]
    fn new_uids_are_random_and_hyphenated() {
        let (a, b) = (new_run_uid(), new_run_uid());
        assert_ne!(a, b);
        assert_eq!(a.len(), 36);
        assert_eq!(Uuid::parse_str(&a).unwrap().get_version_num(), 4);
    }

    #[test]
    fn run_references_have_one_of_two_shapes() {
        for ok in [
            "1",
            "-1",
            "0042",
            "1a2b",
            "1A2B",
            "1a2b3c4d-5e6f",
            "12345678",
        ] {
            assert_eq!(check_run_ref(ok), Ok(()), "{ok}");
        }
        let why = "not a run id or uid: give a run's id or at least 4 characters of its uid, as jitterlab runs lists them";
        for bad in ["", "-", "one", "1a2", "1a2g", "latest", "1;2"] {
            assert_eq!(check_run_ref(bad), Err(why.to_string()), "{bad:?}");
        }
    }

    #[test]
    fn short_ids_are_eight_characters_or_a_dash() {
        assert_eq!(
            short_id(Some("d2ab1fc6-f28e-5dcd-9b3b-5b0a0c2c0cb6")),
            "d2ab1fc6"
        );
        assert_eq!(short_id(Some("")), "-");
        assert_eq!(short_id(None), "-");
    }
}
