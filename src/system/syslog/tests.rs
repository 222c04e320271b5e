//! The system log's datagrams byte for byte, on sockets bound in a
//! temporary tree; the choice of destination; the fallback to stderr of a
//! send that fails; and, where journald runs, a message read back with
//! `journalctl`.

use std::io::{self, Write};
use std::os::unix::net::UnixDatagram;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{valid_field_name, Destination, SystemLog, SEND_TIMEOUT, VALUE_MAX};

/// A stderr whose bytes a test reads back.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

/// A daemon's socket bound at `root/rel`.
fn bind(root: &Path, rel: &str) -> UnixDatagram {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let socket = UnixDatagram::bind(&path).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    socket
}

/// The next datagram on `socket`.
fn receive(socket: &UnixDatagram) -> Vec<u8> {
    let mut buf = vec![0; 65_536];
    let n = socket.recv(&mut buf).unwrap();
    buf.truncate(n);
    buf
}

/// Bytes as text with the unprintable ones escaped, for a readable diff.
fn bytes(b: &[u8]) -> String {
    b.escape_ascii().to_string()
}

fn open(root: &Path) -> (SystemLog, Captured) {
    let stderr = Captured::default();
    (
        SystemLog::open_with_stderr(root, Box::new(stderr.clone())),
        stderr,
    )
}

#[test]
fn the_journal_gets_the_native_protocol_with_a_binary_field_for_a_newline() {
    let dir = tempfile::tempdir().unwrap();
    let journald = bind(dir.path(), "run/systemd/journal/socket");
    // A /dev/log too: the journal comes first.
    let _syslog = bind(dir.path(), "dev/log");
    let (mut log, stderr) = open(dir.path());
    assert_eq!(log.destination(), Destination::Journal);
    log.warning(
        "wake-up latency 152 µs over --max-latency 100 µs on CPU 3",
        &[
            ("JITTERLAB_CPU", "3"),
            ("JITTERLAB_EXPLANATION", "irq 41: 12\nsoftirq NET_RX: 3"),
            ("JITTERLAB_SERIES", "default"),
        ],
    )
    .unwrap();
    let pid = std::process::id();
    let mut want = format!(
        "MESSAGE=wake-up latency 152 µs over --max-latency 100 µs on CPU 3\n\
         PRIORITY=4\n\
         SYSLOG_FACILITY=3\n\
         SYSLOG_IDENTIFIER=jitterlab\n\
         SYSLOG_PID={pid}\n\
         JITTERLAB_CPU=3\n\
         JITTERLAB_EXPLANATION\n"
    )
    .into_bytes();
    // 28 bytes, 64-bit little-endian.
    want.extend_from_slice(&[28, 0, 0, 0, 0, 0, 0, 0]);
    want.extend_from_slice(b"irq 41: 12\nsoftirq NET_RX: 3\nJITTERLAB_SERIES=default\n");
    assert_eq!(bytes(&receive(&journald)), bytes(&want));
    assert_eq!(stderr.text(), "");
}

#[test]
fn a_message_with_a_newline_is_binary_too() {
    let dir = tempfile::tempdir().unwrap();
    let journald = bind(dir.path(), "run/systemd/journal/socket");
    let (mut log, _) = open(dir.path());
    log.warning("a\nb", &[]).unwrap();
    let pid = std::process::id();
    let mut want = b"MESSAGE\n\x03\0\0\0\0\0\0\0a\nb\n".to_vec();
    want.extend_from_slice(
        format!("PRIORITY=4\nSYSLOG_FACILITY=3\nSYSLOG_IDENTIFIER=jitterlab\nSYSLOG_PID={pid}\n")
            .as_bytes(),
    );
    assert_eq!(bytes(&receive(&journald)), bytes(&want));
}

#[test]
fn syslog_gets_a_daemon_warning_with_the_fields_appended() {
    let dir = tempfile::tempdir().unwrap();
    let syslog = bind(dir.path(), "dev/log");
    let (mut log, stderr) = open(dir.path());
    assert_eq!(log.destination(), Destination::Syslog);
    log.warning(
        "latency over the limit",
        &[
            ("JITTERLAB_CPU", "3"),
            ("JITTERLAB_EXPLANATION", "irq 41: 12\nsoftirq \"NET_RX\""),
            ("JITTERLAB_EMPTY", ""),
            ("JITTERLAB_PATH", "C:\\x=1"),
        ],
    )
    .unwrap();
    let pid = std::process::id();
    assert_eq!(
        String::from_utf8(receive(&syslog)).unwrap(),
        format!(
            "<28>jitterlab[{pid}]: latency over the limit JITTERLAB_CPU=3 \
             JITTERLAB_EXPLANATION=\"irq 41: 12\\nsoftirq \\\"NET_RX\\\"\" \
             JITTERLAB_EMPTY=\"\" JITTERLAB_PATH=\"C:\\\\x=1\""
        )
    );
    assert_eq!(stderr.text(), "");
}

#[test]
fn without_a_listening_socket_the_warning_is_a_line_on_stderr() {
    let dir = tempfile::tempdir().unwrap();
    // Socket files nobody listens on any more: passed over.
    drop(bind(dir.path(), "run/systemd/journal/socket"));
    drop(bind(dir.path(), "dev/log"));
    let (mut log, stderr) = open(dir.path());
    assert_eq!(log.destination(), Destination::Stderr);
    log.warning("over the limit\non CPU 3", &[("JITTERLAB_CPU", "3")])
        .unwrap();
    log.warning("again", &[]).unwrap();
    assert_eq!(
        stderr.text(),
        "jitterlab: warning: over the limit\\non CPU 3 JITTERLAB_CPU=3\n\
         jitterlab: warning: again\n"
    );
}

#[test]
fn a_stream_socket_at_dev_log_is_passed_over() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("dev")).unwrap();
    let _stream = std::os::unix::net::UnixListener::bind(dir.path().join("dev/log")).unwrap();
    let (log, _) = open(dir.path());
    assert_eq!(log.destination(), Destination::Stderr);
}

#[test]
fn the_destinations_read_as_the_monitor_says_them() {
    assert_eq!(Destination::Journal.to_string(), "the journal");
    assert_eq!(Destination::Syslog.to_string(), "syslog (/dev/log)");
    assert_eq!(Destination::Stderr.to_string(), "stderr");
}

#[test]
fn a_daemon_gone_sends_to_stderr_returns_the_error_and_is_found_again() {
    let dir = tempfile::tempdir().unwrap();
    let journald = bind(dir.path(), "run/systemd/journal/socket");
    let (mut log, stderr) = open(dir.path());
    assert_eq!(log.destination(), Destination::Journal);
    drop(journald);
    let e = log
        .warning("over the limit", &[("JITTERLAB_CPU", "2")])
        .unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::ConnectionRefused, "{e}");
    assert_eq!(
        stderr.text(),
        "jitterlab: warning: over the limit JITTERLAB_CPU=2\n"
    );
    // The daemon restarts: a new socket at the same path.
    std::fs::remove_file(dir.path().join("run/systemd/journal/socket")).unwrap();
    let journald = bind(dir.path(), "run/systemd/journal/socket");
    log.warning("back", &[]).unwrap();
    assert!(receive(&journald).starts_with(b"MESSAGE=back\n"));
    assert_eq!(
        stderr.text(),
        "jitterlab: warning: over the limit JITTERLAB_CPU=2\n"
    );
}

#[test]
fn a_full_queue_waits_briefly_then_goes_to_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let journald = bind(dir.path(), "run/systemd/journal/socket");
    let (mut log, stderr) = open(dir.path());
    // Nobody reads: the queue (net.unix.max_dgram_qlen, 10 by default,
    // 512 under systemd) fills up.
    let mut sent = 0;
    let e = loop {
        let started = Instant::now();
        match log.warning("over the limit", &[]) {
            Ok(()) => sent += 1,
            Err(e) => {
                let waited = started.elapsed();
                // The kernel counts the timeout in ticks: a tick short
                // at most.
                assert!(
                    waited >= SEND_TIMEOUT / 2 && waited < Duration::from_secs(1),
                    "{waited:?}"
                );
                break e;
            }
        }
        assert!(sent < 100_000, "the queue never filled");
    };
    assert_eq!(e.kind(), io::ErrorKind::WouldBlock, "{e}");
    assert_eq!(stderr.text(), "jitterlab: warning: over the limit\n");
    // Room again: the next one goes to the daemon.
    for _ in 0..sent {
        receive(&journald);
    }
    log.warning("room", &[]).unwrap();
    assert!(receive(&journald).starts_with(b"MESSAGE=room\n"));
}

#[test]
fn long_values_are_cut_at_a_character_boundary() {
    let dir = tempfile::tempdir().unwrap();
    let journald = bind(dir.path(), "run/systemd/journal/socket");
    let (mut log, _) = open(dir.path());
    // "µ" is two bytes: byte VALUE_MAX falls in the middle of one.
    let long = format!("x{}", "µ".repeat(VALUE_MAX));
    log.warning(&long, &[("JITTERLAB_LONG", &"y".repeat(VALUE_MAX + 1))])
        .unwrap();
    let got = String::from_utf8(receive(&journald)).unwrap();
    let message = format!("MESSAGE=x{}…\n", "µ".repeat(VALUE_MAX / 2 - 1));
    assert!(got.starts_with(&message), "{got}");
    assert!(
        got.ends_with(&format!("JITTERLAB_LONG={}…\n", "y".repeat(VALUE_MAX))),
        "{got}"
    );
}

#[test]
fn field_names_are_jitterlab_s_own_uppercase_names() {
    for good in ["JITTERLAB_CPU", "JITTERLAB_LATENCY_NS", "JITTERLAB_2"] {
        assert!(valid_field_name(good), "{good}");
    }
    let too_long = format!("JITTERLAB_{}", "X".repeat(55));
    for bad in [
        "",
        "JITTERLAB_",
        "_JITTERLAB_CPU",
        "jitterlab_cpu",
        "JITTERLAB_Cpu",
        "JITTERLAB-CPU",
        "JITTERLAB_C=1",
        "MESSAGE",
        "PRIORITY",
        "CPU",
        too_long.as_str(),
    ] {
        assert!(!valid_field_name(bad), "{bad}");
    }
    assert!(valid_field_name(&too_long[..64]));
}

#[test]
#[cfg(debug_assertions)]
#[should_panic(expected = "\"PRIORITY\" is not a field name jitterlab logs")]
fn a_bad_field_name_is_a_bug() {
    let dir = tempfile::tempdir().unwrap();
    let (mut log, _) = open(dir.path());
    let _ = log.warning("x", &[("PRIORITY", "0")]);
}

/// Where journald runs (as root, `journalctl` working): a message with a
/// unique field is read back from the journal at priority 4.
#[test]
fn journald_keeps_the_warning_with_its_fields() {
    let socket = Path::new("/run/systemd/journal/socket");
    if jitterlab_sys::effective_uid() != 0 || !socket.exists() {
        eprintln!(
            "skipping: journald is not running here (needs root and {})",
            socket.display()
        );
        return;
    }
    let id = crate::system::random_suffix();
    let mut log = SystemLog::open(Path::new("/"));
    assert_eq!(log.destination(), Destination::Journal);
    log.warning(
        "jitterlab test warning",
        &[
            ("JITTERLAB_TEST_ID", &id),
            ("JITTERLAB_EXPLANATION", "line one\nline two"),
        ],
    )
    .unwrap();
    let filter = format!("JITTERLAB_TEST_ID={id}");
    let end = Instant::now() + Duration::from_secs(5);
    let entry = loop {
        let out = std::process::Command::new("journalctl")
            .args(["-q", "--no-pager", "-o", "json", &filter])
            .output();
        let Some(out) = out.ok().filter(|o| o.status.success()) else {
            eprintln!("skipping: journalctl does not work here");
            return;
        };
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if let Some(line) = text.lines().find(|l| !l.trim().is_empty()) {
            break serde_json::from_str::<serde_json::Value>(line).unwrap();
        }
        assert!(Instant::now() < end, "the journal never showed {filter}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(entry["PRIORITY"], "4");
    assert_eq!(entry["SYSLOG_FACILITY"], "3");
    assert_eq!(entry["SYSLOG_IDENTIFIER"], "jitterlab");
    assert_eq!(entry["SYSLOG_PID"], std::process::id().to_string());
    assert_eq!(entry["MESSAGE"], "jitterlab test warning");
    assert_eq!(entry["JITTERLAB_TEST_ID"], id);
    assert_eq!(entry["JITTERLAB_EXPLANATION"], "line one\nline two");
}
