//! What the spec's tests share, wherever they live (beside the checker,
//! in a kind's own folder): a spec parsed as `bench.toml` on a machine
//! with the given online CPUs and built-in scenarios, accepted or refused.

use super::{parse, Spec, SpecContext, SpecError};
use crate::units::CpuList;

/// The built-in scenarios of a test that needs only `idle`.
pub(crate) const IDLE: &[&str] = &["idle"];

/// `text` parsed on a machine whose online CPUs are `online` (kernel list
/// format) and whose built-in scenarios are `builtins`.
pub(crate) fn parse_on(text: &str, online: &str, builtins: &[&str]) -> Result<Spec, SpecError> {
    let online = CpuList::parse(online).unwrap();
    let ctx = SpecContext {
        online: &online,
        builtins,
    };
    parse(text, "bench.toml", &ctx)
}

/// `text`, accepted on CPUs 0-1 (a test fails with the message if not).
pub(crate) fn ok(text: &str, builtins: &[&str]) -> Spec {
    parse_on(text, "0-1", builtins).unwrap_or_else(|e| panic!("{e}"))
}

/// The message `text` is refused with on CPUs 0-1 (a test fails if it is
/// accepted).
pub(crate) fn err(text: &str, builtins: &[&str]) -> String {
    match parse_on(text, "0-1", builtins) {
        Ok(s) => panic!("accepted: {s:?}"),
        Err(e) => e.to_string(),
    }
}
