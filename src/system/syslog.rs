//! Warnings to the system log: `jitterlab monitor --max-latency` logs each
//! window over the limit here, at syslog priority warning, so an alert
//! reaches whoever watches the machine's log (`journalctl -p warning`,
//! a log shipper, a syslog server) without extra software.
//!
//! **Where a message goes.** [`SystemLog::open`] picks, under the sysroot,
//! the first of:
//!
//! 1. `run/systemd/journal/socket`, journald's native protocol: one
//!    datagram of `KEY=value` fields per entry, so the alert's figures
//!    (`JITTERLAB_CPU`, `JITTERLAB_LATENCY_NS` …) are fields of the entry
//!    that `journalctl JITTERLAB_CPU=3` finds, not words in a text;
//! 2. `dev/log`, the classic local syslog datagram socket (rsyslog,
//!    syslog-ng, busybox syslogd, or journald's own), in the format glibc's
//!    `syslog(3)` sends there: `<PRI>jitterlab[PID]: message`, with the
//!    fields appended as `KEY=value`;
//! 3. stderr, one line `jitterlab: warning: message KEY=value …` (under
//!    systemd, the unit's stderr goes to the journal too, at priority info).
//!
//! A socket is taken only when something listens on it (a datagram
//! `connect` succeeds): a socket file left behind by a daemon that is not
//! running, or a stream-only `/dev/log`, is passed over.
//!
//! **Why hand-written.** The protocols are a few lines each
//! (<https://systemd.io/JOURNAL_NATIVE_PROTOCOL/>, RFC 3164), and the
//! crates that speak them either hard-code `/run/systemd/journal/socket`
//! and `/dev/log` — design rule 5 wants every system path under
//! `--sysroot`, so the tests can bind a fake journal in a temporary tree —
//! or come as a backend of a logging framework (`log`, `tracing`) this
//! tool does not otherwise use; libsystemd's `sd_journal_send` would add
//! a C library for one function. `std::os::unix::net::UnixDatagram` is
//! all it takes.
//!
//! **Facility daemon.** The syslog header (and the journal's
//! `SYSLOG_FACILITY`) says facility daemon (3): the one program that
//! alerts is `jitterlab monitor`, a long-running system service started by
//! systemd at boot — what the facility is for. Facility user would file
//! its alerts with interactive programs' messages, and rsyslog's default
//! rules (`daemon.*`) would not route them with the other services'.
//!
//! **No timestamp in the syslog header.** The receiving daemon stamps a
//! local message with the time it got it; RFC 3164's timestamp has neither
//! year nor zone, and writing one would mean reading the local time zone
//! from a multi-threaded process. Every local syslog daemon accepts the
//! header without it (glibc's own format minus the time).
//!
//! **Never in the way.** A send waits at most [`SEND_TIMEOUT`] for a full
//! receive queue (journald busy flushing; the kernel's default queue is 10
//! datagrams). A send that fails — the daemon gone, its queue full — writes
//! the message to stderr instead and returns the error, so the caller
//! counts it (`jitterlab_alert_log_failures_total`); the next message tries
//! the socket again, by its path, so a daemon that restarted is found.
//!
//! **Small messages only.** Each value (the message too) is cut to
//! [`VALUE_MAX`] bytes. An alert is a few hundred bytes, so a datagram
//! stays well under rsyslog's default message limit (8 KiB) and the
//! socket's send buffer (about 200 KiB): the memfd transfer journald
//! offers for entries too large for one datagram is not needed, and is
//! not implemented.
//!
//! The design rules cited here are in `docs/design.md`.

use std::borrow::Cow;
use std::fmt;
use std::io::{self, Write};
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The identifier every message carries (`SYSLOG_IDENTIFIER`, the syslog tag).
pub const IDENTIFIER: &str = "jitterlab";

/// journald's native socket, under the sysroot.
pub const JOURNAL_SOCKET: &str = "run/systemd/journal/socket";

/// The local syslog socket, under the sysroot.
pub const SYSLOG_SOCKET: &str = "dev/log";

/// The prefix of every structured field's name.
pub const FIELD_PREFIX: &str = "JITTERLAB_";

/// Syslog priority warning.
const PRIORITY_WARNING: u8 = 4;

/// Syslog facility daemon (see the module doc).
const FACILITY_DAEMON: u8 = 3;

/// How long a send may wait for room in the daemon's receive queue.
pub const SEND_TIMEOUT: Duration = Duration::from_millis(50);

/// The longest value (and message) sent, in bytes; longer ones are cut at
/// a character boundary and end with `…`.
pub const VALUE_MAX: usize = 2048;

/// The longest field name journald accepts.
const NAME_MAX: usize = 64;

/// Where the messages of a [`SystemLog`] go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Destination {
    /// journald, by its native protocol.
    Journal,
    /// The local syslog socket `/dev/log`.
    Syslog,
    /// Standard error.
    Stderr,
}

impl fmt::Display for Destination {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Destination::Journal => "the journal",
            Destination::Syslog => "syslog (/dev/log)",
            Destination::Stderr => "stderr",
        })
    }
}

/// The system log of this process: see the module doc.
pub struct SystemLog {
    destination: Destination,
    /// The unbound socket sent from, and the daemon's socket path (none
    /// for stderr).
    socket: Option<(UnixDatagram, PathBuf)>,
    /// Where a message goes when the daemon refuses it, or there is none.
    stderr: Box<dyn Write + Send>,
    pid: u32,
}

impl fmt::Debug for SystemLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SystemLog")
            .field("destination", &self.destination)
            .field("path", &self.socket.as_ref().map(|(_, p)| p))
            .finish_non_exhaustive()
    }
}

impl SystemLog {
    /// Picks `<root>/run/systemd/journal/socket` (journald's native
    /// protocol), else `<root>/dev/log` (a syslog datagram, facility
    /// daemon), else stderr: the first socket something listens on.
    pub fn open(root: &Path) -> SystemLog {
        SystemLog::open_with_stderr(root, Box::new(io::stderr()))
    }

    /// [`SystemLog::open`], writing what would go to stderr to `stderr`
    /// (the tests read it).
    pub fn open_with_stderr(root: &Path, stderr: Box<dyn Write + Send>) -> SystemLog {
        let pid = std::process::id();
        for (destination, rel) in [
            (Destination::Journal, JOURNAL_SOCKET),
            (Destination::Syslog, SYSLOG_SOCKET),
        ] {
            let path = root.join(rel);
            if let Some(socket) = listened_on(&path) {
                return SystemLog {
                    destination,
                    socket: Some((socket, path)),
                    stderr,
                    pid,
                };
            }
        }
        SystemLog {
            destination: Destination::Stderr,
            socket: None,
            stderr,
            pid,
        }
    }

    /// Where the messages go.
    pub fn destination(&self) -> Destination {
        self.destination
    }

    /// Logs `message` at priority warning (4) with the structured
    /// `fields`, whose names start with `JITTERLAB_` and are uppercase
    /// ASCII letters, digits and underscores (a bad name is a bug: it
    /// fails a debug build and is left out of a release build's message).
    ///
    /// The journal gets `MESSAGE`, `PRIORITY=4`, `SYSLOG_FACILITY=3`,
    /// `SYSLOG_IDENTIFIER=jitterlab`, `SYSLOG_PID` and the fields (a value
    /// with a newline in the protocol's length-prefixed binary form);
    /// syslog gets `<28>jitterlab[PID]: message KEY=value …`; stderr one
    /// line `jitterlab: warning: message KEY=value …`.
    ///
    /// A send that fails (the daemon gone, its queue still full after
    /// [`SEND_TIMEOUT`]) writes the message to stderr instead and returns
    /// the error.
    pub fn warning(&mut self, message: &str, fields: &[(&str, &str)]) -> io::Result<()> {
        let fields: Vec<(&str, Cow<'_, str>)> = fields
            .iter()
            .filter(|(name, _)| {
                let ok = valid_field_name(name);
                debug_assert!(ok, "{name:?} is not a field name jitterlab logs");
                ok
            })
            .map(|&(name, value)| (name, cut(value)))
            .collect();
        let message = cut(message);
        let Some((socket, path)) = &self.socket else {
            self.write_stderr(&message, &fields);
            return Ok(());
        };
        let datagram = match self.destination {
            Destination::Journal => journal_datagram(&message, &fields, self.pid),
            _ => syslog_datagram(&message, &fields, self.pid).into_bytes(),
        };
        match socket.send_to(&datagram, path) {
            Ok(_) => Ok(()),
            Err(e) => {
                self.write_stderr(&message, &fields);
                Err(e)
            }
        }
    }

    /// Writes the message as one line on stderr; a failed write is ignored
    /// (as [`crate::output::write_stderr`] does).
    fn write_stderr(&mut self, message: &str, fields: &[(&str, Cow<'_, str>)]) {
        let line = format!("{IDENTIFIER}: warning: {}\n", text_line(message, fields));
        let _ = self.stderr.write_all(line.as_bytes());
        let _ = self.stderr.flush();
    }
}

/// A socket to send to `path` from, when a datagram socket listens there.
fn listened_on(path: &Path) -> Option<UnixDatagram> {
    // A connect tells a live daemon from a socket file left behind
    // (ECONNREFUSED) or a stream socket (EPROTOTYPE). The messages are
    // sent by path from an unconnected socket, so a daemon that restarts
    // (a new socket at the same path) is found by the next message.
    UnixDatagram::unbound().ok()?.connect(path).ok()?;
    let socket = UnixDatagram::unbound().ok()?;
    socket.set_write_timeout(Some(SEND_TIMEOUT)).ok()?;
    Some(socket)
}

/// True for a field name jitterlab logs: `JITTERLAB_` and then uppercase
/// ASCII letters, digits and underscores, 64 bytes at most (journald drops
/// longer names, and those starting with `_` or a digit; the prefix keeps
/// clear of the fields the protocol itself uses, `MESSAGE`, `PRIORITY` …).
pub fn valid_field_name(name: &str) -> bool {
    name.len() > FIELD_PREFIX.len()
        && name.len() <= NAME_MAX
        && name.starts_with(FIELD_PREFIX)
        && name
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}

/// `value` cut to [`VALUE_MAX`] bytes at a character boundary, marked `…`.
fn cut(value: &str) -> Cow<'_, str> {
    if value.len() <= VALUE_MAX {
        return Cow::Borrowed(value);
    }
    let mut end = VALUE_MAX;
    while !value.is_char_boundary(end) {
        end -= 1;
    }
    Cow::Owned(format!("{}…", &value[..end]))
}

/// One journal entry in the native protocol: `NAME=value\n` per field, or
/// `NAME\n`, the value's length (64-bit little-endian), the value and `\n`
/// when the value holds a newline.
fn journal_datagram(message: &str, fields: &[(&str, Cow<'_, str>)], pid: u32) -> Vec<u8> {
    let pid = pid.to_string();
    let fixed = [
        ("MESSAGE", message),
        ("PRIORITY", "4"),
        ("SYSLOG_FACILITY", "3"),
        ("SYSLOG_IDENTIFIER", IDENTIFIER),
        ("SYSLOG_PID", pid.as_str()),
    ];
    let all = fixed
        .into_iter()
        .chain(fields.iter().map(|(n, v)| (*n, v.as_ref())));
    let mut out = Vec::with_capacity(256);
    for (name, value) in all {
        out.extend_from_slice(name.as_bytes());
        if value.contains('\n') {
            out.push(b'\n');
            out.extend_from_slice(&(value.len() as u64).to_le_bytes());
        } else {
            out.push(b'=');
        }
        out.extend_from_slice(value.as_bytes());
        out.push(b'\n');
    }
    out
}

/// One syslog datagram for a local socket: `<PRI>jitterlab[PID]: ` and the
/// text (see the module doc for the missing timestamp).
fn syslog_datagram(message: &str, fields: &[(&str, Cow<'_, str>)], pid: u32) -> String {
    let pri = u16::from(FACILITY_DAEMON) * 8 + u16::from(PRIORITY_WARNING);
    format!("<{pri}>{IDENTIFIER}[{pid}]: {}", text_line(message, fields))
}

/// The message and `KEY=value` for each field, on one line: control
/// characters of the message escaped (`\n`), a value quoted when it is
/// empty or holds a space, `"`, `\`, `=` or a control character.
fn text_line(message: &str, fields: &[(&str, Cow<'_, str>)]) -> String {
    let mut line = String::with_capacity(message.len() + 32 * fields.len());
    escape_into(&mut line, message, false);
    for (name, value) in fields {
        line.push(' ');
        line.push_str(name);
        line.push('=');
        let plain = !value.is_empty()
            && !value
                .chars()
                .any(|c| c.is_whitespace() || c.is_control() || matches!(c, '"' | '\\' | '='));
        if plain {
            line.push_str(value);
        } else {
            line.push('"');
            escape_into(&mut line, value, true);
            line.push('"');
        }
    }
    line
}

/// Appends `s` with its control characters escaped (`\n`, `\r`, `\t`,
/// `\u{1b}`), and `"` and `\` too when `quoted`.
fn escape_into(out: &mut String, s: &str, quoted: bool) {
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '"' | '\\' if quoted => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_control() => out.extend(c.escape_unicode()),
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests;
