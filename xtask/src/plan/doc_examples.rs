//! The matrix.toml examples of the documentation parse with the real
//! parser, so a page that shows what the parser refuses fails the suite:
//! every ```toml block of README.md and docs/*.md is a whole matrix (the
//! files it names checked too), and every `key = value` line (in an
//! indented block, or as inline code) must parse in place of a line with
//! that key in the worked example of docs/matrix-toml.md.

use std::path::{Path, PathBuf};

use crate::plan::files;
use crate::plan::matrix::{Filters, Matrix};

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

/// README.md and docs/*.md.
fn pages() -> Vec<PathBuf> {
    let mut v = vec![root().join("README.md")];
    for e in std::fs::read_dir(root().join("docs")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "md") {
            v.push(p);
        }
    }
    v.sort();
    v
}

/// The ```toml blocks of a page: (first line number, text).
fn toml_blocks(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut open: Option<(usize, bool, String)> = None;
    for (i, line) in text.lines().enumerate() {
        let fence = line.trim_start().strip_prefix("```");
        match (&mut open, fence) {
            (None, Some(lang)) => open = Some((i + 2, lang.trim() == "toml", String::new())),
            (Some((start, is_toml, body)), Some(_)) => {
                if *is_toml {
                    out.push((*start, std::mem::take(body)));
                }
                open = None;
            }
            (Some((_, _, body)), None) => {
                body.push_str(line);
                body.push('\n');
            }
            (None, None) => {}
        }
    }
    out
}

/// The `key = value` lines of a page outside fenced blocks: indented by
/// four spaces, or inline code. (line number, the line).
fn key_lines(text: &str) -> Vec<(usize, String)> {
    let indented = regex::Regex::new(r"^    ([a-z_]+ = \S.*)$").unwrap();
    let inline = regex::Regex::new(r"`([a-z_]+ = [^`]+)`").unwrap();
    let mut out = Vec::new();
    let mut fenced = false;
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        if let Some(c) = indented.captures(line) {
            out.push((i + 1, c[1].to_string()));
        } else {
            for c in inline.captures_iter(line) {
                out.push((i + 1, c[1].to_string()));
            }
        }
    }
    out
}

/// Parses and expands (and, for a whole example, checks its files).
fn load(text: &str, with_files: bool) -> anyhow::Result<()> {
    let m = Matrix::parse("example.toml", text)?;
    if with_files {
        files::check(&m, "example.toml", text, root())?;
    }
    m.cells(&Filters::default())?;
    Ok(())
}

/// `line` in place of each line of `example` with its key, in turn: Ok
/// when it parses in one of them, else the errors.
fn fits(example: &str, line: &str) -> Result<(), Vec<String>> {
    let key = line.split(" = ").next().unwrap();
    let lines: Vec<&str> = example.lines().collect();
    let mut errors = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if !l.trim_start().starts_with(&format!("{key} = ")) {
            continue;
        }
        let mut v: Vec<&str> = lines.clone();
        v[i] = line;
        match load(&(v.join("\n") + "\n"), false) {
            Ok(()) => return Ok(()),
            Err(e) => errors.push(format!("{e:#}")),
        }
    }
    if errors.is_empty() {
        errors.push(format!(
            "the worked example has no `{key} = ` line to try it in"
        ));
    }
    Err(errors)
}

#[test]
fn every_matrix_example_of_the_docs_parses() {
    let reference = std::fs::read_to_string(root().join("docs/matrix-toml.md")).unwrap();
    let blocks = toml_blocks(&reference);
    let (_, example) = blocks
        .last()
        .expect("docs/matrix-toml.md has its worked example in a ```toml block");
    let mut bad = Vec::new();
    let (mut whole, mut single) = (0, 0);
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        let name = page.strip_prefix(root()).unwrap().display().to_string();
        for (line, block) in toml_blocks(&text) {
            whole += 1;
            if let Err(e) = load(&block, true) {
                bad.push(format!("{name}:{line}: the example does not load: {e:#}"));
            }
        }
        for (line, kv) in key_lines(&text) {
            single += 1;
            if let Err(e) = fits(example, &kv) {
                bad.push(format!("{name}:{line}: `{kv}` does not parse: {e:?}"));
            }
        }
    }
    assert!(
        whole >= 1 && single >= 5,
        "{whole} blocks and {single} lines found: the extraction is broken"
    );
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn a_line_the_parser_refuses_is_found() {
    let example = "[run]\narches = [\"x86_64\"]\nconfigs = [\"c\"]\ntests = [\"t\"]\nboots = 2\n\
        [kernel.k]\nsource = { debian = \"linux-source-6.1\" }\n[config.c]\nbase = \"tinyconfig\"\n\
        [test.t]\nkind = \"shell\"\ncommand = \"true\"\n";
    load(example, false).unwrap();
    assert!(fits(example, "boots = 3").is_ok());
    assert!(fits(example, "boots = 0").is_err());
    assert!(fits(example, "source = { debian = \"linux-6.1\" }").is_err());
    assert!(
        fits(example, "memory_mb = 512").is_err(),
        "no such line to try"
    );
    let page = "Text `boots = 6` and\n\n    source = { git = { path = \"/l\", rev = \"v1\" } }\n\n```toml\n[run]\n```\n    cargo xtask list\n";
    assert_eq!(
        key_lines(page),
        [
            (1, "boots = 6".to_string()),
            (
                3,
                "source = { git = { path = \"/l\", rev = \"v1\" } }".to_string()
            )
        ]
    );
    assert_eq!(toml_blocks(page), [(6, "[run]\n".to_string())]);
}
