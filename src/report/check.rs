//! `jitterlab check`: the audit of [`crate::system::check`] printed as a
//! table with a fix under each finding that is not ok, or as a
//! schema-versioned document with the host snapshot.

use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;
use jitterlab_core::result::HostSnapshot;
use serde::Serialize;

use crate::output::{out, outln};
use crate::system::check::{audit, CheckRequest, Finding, Severity};

/// `jitterlab check`: prints the findings (text, or JSON with `--json`);
/// exit status 1 when one of them is `fail`. `--cpus` naming a CPU that is
/// not online is bad input.
pub fn run(root: &Path, request: &CheckRequest) -> Result<ExitCode> {
    let (host, found) = audit(root, request)?;
    if request.json {
        outln!("{}", render_json(&host, &found)?)?;
    } else {
        out!("{}", render_text(&found))?;
    }
    Ok(if found.iter().any(|f| f.severity == Severity::Fail) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Version of the `--json` output.
pub const SCHEMA_VERSION: u32 = 1;

/// The text table: severity, id and summary, a `fix:` line under each
/// finding that is not ok, and a closing line of counts.
pub fn render_text(findings: &[Finding]) -> String {
    let width = findings.iter().map(|f| f.id.len()).max().unwrap_or(0);
    let mut out = String::new();
    for f in findings {
        let _ = writeln!(
            out,
            "{:<4}  {:<width$}  {}",
            f.severity.name(),
            f.id,
            f.summary
        );
        if f.severity != Severity::Ok && !f.fix.is_empty() {
            let _ = writeln!(out, "{:indent$}fix: {}", "", f.fix, indent = width + 8);
        }
    }
    let count = |s: Severity| findings.iter().filter(|f| f.severity == s).count();
    let _ = writeln!(
        out,
        "{} ok, {} info, {} warn, {} fail",
        count(Severity::Ok),
        count(Severity::Info),
        count(Severity::Warn),
        count(Severity::Fail)
    );
    out
}

/// The `--json` document: schema version, host snapshot, findings.
pub fn render_json(host: &HostSnapshot, findings: &[Finding]) -> Result<String> {
    #[derive(Serialize)]
    struct Report<'a> {
        schema_version: u32,
        host: &'a HostSnapshot,
        findings: &'a [Finding],
    }
    Ok(serde_json::to_string_pretty(&Report {
        schema_version: SCHEMA_VERSION,
        host,
        findings,
    })?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::system::check::{findings, Limit, Limits};
    use crate::system::host;
    use crate::testutil::fixture;

    const ROOT_LIMITS: Limits = Limits {
        rtprio: Limit::Value(0),
        memlock: Limit::Value(8 << 20),
    };

    #[test]
    fn text_rendering_is_exact() {
        let list = [
            Finding::ok("smt", "SMT is off"),
            Finding::new(
                "timer-migration",
                Severity::Info,
                "timer migration is on",
                "sysctl -w kernel.timer_migration=0",
            ),
            Finding::new(
                "clocksource",
                Severity::Warn,
                "clocksource is hpet, not tsc",
                "clocksource=tsc",
            ),
            Finding::new(
                "online-cpus",
                Severity::Fail,
                "cannot read the online CPUs",
                "",
            ),
        ];
        assert_eq!(
            render_text(&list),
            "\
ok    smt              SMT is off
info  timer-migration  timer migration is on
                       fix: sysctl -w kernel.timer_migration=0
warn  clocksource      clocksource is hpet, not tsc
                       fix: clocksource=tsc
fail  online-cpus      cannot read the online CPUs
1 ok, 1 info, 1 warn, 1 fail
"
        );
        assert_eq!(render_text(&[]), "0 ok, 0 info, 0 warn, 0 fail\n");
    }

    #[test]
    fn json_shape() {
        let root = fixture("sysroot-vm");
        let host = host::snapshot(&root);
        let found = findings(&root, 0, ROOT_LIMITS);
        let v: serde_json::Value =
            serde_json::from_str(&render_json(&host, &found).unwrap()).unwrap();
        assert_eq!(v["schema_version"], 1);
        assert_eq!(v["host"]["hostname"], "vm");
        assert_eq!(v["host"]["cpus_online"], "0-1");
        let list = v["findings"].as_array().unwrap();
        assert_eq!(list.len(), found.len());
        assert_eq!(
            list[0],
            serde_json::json!({
                "id": "realtime-kernel",
                "severity": "warn",
                "summary": found[0].summary,
                "fix": "install a PREEMPT_RT kernel (Debian: linux-image-rt-amd64) and boot it",
            })
        );
        assert_eq!(list[3]["severity"], "ok");
        assert_eq!(list[3]["fix"], "");
        let ids: Vec<&str> = list.iter().map(|f| f["id"].as_str().unwrap()).collect();
        assert_eq!(ids, found.iter().map(|f| f.id).collect::<Vec<_>>());
        let smt = ids.iter().position(|id| *id == "smt-siblings").unwrap();
        assert_eq!(
            list[smt],
            serde_json::json!({
                "id": "smt-siblings",
                "severity": "ok",
                "summary": "no online SMT sibling shares a core with probe CPU 1",
                "fix": "",
            })
        );
    }
}
