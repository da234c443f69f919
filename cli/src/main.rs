//! `ilrewrite`: the crate's command-line tool.
//!
//! ```text
//! cargo run --release -p ilrewrite-cli -- roundtrip [PATH...]
//! cargo run --release -p ilrewrite-cli -- disasm [ASSEMBLY] [METHOD]
//! cargo run --release -p ilrewrite-cli -- dial SOCKET [COMMAND...]
//! cargo run --release -p ilrewrite-cli -- ps
//! cargo run --release -p ilrewrite-cli -- attach PID --profiler PATH --clsid GUID [--config FILE] [--dial SOCKET]
//! ```
//!
//! One module per subcommand, each with its arguments (`Args`, a clap `Args` derive)
//! and `run(Args) -> Status`; [`Command`] lists them and `main` dispatches. `ilrewrite
//! --help` and `ilrewrite SUBCOMMAND --help` say what each does and what its exit status
//! means ([`Status`]).

use clap::{CommandFactory, Parser, Subcommand};
use std::process::ExitCode;

mod attach;
mod dial;
mod disasm;
mod ps;
mod roundtrip;

/// The exit statuses, as `ilrewrite --help` shows them (kept next to [`Status`]).
const EXIT_STATUS: &str = "\
Exit status:
  0  done: every body round-tripped, methods were listed, every dial answer ended in `ok`
  1  a failure found: a body or LocalVarSig that does not round-trip, a path that does
     not exist or a file that is not a .NET assembly, no assembly found, no method
     matched, a dial answer `error: ...` (a refused or busy connection included)
  2  bad arguments (the usage is printed)
  3  dial: cannot connect to the socket, or the connection failed or ended before an
     answer's final line; attach: the process cannot be reached; ps: the temporary
     directory cannot be read";

/// The exit statuses of `roundtrip`, as its `--help` shows them.
const ROUNDTRIP_STATUS: &str = "\
Exit status:
  0  every body and LocalVarSig round-tripped byte-identical
  1  one did not (listed as FAILED), a PATH does not exist or names a file that is not
     a .NET assembly, or no assembly was found
  2  bad arguments";

/// The exit statuses of `disasm`, as its `--help` shows them.
const DISASM_STATUS: &str = "\
Exit status:
  0  methods were listed
  1  no method matched, or the assembly could not be read
  2  bad arguments (a METHOD that cannot be parsed included)";

/// The exit statuses of `dial`, as its `--help` shows them.
const DIAL_STATUS: &str = "\
Exit status:
  0  every answer ended in `ok`
  1  an answer ended in `error: ...` (a refused or busy connection included)
  2  bad arguments (a COMMAND holding a newline included)
  3  cannot connect to SOCKET, or the connection (or standard input) failed, or the
     connection ended before an answer's final line";

/// The exit statuses of `ps`, as its `--help` shows them.
const PS_STATUS: &str = "\
Exit status:
  0  the list was made (empty or not)
  3  the temporary directory (where the runtimes' sockets are) cannot be read";

/// The exit statuses of `attach`, as its `--help` shows them.
const ATTACH_STATUS: &str = "\
Exit status:
  0  the profiler attached
  1  the runtime or the profiler refused (the profiler says why on the process's stderr)
  2  bad arguments
  3  the process cannot be reached: no such process, not .NET, another user's, no answer";

/// How a run ends: its exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Status {
    /// Done, nothing wrong.
    Ok = 0,
    /// A failure found (what the subcommand checks or looks for), or an input that
    /// cannot be read.
    Failure = 1,
    /// Bad arguments.
    Usage = 2,
    /// The process at the other end could not be reached, or the connection broke.
    Unreachable = 3,
}

impl From<Status> for ExitCode {
    fn from(status: Status) -> ExitCode {
        ExitCode::from(status as u8)
    }
}

/// Decode, edit, analyse and re-encode .NET IL; talk to a running ilrewrite profiler.
#[derive(Debug, Parser)]
#[command(name = "ilrewrite", version, after_help = EXIT_STATUS)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
enum Command {
    /// Decode and re-encode every method body of assemblies and report the counts
    #[command(after_help = ROUNDTRIP_STATUS)]
    Roundtrip(roundtrip::Args),
    /// Print methods of a .NET assembly in ilasm syntax
    #[command(after_help = DISASM_STATUS)]
    Disasm(disasm::Args),
    /// Send commands to a running profiler's live dial (a Unix socket)
    #[command(after_help = DIAL_STATUS)]
    Dial(dial::Args),
    /// List the .NET processes of this user (pid, runtime version, command line)
    #[command(after_help = PS_STATUS)]
    Ps(ps::Args),
    /// Ask a running .NET process to load a profiler now
    #[command(after_help = ATTACH_STATUS)]
    Attach(attach::Args),
}

/// Prints `message` as clap prints a usage error of `subcommand` (with its usage
/// line) and returns [`Status::Usage`].
pub(crate) fn usage_error(subcommand: &str, message: impl std::fmt::Display) -> Status {
    let mut cli = Cli::command();
    cli.build();
    let error = match cli.find_subcommand_mut(subcommand) {
        Some(sub) => sub.error(clap::error::ErrorKind::InvalidValue, message),
        None => cli.error(clap::error::ErrorKind::InvalidValue, message),
    };
    // Only fails when standard error is gone; the status says it all then.
    let _ = error.print();
    Status::Usage
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let status = match cli.command {
        Command::Roundtrip(args) => roundtrip::run(args),
        Command::Disasm(args) => disasm::run(args),
        Command::Dial(args) => dial::run(args),
        Command::Ps(args) => ps::run(args),
        Command::Attach(args) => attach::run(args),
    };
    status.into()
}
