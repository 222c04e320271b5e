//! The metrics thread: answers `GET /metrics` over HTTP/1.1 from a thread
//! of its own that stays off the probe CPUs, serving every open connection
//! at once so that no client can hold up another, nor the command's end.
//!
//! **Why std's `TcpListener` and not an HTTP crate.** A scrape is one small
//! request and one response; what matters is *where* the code runs. This
//! thread is SCHED_OTHER (it is started by the controlling thread, never
//! by a probe thread) and moves itself off the probe CPUs whenever a
//! measurement starts on new ones (`system::rt::keep_off_probe_cpus`, the
//! controller's own rule). An HTTP server crate such as `tiny_http` starts
//! an accept thread and a pool of worker threads of its own, which this
//! thread could not move when a bench's next cell measures on other CPUs.
//!
//! **Why one thread polling non-blocking sockets, not a thread per
//! client.** The listener and every open connection are waited on together
//! (`ppoll`, at most 50 ms, so a stop or a change of probe CPUs is seen
//! quickly), and each is read or written only as far as it goes without
//! blocking. So a client that sends its request a byte at a time, or never
//! reads its answer, costs one slot and nobody's time: the other clients
//! are served meanwhile. One thread is the one thread to keep off the probe
//! CPUs (threads per client would each have to be moved, and a flood of
//! connections would be a flood of threads), and since it never blocks on a
//! client, stopping it at the command's end takes at most one poll.
//!
//! **What a client may cost** ([`Limits`]): one deadline for the whole
//! request, counted from its connection (2 s to send its request head and
//! take the answer: bytes that trickle in do not extend it); at most 16
//! connections open at once, the oldest still sending its request closed
//! when one more comes; a request head of at most 8 KiB. Each connection
//! is answered once and closed (`Connection: close`; Prometheus reconnects
//! at each scrape).
//!
//! Served: `GET` (and `HEAD`) `/metrics` — the exposition
//! ([`super::exposition`]); `/` says where the metrics are; any other path
//! is 404, any other method 405.

use std::collections::VecDeque;
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::{Duration, Instant};

use jitterlab_sys as sys;
use sys::poll::Want;

use super::board::Board;
use super::exposition::{self, CONTENT_TYPE};

/// How long the sockets are polled at most before the stop flag and the
/// probe CPUs are looked at again.
const POLL: Duration = Duration::from_millis(50);

/// The largest request head read (the request line is all that is used).
const MAX_HEAD: usize = 8192;

/// What one client may cost the metrics thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// How long a client has, from its connection, to send its request
    /// head and take the answer: one deadline for the whole request.
    pub deadline: Duration,
    /// How many connections are open at once; one more closes the oldest
    /// still sending its request (or, when all are being answered, the
    /// oldest).
    pub max_connections: usize,
}

/// The limits of `--metrics`.
pub const LIMITS: Limits = Limits {
    deadline: Duration::from_secs(2),
    max_connections: 16,
};

/// Serves `listener` (non-blocking) until `stop` is raised, each client
/// held to `limits`. Returns within one poll ([`POLL`]) of the stop: it
/// never blocks on a client.
pub fn serve(listener: TcpListener, board: &Board, stop: &AtomicBool, limits: &Limits) {
    let mut placed = None;
    // Open connections, oldest first.
    let mut open: VecDeque<Connection> = VecDeque::new();
    while !stop.load(Relaxed) {
        let changed = board.cpus_changed.load(Relaxed);
        if placed != Some(changed) {
            let cpus = board.lock().probe_cpus.clone();
            if !cpus.is_empty() {
                crate::system::rt::keep_off_probe_cpus(&board.root, &cpus);
            }
            placed = Some(changed);
        }
        let now = Instant::now();
        // A client past its deadline is closed, whatever it is doing.
        open.retain(|c| now < c.deadline);
        let wait = open
            .iter()
            .map(|c| c.deadline - now)
            .fold(POLL, Duration::min);
        let mut fds = vec![(listener.as_fd(), Want::Read)];
        fds.extend(open.iter().map(|c| (c.stream.as_fd(), c.want())));
        let ready = match sys::poll::wait_any(&fds, Some(nanos(wait))) {
            Ok(ready) => ready,
            Err(_) => {
                std::thread::sleep(POLL);
                continue;
            }
        };
        drop(fds);
        let mut flags = ready[1..].iter();
        // A connection that is answered, gone or failed is closed.
        open.retain_mut(|c| !flags.next().copied().unwrap_or(false) || c.advance(board));
        if ready[0] {
            accept(&listener, &mut open, limits);
        }
    }
}

/// `d` in nanoseconds, saturated.
fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Takes the connections waiting on `listener` (at most one cap's worth,
/// so the open ones are served between bursts), making room by closing
/// the oldest beyond `limits.max_connections`.
fn accept(listener: &TcpListener, open: &mut VecDeque<Connection>, limits: &Limits) {
    for _ in 0..limits.max_connections.max(1) {
        let stream = match listener.accept() {
            Ok((stream, _)) => stream,
            Err(e) if e.kind() == ErrorKind::WouldBlock => return,
            // A connection reset before it was taken, or no descriptor
            // left: the next poll tries again.
            Err(_) => return,
        };
        if stream.set_nonblocking(true).is_err() {
            continue;
        }
        while !open.is_empty() && open.len() >= limits.max_connections {
            let oldest_idle = open
                .iter()
                .position(|c| matches!(c.state, State::Reading(_)))
                .unwrap_or(0);
            open.remove(oldest_idle);
        }
        if limits.max_connections > 0 {
            open.push_back(Connection {
                stream,
                deadline: Instant::now() + limits.deadline,
                state: State::Reading(Vec::with_capacity(1024)),
            });
        }
    }
}

/// One client's connection (closed when dropped).
struct Connection {
    stream: TcpStream,
    /// When it is closed, answered or not.
    deadline: Instant,
    state: State,
}

/// Where a connection is.
enum State {
    /// Reading the request head: what came so far.
    Reading(Vec<u8>),
    /// Writing the answer: all of it, and how much is sent.
    Writing(Vec<u8>, usize),
}

impl Connection {
    /// What the connection waits for.
    fn want(&self) -> Want {
        match self.state {
            State::Reading(_) => Want::Read,
            State::Writing(..) => Want::Write,
        }
    }

    /// Reads and writes what can be without blocking; `false` once the
    /// connection is done with (answered, gone, or failed).
    fn advance(&mut self, board: &Board) -> bool {
        if let State::Reading(head) = &mut self.state {
            match read_more(&mut self.stream, head) {
                Ok(false) => return true,
                // Connected and gone without a word: nothing to answer.
                Ok(true) if head.is_empty() => return false,
                Ok(true) => {
                    let text = String::from_utf8_lossy(head);
                    let line = text.lines().next().unwrap_or_default();
                    let out = response(&route(line, || exposition::render(board)));
                    self.state = State::Writing(out, 0);
                }
                Err(_) => return false,
            }
        }
        if let State::Writing(out, sent) = &mut self.state {
            while *sent < out.len() {
                match self.stream.write(&out[*sent..]) {
                    Ok(0) => return false,
                    Ok(n) => *sent += n,
                    Err(e) if e.kind() == ErrorKind::WouldBlock => return true,
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(_) => return false,
                }
            }
            let _ = self.stream.shutdown(Shutdown::Write);
        }
        false
    }
}

/// Reads what has come into `head`: `Ok(true)` once the head is complete
/// (up to its empty line), at [`MAX_HEAD`] bytes, or at the client's end
/// of sending; `Ok(false)` while more is to come.
fn read_more(stream: &mut TcpStream, head: &mut Vec<u8>) -> std::io::Result<bool> {
    let mut chunk = [0u8; 1024];
    while head.len() < MAX_HEAD {
        let n = match stream.read(&mut chunk) {
            Ok(0) => return Ok(true),
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(false),
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        head.extend_from_slice(&chunk[..n]);
        if head.windows(4).any(|w| w == b"\r\n\r\n") || head.windows(2).any(|w| w == b"\n\n") {
            return Ok(true);
        }
    }
    Ok(true)
}

/// The bytes of answer `r`: status line, headers, and body (none for a
/// `HEAD`).
fn response(r: &Response) -> Vec<u8> {
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
    out.into_bytes()
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
