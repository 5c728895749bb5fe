//! One boot of a prepared cell: its guest (kernel, initramfs, the
//! config's CPUs and command line), QEMU run to its end with the console
//! streamed as progress and stopped at a line the kernel cannot go on
//! from, and what it saw classified (`analyze::classify`) into the cell's
//! tests, metrics and evidence. Also the accelerator's probe, which boots
//! the cell's own kernel, and `cargo xtask boot`'s interactive guest.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::analyze::classify::{self, BootInput, QemuEnd};
use crate::boot::accel::{Choice, Chooser};
use crate::boot::qemu;
use crate::build::guest::{self, Program};
use crate::host::events::{CellEvents, Phase};
use crate::kinds::kunit;
use crate::plan::arch::Accel;
use crate::plan::matrix::{Cell, Matrix, TestKind};
use crate::schema::{CellResult, Evidence, EvidenceKind, Outcome};

/// What every boot of a run shares: the matrix (CPUs, memory, command
/// line, test kinds), the harness's checkout (`rootfs/init`), how QEMU is
/// launched, extra kernel parameters and each boot's time budget.
pub struct BootEnv<'a> {
    pub matrix: &'a Matrix,
    pub repo_root: &'a Path,
    pub launch: qemu::Launch,
    /// Extra kernel command line (fault injection, debugging).
    pub extra_cmdline: &'a [String],
    pub budget: Duration,
}

/// A boot's product: the cell's result for this boot, why KVM failed
/// (QEMU died under KVM before the guest's first report: the caller
/// falls back to TCG), and how QEMU's threads were placed (pinned vCPUs,
/// busy CPUs).
pub struct Booted {
    pub result: CellResult,
    pub kvm_failed: Option<String>,
    pub placement: (usize, usize),
}

/// One boot to run: the cell's kernel and initramfs, its programs, the
/// accelerator, which boot of how many, and the host CPUs it may use
/// (None: every CPU xtask may use).
pub struct BootJob<'a> {
    pub image: &'a Path,
    pub initrd: &'a Path,
    pub programs: &'a [Program],
    pub accel: &'a Accel,
    pub boot: u32,
    pub boots: u32,
    pub cpus: Option<Vec<usize>>,
}

/// The metric declarations of the matrix, as test kinds see them.
struct Decls<'a>(&'a Matrix);

impl crate::kinds::MetricDecls for Decls<'_> {
    fn target_ci_pct(&self, metric: &str) -> Option<f64> {
        self.0.metric_decl(metric).and_then(|d| d.target_ci_pct)
    }
}

/// The guest of boot `boot` of `cell`: its arch, CPUs, memory, kernel
/// and initramfs, with the config's and the run's command line.
pub fn guest_for(
    env: &BootEnv,
    cell: &Cell,
    image: &Path,
    initrd: &Path,
    accel: Accel,
    results: Option<PathBuf>,
    boot: u32,
) -> qemu::Guest {
    qemu::Guest {
        arch: cell.arch,
        accel,
        smp: env.matrix.config_smp(&cell.config),
        memory_mb: env.matrix.run.memory_mb,
        kernel: image.to_path_buf(),
        initrd: initrd.to_path_buf(),
        extra_cmdline: env.matrix.config[&cell.config]
            .cmdline
            .iter()
            .chain(env.extra_cmdline)
            .cloned()
            .chain(kunit_filter(env.matrix, cell))
            .chain((boot > 1).then(|| format!("kmatrix.boot={boot}")))
            .collect(),
        results,
        interactive: false,
        gdb: None,
    }
}

/// `kunit.filter_glob` for a cell whose kernel has KUnit suites built in
/// (a KUnit test of its config): the glob of the KUnit tests it runs.
fn kunit_filter(m: &Matrix, cell: &Cell) -> Option<String> {
    let is_kunit = |t: &String| m.test[t].kind == TestKind::Kunit;
    if !m.config_tests(&cell.config).iter().any(is_kunit) {
        return None;
    }
    let globs: Vec<&str> = cell
        .tests
        .iter()
        .filter(|t| is_kunit(t))
        .map(|t| kunit::glob(&m.test[t]))
        .collect();
    kunit::cmdline(&globs)
}

/// The accelerator, which also decides the test timeouts' scale. A probe,
/// when one runs, boots this cell's kernel on an initramfs without tests.
pub fn choose_accel(
    env: &BootEnv,
    chooser: &Chooser,
    cell: &Cell,
    ev: &CellEvents,
    dir: &Path,
    image: &Path,
    busybox: &Path,
) -> Choice {
    let probe_initrd = dir.join("probe-initramfs.cpio.gz");
    let choice = chooser.choose(cell.arch, || {
        std::fs::write(
            &probe_initrd,
            guest::initramfs(env.repo_root, busybox, &[], 1)?,
        )?;
        Ok(guest_for(
            env,
            cell,
            image,
            &probe_initrd,
            Accel::Kvm,
            None,
            1,
        ))
    });
    let _ = std::fs::remove_file(&probe_initrd);
    ev.note(&format!(
        "accelerator: {} ({})",
        choice.accel.qemu_arg(),
        choice.why
    ));
    choice
}

/// Renames a boot's log aside (`console.log` -> `console.kvm.log`) so the
/// retry under TCG does not overwrite the evidence; returns the new path.
pub fn keep_as(p: &Path, tag: &str) -> PathBuf {
    let name = p.file_name().unwrap_or_default().to_string_lossy();
    let new = p.with_file_name(name.replacen(".log", &format!(".{tag}.log"), 1));
    let _ = std::fs::rename(p, &new);
    new
}

/// File name for boot `i` of a cell's logs: boot 1 keeps the plain name.
fn boot_file(name: &str, ext: &str, i: u32) -> String {
    if i == 1 {
        format!("{name}.{ext}")
    } else {
        format!("{name}.boot{i}.{ext}")
    }
}

/// One boot: `r` (the cell's result before any boot) with this boot's
/// outcome, tests, metrics and evidence.
pub fn boot_once(
    env: &BootEnv,
    cell: &Cell,
    ev: &CellEvents,
    dir: &Path,
    mut r: CellResult,
    job: BootJob,
) -> Booted {
    let (i, boots, accel) = (job.boot, job.boots, job.accel);
    ev.phase(
        Phase::Boot,
        &if boots > 1 {
            format!("{} ({i} of {boots})", accel.qemu_arg())
        } else {
            accel.qemu_arg()
        },
    );
    let console_log = dir.join(boot_file("console", "log", i));
    let results_log = dir.join(boot_file("results", "log", i));
    let _ = std::fs::remove_file(&results_log);
    let g = guest_for(
        env,
        cell,
        job.image,
        job.initrd,
        accel.clone(),
        Some(results_log.clone()),
        i,
    );
    let bin = qemu::binary(cell.arch, &env.launch);
    let args = qemu::args(&g);
    r.reproduce.qemu = Some(qemu::shell_line(&bin, &args));
    r.logs.console = Some(console_log.clone());
    r.logs.results = Some(results_log.clone());
    let t = Instant::now();
    let launch = qemu::Launch {
        cpus: job.cpus,
        ..env.launch.clone()
    };
    let run = run_qemu(&bin, &args, &console_log, env.budget, &launch, ev);
    r.timings.boot_s = t.elapsed().as_secs_f64();
    let (exit, beyond_repair) = match run {
        Ok(x) => x,
        Err(e) => {
            let line = qemu::shell_line(&bin, &args);
            r.outcome = Outcome::InfraError;
            r.evidence.push(Evidence::new(
                EvidenceKind::Qemu,
                format!("could not start {bin}"),
                format!("{e}\n$ {line}"),
                None,
            ));
            return Booted {
                result: r,
                kvm_failed: None,
                placement: (0, 0),
            };
        }
    };
    let console_text =
        String::from_utf8_lossy(&std::fs::read(&console_log).unwrap_or_default()).into_owned();
    let results_text =
        String::from_utf8_lossy(&std::fs::read(&results_log).unwrap_or_default()).into_owned();
    let end = QemuEnd {
        status: exit.status,
        signal: exit.signal,
        timed_out: exit.timed_out,
        elapsed_s: exit.elapsed.as_secs_f64(),
        console_truncated: exit.console_truncated,
        console_cap: env.launch.console_cap,
        stderr: exit.stderr.clone(),
        stopped_at: beyond_repair
            .filter(|_| exit.stopped)
            .map(|m| m.to_string()),
    };
    // The tests this boot runs: built, and not limited to earlier boots.
    let tests: Vec<(String, TestKind)> = job
        .programs
        .iter()
        .filter(|p| p.last_boot == 0 || i <= p.last_boot)
        .map(|p| (p.test.clone(), env.matrix.test[&p.test].kind))
        .collect();
    let c = classify::classify(&BootInput {
        tests: &tests,
        decls: &Decls(env.matrix),
        exit: &end,
        console: &console_text,
        results: &results_text,
        console_log: &console_log,
    });
    let kvm_failed = kvm_failure(accel, &c, &exit, &console_text);
    r.outcome = c.outcome;
    r.tests = c.tests;
    r.metrics = c.metrics;
    r.evidence.extend(c.evidence);
    r.timings.guest_s = c.guest_s;
    r.guest = c.guest;
    Booted {
        result: r,
        kvm_failed,
        placement: (exit.pinned_vcpus, exit.busy_cpus),
    }
}

/// Runs QEMU to its end, the console streamed as progress; QEMU is
/// stopped at a kernel line after which the kernel cannot go on (returned
/// with the exit) rather than left to the tests' timeouts.
fn run_qemu(
    bin: &str,
    args: &[String],
    console_log: &Path,
    budget: Duration,
    launch: &qemu::Launch,
    ev: &CellEvents,
) -> std::io::Result<(qemu::Exit, Option<&'static str>)> {
    let beyond_repair = std::sync::OnceLock::<&'static str>::new();
    let exit = qemu::run_until(bin, args, console_log, budget, launch, |line| {
        let l = crate::analyze::console::strip_timestamp(line);
        if let Some(rest) = l.strip_prefix("kmatrix: test ") {
            ev.phase(Phase::Tests, rest);
        } else {
            ev.detail(l);
        }
        let stop = crate::analyze::console::beyond_repair(l);
        if let Some(m) = stop {
            let _ = beyond_repair.set(m);
        }
        stop.is_some()
    })?;
    Ok((exit, beyond_repair.get().copied()))
}

/// Under KVM, QEMU dying (or hanging without a word) before the guest's
/// first report is KVM's failure on this host, not the kernel's: why, for
/// the fallback to TCG.
fn kvm_failure(
    accel: &Accel,
    c: &classify::Classified,
    exit: &qemu::Exit,
    console_text: &str,
) -> Option<String> {
    if *accel != Accel::Kvm || c.guest_reported {
        return None;
    }
    match &c.qemu_failure {
        Some(f) => Some(format!(
            "{f} under -accel kvm before the guest's first report: {}",
            first_line(&exit.stderr)
        )),
        None if exit.timed_out && console_text.trim().is_empty() => {
            Some("no console output at all under -accel kvm within the cell budget".into())
        }
        None => None,
    }
}

fn first_line(s: &str) -> String {
    s.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take(2)
        .collect::<Vec<_>>()
        .join(" | ")
}

/// `cargo xtask boot`: the cell's guest with a shell instead of its
/// tests, on the user's terminal.
/// `boot --gdb`: the gdbstub's port, and the image's vmlinux when the
/// cache has it.
pub struct Gdb {
    pub port: u16,
    pub vmlinux: Option<PathBuf>,
}

pub fn interactive(
    env: &BootEnv,
    cell: &Cell,
    ev: &CellEvents,
    image: &Path,
    initrd: &Path,
    accel: Accel,
    gdb: Option<&Gdb>,
) -> Result<()> {
    ev.note("booting; Ctrl-A X quits QEMU, `reboot -f` ends the guest");
    let mut g = guest_for(env, cell, image, initrd, accel, None, 1);
    g.extra_cmdline.push("kmatrix.shell".into());
    g.interactive = true;
    if let Some(d) = gdb {
        g.gdb = Some(d.port);
        // Debian's gdb reads x86_64 only; gdb-multiarch any arch.
        let gdb_bin = if cell.arch.name() == "x86_64" {
            "gdb"
        } else {
            "gdb-multiarch"
        };
        let file = match &d.vmlinux {
            Some(v) => format!("{} ", crate::util::shell_quote(&v.display().to_string())),
            None => String::new(),
        };
        ev.note(&format!(
            "halted for a debugger: {gdb_bin} {file}-ex 'target remote 127.0.0.1:{}' (then `continue`)",
            d.port
        ));
        if d.vmlinux.is_none() {
            ev.note("no vmlinux of this image in the cache: gdb will have no symbols (rebuild the cell to keep one)");
        }
    }
    let bin = qemu::binary(cell.arch, &env.launch);
    let args = qemu::args(&g);
    ev.note(&format!("$ {}", qemu::shell_line(&bin, &args)));
    let st = std::process::Command::new(&bin).args(&args).status()?;
    anyhow::ensure!(st.success(), "{bin} exited with {st}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boot_logs_are_numbered_and_kept_aside() {
        assert_eq!(boot_file("console", "log", 1), "console.log");
        assert_eq!(boot_file("console", "log", 4), "console.boot4.log");
        let d = crate::util::test_tmp().join(format!("kmatrix-keep-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("console.log"), "kvm boot").unwrap();
        let kept = keep_as(&d.join("console.log"), "kvm");
        assert_eq!(kept, d.join("console.kvm.log"));
        assert_eq!(std::fs::read_to_string(&kept).unwrap(), "kvm boot");
        assert!(!d.join("console.log").exists());
        std::fs::remove_dir_all(&d).unwrap();
    }
}
