//! A probe's scope in a bench: the scenarios it is limited to and its own
//! measured time (`scenarios` and `duration` of a `[[probe]]` table),
//! checked against the spec's scenarios and the limits of a duration.
//!
//! ```toml
//! [[probe]]
//! kind = "cyclic"
//! name = "load-1ms"
//! period = "1ms"
//! scenarios = ["idle"]   # only these of the spec's scenarios; default: every one
//! duration = "10s"       # this probe's measured time per cell; default: the spec's
//! ```
//!
//! [Baumgartner POWERLINK] needs both: its load table (Tables 2–3) is measured on an
//! idle machine for 24 cycle × node points, its SoC-jitter table (Tables
//! 4–5) at one point under seven conditions; without a scope every load
//! point would also run under every condition, seven times the cells. A
//! spec without these keys plans, runs and stores exactly as before.
//!
//! Kept apart from the probe checker (`check.rs`) because it needs the
//! checked scenarios, which the probes do not otherwise know.
//!
//! The documents cited here are listed in `docs/design.md`.

use toml::Spanned;

use super::check::{Check, Checker};
use super::raw::RawProbe;
use super::{ProbeScope, ProbeSpec, Scenario};

/// Fills in every probe's [`ProbeScope`] from its table in `raw`,
/// checking its scenario names against `scenarios` and its duration
/// against the limits of the spec's own.
pub(super) fn probe_scopes(
    ck: &Checker,
    raw: &[Spanned<RawProbe>],
    probes: &mut [ProbeSpec],
    scenarios: &[Scenario],
) -> Check<()> {
    for (i, (t, p)) in raw.iter().zip(probes.iter_mut()).enumerate() {
        let r = t.get_ref();
        let names = match &r.scenarios {
            Some(list) => scenario_names(ck, list, &format!("probe[{i}].scenarios"), scenarios)?,
            None => Vec::new(),
        };
        let duration_ns = match &r.duration {
            Some(v) => {
                Some(ck.positive_duration(v, &format!("probe[{i}].duration"), "duration")?)
            }
            None => None,
        };
        p.scope = ProbeScope {
            scenarios: names,
            duration_ns,
        };
    }
    Ok(())
}

/// The scenarios `list` names, in the spec's order; every name must be a
/// scenario of the spec, once.
fn scenario_names(
    ck: &Checker,
    list: &Spanned<Vec<Spanned<String>>>,
    key: &str,
    scenarios: &[Scenario],
) -> Check<Vec<String>> {
    let known: Vec<&str> = scenarios.iter().map(|s| s.name.as_str()).collect();
    if list.get_ref().is_empty() {
        return Err(ck.err(
            list.span(),
            key,
            format!(
                "no scenario listed; name at least one of the spec's scenarios ({}) or leave the key out to run in every one",
                known.join(", ")
            ),
        ));
    }
    let mut given: Vec<&str> = Vec::new();
    for (j, v) in list.get_ref().iter().enumerate() {
        let name = v.get_ref().as_str();
        let k = format!("{key}[{j}]");
        if !known.contains(&name) {
            return Err(ck.err(
                v.span(),
                &k,
                format!(
                    "{name:?} names no scenario of the spec (scenarios: {})",
                    known.join(", ")
                ),
            ));
        }
        if given.contains(&name) {
            return Err(ck.err(v.span(), &k, format!("scenario {name} is listed twice")));
        }
        given.push(name);
    }
    Ok(known
        .into_iter()
        .filter(|n| given.contains(n))
        .map(str::to_string)
        .collect())
}
