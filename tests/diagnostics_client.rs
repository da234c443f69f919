//! The diagnostics-IPC client without a runtime: property tests of the answer decoder
//! (random bytes, and valid answers mutated: truncated, wrong magic, lying size,
//! oversized, corrupt strings), which must answer an error and never panic; and fake
//! servers on a Unix socket named as the runtime names its own (this test process's pid
//! and start time), which answer garbage, half a header, nothing, or keep their listen
//! queue full: the client must return its typed error within its time limit.
#![cfg(all(feature = "attach", target_os = "linux"))]

use ilrewrite::diagnostics::message::{
    self, Answer, Command, HEADER_SIZE, MAX_MESSAGE, MessageError, Payload, decode_answer,
    decode_answer_header, decode_attach_result, decode_process_info,
};
use ilrewrite::diagnostics::{
    DiagnosticsError, Guid, InfoSource, Process, RuntimeError, RuntimeVersion, Step,
};
use proptest::prelude::*;
use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------------------
// Answers as bytes
// ---------------------------------------------------------------------------------------

/// A Server answer (`id` 0x00 OK, 0xFF Error) with `payload`, its size right.
fn answer(id: u8, payload: &[u8]) -> Vec<u8> {
    let mut bytes = message::MAGIC.to_vec();
    bytes.extend_from_slice(
        &u16::try_from(HEADER_SIZE + payload.len())
            .unwrap()
            .to_le_bytes(),
    );
    bytes.extend_from_slice(&[0xFF, id, 0, 0]);
    bytes.extend_from_slice(payload);
    bytes
}

const COOKIE: &str = "{9F2F4D54-7C85-4E6B-ABBD-31027BDB8FA3}";

/// The payload of a ProcessInfo2 answer.
fn process_info2_payload(pid: u64, command_line: &str, version: &str) -> Vec<u8> {
    let mut payload = pid.to_le_bytes().to_vec();
    payload.extend_from_slice(&Guid::parse(COOKIE).unwrap().to_bytes());
    let mut strings = Payload::new();
    for s in [command_line, "Linux", "x64", "App", version] {
        strings.string(s, "field").unwrap();
    }
    payload.extend_from_slice(strings.as_bytes());
    payload
}

/// Decodes `bytes` as a whole answer and, if OK, as ProcessInfo, ProcessInfo2 and an
/// attach result: what the client does with an answer.
fn decode_everything(bytes: &[u8], limit: usize) -> Result<(), MessageError> {
    match decode_answer(bytes, limit)? {
        Answer::Ok(payload) => {
            let v1 = decode_process_info(payload, false).map(|_| ());
            let v2 = decode_process_info(payload, true).map(|_| ());
            let attach = decode_attach_result(payload).map(|_| ());
            v2.or(v1).or(attach)
        }
        Answer::Error(_) => Ok(()),
    }
}

#[test]
fn a_valid_process_info2_answer_decodes() {
    let bytes = answer(
        0,
        &process_info2_payload(77, "/usr/bin/dotnet app.dll", "8.0.4"),
    );
    let Answer::Ok(payload) = decode_answer(&bytes, MAX_MESSAGE).unwrap() else {
        panic!("not OK")
    };
    let info = decode_process_info(payload, true).unwrap();
    assert_eq!(info.pid, 77);
    assert_eq!(info.runtime_cookie.to_string(), COOKIE);
    assert_eq!(info.command_line, "/usr/bin/dotnet app.dll");
    assert_eq!(info.product_version.as_deref(), Some("8.0.4"));
    assert_eq!(info.entrypoint_assembly.as_deref(), Some("App"));
}

proptest! {
    // Decoding is cheap: at least 2,000 cases (more with PROPTEST_CASES).
    #![proptest_config(ProptestConfig::with_cases(ProptestConfig::default().cases.max(2_000)))]

    /// Random bytes: an error or an answer, never a panic.
    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200), limit in 0usize..70_000) {
        let _ = decode_everything(&bytes, limit);
        let _ = decode_answer_header(&bytes, limit);
        let _ = decode_process_info(&bytes, false);
        let _ = decode_process_info(&bytes, true);
        let _ = decode_attach_result(&bytes);
    }

    /// Random payloads behind a valid header: only the payload decoders can object.
    #[test]
    fn random_payloads_never_panic(payload in proptest::collection::vec(any::<u8>(), 0..300), id in prop_oneof![Just(0u8), Just(0xFFu8)]) {
        let _ = decode_everything(&answer(id, &payload), MAX_MESSAGE);
    }

    /// A valid answer cut short anywhere is an error.
    #[test]
    fn truncated_answers_are_errors(cut in 0usize..400, version in "[0-9.]{0,12}") {
        let bytes = answer(0, &process_info2_payload(1, "/bin/dotnet x.dll", &version));
        let cut = cut % bytes.len();
        let result = decode_answer(&bytes[..cut], MAX_MESSAGE);
        prop_assert!(matches!(result, Err(MessageError::Truncated { .. })), "{result:?}");
    }

    /// A wrong magic is an error, whatever else the answer holds.
    #[test]
    fn a_wrong_magic_is_an_error(at in 0usize..14, value in any::<u8>()) {
        let mut bytes = answer(0, &process_info2_payload(1, "x", "8.0.4"));
        prop_assume!(bytes[at] != value);
        bytes[at] = value;
        prop_assert!(matches!(decode_answer(&bytes, MAX_MESSAGE), Err(MessageError::BadMagic(_))));
    }

    /// A size field that is not the answer's length is an error: too small for a
    /// header, shorter than the bytes (trailing), or longer (truncated).
    #[test]
    fn a_lying_size_is_an_error(size in any::<u16>()) {
        let mut bytes = answer(0, &process_info2_payload(1, "/bin/dotnet a.dll", "8.0.4"));
        let real = bytes.len();
        prop_assume!(usize::from(size) != real);
        bytes[14..16].copy_from_slice(&size.to_le_bytes());
        let result = decode_answer(&bytes, MAX_MESSAGE);
        let expected = match usize::from(size) {
            s if s < HEADER_SIZE => matches!(result, Err(MessageError::SizeTooSmall(_))),
            s if s < real => matches!(result, Err(MessageError::TrailingBytes { .. })),
            _ => matches!(result, Err(MessageError::Truncated { .. })),
        };
        prop_assert!(expected, "size {size} of {real}: {result:?}");
    }

    /// An answer larger than the limit is refused from its header alone.
    #[test]
    fn an_oversized_answer_is_an_error(extra in 0usize..2_000, limit in 20usize..1_000) {
        let bytes = answer(0, &vec![0xAB; extra]);
        let result = decode_answer_header(&bytes, limit);
        match bytes.len() > limit {
            true => prop_assert!(matches!(result, Err(MessageError::SizeTooLarge { .. })), "{result:?}"),
            false => prop_assert!(result.is_ok()),
        }
    }

    /// Another command set, or a Server answer other than OK and Error, is an error.
    #[test]
    fn other_sets_and_ids_are_errors(set in any::<u8>(), id in any::<u8>()) {
        let mut bytes = answer(0, &[]);
        bytes[16] = set;
        bytes[17] = id;
        let result = decode_answer(&bytes, MAX_MESSAGE);
        match (set, id) {
            (0xFF, 0x00 | 0xFF) => prop_assert!(
                result.is_ok() || matches!(result, Err(MessageError::Truncated { .. })),
                "{:?}",
                result
            ),
            (0xFF, _) => prop_assert_eq!(result, Err(MessageError::UnknownAnswer(id))),
            _ => prop_assert_eq!(result, Err(MessageError::NotAnAnswer { set, id })),
        }
    }

    /// A string count changed to anything: an error or a decoding, never a panic; a
    /// count past the payload is `StringTooLong`.
    #[test]
    fn corrupt_string_counts_never_panic(count in any::<u32>(), which in 0usize..5) {
        let mut payload = process_info2_payload(1, "/bin/dotnet a.dll", "8.0.4");
        // Walk to the `which`-th string's count.
        let mut at = 24;
        for _ in 0..which {
            let units = u32::from_le_bytes(payload[at..at + 4].try_into().unwrap()) as usize;
            at += 4 + 2 * units;
        }
        payload[at..at + 4].copy_from_slice(&count.to_le_bytes());
        let left = payload.len() - at - 4;
        let result = decode_process_info(&payload, true);
        if u64::from(count) * 2 > left as u64 {
            prop_assert!(matches!(result, Err(MessageError::StringTooLong { .. })), "{result:?}");
        }
    }

    /// Random bytes flipped anywhere in a valid answer: never a panic.
    #[test]
    fn mutated_answers_never_panic(flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8)) {
        let mut bytes = answer(0, &process_info2_payload(9, "/bin/dotnet a.dll", "6.0.0-preview.6"));
        for (at, value) in flips {
            let at = at % bytes.len();
            bytes[at] = value;
        }
        let _ = decode_everything(&bytes, MAX_MESSAGE);
    }
}

// ---------------------------------------------------------------------------------------
// Fake servers
// ---------------------------------------------------------------------------------------

/// The client's time limit in these tests.
const LIMIT: Duration = Duration::from_millis(500);

/// How long a test may take at most, however the client behaves: a hang fails it.
const OUTER_LIMIT: Duration = Duration::from_secs(30);

/// This process's start time in clock ticks (`/proc/self/stat`, field 22): the key the
/// runtime would put in our socket's name.
fn own_start_time() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 1..];
    after
        .split_ascii_whitespace()
        .nth(19)
        .unwrap()
        .parse()
        .unwrap()
}

/// A fresh directory of its own under /tmp (short, for a socket path), removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new() -> Dir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let path = PathBuf::from(format!("/tmp/ilr-diag-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir(&path).unwrap();
        Dir(path)
    }

    /// The socket path the runtime would use for this test process.
    fn own_socket(&self) -> PathBuf {
        self.0.join(format!(
            "dotnet-diagnostic-{}-{}-socket",
            std::process::id(),
            own_start_time()
        ))
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs `test` on a thread; fails if it has not returned within [`OUTER_LIMIT`].
fn bounded(test: impl FnOnce() + Send + 'static) {
    let (done, finished) = std::sync::mpsc::channel();
    let thread = std::thread::spawn(move || {
        test();
        let _ = done.send(());
    });
    match finished.recv_timeout(OUTER_LIMIT) {
        Ok(()) => thread.join().unwrap(),
        // The thread ended without sending: it panicked; re-raise its panic.
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
            if let Err(panic) = thread.join() {
                std::panic::resume_unwind(panic)
            }
        }
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            panic!("the test did not end within {OUTER_LIMIT:?}: the client hangs")
        }
    }
}

/// A fake server on this process's socket name in a fresh directory: each connection
/// is handed to `serve` on the server's thread. Returns the directory (keep it alive)
/// and the [`Process`] opened on it, with [`LIMIT`].
fn fake_server(serve: impl Fn(UnixStream) + Send + 'static) -> (Dir, Process) {
    let dir = Dir::new();
    let listener = UnixListener::bind(dir.own_socket()).unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            match stream {
                Ok(stream) => serve(stream),
                Err(_) => break,
            }
        }
    });
    let process = Process::open_in(&dir.0, std::process::id())
        .unwrap()
        .with_timeout(LIMIT);
    (dir, process)
}

/// Reads one request (header and payload) off `stream`.
fn read_request(stream: &mut UnixStream) -> Vec<u8> {
    let mut header = [0u8; HEADER_SIZE];
    stream.read_exact(&mut header).unwrap();
    let size = usize::from(u16::from_le_bytes([header[14], header[15]]));
    let mut request = header.to_vec();
    request.resize(size, 0);
    stream.read_exact(&mut request[HEADER_SIZE..]).unwrap();
    request
}

/// `result` is the timeout of `step`, and came within the limit (with slack for a slow
/// machine, far below a hang).
fn assert_timeout<T: std::fmt::Debug>(
    result: Result<T, DiagnosticsError>,
    step: Step,
    started: Instant,
) {
    let took = started.elapsed();
    match result {
        Err(DiagnosticsError::Timeout { step: s, limit, .. }) if s == step => {
            assert!(limit >= LIMIT);
            assert!(took >= LIMIT.mul_f32(0.9), "timed out early: {took:?}");
            assert!(took < LIMIT * 6, "took {took:?} for a limit of {LIMIT:?}");
        }
        other => panic!("expected a timeout while {step}, got {other:?}"),
    }
}

#[test]
fn an_answer_of_garbage_is_malformed() {
    bounded(|| {
        let (_dir, process) = fake_server(|mut stream| {
            let _ = read_request(&mut stream);
            let _ = stream.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n");
        });
        match process.info() {
            Err(DiagnosticsError::Malformed {
                command,
                problem: MessageError::BadMagic(_),
                ..
            }) => assert_eq!(command, Command::PROCESS_INFO2),
            other => panic!("expected a bad magic, got {other:?}"),
        }
    });
}

#[test]
fn half_a_header_then_silence_times_out() {
    bounded(|| {
        let (_dir, process) = fake_server(|mut stream| {
            let _ = read_request(&mut stream);
            let _ = stream.write_all(&answer(0, &[])[..10]);
            std::thread::sleep(LIMIT * 4);
        });
        let started = Instant::now();
        assert_timeout(process.info(), Step::Receive, started);
    });
}

#[test]
fn half_a_header_then_close_is_truncated() {
    bounded(|| {
        let (_dir, process) = fake_server(|mut stream| {
            let _ = read_request(&mut stream);
            let _ = stream.write_all(&answer(0, &[])[..10]);
        });
        match process.info() {
            Err(DiagnosticsError::Malformed {
                problem:
                    MessageError::Truncated {
                        got: 10,
                        needed: 20,
                        ..
                    },
                ..
            }) => {}
            other => panic!("expected a truncated header, got {other:?}"),
        }
    });
}

#[test]
fn a_header_promising_more_than_comes_is_truncated_or_times_out() {
    bounded(|| {
        // The header announces 100 payload bytes; 4 come, then the connection closes.
        let (_dir, process) = fake_server(|mut stream| {
            let _ = read_request(&mut stream);
            let mut bytes = answer(0, &[1, 2, 3, 4]);
            bytes[14..16].copy_from_slice(&120u16.to_le_bytes());
            let _ = stream.write_all(&bytes);
        });
        match process.info() {
            Err(DiagnosticsError::Malformed {
                problem:
                    MessageError::Truncated {
                        got: 24,
                        needed: 120,
                        ..
                    },
                ..
            }) => {}
            other => panic!("expected a truncated payload, got {other:?}"),
        }
        // The same, but the connection stays open: a timeout.
        let (_dir, process) = fake_server(|mut stream| {
            let _ = read_request(&mut stream);
            let mut bytes = answer(0, &[1, 2, 3, 4]);
            bytes[14..16].copy_from_slice(&120u16.to_le_bytes());
            let _ = stream.write_all(&bytes);
            std::thread::sleep(LIMIT * 4);
        });
        let started = Instant::now();
        assert_timeout(process.info(), Step::Receive, started);
    });
}

#[test]
fn a_server_that_never_answers_times_out() {
    bounded(|| {
        let (_dir, process) = fake_server(|stream| {
            // Read nothing, answer nothing, hold the connection.
            std::thread::sleep(LIMIT * 4);
            drop(stream);
        });
        let started = Instant::now();
        let result = process.attach_profiler(
            Guid::default(),
            Path::new("/nonexistent/libx.so"),
            &[],
            Duration::ZERO,
        );
        assert_timeout(result, Step::Receive, started);
    });
}

#[test]
fn a_server_that_never_accepts_times_out() {
    bounded(|| {
        let dir = Dir::new();
        // Listening, never accepting: the connection is queued, the request buffered.
        let _listener = UnixListener::bind(dir.own_socket()).unwrap();
        let process = Process::open_in(&dir.0, std::process::id())
            .unwrap()
            .with_timeout(LIMIT);
        let started = Instant::now();
        assert_timeout(process.info(), Step::Receive, started);
    });
}

#[test]
fn a_full_listen_queue_times_out_while_connecting() {
    use rustix::net::{AddressFamily, SocketAddrUnix, SocketType};
    bounded(|| {
        let dir = Dir::new();
        // A listener with a queue of one (backlog 0), never accepting, and filled.
        let listener = rustix::net::socket(AddressFamily::UNIX, SocketType::STREAM, None).unwrap();
        let address = SocketAddrUnix::new(dir.own_socket()).unwrap();
        rustix::net::bind(&listener, &address).unwrap();
        rustix::net::listen(&listener, 0).unwrap();
        let mut fillers = Vec::new();
        loop {
            let filler =
                rustix::net::socket(AddressFamily::UNIX, SocketType::STREAM, None).unwrap();
            rustix::net::sockopt::set_socket_timeout(
                &filler,
                rustix::net::sockopt::Timeout::Send,
                Some(Duration::from_millis(50)),
            )
            .unwrap();
            if rustix::net::connect(&filler, &address).is_err() {
                break;
            }
            fillers.push(filler);
            assert!(fillers.len() < 1_000, "the queue never fills");
        }
        let process = Process::open_in(&dir.0, std::process::id())
            .unwrap()
            .with_timeout(LIMIT);
        let started = Instant::now();
        assert_timeout(process.info(), Step::Connect, started);
    });
}

#[test]
fn a_socket_nobody_listens_on_is_stale() {
    bounded(|| {
        let dir = Dir::new();
        drop(UnixListener::bind(dir.own_socket()).unwrap());
        let process = Process::open_in(&dir.0, std::process::id()).unwrap();
        match process.info() {
            Err(DiagnosticsError::Stale { why, .. }) => assert!(why.contains("refused"), "{why}"),
            other => panic!("expected a stale socket, got {other:?}"),
        }
    });
}

#[test]
fn a_socket_of_an_earlier_process_with_this_pid_is_stale() {
    bounded(|| {
        let dir = Dir::new();
        let earlier = dir.0.join(format!(
            "dotnet-diagnostic-{}-{}-socket",
            std::process::id(),
            own_start_time() - 1
        ));
        let _listener = UnixListener::bind(&earlier).unwrap();
        match Process::open_in(&dir.0, std::process::id()) {
            Err(DiagnosticsError::Stale { socket, .. }) => assert_eq!(socket, earlier),
            other => panic!("expected a stale socket, got {other:?}"),
        }
        // With the process's own socket beside it, that one is taken.
        let _own = UnixListener::bind(dir.own_socket()).unwrap();
        let process = Process::open_in(&dir.0, std::process::id()).unwrap();
        assert_eq!(process.socket(), dir.own_socket());
    });
}

#[test]
fn no_socket_is_not_dotnet_and_no_process_is_no_such_process() {
    let dir = Dir::new();
    match Process::open_in(&dir.0, std::process::id()) {
        Err(DiagnosticsError::NotDotnet { pid, dir: searched }) => {
            assert_eq!((pid, searched), (std::process::id(), dir.0.clone()));
        }
        other => panic!("expected not .NET, got {other:?}"),
    }
    // A regular file of the socket's name is not a socket.
    std::fs::write(dir.own_socket(), b"").unwrap();
    assert!(matches!(
        Process::open_in(&dir.0, std::process::id()),
        Err(DiagnosticsError::NotDotnet { .. })
    ));
    for pid in [0, i32::MAX as u32, u32::MAX] {
        assert!(
            matches!(
                Process::open_in(&dir.0, pid),
                Err(DiagnosticsError::NoSuchProcess { pid: p }) if p == pid
            ),
            "{pid}"
        );
    }
}

#[test]
fn a_socket_of_another_user_is_refused_before_connecting() {
    if rustix::process::geteuid().as_raw() != 0 {
        println!("skipped: giving a socket to another user needs root");
        return;
    }
    bounded(|| {
        let dir = Dir::new();
        let connections = std::sync::Arc::new(AtomicUsize::new(0));
        let seen = std::sync::Arc::clone(&connections);
        let listener = UnixListener::bind(dir.own_socket()).unwrap();
        std::thread::spawn(move || {
            for _ in listener.incoming() {
                seen.fetch_add(1, Ordering::SeqCst);
            }
        });
        std::os::unix::fs::chown(dir.own_socket(), Some(65_534), Some(65_534)).unwrap();
        match Process::open_in(&dir.0, std::process::id()) {
            Err(DiagnosticsError::OtherUser { owner, uid, .. }) => {
                assert_eq!((owner, uid), (65_534, 0));
            }
            other => panic!("expected another user's socket, got {other:?}"),
        }
        let listed = Process::list_in(&dir.0, LIMIT).unwrap();
        assert!(listed.is_empty(), "{listed:?}");
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(
            connections.load(Ordering::SeqCst),
            0,
            "the client connected"
        );
    });
}

#[test]
fn process_info2_is_sent_and_decoded() {
    bounded(|| {
        let (_dir, process) = fake_server(|mut stream| {
            let request = read_request(&mut stream);
            assert_eq!(
                request,
                message::encode_request(Command::PROCESS_INFO2, &[]).unwrap()
            );
            let payload = process_info2_payload(4242, "/usr/bin/dotnet /srv/app.dll", "8.0.4");
            stream.write_all(&answer(0, &payload)).unwrap();
        });
        let info = process.info().unwrap();
        assert_eq!(info.pid, std::process::id());
        assert_eq!(info.runtime_pid, Some(4242));
        assert_eq!(info.command_line, "/usr/bin/dotnet /srv/app.dll");
        assert_eq!(
            info.runtime_version,
            RuntimeVersion::Reported("8.0.4".into())
        );
        assert_eq!(info.source, InfoSource::ProcessInfo2);
        assert_eq!(info.entrypoint_assembly.as_deref(), Some("App"));
        assert_eq!(
            (info.os.as_deref(), info.arch.as_deref()),
            (Some("Linux"), Some("x64"))
        );
        assert_eq!(
            info.runtime_cookie.map(|c| c.to_string()).as_deref(),
            Some(COOKIE)
        );
        // And it is listed, with the same answer.
        let listed = Process::list_in(process.socket().parent().unwrap(), LIMIT).unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].process, process);
        assert_eq!(listed[0].info.as_ref().unwrap(), &info);
    });
}

#[test]
fn without_process_commands_the_command_line_comes_from_proc() {
    bounded(|| {
        // A runtime before .NET 5: every Process command is unknown.
        let (_dir, process) = fake_server(|mut stream| {
            let _ = read_request(&mut stream);
            let _ = stream.write_all(&answer(0xFF, &0x8013_1385u32.to_le_bytes()));
        });
        let info = process.info().unwrap();
        assert_eq!(info.source, InfoSource::Proc);
        assert_eq!(info.runtime_pid, None);
        let exe = std::env::current_exe().unwrap();
        assert!(
            info.command_line.starts_with(&*exe.to_string_lossy()),
            "{}",
            info.command_line
        );
        // This test process loaded no libcoreclr.
        assert_eq!(info.runtime_version, RuntimeVersion::Unknown);
    });
}

#[test]
fn attach_profiler_sends_the_documented_payload() {
    bounded(|| {
        let clsid = Guid::parse("{5B0E6A3C-8D21-4F7A-B6C9-2E1D4A7F3C85}").unwrap();
        let (_dir, process) = fake_server(move |mut stream| {
            let request = read_request(&mut stream);
            let mut payload = Payload::new();
            payload
                .u32(2_500)
                .guid(&clsid)
                .string("/opt/p/libp.so", "path")
                .unwrap()
                .bytes(b"data");
            let expected =
                message::encode_request(Command::ATTACH_PROFILER, payload.as_bytes()).unwrap();
            assert_eq!(request, expected);
            assert_eq!(&request[16..18], [0x03, 0x01]);
            let _ = stream.write_all(&answer(0, &0u32.to_le_bytes()));
        });
        process
            .attach_profiler(
                clsid,
                Path::new("/opt/p/libp.so"),
                b"data",
                Duration::from_millis(2_500),
            )
            .unwrap();
    });
}

#[test]
fn the_runtime_errors_are_typed() {
    bounded(|| {
        for (hresult, expected) in [
            (0x8013_136A, RuntimeError::ProfilerAlreadyActive),
            (0x8013_1368, RuntimeError::ProfilerNotAttachable),
            (0x8007_007E, RuntimeError::ProfilerLibraryNotLoaded),
            (0x8013_1379, RuntimeError::TimeoutWaitingForConcurrentGc),
            (0x8013_1385, RuntimeError::UnknownCommand),
            (0xDEAD_BEEF, RuntimeError::Other(0xDEAD_BEEF)),
        ] {
            for ok_answer in [false, true] {
                // As an Error answer, and as an OK answer carrying a failure HRESULT.
                let (_dir, process) = fake_server(move |mut stream| {
                    let _ = read_request(&mut stream);
                    let id = if ok_answer { 0x00 } else { 0xFF };
                    let _ = stream.write_all(&answer(id, &u32::to_le_bytes(hresult)));
                });
                let result = process.attach_profiler(
                    Guid::default(),
                    Path::new("/p.so"),
                    &[],
                    Duration::ZERO,
                );
                match result {
                    Err(DiagnosticsError::Refused { error, command, .. }) => {
                        assert_eq!((error, command), (expected, Command::ATTACH_PROFILER));
                        assert_eq!(error.hresult(), hresult);
                    }
                    other => panic!("expected {expected:?}, got {other:?}"),
                }
            }
        }
    });
}

#[test]
fn requests_that_cannot_be_sent_are_refused_before_sending() {
    bounded(|| {
        let connections = std::sync::Arc::new(AtomicUsize::new(0));
        let seen = std::sync::Arc::clone(&connections);
        let (_dir, process) = fake_server(move |_| {
            seen.fetch_add(1, Ordering::SeqCst);
        });
        let too_much = vec![0u8; 70_000];
        for (path, data) in [
            (Path::new("/p.so"), &too_much[..]),
            (Path::new("/p\0.so"), &[][..]),
        ] {
            match process.attach_profiler(Guid::default(), path, data, Duration::ZERO) {
                Err(DiagnosticsError::InvalidRequest { .. }) => {}
                other => panic!("expected an invalid request, got {other:?}"),
            }
        }
        use std::os::unix::ffi::OsStrExt;
        let not_unicode = Path::new(std::ffi::OsStr::from_bytes(b"/p\xFF.so"));
        assert!(matches!(
            process.attach_profiler(Guid::default(), not_unicode, &[], Duration::ZERO),
            Err(DiagnosticsError::InvalidRequest { .. })
        ));
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(
            connections.load(Ordering::SeqCst),
            0,
            "the client connected"
        );
    });
}
