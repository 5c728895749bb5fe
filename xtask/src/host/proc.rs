//! Host commands with a time limit. Every long host step (make, git am, tar,
//! apt, guest compiles) runs through here: a step that hangs is killed with
//! its whole process group after a generous bound, and the error names the
//! step, the command and the bound. SIGINT/SIGTERM stop it too
//! (host::signals). A quick query (a tool's version, a package's status)
//! is `query`, bounded too; xshell's `cmd!` serves the set-up's dpkg and
//! apt-cache queries and the compiler's version. QEMU runs from
//! `boot::qemu`, bounded by its cell's budget.

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::util::tail;
use wait_timeout::ChildExt;

/// Resolves `bin` on PATH (or as given when it has a slash).
pub fn which(bin: &str) -> Option<std::path::PathBuf> {
    if bin.contains('/') {
        let p = std::path::Path::new(bin);
        return p.is_file().then(|| p.to_path_buf());
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(bin))
        .find(|p| p.is_file())
}

/// Bounds for host steps. Generous: a bound exists to end a hang, not to
/// judge speed. `KMATRIX_STEP_TIMEOUT_SCALE` (a float) scales them all, for
/// slow hosts and for the tests that prove a bound fires.
pub mod limit {
    use std::time::Duration;
    pub const MAKE_KERNEL: u64 = 3 * 3600;
    pub const MAKE_CONFIG: u64 = 600;
    pub const HEADERS: u64 = 900;
    pub const GIT: u64 = 900;
    pub const TAR: u64 = 1800;
    pub const APT: u64 = 3600;
    pub const GUEST_CC: u64 = 900;
    /// pip and npm installs of the test suite's tools.
    pub const TOOLS: u64 = 900;
    /// A quick query: a tool's version, dpkg's status of a package.
    pub const QUERY: u64 = 60;

    pub fn scaled(secs: u64) -> Duration {
        Duration::from_secs_f64((secs as f64 * step_timeout_scale()).max(0.1))
    }

    /// The scale of every bound, set once from the run-time policy
    /// (`KMATRIX_STEP_TIMEOUT_SCALE`) before any step runs; 1 until then.
    static SCALE: std::sync::OnceLock<f64> = std::sync::OnceLock::new();

    /// Sets the scale (the first call wins: it is decided once, by the CLI).
    pub fn set_scale(f: f64) {
        let _ = SCALE.set(f);
    }

    fn step_timeout_scale() -> f64 {
        SCALE.get().copied().unwrap_or(1.0)
    }
}

#[derive(Debug)]
pub struct Finished {
    /// Exit code, when the process exited (not killed by a signal).
    pub code: Option<i32>,
    pub signal: Option<i32>,
    pub timed_out: bool,
    pub elapsed: Duration,
    pub stdout: String,
    pub stderr: String,
}

impl Finished {
    pub fn success(&self) -> bool {
        self.code == Some(0) && !self.timed_out
    }

    /// "exit status 2", "killed by signal 6", "timed out after 900 s".
    pub fn describe(&self) -> String {
        if self.timed_out {
            format!(
                "timed out after {:.0} s and was killed",
                self.elapsed.as_secs_f64()
            )
        } else if let Some(s) = self.signal {
            format!("killed by signal {s}")
        } else {
            format!("exit status {}", self.code.unwrap_or(-1))
        }
    }
}

/// The command as a shell would show it (program and arguments).
pub fn show(cmd: &Command) -> String {
    std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|s| s.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Runs `cmd` to completion or `timeout`, streaming stdout lines to
/// `on_line`; stderr is collected (up to 4 MiB). The child gets its own
/// process group, killed whole on timeout or interruption.
pub fn stream(
    mut cmd: Command,
    timeout: Duration,
    mut on_line: impl FnMut(&str) + Send,
) -> Result<Finished> {
    let what = show(&cmd);
    let start = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .with_context(|| format!("could not start `{what}`"))?;
    crate::host::signals::register_child(child.id());
    let stdout = child.stdout.take().unwrap();
    let stderr = child.stderr.take().unwrap();
    let r = std::thread::scope(|s| {
        let err = s.spawn(move || {
            let mut buf = Vec::new();
            let mut rd = stderr;
            let _ = (&mut rd).take(4 << 20).read_to_end(&mut buf);
            // Keep draining so the child never blocks on a full pipe.
            let _ = std::io::copy(&mut rd, &mut std::io::sink());
            String::from_utf8_lossy(&buf).into_owned()
        });
        let out = s.spawn(move || {
            let mut all = String::new();
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                on_line(&line);
                if all.len() < (4 << 20) {
                    all.push_str(&line);
                    all.push('\n');
                }
            }
            all
        });
        let (status, timed_out) = wait_or_kill(&mut child, timeout);
        let stdout = out.join().unwrap_or_default();
        let stderr = err.join().unwrap_or_default();
        Finished {
            code: status.and_then(|s| s.code()),
            signal: status.and_then(|s| s.signal()),
            timed_out,
            elapsed: start.elapsed(),
            stdout,
            stderr,
        }
    });
    crate::host::signals::unregister_child(child.id());
    Ok(r)
}

/// SIGKILL to the process group `pid` leads (a child spawned with
/// `process_group(0)`); one that is gone already is no error.
pub fn kill_group(pid: u32) {
    if let Ok(pid) = i32::try_from(pid) {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

/// Waits for `child` up to `timeout`; past it (or when waiting fails),
/// kills its process group and the child itself. Returns its status, if
/// any, and whether it was killed.
pub fn wait_or_kill(child: &mut Child, timeout: Duration) -> (Option<ExitStatus>, bool) {
    match child.wait_timeout(timeout) {
        Ok(Some(st)) => (Some(st), false),
        Ok(None) | Err(_) => {
            kill_group(child.id());
            let _ = child.kill();
            (child.wait().ok(), true)
        }
    }
}

/// `stream` without a line callback.
pub fn run(cmd: Command, timeout: Duration) -> Result<Finished> {
    stream(cmd, timeout, |_| {})
}

/// A quick query (`limit::QUERY`): its output, or None when it could not
/// start or hung.
pub fn query(cmd: Command) -> Option<Finished> {
    run(cmd, limit::scaled(limit::QUERY))
        .ok()
        .filter(|f| !f.timed_out)
}

/// Runs `cmd` within `timeout`, Err naming `step` unless it succeeds.
pub fn checked(step: &str, cmd: Command, timeout: Duration) -> Result<Finished> {
    let what = show(&cmd);
    let f = run(cmd, timeout)?;
    if !f.success() {
        anyhow::bail!(
            "{step}: `{what}` {}\n{}\n{}",
            f.describe(),
            tail(&f.stderr, 20),
            tail(&f.stdout, 5)
        );
    }
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut c = Command::new("sh");
        c.args(["-c", script]);
        c
    }

    #[test]
    fn a_hanging_step_is_killed_with_its_children_and_named() {
        let t = Instant::now();
        // The grandchild holds stdout open: only killing the group ends it.
        let e = checked(
            "make bzImage",
            sh("echo building; (sleep 60; echo late) & sleep 60"),
            Duration::from_millis(300),
        )
        .unwrap_err()
        .to_string();
        assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
        assert!(
            e.starts_with("make bzImage: `sh -c") && e.contains("timed out after"),
            "{e}"
        );
        assert!(e.contains("building"), "{e}");
    }

    #[test]
    fn exit_status_signal_and_streamed_lines() {
        let mut seen = Vec::new();
        let f = stream(
            sh("echo a; echo b; echo oops >&2; exit 3"),
            Duration::from_secs(10),
            |l| seen.push(l.to_string()),
        )
        .unwrap();
        assert_eq!((f.code, f.signal, f.timed_out), (Some(3), None, false));
        assert_eq!(seen, ["a", "b"]);
        assert_eq!(f.stderr, "oops\n");
        assert_eq!(f.describe(), "exit status 3");
        let f = run(sh("kill -ABRT $$"), Duration::from_secs(10)).unwrap();
        assert_eq!((f.code, f.signal), (None, Some(6)));
        assert_eq!(f.describe(), "killed by signal 6");
        assert!(!f.success());
    }
}
