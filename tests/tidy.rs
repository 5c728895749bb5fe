//! The house rules, checked on the checkout: formatted code, a `//!` line
//! atop every module saying what it is, and files that speak of the project
//! itself (no work-log words, no paths outside the repository).
//! `cargo clippy --all-targets -- -D warnings` is run by `.ci/run` beside
//! this suite.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Files under `dir` (relative to the root) whose name passes `keep`.
fn files(dir: &str, keep: &dyn Fn(&Path) -> bool) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![root().join(dir)];
    while let Some(d) = todo.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else if keep(&p) {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

fn ext(p: &Path, e: &str) -> bool {
    p.extension().is_some_and(|x| x == e)
}

#[test]
fn the_code_is_formatted() {
    let o = Command::new("cargo")
        .args(["fmt", "--all", "--", "--check"])
        .current_dir(root())
        .output()
        .expect("running cargo fmt (rustfmt comes with the toolchain)");
    assert!(
        o.status.success(),
        "cargo fmt --check found unformatted code (run `cargo fmt`):\n{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn every_module_says_what_it_is() {
    let mut missing = Vec::new();
    for f in files("xtask/src", &|p| ext(p, "rs")) {
        let text = std::fs::read_to_string(&f).unwrap();
        if !text.trim_start().starts_with("//!") {
            missing.push(f.strip_prefix(root()).unwrap().display().to_string());
        }
    }
    assert!(
        missing.is_empty(),
        "modules without a `//!` line at the top: {missing:?}"
    );
}

/// Words of a work log, not of the project: who worked when, on which
/// ticket, and files that are not in the repository.
fn log_words() -> regex::Regex {
    // Assembled from parts so this file does not match itself.
    let parts = [
        [r"(?i)\bsessions?", r"\s+\d"].concat(),
        [r"(?i)\bthis ", r"session\b"].concat(),
        [r"(?i)\bissues?", r"\s+#?\d"].concat(),
        [r"(?i)\bseed", r"\s+0\d\d"].concat(),
        [r"(?i)\bclosing ", r"notes?\b"].concat(),
        ["CONTEXT", r"\.md"].concat(),
        [r"\.\./", "shared"].concat(),
    ];
    regex::Regex::new(&parts.join("|")).unwrap()
}

#[test]
fn the_project_speaks_of_itself() {
    let re = log_words();
    let mut found = Vec::new();
    let mut checked = 0;
    let docs =
        |p: &Path| ext(p, "md") || ext(p, "toml") || p.file_name().is_some_and(|n| n == "README");
    let mut all: Vec<PathBuf> = [
        "README.md",
        "ARCHITECTURE.md",
        "matrix.toml",
        "Cargo.toml",
        ".ci/run",
    ]
    .iter()
    .map(|f| root().join(f))
    .collect();
    all.extend(files("docs", &docs));
    all.extend(files("tests", &|p| docs(p) || ext(p, "rs")));
    all.extend(files("xtask", &|p| ext(p, "rs") || ext(p, "toml")));
    all.extend(files("rootfs", &|p| {
        ext(p, "c") || p.file_name().is_some_and(|n| n == "init")
    }));
    all.extend(files(".github", &|p| ext(p, "yml")));
    all.extend(files("kernels", &|p| ext(p, "patch") || ext(p, "config")));
    for f in all {
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        checked += 1;
        for (i, line) in text.lines().enumerate() {
            if let Some(m) = re.find(line) {
                found.push(format!(
                    "{}:{}: \"{}\" in: {}",
                    f.strip_prefix(root()).unwrap().display(),
                    i + 1,
                    m.as_str(),
                    line.trim()
                ));
            }
        }
    }
    assert!(
        checked > 50,
        "only {checked} files checked: the walk is broken"
    );
    assert!(
        found.is_empty(),
        "work-log words or outside paths in the project's files:\n{}",
        found.join("\n")
    );
}

/// The rule bites: each kind of word is found in a line that has it.
#[test]
fn the_log_word_rule_finds_what_it_should() {
    let re = log_words();
    let bad = [
        ["measured in ", "sess", "ion 8"].concat(),
        ["see ", "iss", "ue 12"].concat(),
        ["from ", "se", "ed 002"].concat(),
        ["the ", "clos", "ing note"].concat(),
        ["../sha", "red/", "CONT", "EXT.md"].concat(),
    ];
    for l in &bad {
        assert!(re.is_match(l), "not found in {l:?}");
    }
    for ok in [
        "a seeded bootstrap (seed 7)",
        "the login session",
        "a cross-CPU issue",
    ] {
        assert!(!re.is_match(ok), "false alarm on {ok:?}");
    }
}
