//! The one error type that is not a failure but a refusal: bad input.
//!
//! Every command refuses bad input the same way (design rule 8): one line that
//! names the problem and the fix, exit status 2, nothing changed on the
//! machine. Wrapping the message in [`BadInput`] lets callers — and tests —
//! tell a refusal from an error that happened while running.
//!
//! The design rules cited here are in `docs/design.md`.

/// A bad input: reported in one line, exit status 2, nothing changed.
#[derive(Debug)]
pub struct BadInput(pub String);

impl std::fmt::Display for BadInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadInput {}

/// Wraps a refusal message as an `anyhow::Error` that still downcasts to
/// [`BadInput`].
pub fn bad(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(BadInput(msg.into()))
}
