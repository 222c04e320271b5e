//! Printing that survives its reader: stdout and stderr writes that never
//! panic; and [`shown`], stored text made safe to print.
//!
//! `println!` panics when stdout is a pipe whose reader has gone
//! (`jitterlab bench … --dry-run | head -1`: "failed printing to stdout:
//! Broken pipe", status 101). Rust ignores `SIGPIPE`, and it must stay
//! ignored: a bench killed by `SIGPIPE` in the middle of a cell would skip
//! putting the machine's settings back. So every line jitterlab prints on
//! stdout goes through [`out!`]/[`outln!`], which return the write's error
//! instead: a closed pipe becomes [`ReaderGone`], which travels up the
//! command's normal error path — through the same cleanup as any other
//! error (`apply` restores what it holds first) — and `main` then ends the
//! process quietly, with no message and status [`READER_GONE_STATUS`]
//! (141 = 128 + SIGPIPE, what a shell reports for a writer that a closed
//! pipe ended: `yes | head -1`, so `set -o pipefail` scripts see that the
//! output was cut short). Any other write error (`> /dev/full`) is an
//! ordinary error naming stdout.
//!
//! Diagnostics on stderr go through [`errln!`], which ignores a failed
//! write: when stderr is a closed pipe too (`… 2>&1 | head -1`) a bench
//! goes on and cleans up rather than panicking between two settings.
//!
//! When an output file goes to standard output (`--json -`, see
//! `crate::out_files`), [`print_to_stderr`] sends what [`out!`] prints to
//! stderr instead, so that the pipe holds that file alone.
//!
//! As a last line of defence `main` also treats the panic of a `println!`
//! left elsewhere as [`ReaderGone`] (see `main.rs`).

use std::borrow::Cow;
use std::fmt;
use std::fmt::Write as _;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};

/// Exit status of a command whose stdout reader went away: 128 + SIGPIPE.
pub const READER_GONE_STATUS: u8 = 141;

/// Stdout was closed by its reader: the command ends quietly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReaderGone;

impl fmt::Display for ReaderGone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("stdout was closed by its reader")
    }
}

impl std::error::Error for ReaderGone {}

/// Set once an output file has taken stdout (see the module doc).
static STDOUT_TAKEN: AtomicBool = AtomicBool::new(false);

/// From now on, what [`out!`] prints goes to stderr: an output file
/// (`--json -`) has taken stdout.
pub fn print_to_stderr() {
    STDOUT_TAKEN.store(true, Ordering::Relaxed);
}

/// Writes `text` to stdout and flushes it: a broken pipe is [`ReaderGone`],
/// any other failure an error naming stdout. Once [`print_to_stderr`] was
/// called, writes it to stderr instead.
pub fn write_stdout(text: &str) -> anyhow::Result<()> {
    if STDOUT_TAKEN.load(Ordering::Relaxed) {
        write_stderr(text);
        return Ok(());
    }
    write_to(&mut io::stdout().lock(), text)
}

/// [`write_stdout`] on any writer (the tests use a closed pipe).
pub fn write_to(w: &mut impl Write, text: &str) -> anyhow::Result<()> {
    match w.write_all(text.as_bytes()).and_then(|()| w.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Err(anyhow::Error::new(ReaderGone)),
        Err(e) => Err(anyhow::Error::new(e).context("writing to stdout")),
    }
}

/// Writes a line to stderr; a failed write is ignored (see the module doc).
pub fn write_stderr(text: &str) {
    let mut e = io::stderr().lock();
    let _ = e.write_all(text.as_bytes());
    let _ = e.flush();
}

/// True when `e` is, or was caused by, [`ReaderGone`] — also as the
/// payload of an `io::Error`, as an output file on stdout (`--json -`)
/// reports it through `Write`.
pub fn is_reader_gone(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.is::<ReaderGone>()
            || c.downcast_ref::<io::Error>()
                .and_then(io::Error::get_ref)
                .is_some_and(|inner| inner.is::<ReaderGone>())
    })
}

/// `print!` that returns `anyhow::Result<()>` (see the module doc).
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::output::write_stdout(&format!($($arg)*))
    };
}

/// `println!` that returns `anyhow::Result<()>` (see the module doc).
macro_rules! outln {
    () => {
        $crate::output::write_stdout("\n")
    };
    ($($arg:tt)*) => {
        $crate::output::write_stdout(&format!("{}\n", format_args!($($arg)*)))
    };
}

/// `eprint!` that never panics (see the module doc).
macro_rules! err {
    ($($arg:tt)*) => {
        $crate::output::write_stderr(&format!($($arg)*))
    };
}

/// `eprintln!` that never panics (see the module doc).
macro_rules! errln {
    () => {
        $crate::output::write_stderr("\n")
    };
    ($($arg:tt)*) => {
        $crate::output::write_stderr(&format!("{}\n", format_args!($($arg)*)))
    };
}

pub(crate) use {err, errln, out, outln};

// ---------------------------------------------------------------------------
// Text made safe to print (see `crate::render::safe`'s module doc for the
// convention and why).

/// True for a character [`shown`] escapes.
fn unsafe_char(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        )
}

/// `s` with its control and bidirectional-formatting characters escaped
/// (see the module doc); borrowed when there is none.
pub fn shown(s: &str) -> Cow<'_, str> {
    if !s.chars().any(unsafe_char) {
        return Cow::Borrowed(s);
    }
    let mut o = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' => o.push_str("\\n"),
            '\r' => o.push_str("\\r"),
            '\t' => o.push_str("\\t"),
            '\0' => o.push_str("\\0"),
            c if unsafe_char(c) => {
                // Writing into a String cannot fail.
                let _ = write!(o, "\\u{{{:x}}}", c as u32);
            }
            c => o.push(c),
        }
    }
    Cow::Owned(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer whose reader has gone.
    struct Closed;

    impl Write for Closed {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// A writer on a full disk.
    struct Full;

    impl Write for Full {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::from_raw_os_error(28))
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_closed_pipe_is_reader_gone_and_other_errors_name_stdout() {
        let e = write_to(&mut Closed, "plan\n").unwrap_err();
        assert!(is_reader_gone(&e));
        assert_eq!(e.to_string(), "stdout was closed by its reader");
        // Still recognised under the context a caller adds.
        assert!(is_reader_gone(&e.context("printing the plan")));
        // And inside the io::Error of an output file on stdout.
        let io_gone = io::Error::new(io::ErrorKind::BrokenPipe, ReaderGone);
        assert!(is_reader_gone(
            &anyhow::Error::new(io_gone).context("writing --json -")
        ));
        let e = write_to(&mut Full, "plan\n").unwrap_err();
        assert!(!is_reader_gone(&e));
        assert_eq!(
            format!("{e:#}"),
            "writing to stdout: No space left on device (os error 28)"
        );
        let mut v = Vec::new();
        write_to(&mut v, "plan\n").unwrap();
        assert_eq!(v, b"plan\n");
    }
}
