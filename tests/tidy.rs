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
    &["util"],
    &["schema", "golden"],
    &["plan"],
    &["host"],
    &["kinds"],
    &["stats", "analyze", "build"],
    &["boot", "history"],
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

/// The source files of xtask/src, relative to it, with the lines that are
/// production code: a test-only file (declared under `#[cfg(test)]`, such
/// as `plan/matrix/tests.rs` or `golden.rs`) has none, and a file's lines
/// stop at its test module (`#[cfg(test)]` then `mod`); a test-only item
/// elsewhere is scanned as production code.
fn production_code() -> Vec<(PathBuf, Vec<(usize, String)>)> {
    let src = root().join("xtask/src");
    let all = files("xtask/src", &|p| ext(p, "rs"));
    let decl = regex::Regex::new(r"#\[cfg\(test\)\]\s*\n\s*(?:pub )?mod ([a-z_]+);").unwrap();
    let mut test_only = std::collections::BTreeSet::new();
    for f in &all {
        let text = std::fs::read_to_string(f).unwrap();
        let dir = match f.file_name().unwrap().to_str().unwrap() {
            "main.rs" | "mod.rs" => f.parent().unwrap().to_path_buf(),
            _ => f.with_extension(""),
        };
        for c in decl.captures_iter(&text) {
            test_only.insert(dir.join(format!("{}.rs", &c[1])));
            test_only.insert(dir.join(&c[1]).join("mod.rs"));
        }
    }
    all.iter()
        .filter(|f| !test_only.contains(*f))
        .map(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            let all: Vec<&str> = text.lines().collect();
            let tests_start = (0..all.len())
                .find(|&i| {
                    all[i].trim() == "#[cfg(test)]"
                        && all.get(i + 1).is_some_and(|n| {
                            let n = n.trim_start();
                            n.starts_with("mod ") || n.starts_with("pub mod ")
                        })
                })
                .unwrap_or(all.len());
            let lines = text
                .lines()
                .enumerate()
                .take(tests_start)
                .filter(|(_, l)| !l.trim_start().starts_with("//"))
                .map(|(i, l)| (i + 1, l.to_string()))
                .collect();
            (f.strip_prefix(&src).unwrap().to_path_buf(), lines)
        })
        .collect()
}

/// Production lines of xtask/src matching `re`, outside the files and
/// folders `allowed` (paths relative to xtask/src).
fn found_outside(re: &str, allowed: &[&str]) -> (usize, Vec<String>) {
    let re = regex::Regex::new(re).unwrap();
    let (mut all, mut bad) = (0, Vec::new());
    for (rel, lines) in production_code() {
        for (n, l) in lines.iter().filter(|(_, l)| re.is_match(l)) {
            all += 1;
            if !allowed.iter().any(|a| rel.starts_with(a)) {
                bad.push(format!("xtask/src/{}:{n}: {}", rel.display(), l.trim()));
            }
        }
    }
    (all, bad)
}

/// The environment is read in one place a concern: `host/` (the machine:
/// cache root, CI, tools on PATH, mirrors), `runner/policy.rs` (every
/// `KMATRIX_*` setting of a run, read once by the CLI), `report/files.rs`
/// (GitHub Actions' step summary and links) and `cli/`.
/// Planning, building, booting, analysis and reports take what they need
/// as arguments.
#[test]
fn only_host_policy_and_cli_read_the_environment() {
    let (all, bad) = found_outside(
        r"\benv::(var|var_os|vars|vars_os)\b",
        &["host", "runner/policy.rs", "report/files.rs", "cli"],
    );
    assert!(
        all > 3,
        "only {all} reads of the environment found: the scan is broken"
    );
    assert!(
        bad.is_empty(),
        "the environment read elsewhere:\n{}",
        bad.join("\n")
    );
}

/// The stages never print: progress goes out as events (`host::events`,
/// shown by `host::ui`), refusals as errors; the commands (`cli/`,
/// `bisect/`, `patchcheck/`), `host/` and the report files' writer
/// (`report/files.rs`: MISMATCH and REGRESSION lines) say things to the
/// user.
#[test]
fn the_stages_never_print() {
    let (all, bad) = found_outside(
        r"\b(e?println|e?print)!",
        &["host", "cli", "bisect", "patchcheck", "report/files.rs"],
    );
    assert!(all > 3, "only {all} prints found: the scan is broken");
    assert!(
        bad.is_empty(),
        "printing outside the commands:\n{}",
        bad.join("\n")
    );
}

/// No circle between the files of one folder: a file names a sibling by
/// `super::NAME` or by its full `crate::` path; the folder's `mod.rs`, its
/// front door, is left out.
#[test]
fn no_circle_inside_a_folder() {
    let src = root().join("xtask/src");
    let mut edges: std::collections::BTreeMap<PathBuf, Vec<PathBuf>> = Default::default();
    let name = regex::Regex::new(r"\b(?:super|crate(?:::[a-z_]+)+)::([a-z_]+)\b").unwrap();
    let brace = regex::Regex::new(r"\bsuper::\{([^}]*)\}").unwrap();
    for f in files("xtask/src", &|p| ext(p, "rs")) {
        let fname = f.file_name().unwrap().to_str().unwrap();
        if fname == "mod.rs" || fname == "main.rs" {
            continue;
        }
        let dir = f.parent().unwrap();
        let folder = dir
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .replace('/', "::");
        let text = std::fs::read_to_string(&f).unwrap();
        let mut named = Vec::new();
        for l in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
            for c in name.captures_iter(l) {
                let whole = c.get(0).unwrap().as_str();
                let via_super = whole.starts_with("super::");
                let via_path = !folder.is_empty()
                    && whole.strip_prefix("crate::").is_some_and(|p| {
                        p.strip_suffix(&format!("::{}", &c[1])) == Some(folder.as_str())
                    });
                if via_super || via_path {
                    named.push(c[1].to_string());
                }
            }
            for c in brace.captures_iter(l) {
                named.extend(c[1].split(',').map(|s| {
                    s.trim()
                        .split("::")
                        .next()
                        .unwrap()
                        .split_whitespace()
                        .next()
                        .unwrap_or("")
                        .to_string()
                }));
            }
        }
        for n in named {
            let sib = [dir.join(format!("{n}.rs")), dir.join(&n).join("mod.rs")];
            if let Some(s) = sib.iter().find(|s| s.exists() && **s != f) {
                edges.entry(f.clone()).or_default().push(s.clone());
            }
        }
    }
    assert!(
        edges.len() > 10,
        "only {} files name a sibling: the scan is broken",
        edges.len()
    );
    // Depth-first search for a back edge.
    fn visit(
        n: &PathBuf,
        edges: &std::collections::BTreeMap<PathBuf, Vec<PathBuf>>,
        state: &mut std::collections::BTreeMap<PathBuf, u8>,
        path: &mut Vec<PathBuf>,
        found: &mut Vec<String>,
    ) {
        state.insert(n.clone(), 1);
        path.push(n.clone());
        for m in edges.get(n).into_iter().flatten() {
            match state.get(m).copied().unwrap_or(0) {
                0 => visit(m, edges, state, path, found),
                1 => {
                    let from = path.iter().position(|p| p == m).unwrap();
                    let names: Vec<String> = path[from..]
                        .iter()
                        .map(|p| p.display().to_string())
                        .collect();
                    found.push(format!("{} -> {}", names.join(" -> "), m.display()));
                }
                _ => {}
            }
        }
        path.pop();
        state.insert(n.clone(), 2);
    }
    let mut state: std::collections::BTreeMap<PathBuf, u8> = Default::default();
    let mut found = Vec::new();
    for n in edges.keys() {
        if !state.contains_key(n) {
            visit(n, &edges, &mut state, &mut Vec::new(), &mut found);
        }
    }
    assert!(
        found.is_empty(),
        "circles inside a folder:\n{}",
        found.join("\n")
    );
}

/// The folder `dirs` (e.g. `["build", "prepare"]`) as ARCHITECTURE.md
/// names it: the text after the first "`build/`", then after the first
/// "`prepare/`" that follows (or after "`build/prepare/`"). None when a
/// folder is never named.
fn after_folder<'t>(text: &'t str, dirs: &[&str]) -> Option<&'t str> {
    let after = |hay: &'t str, pat: &str| hay.find(pat).map(|i| &hay[i + pat.len()..]);
    let mut rest = text;
    for (i, d) in dirs.iter().enumerate() {
        rest = after(rest, &format!("`{d}/`"))
            .or_else(|| after(text, &format!("`{}/`", dirs[..=i].join("/"))))?;
    }
    Some(rest)
}

/// ARCHITECTURE.md is a codemap that keeps up with the code: at most 250
/// lines, and every file of xtask/src named in it. A top-level file is named
/// as "`main.rs`"; a folder's `mod.rs` by the folder ("`stats/`", nested
/// "`prepare/`" after "`build/`"); `D/F.rs` by "`F`" or "`F.rs`" after the
/// first "`D/`"; `D/E/F.rs` the same after the folder `D/E`, or as "`E/F`"
/// or "`E/F.rs`" after "`D/`".
#[test]
fn the_architecture_names_every_source_file() {
    let text = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    let lines = text.lines().count();
    assert!(
        lines <= 250,
        "ARCHITECTURE.md has {lines} lines; a codemap has at most 250"
    );
    let src = root().join("xtask/src");
    let all = files("xtask/src", &|p| ext(p, "rs"));
    assert!(all.len() > 50, "only {} source files found", all.len());
    let mut missing = Vec::new();
    for f in &all {
        let rel = f.strip_prefix(&src).unwrap().to_string_lossy().to_string();
        let parts: Vec<&str> = rel.split('/').collect();
        let (dirs, file) = parts.split_at(parts.len() - 1);
        let stem = file[0].trim_end_matches(".rs");
        let has = |hay: &str, name: &str| {
            hay.contains(&format!("`{name}`")) || hay.contains(&format!("`{name}.rs`"))
        };
        let named = match (dirs, stem) {
            ([], _) => text.contains(&format!("`{}`", file[0])),
            (_, "mod") => after_folder(&text, dirs).is_some(),
            ([.., last], _) => {
                after_folder(&text, dirs).is_some_and(|t| has(t, stem))
                    || (dirs.len() > 1
                        && after_folder(&text, &dirs[..dirs.len() - 1])
                            .is_some_and(|t| has(t, &format!("{last}/{stem}"))))
            }
        };
        if !named {
            missing.push(format!("xtask/src/{rel}"));
        }
    }
    assert!(
        missing.is_empty(),
        "source files ARCHITECTURE.md does not name:\n{}",
        missing.join("\n")
    );
}

/// Processes one way: every host command runs through `host::proc`
/// (bounded, its own process group, stopped on Ctrl-C, named when it
/// hangs), but QEMU (`boot/qemu.rs`, bounded by the cell's budget) and the
/// interactive guest on the user's terminal (`boot/cell.rs`); xshell's
/// `cmd!` serves a quick local query (the compiler's version, dpkg and
/// apt-cache in the set-up). No other production code runs a `Command`
/// itself.
#[test]
fn processes_start_one_way() {
    let start = regex::Regex::new(r"(^\s*|\))\.(output|status|spawn)\(\)").unwrap();
    let allowed = ["host/proc.rs", "boot/qemu.rs", "boot/cell.rs"];
    let (mut all, mut bad) = (0, Vec::new());
    for (rel, lines) in production_code() {
        for (k, (n, l)) in lines.iter().enumerate() {
            if !start.is_match(l) {
                continue;
            }
            all += 1;
            let chain = &lines[k.saturating_sub(6)..=k];
            let xshell = chain.iter().any(|(_, l)| l.contains("cmd!("));
            if !xshell && !allowed.iter().any(|a| rel.starts_with(a)) {
                bad.push(format!("xtask/src/{}:{n}: {}", rel.display(), l.trim()));
            }
        }
    }
    assert!(
        all >= 3,
        "only {all} process starts found: the scan is broken"
    );
    assert!(
        bad.is_empty(),
        "a process started outside host::proc (use proc::run, checked, stream or query):\n{}",
        bad.join("\n")
    );
}
