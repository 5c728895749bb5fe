//! Golden files for the unit tests: expected outputs checked in under
//! `tests/fixtures/golden/`, compared byte for byte.
//!
//! When an output changes on purpose, regenerate the files with
//!
//!     KMATRIX_BLESS=1 cargo test --bin xtask
//!
//! (the tests then write what they produce instead of comparing), read the
//! change with `git diff tests/fixtures/golden/`, and commit it with the
//! code that caused it.

use std::path::PathBuf;

/// The checked-in file `tests/fixtures/golden/<name>`.
pub fn path(name: &str) -> PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .join("tests/fixtures/golden")
        .join(name)
}

fn blessing() -> bool {
    std::env::var("KMATRIX_BLESS").is_ok_and(|v| !v.is_empty() && v != "0")
}

/// Compares `actual` with the golden file `name`, or writes it there under
/// `KMATRIX_BLESS=1`. A difference fails the test naming the file, where the
/// outputs first differ, and where this run's output was left for a diff.
#[track_caller]
pub fn check(name: &str, actual: &[u8]) {
    let golden = path(name);
    if blessing() {
        std::fs::create_dir_all(golden.parent().unwrap()).unwrap();
        std::fs::write(&golden, actual)
            .unwrap_or_else(|e| panic!("writing {}: {e}", golden.display()));
        eprintln!("KMATRIX_BLESS: wrote {}", golden.display());
        return;
    }
    let expected = match std::fs::read(&golden) {
        Ok(b) => b,
        Err(e) => panic!(
            "golden file {} unreadable ({e}): create it with `KMATRIX_BLESS=1 cargo test --bin xtask`",
            golden.display()
        ),
    };
    if expected == actual {
        return;
    }
    let out = std::env::temp_dir()
        .join(format!("kmatrix-golden-{}", std::process::id()))
        .join(name);
    std::fs::create_dir_all(out.parent().unwrap()).unwrap();
    std::fs::write(&out, actual).unwrap();
    let at = expected
        .iter()
        .zip(actual)
        .position(|(a, b)| a != b)
        .unwrap_or(expected.len().min(actual.len()));
    let line = 1 + expected[..at].iter().filter(|&&b| b == b'\n').count();
    let is_text = |b: &[u8]| std::str::from_utf8(b).is_ok() && !b.contains(&0);
    let text = is_text(&expected) && is_text(actual);
    // The differing line of a text; 16 bytes from the difference, in hex, of
    // anything else (a cpio archive holds NULs and file data).
    let show = |b: &[u8]| {
        if text {
            let s = String::from_utf8_lossy(b);
            s.lines()
                .nth(line - 1)
                .unwrap_or("<end of file>")
                .to_string()
        } else {
            let w = &b[at.min(b.len())..(at + 16).min(b.len())];
            w.iter()
                .map(|x| format!("{x:02x}"))
                .collect::<Vec<_>>()
                .join(" ")
        }
    };
    panic!(
        "output differs from golden file {}\n  \
         {} bytes expected, {} produced; first difference at byte {at}{}\n  \
         expected: {}\n  \
         produced: {}\n  \
         this run's output: {} (diff it against the golden file)\n  \
         if the change is intended: KMATRIX_BLESS=1 cargo test --bin xtask, then review git diff",
        golden.display(),
        expected.len(),
        actual.len(),
        if text {
            format!(" (line {line})")
        } else {
            String::new()
        },
        show(&expected),
        show(actual),
        out.display()
    );
}

/// A file of the repository, by its path from the top (tests read the
/// checked-in matrix.toml and fixtures through this).
pub fn repo_file(rel: &str) -> PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .join(rel)
}
