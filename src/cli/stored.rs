//! The flags of the commands that read and merge results databases:
//! `jitterlab runs` (which runs to list) and `jitterlab import` (whose runs
//! to merge in). `report`'s run arguments are checked here too
//! ([`run_ref`]): an id or a uid, resolved later through the store.

use std::path::PathBuf;

use clap::Args;

use crate::report::stored::{RunsRequest, When};

/// `jitterlab runs`.
#[derive(Debug, Args)]
pub struct RunsArgs {
    /// Only the runs of this host: its hostname (any case), or the first
    /// hex digits (at least 4) of its machine id as the listing shows it.
    #[arg(long, value_name = "NAME", value_parser = host)]
    pub host: Option<String>,

    /// Only runs started at or after WHEN: RFC 3339
    /// (2026-11-24T08:00:00Z), a date (2026-11-24, from 00:00 UTC), or an
    /// age before now (30m, 6h, 7d).
    #[arg(long, value_name = "WHEN", value_parser = When::parse)]
    pub since: Option<When>,

    /// Only runs started at or before WHEN (a date: to the end of that
    /// day, UTC).
    #[arg(long, value_name = "WHEN", value_parser = When::parse)]
    pub until: Option<When>,

    /// Print the listing as schema-versioned JSON.
    #[arg(long)]
    pub json: bool,
}

impl RunsArgs {
    /// What the listing is asked for.
    pub fn request(&self) -> RunsRequest {
        RunsRequest {
            host: self.host.clone(),
            since: self.since,
            until: self.until,
            json: self.json,
        }
    }
}

/// `jitterlab import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// Another machine's results database (the file its --db named); it
    /// is only read.
    #[arg(value_name = "OTHER.db")]
    pub other: PathBuf,
}

/// `--host`: not empty (an empty name would match no run, silently).
fn host(text: &str) -> Result<String, String> {
    if text.trim().is_empty() {
        return Err(
            "the host is empty; give a host name or at least 4 hex digits of a machine id, as jitterlab runs lists them"
                .into(),
        );
    }
    Ok(text.to_string())
}

/// A run named on the command line: an id, or a uid (whole, or its first
/// 4 or more characters).
pub fn run_ref(text: &str) -> Result<String, String> {
    crate::store::check_run_ref(text).map(|()| text.to_string())
}
