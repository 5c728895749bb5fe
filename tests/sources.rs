//! Where a kernel and a series come from, other than a directory and a
//! local package: a kernel.org release and a pinned tarball URL (download,
//! checksum refusal, resume), a pinned Debian package fetched by apt into
//! the cache, a series as one mbox, and a series fetched with b4 from a
//! mailing-list archive. Every download is from a real HTTP server on
//! loopback (tests/support/serve.py); the tools are the real ones (apt,
//! gpg, b4, git am). Each check ends in `cargo xtask checkout`, which
//! prepares the base and applies the series exactly as a matrix run does.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("sources")
        .join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn sh(cmd: &mut Command) -> String {
    let o = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        o.status.success(),
        "{cmd:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// The loopback server over `root`; stopped when dropped.
struct Server {
    child: Child,
    port: u16,
    log: PathBuf,
}

impl Server {
    fn start(root: &Path, cut: Option<&str>) -> Server {
        let dir = root.parent().unwrap();
        let port_file = dir.join("port");
        let log = dir.join("requests.log");
        let _ = std::fs::remove_file(&port_file);
        let _ = std::fs::remove_file(&log);
        let mut c = Command::new("python3");
        c.arg(repo().join("tests/support/serve.py"))
            .arg(root)
            .arg(&port_file)
            .arg(&log);
        if let Some(cut) = cut {
            c.args(["--cut", cut]);
        }
        let child = c
            .stdin(Stdio::null())
            .spawn()
            .expect("python3 runs serve.py");
        let t = Instant::now();
        let port = loop {
            if let Ok(p) = std::fs::read_to_string(&port_file) {
                break p.trim().parse().unwrap();
            }
            assert!(
                t.elapsed() < Duration::from_secs(20),
                "serve.py did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        Server { child, port, log }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    fn requests(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Ran {
    code: i32,
    stderr: String,
}

fn xtask(args: &[&str], env: &[(&str, String)]) -> Ran {
    let o = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .current_dir(repo())
        .args(args)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let r = Ran {
        code: o.status.code().unwrap_or(-1),
        stderr: String::from_utf8_lossy(&o.stderr).to_string(),
    };
    eprintln!("xtask {}: exit {}\n{}", args.join(" "), r.code, r.stderr);
    r
}

/// A matrix whose one kernel `k` has `source`, with the default matrix's
/// config and one of its tests (checkout reads no more).
fn matrix_with(dir: &Path, source: &str) -> PathBuf {
    let p = dir.join("matrix.toml");
    let root = repo();
    std::fs::write(
        &p,
        format!(
            r#"[run]
arches = ["x86_64"]
configs = ["tiny"]
tests = ["seccomp_notify"]

[kernel.k]
source = {source}

[config.tiny]
base = "tinyconfig"
fragments = ["{root}/kernels/configs/base.config"]

[test.seccomp_notify]
kind = "bench"
source = "{root}/rootfs/guest/seccomp_notify_bench.c"
libs = ["m"]
"#,
            root = root.display()
        ),
    )
    .unwrap();
    p
}

/// `checkout` of kernel `k` of the matrix at `matrix` into `dest`.
fn checkout_k(matrix: &Path, dest: &Path, env: &[(&str, String)]) -> Ran {
    let (m, d) = (matrix.display().to_string(), dest.display().to_string());
    xtask(&["checkout", "--matrix", &m, "--no-setup", "k", &d], env)
}

/// A small kernel-like tarball: `linux-VERSION/` with a Makefile.
fn tarball(dir: &Path, version: &str) -> Vec<u8> {
    let src = dir.join("tree").join(format!("linux-{version}"));
    std::fs::create_dir_all(src.join("kernel")).unwrap();
    std::fs::write(
        src.join("Makefile"),
        format!("# linux {version}\nVERSION = 6\n"),
    )
    .unwrap();
    // Enough bytes that a cut lands inside the file, not the xz header.
    let filler: String = (0..4000)
        .map(|i| format!("{i:08x} {}\n", i * 7919 % 104729))
        .collect();
    std::fs::write(src.join("kernel/filler.c"), filler).unwrap();
    let out = dir.join(format!("linux-{version}.tar.xz"));
    sh(Command::new("tar")
        .args(["-cJf"])
        .arg(&out)
        .arg("-C")
        .arg(dir.join("tree"))
        .arg(format!("linux-{version}")));
    std::fs::read(out).unwrap()
}

#[test]
fn a_release_download_broken_off_resumes_and_is_then_reused() {
    let d = scratch("release");
    let www = d.join("www");
    std::fs::create_dir_all(www.join("v6.x")).unwrap();
    let bytes = tarball(&d, "6.6.99");
    std::fs::write(www.join("v6.x/linux-6.6.99.tar.xz"), &bytes).unwrap();
    std::fs::write(
        www.join("v6.x/sha256sums.asc"),
        format!(
            "-----BEGIN PGP SIGNED MESSAGE-----\nHash: SHA256\n\n{}  linux-6.6.98.tar.xz\n{}  linux-6.6.99.tar.xz\n",
            "0".repeat(64),
            sha256(&bytes)
        ),
    )
    .unwrap();
    let half = bytes.len() / 2;
    let srv = Server::start(&www, Some(&format!("/v6.x/linux-6.6.99.tar.xz:{half}")));
    let m = matrix_with(&d, r#"{ release = "6.6.99" }"#);
    let env = [
        ("KMATRIX_CACHE", d.join("cache").display().to_string()),
        ("KMATRIX_KERNEL_ORG", srv.url("/")),
    ];

    // 1. The server breaks off half-way: refused, the part kept.
    let r = checkout_k(&m, &d.join("co1"), &env);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains(&format!("ended early, at {half} of {} bytes", bytes.len()))
            || r.stderr
                .contains(&format!("stopped at {half} of {} bytes", bytes.len())),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("run again to resume"), "{}", r.stderr);

    // 2. Run again: a range request for the rest, the checksum from the
    //    list, the tree checked out.
    let r = checkout_k(&m, &d.join("co2"), &env);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains(&format!(
            "resuming {}",
            srv.url("/v6.x/linux-6.6.99.tar.xz")
        )),
        "{}",
        r.stderr
    );
    let log = srv.requests();
    assert!(
        log.contains(&format!("GET /v6.x/linux-6.6.99.tar.xz bytes={half}-")),
        "{log}"
    );
    assert!(log.contains("GET /v6.x/sha256sums.asc"), "{log}");
    assert_eq!(
        std::fs::read_to_string(d.join("co2/Makefile")).unwrap(),
        "# linux 6.6.99\nVERSION = 6\n"
    );

    // 3. A second run uses the cached tarball and import: no download.
    let gets = log.matches("GET /v6.x/linux-6.6.99.tar.xz").count();
    let r = checkout_k(&m, &d.join("co3"), &env);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        srv.requests()
            .matches("GET /v6.x/linux-6.6.99.tar.xz")
            .count(),
        gets
    );
    assert!(!r.stderr.contains("extracting"), "{}", r.stderr);
}

#[test]
fn a_tarball_whose_checksum_does_not_match_is_refused_and_nothing_is_kept() {
    let d = scratch("badsum");
    let www = d.join("www");
    std::fs::create_dir_all(&www).unwrap();
    let bytes = tarball(&d, "6.6.98");
    std::fs::write(www.join("linux-6.6.98.tar.xz"), &bytes).unwrap();
    let srv = Server::start(&www, None);
    let wrong = sha256(b"something else");
    let m = matrix_with(
        &d,
        &format!(
            r#"{{ url = "{}", sha256 = "{wrong}" }}"#,
            srv.url("/linux-6.6.98.tar.xz")
        ),
    );
    let cache = d.join("cache");
    let env = [("KMATRIX_CACHE", cache.display().to_string())];
    let r = checkout_k(&m, &d.join("co"), &env);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains(&format!(
            "checksum mismatch, SHA-256 {} where {wrong} was pinned; nothing was kept",
            sha256(&bytes)
        )),
        "{}",
        r.stderr
    );
    let left: Vec<_> = walk(&cache.join("downloads"));
    assert!(left.is_empty(), "left behind: {left:?}");
    assert!(!d.join("co").exists());

    // A matrix run stops before its first cell, with the run's exit code
    // (2), not a cell's infra-error (1) as if the kernel were at fault.
    let out = d.join("run");
    let (ms, os) = (m.display().to_string(), out.display().to_string());
    let r = xtask(
        &["matrix", "--matrix", &ms, "--no-setup", "--out", &os],
        &env,
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    let first_error = r
        .stderr
        .lines()
        .find(|l| l.starts_with("error: "))
        .unwrap_or_default();
    assert!(
        first_error.starts_with(
            "error: kernel k: its source cannot be had, so no cell was started: download "
        ) && first_error.contains("checksum mismatch"),
        "{}",
        r.stderr
    );
    assert!(!out.join("results.json").exists());
    assert!(walk(&cache.join("downloads")).is_empty());
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![];
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// The seccomp series as the list saw it, in the mboxrd format a
/// public-inbox archive serves (`t.mbox`): the cover letter, the six
/// patches (the series' own files, threaded under the cover) and a
/// reviewer's reply quoting patch 4's diff.
fn thread_mbox() -> (String, String) {
    let dir = repo().join("kernels/series/seccomp-sync-wakeup");
    let cover_id = "20230308073201.3102738-1-avagin@google.com";
    let sep = "From mboxrd@z Thu Jan  1 00:00:00 1970\n";
    let mut out = String::new();
    out += sep;
    out += &format!(
        "From: Andrei Vagin <avagin@google.com>\nDate: Tue, 7 Mar 2023 23:31:55 -0800\n\
         Subject: [PATCH 0/6] seccomp: add the synchronous mode for seccomp_unotify\n\
         Message-Id: <{cover_id}>\nTo: Kees Cook <keescook@chromium.org>\n\n\
         seccomp_unotify allows more privileged processes do actions on behalf\n\
         of less privileged processes.\n\n\
         From the cover letter: a line that starts with From, quoted by mboxrd.\n\n-- \n2.40.0\n\n"
    )
    .replace("\nFrom the cover", "\n>From the cover");
    let mut quoted = String::new();
    for (i, name) in std::fs::read_to_string(dir.join("series"))
        .unwrap()
        .lines()
        .enumerate()
    {
        let text = std::fs::read_to_string(dir.join(name)).unwrap();
        // Drop format-patch's own `From <sha> <date>` line: the archive's
        // separator stands in its place.
        let body = text.split_once('\n').unwrap().1;
        let (head, rest) = body.split_once("\n\n").unwrap();
        out += sep;
        out += head;
        out += &format!(
            "\nMessage-Id: <20230308073201.3102738-{}-avagin@google.com>\nIn-Reply-To: <{cover_id}>\nReferences: <{cover_id}>\n\n",
            i + 2
        );
        out += rest;
        if !out.ends_with('\n') {
            out.push('\n');
        }
        out.push('\n');
        if i == 3 {
            quoted = rest
                .lines()
                .skip_while(|l| !l.starts_with("diff --git"))
                .take(12)
                .map(|l| format!("> {l}\n"))
                .collect();
        }
    }
    out += sep;
    out += &format!(
        "From: Kees Cook <keescook@chromium.org>\nDate: Wed, 8 Mar 2023 10:00:00 -0800\n\
         Subject: Re: [PATCH 4/6] seccomp: add the synchronous mode for seccomp_unotify\n\
         Message-Id: <202303081000.reply@keescook>\nIn-Reply-To: <20230308073201.3102738-5-avagin@google.com>\n\
         References: <{cover_id}> <20230308073201.3102738-5-avagin@google.com>\n\n\
         On Tue, Mar 07, 2023 at 11:31:59PM -0800, Andrei Vagin wrote:\n{quoted}\n\
         Looks good.\n\nReviewed-by: Kees Cook <keescook@chromium.org>\n\n"
    );
    (cover_id.to_string(), out)
}

/// `HEAD^{tree}` and the subjects of the commits `checkout` made.
fn checked_out(dest: &Path) -> (String, Vec<String>) {
    let git = |args: &[&str]| sh(Command::new("git").arg("-C").arg(dest).args(args));
    let tree = git(&["rev-parse", "HEAD^{tree}"]);
    let subjects = git(&["log", "--format=%s", "kmatrix-base..HEAD"])
        .lines()
        .map(str::to_string)
        .collect();
    (tree, subjects)
}

fn checkout(dest: &Path, extra: &[&str], env: &[(&str, String)]) -> Ran {
    let mut args = vec!["checkout", "--no-setup", "6.1"];
    let d = dest.display().to_string();
    args.push(&d);
    args.extend_from_slice(extra);
    xtask(&args, env)
}

#[test]
fn an_mbox_and_a_lore_thread_give_the_tree_the_directory_gives() {
    let d = scratch("mbox");
    let series = repo().join("kernels/series/seccomp-sync-wakeup");
    let r = checkout(
        &d.join("from-dir"),
        &["--series", &series.display().to_string()],
        &[],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let (tree, subjects) = checked_out(&d.join("from-dir"));
    assert_eq!(subjects.len(), 6, "{subjects:?}");

    // The thread as one mbox: cover letter and reply left out.
    let (cover_id, thread) = thread_mbox();
    let mbox = d.join("seccomp-sync.mbox");
    std::fs::write(&mbox, &thread).unwrap();
    let r = checkout(
        &d.join("from-mbox"),
        &["--series", &mbox.display().to_string()],
        &[],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let (t2, s2) = checked_out(&d.join("from-mbox"));
    assert_eq!((&t2, &s2), (&tree, &subjects));

    // One patch missing: refused, naming the gap.
    let gap: String = thread
        .split_inclusive("From mboxrd@z Thu Jan  1 00:00:00 1970\n")
        .filter(|m| !m.contains("Subject: [PATCH 3/6]"))
        .collect();
    let gapped = d.join("gapped.mbox");
    std::fs::write(&gapped, gap).unwrap();
    let r = checkout(
        &d.join("gapped"),
        &["--series", &gapped.display().to_string()],
        &[],
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains(&format!(
            "{}: patch 3/6 is missing (the mbox has 1, 2, 4, 5, 6 of 6)",
            gapped.display()
        )),
        "{}",
        r.stderr
    );

    // The same thread from an archive on loopback, fetched by b4.
    let www = d.join("www");
    let at = www.join("all").join(&cover_id);
    std::fs::create_dir_all(&at).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, thread.as_bytes()).unwrap();
    std::fs::write(at.join("t.mbox.gz"), gz.finish().unwrap()).unwrap();
    let srv = Server::start(&www, None);
    let env = [("KMATRIX_LORE", srv.url("/all"))];
    // Without --no-setup: b4's venv needs python3-venv, which the set-up
    // installs on a host that lacks it (a fresh Debian 13 does).
    let dest = d.join("from-lore").display().to_string();
    let msgid = format!("<{cover_id}>");
    let r = xtask(&["checkout", "6.1", &dest, "--lore", &msgid], &env);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        srv.requests()
            .contains(&format!("GET /all/{cover_id}/t.mbox.gz")),
        "{}",
        srv.requests()
    );
    let (t3, s3) = checked_out(&d.join("from-lore"));
    assert_eq!(t3, tree, "b4's patches give another tree");
    assert_eq!(s3, subjects);
}

/// A throwaway signed apt archive on loopback holding one package,
/// `linux-source-9.9` 9.9.1-1 (its tarball a small tree), in suite
/// `kmtest` (with empty -updates and -security).
fn apt_archive(d: &Path) -> Option<(PathBuf, Vec<u8>)> {
    if Command::new("gpg").arg("--version").output().is_err() {
        support::missing("pinned_debian_package", "gpg");
        return None;
    }
    let native = sh(Command::new("dpkg").arg("--print-architecture"));
    let bytes = tarball(d, "9.9.1");
    let pkg = d.join("pkg");
    std::fs::create_dir_all(pkg.join("DEBIAN")).unwrap();
    std::fs::create_dir_all(pkg.join("usr/src")).unwrap();
    std::fs::write(pkg.join("usr/src/linux-source-9.9.tar.xz"), &bytes).unwrap();
    std::fs::write(
        pkg.join("DEBIAN/control"),
        "Package: linux-source-9.9\nVersion: 9.9.1-1\nArchitecture: all\nMaintainer: kmatrix <t@example.org>\nDescription: test kernel source\n",
    )
    .unwrap();
    let www = d.join("www");
    let pool = www.join("debian/pool/main/l");
    std::fs::create_dir_all(&pool).unwrap();
    let deb = pool.join("linux-source-9.9_9.9.1-1_all.deb");
    sh(Command::new("dpkg-deb")
        .args(["--build", "--root-owner-group"])
        .arg(&pkg)
        .arg(&deb));
    let deb_bytes = std::fs::read(&deb).unwrap();
    let stanza = format!(
        "Package: linux-source-9.9\nVersion: 9.9.1-1\nArchitecture: all\nMaintainer: kmatrix <t@example.org>\n\
         Filename: pool/main/l/linux-source-9.9_9.9.1-1_all.deb\nSize: {}\nSHA256: {}\nDescription: test kernel source\n\n",
        deb_bytes.len(),
        sha256(&deb_bytes)
    );
    let home = d.join("gnupg");
    std::fs::create_dir_all(&home).unwrap();
    let gpg = || {
        let mut c = Command::new("gpg");
        c.arg("--homedir").arg(&home).args([
            "--batch",
            "--pinentry-mode",
            "loopback",
            "--passphrase",
            "",
        ]);
        c
    };
    sh(gpg().args([
        "--quick-gen-key",
        "kmatrix test archive <t@example.org>",
        "ed25519",
        "sign",
        "never",
    ]));
    let keyring = d.join("archive.gpg");
    sh(gpg().arg("--output").arg(&keyring).arg("--export"));
    for (base, suite, packages) in [
        ("debian", "kmtest", stanza.as_str()),
        ("debian", "kmtest-updates", ""),
        ("debian-security", "kmtest-security", ""),
    ] {
        let dist = www.join(base).join("dists").join(suite);
        let bin = dist.join(format!("main/binary-{native}"));
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::write(bin.join("Packages"), packages).unwrap();
        let release = format!(
            "Origin: kmatrix test\nSuite: {suite}\nCodename: {suite}\nDate: Thu, 01 Jan 2026 00:00:00 UTC\n\
             Architectures: {native}\nComponents: main\nSHA256:\n {} {} main/binary-{native}/Packages\n",
            sha256(packages.as_bytes()),
            packages.len()
        );
        std::fs::write(dist.join("Release"), &release).unwrap();
        sh(gpg()
            .arg("--output")
            .arg(dist.join("InRelease"))
            .arg("--clearsign")
            .arg(dist.join("Release")));
    }
    Some((keyring, bytes))
}

#[test]
fn a_pinned_debian_package_is_fetched_into_the_cache_not_installed() {
    let d = scratch("debian");
    let Some((keyring, bytes)) = apt_archive(&d) else {
        return;
    };
    let srv = Server::start(&d.join("www"), None);
    let cache = d.join("cache");
    let env = [
        ("KMATRIX_CACHE", cache.display().to_string()),
        ("KMATRIX_DEBIAN_MIRROR", srv.url("/debian")),
        ("KMATRIX_DEBIAN_KEYRING", keyring.display().to_string()),
    ];
    let run = |source: &str, dest: &str| checkout_k(&matrix_with(&d, source), &d.join(dest), &env);
    // A version the archive does not have: refused, naming what it has.
    let r = run(
        r#"{ debian = "linux-source-9.9", version = "9.9.0-7", suite = "kmtest" }"#,
        "none",
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains(&format!(
            "linux-source-9.9 9.9.0-7 is not in kmtest, kmtest-updates or kmtest-security at {} (it has 9.9.1-1)",
            srv.url("/debian")
        )),
        "{}",
        r.stderr
    );
    // The pinned version: downloaded by apt, unpacked in the cache.
    let r = run(
        r#"{ debian = "linux-source-9.9", version = "9.9.1-1", suite = "kmtest" }"#,
        "co",
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains("the host's packages are not changed"),
        "{}",
        r.stderr
    );
    assert!(
        srv.requests()
            .contains("GET /debian/pool/main/l/linux-source-9.9_9.9.1-1_all.deb"),
        "{}",
        srv.requests()
    );
    assert_eq!(
        std::fs::read(
            cache.join("src/debian/linux-source-9.9_9.9.1-1/usr/src/linux-source-9.9.tar.xz")
        )
        .unwrap(),
        bytes
    );
    assert_eq!(
        std::fs::read_to_string(d.join("co/Makefile")).unwrap(),
        "# linux 9.9.1\nVERSION = 6\n"
    );
    // Not installed on the host.
    let q = Command::new("dpkg-query")
        .args(["-W", "linux-source-9.9"])
        .output()
        .unwrap();
    assert!(!q.status.success(), "linux-source-9.9 got installed");
}

/// `--no-setup` installs nothing, b4's venv included: on a host without it
/// `--lore` is refused before any work, saying how to make it, and no venv
/// (no pip run) appears in the cache.
#[test]
fn lore_with_no_setup_on_a_host_without_b4_is_refused_and_installs_nothing() {
    let d = scratch("lore-no-setup");
    let cache = d.join("cache");
    let env = [("KMATRIX_CACHE", cache.display().to_string())];
    let out = d.join("run").display().to_string();
    let r = xtask(
        &[
            "matrix",
            "--no-setup",
            "--kernel",
            "6.1",
            "--lore",
            "20230308073201.3102738-1-avagin@google.com",
            "--out",
            &out,
        ],
        &env,
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    let venv = cache.join("tools/py");
    assert!(
        r.stderr.contains(&format!(
            "error: --lore needs b4 from the tools venv {} (",
            venv.display()
        )) && r.stderr.contains(
            "), which is not set up, and --no-setup installs nothing: run `cargo xtask setup` once, or run without --no-setup"
        ),
        "{}",
        r.stderr
    );
    assert!(!venv.exists(), "a venv was made");
    assert!(!d.join("run").exists());
}
