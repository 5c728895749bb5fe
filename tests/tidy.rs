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

/// The stage folders of xtask/src in layers: a module may use modules of
/// lower layers only (never its own layer's others, never a higher one),
/// so the import graph has no circle and nothing imports main.rs or cli/.
const LAYERS: &[&[&str]] = &[
    &["util", "schema", "golden"],
    &["plan"],
    &["host"],
    &["kinds"],
    &["stats", "analyze", "build"],
    &["boot"],
    &["runner", "report"],
    &["bisect", "patchcheck"],
    &["cli"],
    &["main"],
];

fn layer(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

/// The top-level module a file of xtask/src belongs to.
fn module_of(rel: &Path) -> String {
    let first = rel
        .components()
        .next()
        .unwrap()
        .as_os_str()
        .to_string_lossy();
    first.trim_end_matches(".rs").to_string()
}

#[test]
fn stage_folders_import_only_lower_layers() {
    let src = root().join("xtask/src");
    let re = regex::Regex::new(r"crate::([a-z_]+)").unwrap();
    let mut bad = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for f in files("xtask/src", &|p| ext(p, "rs")) {
        let rel = f.strip_prefix(&src).unwrap();
        let from = module_of(rel);
        let Some(lf) = layer(&from) else {
            bad.push(format!("{}: module {from} is in no layer", rel.display()));
            continue;
        };
        let text = std::fs::read_to_string(&f).unwrap();
        for (i, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            for c in re.captures_iter(line) {
                let to = c[1].to_string();
                if to == from {
                    continue;
                }
                seen.insert((from.clone(), to.clone()));
                match layer(&to) {
                    Some(lt) if lt < lf => {}
                    Some(_) => bad.push(format!(
                        "{}:{}: {from} uses {to}, which is not below it",
                        rel.display(),
                        i + 1
                    )),
                    None => bad.push(format!("{}:{}: {to} is in no layer", rel.display(), i + 1)),
                }
            }
        }
    }
    assert!(
        seen.len() > 20,
        "only {} edges seen: the scan is broken",
        seen.len()
    );
    assert!(
        bad.is_empty(),
        "imports against the layers:\n{}",
        bad.join("\n")
    );
}

/// Every source file the documents name exists: the docs move with the code.
#[test]
fn source_files_named_in_the_docs_exist() {
    let re = regex::Regex::new(r"xtask/src/[a-z_/]+\.rs").unwrap();
    let mut docs = files("docs", &|p| ext(p, "md"));
    docs.extend(["README.md", "ARCHITECTURE.md", "matrix.toml"].map(|f| root().join(f)));
    let mut missing = Vec::new();
    let mut named = 0;
    for d in docs {
        let text = std::fs::read_to_string(&d).unwrap();
        for m in re.find_iter(&text) {
            named += 1;
            if !root().join(m.as_str()).exists() {
                missing.push(format!(
                    "{}: {}",
                    d.strip_prefix(root()).unwrap().display(),
                    m.as_str()
                ));
            }
        }
    }
    assert!(
        named > 0,
        "no source file named anywhere: the pattern is broken"
    );
    assert!(
        missing.is_empty(),
        "named but not there:\n{}",
        missing.join("\n")
    );
}

/// The README is a quick start: short, and a newcomer finds how to run
/// their own branch on its first screen.
#[test]
fn the_readme_is_a_quick_start() {
    let text = std::fs::read_to_string(root().join("README.md")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines.len() <= 160,
        "README.md has {} lines; reference material goes to docs/",
        lines.len()
    );
    let first = lines.iter().position(|l| l.contains("--tree"));
    assert!(
        first.is_some_and(|i| i < 50),
        "`--tree` (your own branch) first appears at line {:?} of README.md",
        first.map(|i| i + 1)
    );
    for cmd in ["cargo xtask matrix", "cargo test"] {
        assert!(text.contains(cmd), "README.md does not give `{cmd}`");
    }
}
