//! What results.json says about the host a run ran on.

use crate::schema::Host;

/// Hostname, CPUs this process may use, kernel release, QEMU's version.
pub fn host_info() -> Host {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .unwrap_or_default()
            .trim()
            .to_string()
    };
    let mut version = std::process::Command::new("qemu-system-x86_64");
    version.arg("--version");
    let qemu = crate::host::proc::query(version)
        .map(|f| f.stdout.lines().next().unwrap_or("").to_string())
        .unwrap_or_default();
    Host {
        hostname: read("/proc/sys/kernel/hostname"),
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        kernel: read("/proc/sys/kernel/osrelease"),
        qemu,
    }
}
