//! jitterlab's pure core: no I/O, no `unsafe`, no clock of its own.
//!
//! It holds the vocabulary and arithmetic every other part shares: the unit
//! grammar ([`units`]), the release schedule and per-cycle formulas
//! ([`cycle`]), one descriptor per probe kind ([`probe`]), statistics
//! ([`stats`]), the sample a probe pushes and the traits it pushes through
//! ([`sample`]), the one recorder behind them and its parts ([`recorder`],
//! [`window`], [`outlier`]), what a probe thread publishes for live
//! metrics ([`metrics_snapshot`]) and the versioned result model ([`result`]), the arithmetic of the pointer-chase probe ([`chase`]), rtla's
//! histogram text ([`rtla`]), and
//! the bounds of every size, count and time a user gives ([`limits`]), the
//! defaults every front door shares ([`defaults`]) and the one model of an
//! experiment, a spec file's or a `jitterlab run`'s ([`spec`]), and the wire
//! formats: OPC UA PubSub's UADP messages ([`uadp`]), POWERLINK frames
//! ([`powerlink`]) and Ethernet framing
//! ([`ether`]); the reductions behind the report's plots ([`plot`]); and
//! what delayed a late cycle, from a traced CPU's events ([`explain`]).
//! Keeping it free of I/O is what lets the tests drive the real
//! probe loop with an injected clock and check every figure by hand. The
//! one thing it takes from `jitterlab-sys` is the scheduling policy type,
//! so that jitterlab has one.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

/// Every probe kind, one line each, in [`probe::ProbeKind::ALL`] order:
/// its `ProbeKind` variant (with its doc) and its descriptor const. A kind
/// described in the registry itself is listed `in probe`; a kind with a
/// folder of its own is listed `Variant => module::DESCRIPTOR`, which also
/// declares its module here. Each place that needs the list hands its own
/// macro to this one (`for_each_kind!(kind_modules)`): the modules below,
/// the enum (`probe::kind`), `ProbeKind::ALL` and `ProbeKind::descriptor`
/// (`probe`). A `#[cfg(...)]` on a line applies to all of them.
macro_rules! for_each_kind {
    ($then:ident) => {
        $then! {
            in probe {
                /// Control-task emulation: periodic wake-up plus a scan workload.
                Cyclic => CYCLIC,
                /// Timer wake-up latency, one thread per CPU (cyclictest's job).
                Wakeup => WAKEUP,
                /// Cache-sensitive pointer chase, in CPU cycles ([Red Hat caterpillar]).
                Chase => CHASE,
                /// Two real-time threads on one CPU handing a token back and forth.
                Ctxswitch => CTXSWITCH,
                /// An event made on another CPU answered by the real-time thread.
                Response => RESPONSE,
                /// The kernel's timerlat tracer driven through `rtla timerlat`.
                Timerlat => TIMERLAT,
            }
            /// [Red Hat controls]'s screw-to-screw round trip over OPC UA PubSub between an
            /// I/O simulator and a controller.
            Roundtrip => roundtrip::ROUNDTRIP,
            /// [Baumgartner POWERLINK]'s cyclic real-time Ethernet master: a POWERLINK managing
            /// node polling N controlled nodes.
            Netcycle => netcycle::NETCYCLE,
            /// A running task jitterlab did not start, observed through the
            /// kernel's scheduler and timer tracepoints.
            Observe => observe::OBSERVE,
            /// A probe compiled only for tests: how late a thread wakes from a
            /// sleep of one period.
            #[cfg(feature = "test-probe")]
            Sleep => sleep::SLEEP,
        }
    };
}

/// Declares the module of every kind [`for_each_kind`] lists with one.
macro_rules! kind_modules {
    (
        in probe { $( $(#[doc = $pdoc:literal])* $p:ident => $pdesc:ident, )* }
        $( $(#[doc = $doc:literal])* $(#[cfg($cfg:meta)])? $k:ident => $m:ident :: $desc:ident, )*
    ) => {
        $( $(#[cfg($cfg)])? pub mod $m; )*
    };
}

for_each_kind!(kind_modules);

pub mod cell;
pub mod chase;
pub mod cycle;
pub mod cyclic;
pub mod defaults;
pub mod ether;
pub mod explain;
pub mod fine_snapshot;
pub mod header;
pub mod hist;
pub mod limits;
pub mod load;
pub mod metrics_snapshot;
pub mod netns;
pub mod noise;
pub mod observer;
pub mod outlier;
pub mod plot;
pub mod powerlink;
pub mod preset;
pub mod probe;
pub mod recorder;
pub mod regression;
pub mod resctrl;
pub mod response;
pub mod result;
pub mod rt_throttle;
pub mod rtla;
pub mod sample;
pub mod spec;
pub mod stats;
pub mod timerlat;
pub mod trace;
pub mod uadp;
pub mod units;
pub mod verdict;
pub mod wakeup;
pub mod window;
