//! The tracer's pure half: what the kernel's tracepoints are read as, for
//! any kind that traces (`observe` today, `--explain` of the periodic
//! probes), without I/O.
//!
//! The binary's `trace` module reads the kernel's tracepoint records —
//! per-CPU `trace_pipe_raw` pages of a private tracefs instance, or perf
//! rings — and turns them into one stream of [`event::Event`]s on
//! `CLOCK_MONOTONIC`. What it parses with is here: a ring-buffer page
//! ([`page`]), a tracepoint's `format` file ([`format`](mod@format)), perf
//! records and one tracepoint's payload by its fields' names ([`decode`]),
//! and the event model itself ([`event`]). None of it knows which kind
//! asked for the events or what it makes of them; a kind's model over the
//! stream (the observed cycles, the explanations, which tracepoints and
//! filters it records) is the kind's own.

pub mod decode;
pub mod event;
pub mod format;
pub mod page;
