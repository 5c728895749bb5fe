//! Ctrl-C / SIGTERM: stop QEMU and make children, keep what finished.
//!
//! The signal handler (signal-hook's) only sets the interrupted flag and
//! wakes a watcher thread; the watcher sends SIGTERM to every registered
//! child and its process group. The runner checks `interrupted()` between
//! phases and saves results.json before exiting; the commands that read
//! runs check it between comparisons and reports (and the statistics
//! inside each bootstrap) and write nothing. The first SIGINT/SIGTERM does
//! not end the process by itself; a second one (Ctrl-C again: it is not
//! stopping fast enough) stops the children as well, then exits at once
//! with 128 + the signal's number. Files are only ever replaced by a
//! rename, so even then none is left half-written.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;
use signal_hook::consts::{SIGINT, SIGTERM};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
/// Signals received so far (the watcher counts them).
static RECEIVED: AtomicUsize = AtomicUsize::new(0);
static CHILDREN: Children = Children::new();

/// The children to stop on a signal: pids of processes that lead their own
/// process group (make's compilers, QEMU's helpers are in it too).
struct Children(Mutex<BTreeSet<u32>>);

impl Children {
    const fn new() -> Children {
        Children(Mutex::new(BTreeSet::new()))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeSet<u32>> {
        // A panic while holding the lock leaves a set that is still whole.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn add(&self, pid: u32) {
        self.lock().insert(pid);
    }

    fn remove(&self, pid: u32) {
        self.lock().remove(&pid);
    }

    /// SIGTERM to each child's process group and to the child itself (in
    /// case it left the group). A child that is gone already is no error.
    fn terminate(&self) {
        for &pid in self.lock().iter() {
            let Ok(raw) = i32::try_from(pid) else {
                continue;
            };
            let pid = Pid::from_raw(raw);
            let _ = killpg(pid, Signal::SIGTERM);
            let _ = kill(pid, Signal::SIGTERM);
        }
    }
}

/// Installs the SIGINT/SIGTERM handling. Without it (it failed, or was
/// never called) the signals keep their default action.
pub fn install() {
    // The flag first: whoever sees a child die of our SIGTERM also sees
    // `interrupted()`. signal-hook runs a signal's actions in the order
    // they were registered.
    for sig in [SIGINT, SIGTERM] {
        if signal_hook::flag::register(sig, &INTERRUPTED).is_err() {
            return;
        }
    }
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) else {
        return;
    };
    let _ = std::thread::Builder::new()
        .name("kmatrix-signals".into())
        .spawn(move || {
            for sig in signals.forever() {
                CHILDREN.terminate();
                if RECEIVED.fetch_add(1, Ordering::SeqCst) > 0 {
                    eprintln!("interrupted again: exiting now");
                    std::process::exit(128 + sig);
                }
            }
        });
}

pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// `pid` (the leader of its own process group) is stopped on a signal
/// until `unregister_child`.
pub fn register_child(pid: u32) {
    CHILDREN.add(pid);
}

pub fn unregister_child(pid: u32) {
    CHILDREN.remove(pid);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    /// What the watcher does on a signal, on a local set (the process's
    /// own handlers are left alone): a registered child and the
    /// grandchild in its group get SIGTERM; an unregistered one does not.
    #[test]
    fn registered_children_and_their_groups_are_terminated() {
        let spawn = |script: &str| {
            Command::new("sh")
                .args(["-c", script])
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .process_group(0)
                .spawn()
                .unwrap()
        };
        // The grandchild prints its pid, then both sleep.
        let mut stopped = spawn("sleep 30 & echo $!; wait");
        let mut kept = spawn("sleep 30");
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(stopped.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        let grandchild: i32 = line.trim().parse().unwrap();
        let children = Children::new();
        children.add(stopped.id());
        children.add(kept.id());
        children.remove(kept.id());
        let t = Instant::now();
        children.terminate();
        assert_eq!(stopped.wait().unwrap().signal(), Some(15));
        assert!(t.elapsed() < Duration::from_secs(10));
        // The grandchild got it too: gone (or a zombie of init) at once.
        let alive = |pid: i32| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
                !s.rsplit(')')
                    .next()
                    .unwrap_or("")
                    .trim_start()
                    .starts_with('Z')
            })
        };
        while alive(grandchild) {
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "grandchild {grandchild} lives"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(
            kept.try_wait().unwrap(),
            None,
            "an unregistered child is left alone"
        );
        kept.kill().unwrap();
        kept.wait().unwrap();
    }

    /// The installed handling, end to end, in a copy of this test binary
    /// (a signal to this one would interrupt every other test): SIGTERM
    /// to the process sets `interrupted()`, ends a registered child's
    /// group, and does not end the process.
    #[test]
    fn a_signal_interrupts_and_stops_registered_children() {
        const INNER: &str = "KMATRIX_SIGNALS_INNER";
        let name = "host::signals::tests::a_signal_interrupts_and_stops_registered_children";
        if std::env::var_os(INNER).is_none() {
            let out = Command::new(std::env::current_exe().unwrap())
                .args(["--exact", name, "--nocapture", "--test-threads=1"])
                .env(INNER, "1")
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success() && text.contains("1 passed"), "{text}");
            return;
        }
        install();
        assert!(!interrupted());
        let mut child = Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap();
        register_child(child.id());
        kill(Pid::this(), Signal::SIGTERM).unwrap();
        let t = Instant::now();
        while child.try_wait().unwrap().is_none() {
            assert!(t.elapsed() < Duration::from_secs(10), "the child lives");
            std::thread::sleep(Duration::from_millis(10));
        }
        unregister_child(child.id());
        assert!(interrupted());
        assert_eq!(child.wait().unwrap().signal(), Some(15));
    }

    /// A second signal ends the process at once, with 128 + its number,
    /// whatever the process is busy with (in a copy of this test binary).
    #[test]
    fn a_second_signal_exits_at_once() {
        const INNER: &str = "KMATRIX_SIGNALS_TWICE";
        let name = "host::signals::tests::a_second_signal_exits_at_once";
        if std::env::var_os(INNER).is_none() {
            let t = Instant::now();
            let out = Command::new(std::env::current_exe().unwrap())
                .args(["--exact", name, "--nocapture", "--test-threads=1"])
                .env(INNER, "1")
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stderr).into_owned();
            assert_eq!(out.status.code(), Some(128 + 15), "{text}");
            assert!(text.contains("interrupted again: exiting now"), "{text}");
            assert!(t.elapsed() < Duration::from_secs(20));
            return;
        }
        install();
        kill(Pid::this(), Signal::SIGTERM).unwrap();
        let t = Instant::now();
        while !interrupted() {
            assert!(t.elapsed() < Duration::from_secs(10), "not interrupted");
            std::thread::sleep(Duration::from_millis(10));
        }
        // The watcher has seen the first once it has counted it.
        while RECEIVED.load(Ordering::SeqCst) == 0 {
            assert!(t.elapsed() < Duration::from_secs(10), "not counted");
            std::thread::sleep(Duration::from_millis(10));
        }
        kill(Pid::this(), Signal::SIGTERM).unwrap();
        // Busy, as a long computation is: only the exit ends this.
        let busy = Instant::now();
        while busy.elapsed() < Duration::from_secs(10) {
            std::hint::spin_loop();
        }
        panic!("still running 10 s after the second signal");
    }
}
