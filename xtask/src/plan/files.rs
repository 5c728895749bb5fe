//! The files matrix.toml names, checked when it is loaded for a run: every
//! series directory (with its patches), tarball, git tree, config fragment
//! and guest source exists, so a misspelt path is refused with its
//! `FILE:LINE:COL` before any work rather than failing a cell after the
//! source step. Paths resolve against the harness's checkout, as the
//! runner resolves them. Reads the file system (metadata, a series
//! directory's listing); runs nothing.

use std::path::Path;

use anyhow::Result;

use crate::plan::matrix::{Matrix, SourceSpec, TestKind};
use crate::plan::spans::{keys, Seg, Spans};

/// What a path is, as far as the checks care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Missing,
    File,
    Dir,
}

/// What `p` (relative to `root` unless absolute) is.
pub fn kind(root: &Path, p: &str) -> Kind {
    match std::fs::metadata(root.join(p)) {
        Ok(m) if m.is_dir() => Kind::Dir,
        Ok(_) => Kind::File,
        Err(_) => Kind::Missing,
    }
}

/// Every path of `m` (parsed from `text`, read from `path`) names what it
/// should under `root`; the first that does not is the error.
pub fn check(m: &Matrix, path: &str, text: &str, root: &Path) -> Result<()> {
    let at = Spans::new(path, text);
    let shown = |p: &str| -> String {
        if Path::new(p).is_absolute() {
            p.to_string()
        } else {
            format!("{p} (relative to the kmatrix checkout {})", root.display())
        }
    };
    let want = |keys: &[Seg], p: &str, what: &str, wanted: Kind| -> Result<()> {
        let found = kind(root, p);
        if found == wanted {
            return Ok(());
        }
        let is = match found {
            Kind::Missing => "does not exist",
            Kind::File => "is a file",
            Kind::Dir => "is a directory",
        };
        Err(at.err_at(keys, format!("{what} {} {is}, expected {what}", shown(p))))
    };
    for (name, k) in &m.kernel {
        match k.source.get_ref() {
            SourceSpec::Tarball(p) => {
                want(
                    keys!["kernel", name, "source", "tarball"],
                    p,
                    "a kernel tarball",
                    Kind::File,
                )?;
            }
            SourceSpec::Git { path: p, .. } => {
                let here = keys!["kernel", name, "source", "git", "path"];
                want(here, p, "a git tree", Kind::Dir)?;
                let tree = root.join(p);
                // A work tree, or a bare repository.
                if !tree.join(".git").exists() && !tree.join("HEAD").is_file() {
                    return Err(at.err_at(
                        here,
                        format!("{} is not a git tree, expected a git checkout", shown(p)),
                    ));
                }
            }
            SourceSpec::Debian { .. } | SourceSpec::Download { .. } => {}
        }
    }
    for (name, s) in m.series.iter().filter(|(_, s)| s.take.is_none()) {
        let here = keys!["series", name, "dir"];
        if root.join(&s.dir).is_file() {
            crate::plan::series::count(name, &root.join(&s.dir))
                .map_err(|e| at.err_at(here, format!("{e:#}")))?;
            continue;
        }
        want(here, &s.dir, "a series directory", Kind::Dir)?;
        crate::plan::series::files(name, &root.join(&s.dir))
            .map_err(|e| at.err_at(here, format!("{e:#}")))?;
    }
    // A kernel's NAME@K: K patches at most.
    for (kname, k) in &m.kernel {
        for (i, v) in k.series.iter().enumerate() {
            let Some((series, take)) = crate::plan::matrix::split_prefix(v.get_ref()) else {
                continue;
            };
            let dir = root.join(&m.series[series].dir);
            let n = crate::plan::series::count(series, &dir).unwrap_or(0);
            if take > n {
                return Err(at.err_at(
                    keys!["kernel", kname, "series", i],
                    format!(
                        "`{}` asks for the first {take} patches of series {series}, which has {n}: expected {series}@1..={n}",
                        v.get_ref()
                    ),
                ));
            }
        }
    }
    for (name, c) in &m.config {
        for (i, f) in c.fragments.iter().enumerate() {
            want(
                keys!["config", name, "fragments", i],
                f,
                "a config fragment",
                Kind::File,
            )?;
        }
        for (a, frags) in &c.arch_fragments {
            for (i, f) in frags.iter().enumerate() {
                want(
                    keys!["config", name, "arch_fragments", a.get_ref(), i],
                    f,
                    "a config fragment",
                    Kind::File,
                )?;
            }
        }
    }
    for (name, t) in &m.test {
        if let (TestKind::Bench, Some(src)) = (t.kind, &t.source) {
            want(
                keys!["test", name, "source"],
                src,
                "a guest program source",
                Kind::File,
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> &'static Path {
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
    }

    fn check_text(text: &str) -> Result<()> {
        let m = Matrix::parse("matrix.toml", text).unwrap();
        check(&m, "matrix.toml", text, root())
    }

    /// The matrices of the repository name only files it has.
    #[test]
    fn every_matrix_of_the_repository_names_existing_files() {
        for f in [
            "matrix.toml",
            "tests/checks/matrix.toml",
            "tests/planted/matrix.toml",
            "tests/bisect/matrix.toml",
            "tests/faults/faults.toml",
        ] {
            let text = std::fs::read_to_string(root().join(f)).unwrap();
            let m = Matrix::parse(f, &text).unwrap();
            check(&m, f, &text, root()).unwrap();
        }
    }

    #[test]
    fn a_missing_path_is_refused_where_it_is_written() {
        let text = std::fs::read_to_string(root().join("matrix.toml")).unwrap();
        let cases = [
            (
                "dir = \"kernels/series/mm-cid-work\"",
                "dir = \"kernels/series/mm-cid-wrok\"",
                "a series directory kernels/series/mm-cid-wrok (relative to the kmatrix checkout",
            ),
            (
                "\"kernels/configs/wide.config\"]",
                "\"kernels/configs/wide.conf\"]",
                "a config fragment kernels/configs/wide.conf",
            ),
            (
                "arm64 = [\"kernels/configs/arm64.config\"] }\nsmp",
                "arm64 = [\"kernels/configs/arm.config\"] }\nsmp",
                "a config fragment kernels/configs/arm.config",
            ),
            (
                "source = \"rootfs/guest/mm_cid_gaps.c\"",
                "source = \"rootfs/guest/mm_cid_gap.c\"",
                "a guest program source rootfs/guest/mm_cid_gap.c",
            ),
            (
                "source = { debian = \"linux-source-6.12\", version = \"6.12.117-1~deb12u1\" }",
                "source = { tarball = \"/nonexistent/linux.tar.xz\" }",
                "a kernel tarball /nonexistent/linux.tar.xz does not exist",
            ),
            (
                "source = { debian = \"linux-source-6.12\", version = \"6.12.117-1~deb12u1\" }",
                "source = { git = { path = \"/nonexistent/linux\", rev = \"v6.12\" } }",
                "a git tree /nonexistent/linux does not exist",
            ),
            (
                "source = { debian = \"linux-source-6.12\", version = \"6.12.117-1~deb12u1\" }",
                "source = { git = { path = \"kernels\", rev = \"v6.12\" } }",
                "is not a git tree",
            ),
            (
                "dir = \"kernels/series/mm-cid-work\"",
                "dir = \"kernels/configs\"",
                "series mm-cid-work: no patches in",
            ),
            (
                "dir = \"kernels/series/mm-cid-work\"",
                "dir = \"matrix.toml\"",
                "matrix.toml: no patch in this mbox (no message with a [PATCH] subject and a diff)",
            ),
            (
                "series = [\"mm-cid-work@1\",",
                "series = [\"mm-cid-work@3\",",
                "matrix.toml:60:11: `mm-cid-work@3` asks for the first 3 patches of series mm-cid-work, which has 2: expected mm-cid-work@1..=2",
            ),
        ];
        for (from, to, says) in cases {
            assert!(text.contains(from), "{from}");
            let bad = text.replacen(from, to, 1);
            let e = check_text(&bad).unwrap_err().to_string();
            // The line the new value is on, in the file.
            let line = bad[..bad.find(to).unwrap()].matches('\n').count() + 1;
            assert!(
                e.starts_with(&format!("matrix.toml:{line}:")) && e.contains(says),
                "{to}: {e}"
            );
        }
        // A tree with a .git directory is a git tree.
        let ok = text.replacen(
            "source = { debian = \"linux-source-6.12\", version = \"6.12.117-1~deb12u1\" }",
            "source = { git = { path = \".\", rev = \"HEAD\" } }",
            1,
        );
        if root().join(".git").exists() {
            check_text(&ok).unwrap();
        }
    }
}
