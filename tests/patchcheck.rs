//! `cargo xtask patchcheck` on real builds of 6.1: the planted series of
//! tests/patchcheck/planted (a new warning, a checkpatch error, a break of
//! the 32-bit x86 build only, a `run.build_only` target, a new warning in
//! a selftest), each named with its patch and its text; `bisect --builds
//! i386` finding the break; and the 32-bit tools/perf break of the seccomp
//! series' bench patch.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::Instant;

use serde_json::Value;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// One kernel build at a time: both tests build 6.1 in the same
/// directories.
static SERIAL: Mutex<()> = Mutex::new(());

#[test]
fn each_planted_fault_is_named_with_its_patch_and_text() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("patchcheck-planted");
    let _ = std::fs::remove_dir_all(&out);
    let t = Instant::now();
    let o = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .current_dir(repo())
        .args([
            "patchcheck",
            "--kernel",
            "6.1",
            "--series",
            "tests/patchcheck/planted",
            // The gcc targets; the clang one has a test of its own.
            "--config",
            "tiny",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    let stdout = String::from_utf8_lossy(&o.stdout);
    eprintln!(
        "patchcheck: exit {:?} in {:.0}s\n{stderr}\n{stdout}",
        o.status.code(),
        t.elapsed().as_secs_f64()
    );
    assert_eq!(
        o.status.code(),
        Some(1),
        "a planted fault must fail the check"
    );
    let c: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("patchcheck.json")).unwrap())
            .unwrap();
    let targets: Vec<&str> = c["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert_eq!(targets, ["x86_64/tiny", "arm64/tiny", "i386/tiny"]);
    let p = |i: usize| &c["patches"][i];
    let build = |i: usize, t: usize| &p(i)["builds"][t];
    for t in 0..3 {
        assert_eq!(c["base"][t]["outcome"], "pass", "{}", c["base"][t]);
    }
    // 1: the unused variable, a new warning on every arch, nothing else new.
    for t in 0..3 {
        let w: Vec<&str> = build(0, t)["new_warnings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w.as_str().unwrap())
            .collect();
        assert_eq!(
            w,
            ["kernel/seccomp.c: warning: unused variable 'waited' [-Wunused-variable]"],
            "{}",
            build(0, t)
        );
    }
    assert!(
        p(0)["checkpatch"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["severity"] != "ERROR"),
        "{}",
        p(0)
    );
    // 2: checkpatch's ERROR, with its type and place; it builds clean.
    let errors: Vec<&Value> = p(1)["checkpatch"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] == "ERROR")
        .collect();
    assert_eq!(errors.len(), 1, "{}", p(1));
    assert_eq!(errors[0]["kind"], "CODE_INDENT");
    assert!(errors[0]["location"]
        .as_str()
        .unwrap()
        .starts_with("kernel/seccomp.c:"));
    for t in 0..3 {
        assert_eq!(build(1, t)["outcome"], "pass");
        assert!(
            build(1, t)["new_warnings"].as_array().unwrap().is_empty(),
            "{}",
            build(1, t)
        );
    }
    // 3: i386 breaks here, with the linker's line; the 64-bit arches build on.
    assert_eq!(build(2, 0)["outcome"], "pass", "{}", build(2, 0));
    assert_eq!(build(2, 1)["outcome"], "pass", "{}", build(2, 1));
    assert_eq!(build(2, 2)["outcome"], "build-error", "{}", build(2, 2));
    let first = build(2, 2)["first_error"].as_str().unwrap();
    assert_eq!(
        first,
        "kernel/seccomp.o: in function `seccomp_do_user_notification': undefined reference to `__udivdi3'"
    );
    // 4: a selftest's new warning, for each booted arch, as the guests
    // compile it; the kernel builds as at patch 3 (i386 still broken).
    assert_eq!(build(3, 0)["outcome"], "pass", "{}", build(3, 0));
    assert_eq!(build(3, 2)["outcome"], "build-error", "{}", build(3, 2));
    for i in 0..3 {
        assert_eq!(p(i)["selftests"], serde_json::json!([]), "{}", p(i));
    }
    let st = p(3)["selftests"].as_array().unwrap();
    assert_eq!(st.len(), 2, "{}", p(3));
    for (t, arch) in st.iter().zip(["x86_64", "arm64"]) {
        assert_eq!(t["arch"], arch, "{t}");
        assert_eq!(t["test"], "seccomp_bpf", "{t}");
        assert_eq!(t["outcome"], "pass", "{t}");
        assert_eq!(t["built_before"], true, "{t}");
        assert_eq!(
            t["new_warnings"],
            serde_json::json!([
                "tools/testing/selftests/seccomp/seccomp_bpf.c: warning: unused variable 'tries' [-Wunused-variable]"
            ]),
            "{t}"
        );
    }
    let md = std::fs::read_to_string(out.join("patchcheck.md")).unwrap();
    assert!(
        md.contains("- patch 4 \"selftests/seccomp: count the tries of the strict mode test\": selftest seccomp_bpf has 1 new compiler warning for x86_64, arm64\n"),
        "{md}"
    );
    assert!(
        md.contains("- i386/tiny: first broken by patch 3 \"seccomp: a change that only 32-bit x86 does not build\": ``kernel/seccomp.o: in function `seccomp_do_user_notification': undefined reference to `__udivdi3'``\n"),
        "{md}"
    );
    assert!(md.contains("- patch 1 \"seccomp: count the wake-ups of a user notification\": 1 new compiler warning on x86_64/tiny, arm64/tiny, i386/tiny"), "{md}");
    assert!(md.contains("- patch 2 \"seccomp: add a helper that says whether a notification is planted\": 1 checkpatch finding at error or worse"), "{md}");
    assert!(!md.contains("x86_64/tiny: first broken"), "{md}");
    assert!(!md.contains("arm64/tiny: first broken"), "{md}");
    // The HTML page says the same: the break, in the i386 column of patch 3.
    let html = std::fs::read_to_string(out.join("patchcheck.html")).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"), "{html}");
    assert!(
        html.contains("<li>i386/tiny: first broken by patch 3 &quot;seccomp: a change that only 32-bit x86 does not build&quot;"),
        "{html}"
    );
    let row3 = html
        .split("<tr class=\"bad\"><td>3 ")
        .nth(1)
        .unwrap()
        .split("</tr>")
        .next()
        .unwrap();
    let cells: Vec<&str> = row3.split("<td").collect();
    assert!(
        cells[1].contains("o o-pass")
            && cells[2].contains("o o-pass")
            && cells[3].contains("o o-build-error"),
        "{row3}"
    );
}

/// The break of the i386 build, found by bisecting on the build alone:
/// nothing is booted (i386 is a build-only target), the base and patches
/// 1-2 build, patch 3 is named with the linker's error.
#[test]
fn bisect_builds_names_the_patch_that_breaks_one_arch() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("bisect-builds");
    let _ = std::fs::remove_dir_all(&out);
    let o = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .current_dir(repo())
        .args([
            "bisect",
            "--kernel",
            "6.1",
            "--series",
            "tests/patchcheck/planted",
            "--builds",
            "i386",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    let md = std::fs::read_to_string(out.join("bisect.md")).unwrap_or_default();
    eprintln!(
        "bisect: exit {:?}\n{}\n{}\n{md}",
        o.status.code(),
        String::from_utf8_lossy(&o.stderr),
        String::from_utf8_lossy(&o.stdout)
    );
    assert_eq!(o.status.code(), Some(0), "{md}");
    let state: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("bisect.json")).unwrap()).unwrap();
    assert_eq!(state["arch"], "i386");
    assert_eq!(state["predicate"]["kind"], "builds", "{state}");
    let ans = &state["answer"];
    assert_eq!(ans["kind"], "found", "{md}");
    assert_eq!(ans["index"], 3, "{md}");
    assert_eq!(
        ans["patch"]["subject"],
        "seccomp: a change that only 32-bit x86 does not build"
    );
    let bad = ans["bad"].as_str().unwrap();
    assert!(
        bad.starts_with("build-error for i386")
            && bad.ends_with(
                "kernel/seccomp.o: in function `seccomp_do_user_notification': undefined reference to `__udivdi3'"
            ),
        "{bad}"
    );
    // No step booted a kernel.
    for step in state["steps"].as_array().unwrap() {
        assert_eq!(step["boots"], 0, "{step}");
    }
}

/// The clang target, `arm64/tiny-clang` (`llvm = true`: `make LLVM=1`):
/// built with clang, and patch 1's unused variable named on it in clang's
/// own words.
#[test]
fn the_clang_target_is_built_with_llvm_and_its_warnings_are_named() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("patchcheck-clang");
    let _ = std::fs::remove_dir_all(&out);
    let t = Instant::now();
    let o = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .current_dir(repo())
        .args([
            "patchcheck",
            "--kernel",
            "6.1",
            "--series",
            "tests/patchcheck/planted",
            "--patches",
            "1",
            "--arch",
            "arm64",
            "--config",
            "tiny-clang",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    eprintln!(
        "patchcheck: exit {:?} in {:.0}s\n{}\n{}",
        o.status.code(),
        t.elapsed().as_secs_f64(),
        String::from_utf8_lossy(&o.stderr),
        String::from_utf8_lossy(&o.stdout)
    );
    assert_eq!(o.status.code(), Some(1), "the new warning fails the check");
    let c: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("patchcheck.json")).unwrap())
            .unwrap();
    assert_eq!(c["targets"], serde_json::json!(["arm64/tiny-clang"]));
    assert_eq!(c["base"][0]["outcome"], "pass", "{}", c["base"][0]);
    let b = &c["patches"][0]["builds"][0];
    assert_eq!(b["outcome"], "pass", "{b}");
    assert_eq!(
        b["new_warnings"],
        serde_json::json!([
            "kernel/seccomp.c: warning: unused variable 'waited' [-Wunused-variable]"
        ]),
        "{b}"
    );
    // clang built it: the make line says LLVM=1, and the kernel records
    // its compiler in the .config of the O= dir that line names.
    let log = std::fs::read_to_string(b["log"].as_str().unwrap()).unwrap();
    let make = log.lines().next().unwrap();
    assert!(
        make.starts_with("$ make ") && make.contains(" ARCH=arm64 ") && make.contains(" LLVM=1 "),
        "{make}"
    );
    let o = make.split(' ').find_map(|w| w.strip_prefix("O=")).unwrap();
    let cfg = std::fs::read_to_string(Path::new(o).join(".config")).unwrap();
    assert!(
        cfg.contains("\nCONFIG_CC_IS_CLANG=y\n"),
        "not a clang build"
    );
}

/// The seccomp series' perf bench patch (its patch 6, unchanged; see
/// tests/patchcheck/perf32) on 32-bit x86: the kernel is the base's (the
/// patch touches only tools/), and the 32-bit build of tools/perf breaks
/// with the compiler's words, the bug review found on the list (`#ifdef
/// __NR_seccomp` for `#ifndef` in tools' unistd_32.h).
#[test]
fn the_32bit_perf_break_of_the_seccomp_bench_patch_is_named() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("patchcheck-i386-perf");
    let _ = std::fs::remove_dir_all(&out);
    let t = Instant::now();
    let o = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .current_dir(repo())
        .args([
            "patchcheck",
            "--kernel",
            "6.1",
            "--series",
            "tests/patchcheck/perf32",
            "--arch",
            "i386",
            "--config",
            "tiny",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    eprintln!(
        "patchcheck: exit {:?} in {:.0}s\n{}\n{}",
        o.status.code(),
        t.elapsed().as_secs_f64(),
        String::from_utf8_lossy(&o.stderr),
        String::from_utf8_lossy(&o.stdout)
    );
    assert_eq!(o.status.code(), Some(1), "patch 6 must fail the check");
    let c: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("patchcheck.json")).unwrap())
            .unwrap();
    assert_eq!(c["targets"], serde_json::json!(["i386/tiny"]));
    let p = &c["patches"][0];
    assert_eq!(c["patches"].as_array().unwrap().len(), 1);
    // The kernel is the base's image: the patch changes nothing outside
    // tools/.
    assert_eq!(p["builds"][0]["outcome"], "pass", "{}", p["builds"][0]);
    assert_eq!(p["builds"][0]["cached"], true, "{}", p["builds"][0]);
    let perf = p["selftests"].as_array().unwrap();
    assert_eq!(perf.len(), 1, "{p}");
    let b = &perf[0];
    assert_eq!(b["arch"], "i386", "{b}");
    assert_eq!(b["test"], "perf_bench", "{b}");
    assert_eq!(b["dir"], "tools/perf", "{b}");
    assert_eq!(b["outcome"], "build-error", "{b}");
    assert_eq!(b["built_before"], true, "{b}");
    assert_eq!(
        b["first_error"],
        "bench/sched-seccomp-notify.c:45:24: error: '__NR_seccomp' undeclared (first use in this function)",
        "{b}"
    );
    let md = std::fs::read_to_string(out.join("patchcheck.md")).unwrap();
    assert!(
        md.contains("- patch 1 \"perf/benchmark: add a new benchmark for seccom_unotify\": tools/perf (perf_bench) no longer builds for i386: `bench/sched-seccomp-notify.c:45:24: error: '__NR_seccomp' undeclared (first use in this function)`\n"),
        "{md}"
    );
}
