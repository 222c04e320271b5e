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
pub mod netcycle;
pub mod noise;
pub mod observe;
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
pub mod roundtrip;
pub mod rt_throttle;
pub mod rtla;
pub mod sample;
#[cfg(feature = "test-probe")]
pub mod sleep;
pub mod spec;
pub mod stats;
pub mod timerlat;
pub mod uadp;
pub mod units;
pub mod verdict;
pub mod wakeup;
pub mod window;
