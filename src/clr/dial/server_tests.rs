//! [`ControlServer`] on real sockets in scratch directories: where it agrees to listen
//! (and what it says when it does not), what a connection gets, who is refused, how
//! many are served at once, and what dropping it leaves behind.
//!
//! The scratch directories are under the target directory's `tmp` (Cargo's
//! `CARGO_TARGET_TMPDIR`, which Cargo sets only for integration tests, so a unit test
//! finds it from its own executable's path), or the system's temporary directory when
//! that path is too long for a socket's; one per test, named with the process id and a
//! counter, removed at the end.

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use super::command::{Command, Dial};
use super::error::ControlError;
use super::parse::help_lines;
use super::peer::effective_uid;
use super::server::{ControlServer, MAX_CONNECTIONS};
use super::session::{Ended, serve_connection};

/// How long a test waits for an answer before it fails (rather than hangs).
const PATIENCE: Duration = Duration::from_secs(20);

/// The uid a scratch directory is given to when the tests run as root (`nobody`).
const NOBODY: u32 = 65534;

// ---------------------------------------------------------------------------------
// Scratch directories.

/// Where the scratch directories go: `<target>/tmp`, or the system's temporary
/// directory when that is too long a path for a socket (at most 108 bytes).
fn base() -> &'static Path {
    static BASE: OnceLock<PathBuf> = OnceLock::new();
    BASE.get_or_init(|| {
        let target_tmp = option_env!("CARGO_TARGET_TMPDIR")
            .map(PathBuf::from)
            .or_else(|| {
                // <target>/<profile>/deps/<test executable>
                let exe = std::env::current_exe().ok()?;
                Some(exe.parent()?.parent()?.parent()?.join("tmp"))
            })
            .filter(|dir| dir.as_os_str().len() <= 60)
            .filter(|dir| fs::create_dir_all(dir).is_ok());
        target_tmp.unwrap_or_else(std::env::temp_dir)
    })
}

/// One test's scratch directory, removed when dropped.
struct Scratch {
    root: PathBuf,
}

impl Scratch {
    fn new() -> Scratch {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let root = base().join(format!("ctl-{}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        fs::create_dir(&root).expect("create the scratch directory");
        Scratch { root }
    }

    /// `root/name`, not created.
    fn path(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    /// `root/name`, a directory with mode `mode`.
    fn dir(&self, name: &str, mode: u32) -> PathBuf {
        let dir = self.path(name);
        fs::create_dir(&dir).expect("create a directory");
        fs::set_permissions(&dir, fs::Permissions::from_mode(mode)).expect("chmod");
        dir
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.root);
    }
}

fn mode_of(path: &Path) -> u32 {
    fs::symlink_metadata(path).expect("lstat").mode() & 0o7777
}

// ---------------------------------------------------------------------------------
// A dial and a client.

/// Answers `state` and `help`, panics on `revert Boom::*`, records every call.
#[derive(Default)]
struct Fake {
    calls: Mutex<Vec<Command>>,
}

/// What [`Fake`] answers to `state`.
const STATE: [&str; 2] = ["App.Orders::Place timing", "App.Orders::Cancel original"];

impl Fake {
    fn calls(&self) -> Vec<Command> {
        self.calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl Dial for Fake {
    fn execute(&self, command: &Command) -> Result<Vec<String>, String> {
        self.calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(command.clone());
        match command {
            Command::State => Ok(STATE.iter().map(|s| s.to_string()).collect()),
            Command::Help => Ok(help_lines()),
            Command::Revert { selector } if selector.type_name() == "Boom" => {
                panic!("boom at {selector}")
            }
            _ => Err(format!("no loaded method matches {command}")),
        }
    }
}

fn start(socket: &Path) -> (ControlServer, Arc<Fake>) {
    let fake = Arc::new(Fake::default());
    let server = ControlServer::start(socket, fake.clone()).expect("the dial starts");
    (server, fake)
}

fn refused(socket: &Path) -> ControlError {
    match ControlServer::start(socket, Arc::new(Fake::default())) {
        Ok(server) => panic!("{} started: {server:?}", socket.display()),
        Err(e) => e,
    }
}

/// One connection, reading answers line by line.
struct Client {
    reader: BufReader<UnixStream>,
}

impl Client {
    fn connect(socket: &Path) -> Client {
        let stream = UnixStream::connect(socket).expect("connect");
        stream.set_read_timeout(Some(PATIENCE)).expect("timeout");
        Client {
            reader: BufReader::new(stream),
        }
    }

    fn send(&mut self, line: &str) {
        let stream = self.reader.get_mut();
        stream
            .write_all(format!("{line}\n").as_bytes())
            .expect("send");
    }

    /// The next line (without `\n`), or `None` at the end of the stream (or when the
    /// server reset it after the last line).
    fn line(&mut self) -> Option<String> {
        let mut line = String::new();
        match self.reader.read_line(&mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(line.strip_suffix('\n').expect("a whole line").to_string()),
        }
    }

    /// The next answer's lines, its last `ok` or `error: ...`.
    fn answer(&mut self) -> Vec<String> {
        let mut lines = Vec::new();
        loop {
            let line = self
                .line()
                .unwrap_or_else(|| panic!("ended within {lines:?}"));
            let last = line == "ok" || line.starts_with("error: ");
            lines.push(line);
            if last {
                return lines;
            }
        }
    }

    fn ask(&mut self, line: &str) -> Vec<String> {
        self.send(line);
        self.answer()
    }
}

fn with_ok(lines: &[&str]) -> Vec<String> {
    lines.iter().chain(&["ok"]).map(|s| s.to_string()).collect()
}

// ---------------------------------------------------------------------------------
// Where it listens.

#[test]
fn a_missing_directory_is_created_0700_and_the_socket_is_0600() {
    let scratch = Scratch::new();
    let dir = scratch.path("dial");
    let socket = dir.join("s");
    let (server, _) = start(&socket);
    assert_eq!(server.path(), socket);
    let metadata = fs::symlink_metadata(&dir).unwrap();
    assert!(metadata.is_dir());
    assert_eq!(metadata.mode() & 0o7777, 0o700);
    assert_eq!(metadata.uid(), effective_uid());
    let metadata = fs::symlink_metadata(&socket).unwrap();
    assert!(metadata.file_type().is_socket());
    assert_eq!(metadata.mode() & 0o7777, 0o600);
    assert_eq!(Client::connect(&socket).ask("state"), with_ok(&STATE));
}

#[test]
fn an_existing_private_directory_is_used_as_it_is() {
    let scratch = Scratch::new();
    let dir = scratch.dir("dial", 0o700);
    let socket = dir.join("s");
    let (_server, _) = start(&socket);
    assert_eq!(mode_of(&dir), 0o700);
    assert_eq!(mode_of(&socket), 0o600);
}

#[test]
fn a_directory_whose_parent_is_missing_is_not_created() {
    let scratch = Scratch::new();
    let dir = scratch.path("missing/dial");
    let e = refused(&dir.join("s"));
    assert!(
        matches!(&e, ControlError::CreateDirectory { path, .. } if *path == dir),
        "{e:?}"
    );
    let message = e.to_string();
    assert!(message.contains(&dir.display().to_string()), "{message}");
    assert!(message.contains("its parent must exist"), "{message}");
    assert!(!scratch.path("missing").exists());
}

#[test]
fn directories_open_to_others_are_refused() {
    let scratch = Scratch::new();
    for (mode, what) in [
        (0o777, "world-writable"),
        (0o1777, "world-writable"),
        (0o750, "open to its group"),
        (0o705, "open to others"),
        (0o770, "group-writable"),
        (0o701, "open to others"),
        (0o710, "open to its group"),
    ] {
        let dir = scratch.dir(&format!("d{mode:o}"), mode);
        assert_eq!(mode_of(&dir), mode);
        let socket = dir.join("s");
        let e = refused(&socket);
        match &e {
            ControlError::OpenToOthers {
                path,
                mode: m,
                what: w,
            } => assert_eq!((path, *m, *w), (&dir, mode, what)),
            other => panic!("{mode:o}: {other:?}"),
        }
        let message = e.to_string();
        for part in [
            dir.display().to_string(),
            what.to_string(),
            format!("mode {mode:04o}"),
            "only its owner may have access".to_string(),
        ] {
            assert!(message.contains(&part), "{mode:o}: {message} lacks {part}");
        }
        assert!(!message.contains('\n'));
        // Nothing was made there, and the mode is left alone.
        assert!(fs::symlink_metadata(&socket).is_err(), "{mode:o}");
        assert_eq!(mode_of(&dir), mode);
    }
}

#[test]
fn a_symlink_to_a_good_directory_is_refused() {
    let scratch = Scratch::new();
    let good = scratch.dir("good", 0o700);
    let link = scratch.path("link");
    std::os::unix::fs::symlink(&good, &link).unwrap();
    let e = refused(&link.join("s"));
    assert!(
        matches!(&e, ControlError::Symlink { path } if *path == link),
        "{e:?}"
    );
    let message = e.to_string();
    assert!(message.contains(&link.display().to_string()), "{message}");
    assert!(message.contains("symbolic link"), "{message}");
    assert!(fs::read_dir(&good).unwrap().next().is_none());
    // The directory itself is fine.
    let (_server, _) = start(&good.join("s"));
}

#[test]
fn a_file_where_the_directory_should_be_is_refused() {
    let scratch = Scratch::new();
    let file = scratch.path("file");
    fs::write(&file, "x").unwrap();
    let e = refused(&file.join("s"));
    assert!(
        matches!(&e, ControlError::NotADirectory { path } if *path == file),
        "{e:?}"
    );
    assert!(e.to_string().contains("is not a directory"), "{e}");
}

#[test]
fn a_directory_of_another_user_is_refused() {
    if effective_uid() != 0 {
        eprintln!("skipped: giving a directory to another user needs root");
        return;
    }
    let scratch = Scratch::new();
    let dir = scratch.dir("theirs", 0o700);
    std::os::unix::fs::chown(&dir, Some(NOBODY), Some(NOBODY)).unwrap();
    let e = refused(&dir.join("s"));
    match &e {
        ControlError::WrongOwner {
            path,
            owner,
            expected,
        } => assert_eq!((path, *owner, *expected), (&dir, NOBODY, 0)),
        other => panic!("{other:?}"),
    }
    let message = e.to_string();
    assert!(message.contains(&dir.display().to_string()), "{message}");
    assert!(message.contains("owned by uid 65534, not 0"), "{message}");
}

#[test]
fn a_path_without_a_file_name_is_refused() {
    let scratch = Scratch::new();
    let dir = scratch.dir("dial", 0o700);
    for socket in [
        dir.join(".."),
        PathBuf::from(format!("{}/", dir.join("s").display())),
        PathBuf::new(),
    ] {
        let e = refused(&socket);
        assert!(
            matches!(&e, ControlError::NoFileName { path } if *path == socket),
            "{e:?}"
        );
        assert!(e.to_string().contains("names no file"), "{e}");
    }
    assert!(fs::read_dir(&dir).unwrap().next().is_none());
}

#[test]
fn anything_but_a_socket_at_the_path_is_left_alone() {
    let scratch = Scratch::new();
    let dir = scratch.dir("dial", 0o700);
    let file = dir.join("file");
    fs::write(&file, "keep me").unwrap();
    let subdir = dir.join("subdir");
    fs::create_dir(&subdir).unwrap();
    // A symbolic link to a live socket elsewhere is not a socket of its own.
    let elsewhere = scratch.dir("elsewhere", 0o700).join("s");
    let (_live, _) = start(&elsewhere);
    let link = dir.join("link");
    std::os::unix::fs::symlink(&elsewhere, &link).unwrap();
    for path in [&file, &subdir, &link] {
        let e = refused(path);
        assert!(
            matches!(&e, ControlError::Occupied { path: p } if p == path),
            "{e:?}"
        );
        let message = e.to_string();
        assert!(message.contains(&path.display().to_string()), "{message}");
        assert!(message.contains("is not a socket"), "{message}");
    }
    assert_eq!(fs::read_to_string(&file).unwrap(), "keep me");
    assert!(subdir.is_dir());
    assert!(
        fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

#[test]
fn a_stale_socket_is_replaced() {
    let scratch = Scratch::new();
    let dir = scratch.dir("dial", 0o700);
    let socket = dir.join("s");
    drop(UnixListener::bind(&socket).unwrap());
    assert!(
        fs::symlink_metadata(&socket)
            .unwrap()
            .file_type()
            .is_socket()
    );
    let (_server, _) = start(&socket);
    assert_eq!(mode_of(&socket), 0o600);
    assert_eq!(Client::connect(&socket).ask("state"), with_ok(&STATE));
}

#[test]
fn a_path_where_something_listens_is_in_use() {
    let scratch = Scratch::new();
    let dir = scratch.dir("dial", 0o700);
    let socket = dir.join("s");
    let (_server, fake) = start(&socket);
    let e = refused(&socket);
    assert!(
        matches!(&e, ControlError::InUse { path } if *path == socket),
        "{e:?}"
    );
    let message = e.to_string();
    assert!(message.contains(&socket.display().to_string()), "{message}");
    assert!(message.contains("in use"), "{message}");
    // The first server goes on.
    assert_eq!(Client::connect(&socket).ask("state"), with_ok(&STATE));
    assert_eq!(fake.calls(), [Command::State]);
    // A listener that is not a dial's counts too.
    let other = dir.join("other");
    let _listener = UnixListener::bind(&other).unwrap();
    assert!(matches!(refused(&other), ControlError::InUse { .. }));
}

// ---------------------------------------------------------------------------------
// What a connection gets.

#[test]
fn state_and_help_are_answered_on_one_connection() {
    let scratch = Scratch::new();
    let socket = scratch.path("dial").join("s");
    let (_server, fake) = start(&socket);
    let mut client = Client::connect(&socket);
    assert_eq!(client.ask("state"), with_ok(&STATE));
    let help = client.ask("help");
    let mut want = help_lines();
    want.push("ok".into());
    assert_eq!(help, want);
    // The dial's refusal, a line that does not parse, an empty line.
    assert_eq!(
        client.ask("revert App.Orders::*"),
        ["error: no loaded method matches revert App.Orders::*"]
    );
    let bogus = client.ask("rejit App.Orders::Place");
    assert_eq!(bogus.len(), 1);
    assert!(
        bogus[0].starts_with("error: unknown command \"rejit\""),
        "{bogus:?}"
    );
    assert_eq!(client.ask("").len(), 1);
    assert_eq!(client.ask("state\r"), with_ok(&STATE));
    assert_eq!(
        fake.calls(),
        [
            Command::State,
            Command::Help,
            Command::Revert {
                selector: crate::selector::Selector::every_method("App.Orders")
            },
            Command::State
        ]
    );
}

#[test]
fn a_panicking_dial_is_an_internal_error_and_the_connection_goes_on() {
    let scratch = Scratch::new();
    let socket = scratch.path("dial").join("s");
    let (_server, fake) = start(&socket);
    let mut client = Client::connect(&socket);
    let answer = client.ask("revert Boom::*");
    assert_eq!(answer.len(), 1, "{answer:?}");
    assert!(
        answer[0].starts_with("error: internal: the dial panicked while carrying out `revert`: "),
        "{answer:?}"
    );
    assert!(answer[0].ends_with("boom at Boom::*"), "{answer:?}");
    assert_eq!(client.ask("state"), with_ok(&STATE));
    // Another connection too.
    assert_eq!(Client::connect(&socket).ask("state"), with_ok(&STATE));
    assert_eq!(fake.calls().len(), 3);
}

#[test]
fn a_peer_of_another_uid_is_refused_and_the_dial_never_called() {
    let own = effective_uid();
    let peer = if own == NOBODY { NOBODY - 1 } else { NOBODY };
    let (client, server) = UnixStream::pair().unwrap();
    client.set_read_timeout(Some(PATIENCE)).unwrap();
    (&client).write_all(b"state\nhelp\n").unwrap();
    let fake = Arc::new(Fake::default());
    let serving = {
        let fake = fake.clone();
        thread::spawn(move || serve_connection(&server, peer, own, &*fake))
    };
    assert_eq!(serving.join().unwrap().unwrap(), Ended::Refused);
    let mut client = Client {
        reader: BufReader::new(client),
    };
    assert_eq!(
        client.line().as_deref(),
        Some(
            format!("error: refused: connection from uid {peer}; only uid {own} may use this dial")
                .as_str()
        )
    );
    assert_eq!(client.line(), None);
    assert!(fake.calls().is_empty());
}

/// The peer's side of [`a_peer_of_another_uid_is_refused_by_the_server`]: run by that
/// test as another user (in a process of its own); does nothing otherwise.
#[test]
#[ignore = "run by a_peer_of_another_uid_is_refused_by_the_server, as another user"]
fn peer_of_another_uid() {
    let Some(socket) = std::env::var_os(PEER_SOCKET) else {
        return;
    };
    let mut client = Client::connect(Path::new(&socket));
    client.send("state");
    while let Some(line) = client.line() {
        println!("peer read: {line}");
    }
    println!("peer read: the end");
}

/// The variable that gives [`peer_of_another_uid`] the socket's path.
const PEER_SOCKET: &str = "ILREWRITE_TEST_DIAL_PEER_SOCKET";

/// Even when the directory and the socket are opened to everyone after the dial
/// started, another user's connection is refused (`SO_PEERCRED`), drained and closed.
#[test]
fn a_peer_of_another_uid_is_refused_by_the_server() {
    use std::os::unix::process::CommandExt;
    if effective_uid() != 0 {
        eprintln!("skipped: running a peer as another user needs root");
        return;
    }
    let scratch = Scratch::new();
    let dir = scratch.path("dial");
    let socket = dir.join("s");
    let (_server, fake) = start(&socket);
    fs::set_permissions(&scratch.root, fs::Permissions::from_mode(0o711)).unwrap();
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o711)).unwrap();
    fs::set_permissions(&socket, fs::Permissions::from_mode(0o666)).unwrap();
    let exe = std::env::current_exe().unwrap();
    let output = std::process::Command::new(&exe)
        .args([
            "--exact",
            "clr::dial::server_tests::peer_of_another_uid",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(PEER_SOCKET, &socket)
        .uid(NOBODY)
        .gid(NOBODY)
        .output();
    let output = match output {
        Ok(output) => output,
        Err(e) => {
            eprintln!("skipped: cannot run {} as uid {NOBODY}: {e}", exe.display());
            return;
        }
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    if stderr.contains("Permission denied") && !stdout.contains("peer read") {
        eprintln!("skipped: uid {NOBODY} cannot reach the scratch directory: {stderr}");
        return;
    }
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let read: Vec<&str> = stdout
        .lines()
        // The harness writes `test NAME ... ` before the test's own output.
        .filter_map(|l| l.split_once("peer read: ").map(|(_, read)| read))
        .collect();
    let refusal =
        format!("error: refused: connection from uid {NOBODY}; only uid 0 may use this dial");
    assert_eq!(read, [refusal.as_str(), "the end"], "{stdout}\n{stderr}");
    assert!(fake.calls().is_empty());
    // The process's own user is still served.
    assert_eq!(Client::connect(&socket).ask("state"), with_ok(&STATE));
}

// ---------------------------------------------------------------------------------
// Stopping, and connections at once.

#[test]
fn dropping_the_server_closes_connections_and_frees_the_path() {
    let scratch = Scratch::new();
    let socket = scratch.path("dial").join("s");
    let (server, _) = start(&socket);
    let mut client = Client::connect(&socket);
    assert_eq!(client.ask("state"), with_ok(&STATE));
    let dropped = Instant::now();
    drop(server);
    assert!(dropped.elapsed() < PATIENCE);
    assert!(
        fs::symlink_metadata(&socket).is_err(),
        "the socket file is left"
    );
    assert_eq!(client.line(), None, "the open connection is closed");
    assert!(UnixStream::connect(&socket).is_err());
    // A new server on the same path.
    let (_again, fake) = start(&socket);
    assert_eq!(Client::connect(&socket).ask("state"), with_ok(&STATE));
    assert_eq!(fake.calls(), [Command::State]);
}

#[test]
fn dropping_the_server_leaves_a_socket_that_is_not_its_own() {
    let scratch = Scratch::new();
    let socket = scratch.path("dial").join("s");
    let (server, _) = start(&socket);
    fs::remove_file(&socket).unwrap();
    let _other = UnixListener::bind(&socket).unwrap();
    drop(server);
    assert!(
        fs::symlink_metadata(&socket)
            .unwrap()
            .file_type()
            .is_socket()
    );
}

#[test]
fn the_connection_past_the_limit_is_busy() {
    let scratch = Scratch::new();
    let socket = scratch.path("dial").join("s");
    let (_server, _) = start(&socket);
    assert_eq!(MAX_CONNECTIONS, 16);
    // Each served (so open on the server's side) before the next connects.
    let mut open: Vec<Client> = (0..MAX_CONNECTIONS)
        .map(|_| {
            let mut client = Client::connect(&socket);
            assert_eq!(client.ask("state"), with_ok(&STATE));
            client
        })
        .collect();
    let mut extra = Client::connect(&socket);
    let busy = extra.line().expect("an answer");
    assert_eq!(
        busy,
        format!("error: busy: {MAX_CONNECTIONS} connections are open; try again later")
    );
    assert_eq!(extra.line(), None);
    // The others are still served.
    for client in &mut open {
        assert_eq!(client.ask("state"), with_ok(&STATE));
    }
    // One closes: a new one is served (once the server saw it close).
    drop(open.pop());
    let deadline = Instant::now() + PATIENCE;
    loop {
        let mut client = Client::connect(&socket);
        // The server may have answered busy and closed before the line is written: the
        // write then fails (EPIPE), and the busy line is still there to read.
        let _ = client.reader.get_mut().write_all(b"state\n");
        let first = client.line().expect("an answer");
        if first.starts_with("error: busy: ") {
            assert!(Instant::now() < deadline, "still busy");
            thread::sleep(Duration::from_millis(20));
            continue;
        }
        assert_eq!(first, STATE[0]);
        break;
    }
}
