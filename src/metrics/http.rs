//! The metrics thread: answers `GET /metrics` over HTTP/1.1, one
//! connection at a time, from a thread of its own that stays off the probe
//! CPUs.
//!
//! **Why std's `TcpListener` and not an HTTP crate.** A scrape is one small
//! request and one response; what matters is *where* the code runs. This
//! thread is SCHED_OTHER (it is started by the controlling thread, never
//! by a probe thread) and moves itself off the probe CPUs whenever a
//! measurement starts on new ones (`system::rt::keep_off_probe_cpus`, the
//! controller's own rule). An HTTP server crate such as `tiny_http` starts
//! an accept thread and a pool of worker threads of its own, which this
//! thread could not move when a bench's next cell measures on other CPUs.
//! So the listener is polled here (`ppoll`, 50 ms, so a stop or a change of
//! probe CPUs is seen quickly), each connection gets a 2 s budget to send
//! its request head and take the answer, and is then closed
//! (`Connection: close`; Prometheus reconnects at each scrape).
//!
//! Served: `GET` (and `HEAD`) `/metrics` — the exposition
//! ([`super::exposition`]); `/` says where the metrics are; any other path
//! is 404, any other method 405.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::Duration;

use jitterlab_sys as sys;

use super::board::Board;
use super::exposition::{self, CONTENT_TYPE};

/// How long the listener is polled before the stop flag and the probe CPUs
/// are looked at again, ns.
const POLL_NS: u64 = 50_000_000;

/// How long a client has to send its request head, and to take the answer.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(2);

/// The largest request head read (the request line is all that is used).
const MAX_HEAD: usize = 8192;

/// Serves `listener` (non-blocking) until `stop` is raised.
pub fn serve(listener: TcpListener, board: &Board, stop: &AtomicBool) {
    let mut placed = None;
    while !stop.load(Relaxed) {
        let changed = board.cpus_changed.load(Relaxed);
        if placed != Some(changed) {
            let cpus = board.lock().probe_cpus.clone();
            if !cpus.is_empty() {
                crate::system::rt::keep_off_probe_cpus(&board.root, &cpus);
            }
            placed = Some(changed);
        }
        match sys::poll::wait_readable(listener.as_fd(), Some(POLL_NS)) {
            Ok(true) => {}
            Ok(false) => continue,
            Err(_) => {
                std::thread::sleep(Duration::from_nanos(POLL_NS));
                continue;
            }
        }
        if let Ok((stream, _)) = listener.accept() {
            // A client that goes away or is too slow costs only its own
            // answer.
            let _ = answer(stream, board);
        }
    }
}

/// Reads one request from `stream` and answers it.
fn answer(mut stream: TcpStream, board: &Board) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(CLIENT_TIMEOUT))?;
    stream.set_write_timeout(Some(CLIENT_TIMEOUT))?;
    let head = read_head(&mut stream)?;
    let line = head.lines().next().unwrap_or_default();
    let r = route(line, || exposition::render(board));
    let mut out = format!(
        "HTTP/1.1 {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n",
        r.status,
        r.content_type,
        r.body.len()
    );
    if r.status.starts_with("405") {
        out.push_str("Allow: GET, HEAD\r\n");
    }
    out.push_str("\r\n");
    if !r.head_only {
        out.push_str(&r.body);
    }
    stream.write_all(out.as_bytes())?;
    stream.flush()?;
    let _ = stream.shutdown(std::net::Shutdown::Write);
    Ok(())
}

/// The request head (up to the empty line, at most [`MAX_HEAD`] bytes),
/// as text.
fn read_head(stream: &mut TcpStream) -> std::io::Result<String> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    while buf.len() < MAX_HEAD {
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
        if buf.windows(4).any(|w| w == b"\r\n\r\n") || buf.windows(2).any(|w| w == b"\n\n") {
            break;
        }
    }
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// An answer.
#[derive(Debug, PartialEq, Eq)]
pub struct Response {
    /// Status code and reason, `200 OK`.
    pub status: &'static str,
    /// Its content type.
    pub content_type: &'static str,
    /// Its body (its length is sent for a `HEAD` too).
    pub body: String,
    /// A `HEAD` request: the headers only.
    pub head_only: bool,
}

/// The answer to the request line `line`; `metrics` renders the exposition.
pub fn route(line: &str, metrics: impl FnOnce() -> String) -> Response {
    const TEXT: &str = "text/plain; charset=utf-8";
    let mut parts = line.split_ascii_whitespace();
    let (Some(method), Some(target), Some(version)) = (parts.next(), parts.next(), parts.next())
    else {
        return Response {
            status: "400 Bad Request",
            content_type: TEXT,
            body: "a request line is METHOD PATH HTTP/1.1\n".into(),
            head_only: false,
        };
    };
    if !version.starts_with("HTTP/") {
        return Response {
            status: "400 Bad Request",
            content_type: TEXT,
            body: "a request line is METHOD PATH HTTP/1.1\n".into(),
            head_only: false,
        };
    }
    let head_only = method == "HEAD";
    if method != "GET" && !head_only {
        return Response {
            status: "405 Method Not Allowed",
            content_type: TEXT,
            body: "only GET and HEAD are served\n".into(),
            head_only: false,
        };
    }
    let path = target.split('?').next().unwrap_or_default();
    match path {
        "/metrics" => Response {
            status: "200 OK",
            content_type: CONTENT_TYPE,
            body: metrics(),
            head_only,
        },
        "/" => Response {
            status: "200 OK",
            content_type: TEXT,
            body: "jitterlab: the Prometheus metrics are at /metrics\n".into(),
            head_only,
        },
        _ => Response {
            status: "404 Not Found",
            content_type: TEXT,
            body: "not found; the metrics are at /metrics\n".into(),
            head_only,
        },
    }
}
