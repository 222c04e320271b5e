//! The managing node's side of POWERLINK error signalling: the ER/EC
//! handshake it runs with each CN through StatusRequests, as the reference
//! MN (openPOWERLINK) does, so that a CN's exception flags start in a known
//! state and a CN that rebooted is noticed.
//!
//! The MN sets ER (exception reset) in the StatusRequest SoA; the CN
//! answers with EC (exception clear) in its StatusResponse. A CN looks at
//! ER only *after* it sent its prepared answer, so a changed ER shows in
//! the next answer, not this one. Per CN:
//!
//! - **WaitEc1**: StatusRequests carry ER=1. An answer with EC=1 to a
//!   request that followed an earlier ER=1 request moves on to WaitEc0
//!   (the first EC=1 may be the CN's power-up value, not an answer).
//! - **WaitEc0**: StatusRequests carry ER=0, until an answer has EC=0:
//!   then **Ready**. More than [`WAIT_EC0_LIMIT`] answers with EC=1
//!   restart the handshake with ER=1.
//! - **Ready**: an answer with EC=1 (the CN rebooted) restarts it.
//!
//! While a CN is not ready, the MN asks for its status again at once
//! ([`ErrSig::wants_status`]).

/// Answers with EC=1 the MN takes in WaitEc0 before it restarts the
/// handshake (the reference's ERRSIG_WAIT_EC0_TIMEOUT_CNT).
pub const WAIT_EC0_LIMIT: u8 = 10;

/// Where the handshake with one CN stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ErrSig {
    /// StatusRequests carry ER=1; none went out yet.
    #[default]
    WaitEc1,
    /// One ER=1 request went out; the next answer cannot yet count.
    WaitEc1Sent,
    /// Two or more ER=1 requests went out: an answer with EC=1 now counts.
    WaitEc1Again,
    /// StatusRequests carry ER=0; `ec1` answers still had EC=1.
    WaitEc0 {
        /// Answers with EC=1 since ER went to 0.
        ec1: u8,
    },
    /// The handshake is complete.
    Ready,
}

/// What an answer changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrSigChange {
    /// Nothing: keep going.
    None,
    /// The CN is ready now.
    Ready,
    /// The handshake started again: WaitEc0 took too many EC=1 answers.
    Restarted,
    /// The handshake started again: a ready CN answered EC=1 (it rebooted).
    Rebooted,
}

impl ErrSig {
    /// The ER flag of the next StatusRequest to this CN.
    pub fn er(&self) -> bool {
        matches!(
            self,
            ErrSig::WaitEc1 | ErrSig::WaitEc1Sent | ErrSig::WaitEc1Again
        )
    }

    /// Whether the handshake is complete.
    pub fn ready(&self) -> bool {
        *self == ErrSig::Ready
    }

    /// Whether the MN should ask this CN for its status again at once (the
    /// handshake is not complete).
    pub fn wants_status(&self) -> bool {
        !self.ready()
    }

    /// A StatusRequest to this CN went out, with the flag [`ErrSig::er`].
    pub fn requested(&mut self) {
        *self = match *self {
            ErrSig::WaitEc1 => ErrSig::WaitEc1Sent,
            ErrSig::WaitEc1Sent | ErrSig::WaitEc1Again => ErrSig::WaitEc1Again,
            other => other,
        };
    }

    /// The CN answered a StatusRequest with `ec`.
    pub fn answered(&mut self, ec: bool) -> ErrSigChange {
        let (next, change) = match (*self, ec) {
            (ErrSig::WaitEc1Again, true) => (ErrSig::WaitEc0 { ec1: 0 }, ErrSigChange::None),
            (s @ (ErrSig::WaitEc1 | ErrSig::WaitEc1Sent | ErrSig::WaitEc1Again), _) => {
                (s, ErrSigChange::None)
            }
            (ErrSig::WaitEc0 { .. }, false) => (ErrSig::Ready, ErrSigChange::Ready),
            (ErrSig::WaitEc0 { ec1 }, true) if ec1 + 1 > WAIT_EC0_LIMIT => {
                (ErrSig::WaitEc1, ErrSigChange::Restarted)
            }
            (ErrSig::WaitEc0 { ec1 }, true) => {
                (ErrSig::WaitEc0 { ec1: ec1 + 1 }, ErrSigChange::None)
            }
            (ErrSig::Ready, true) => (ErrSig::WaitEc1, ErrSigChange::Rebooted),
            (ErrSig::Ready, false) => (ErrSig::Ready, ErrSigChange::None),
        };
        *self = next;
        change
    }
}

#[cfg(test)]
#[path = "errsig_tests.rs"]
mod tests;
