//! Kernel sources: the pristine base (Debian package, tarball or git tree)
//! imported once as a git repository, and one worktree per variant with the
//! series applied as commits.
//!
//! Switching a worktree between series versions is a `git checkout`, which
//! rewrites only files whose content changed: every other file keeps its
//! mtime, so the persistent O= build dirs rebuild incrementally.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::cache::{sha256_file, Cache, KeyBuilder};
use crate::matrix::SourceSpec;

/// A patch series: the files in order and their combined hash.
#[derive(Debug, Clone)]
pub struct Series {
    pub patches: Vec<PathBuf>,
    pub hash: String,
}

impl Series {
    /// Reads `dir/series` (quilt order) or, without it, `*.patch` sorted.
    pub fn load(name: &str, dir: &Path) -> Result<Series> {
        let order = dir.join("series");
        let patches: Vec<PathBuf> = if order.exists() {
            std::fs::read_to_string(&order)?
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .map(|l| dir.join(l))
                .collect()
        } else {
            let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
                .with_context(|| format!("reading series dir {}", dir.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|e| e == "patch"))
                .collect();
            v.sort();
            v
        };
        if patches.is_empty() {
            bail!("series {name}: no patches in {}", dir.display());
        }
        let mut key = KeyBuilder::new("series");
        for p in &patches {
            let bytes = std::fs::read(p).with_context(|| format!("series {name}: reading {}", p.display()))?;
            key.add("patch", &bytes);
        }
        Ok(Series { patches, hash: key.finish() })
    }
}

/// Why a variant tree could not be made: the patch and the rejected hunk.
#[derive(Debug, Clone)]
pub struct ApplyError {
    pub patch: PathBuf,
    pub detail: String,
}

fn git(dir: &Path) -> Command {
    let mut c = Command::new("git");
    c.arg("-C").arg(dir);
    // Commits made here are ours: a fixed identity, and no user hooks/config.
    c.env("GIT_AUTHOR_NAME", "kmatrix")
        .env("GIT_AUTHOR_EMAIL", "kmatrix@localhost")
        .env("GIT_COMMITTER_NAME", "kmatrix")
        .env("GIT_COMMITTER_EMAIL", "kmatrix@localhost")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null");
    c
}

fn run_ok(mut c: Command, what: &str) -> Result<String> {
    let out = c.output().with_context(|| format!("{what}: could not run git"))?;
    if !out.status.success() {
        bail!("{what} failed: {}{}", String::from_utf8_lossy(&out.stderr), String::from_utf8_lossy(&out.stdout));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The pristine base as a git repository whose HEAD is the base commit.
pub struct Base {
    pub repo: PathBuf,
    pub commit: String,
}

pub fn prepare_base(spec: &SourceSpec, cache: &Cache, log: &mut dyn FnMut(&str)) -> Result<Base> {
    match spec {
        SourceSpec::Debian(pkg) => {
            let version = pkg.trim_start_matches("linux-source-");
            let tarball = PathBuf::from(format!("/usr/src/linux-source-{version}.tar.xz"));
            if !tarball.exists() {
                crate::setup::ensure(&[pkg.clone()])?;
            }
            import_tarball(&tarball, cache, log)
        }
        SourceSpec::Tarball(path) => import_tarball(Path::new(path), cache, log),
        SourceSpec::Git { path, rev } => {
            let commit = run_ok({ let mut c = git(Path::new(path)); c.args(["rev-parse", "--verify", &format!("{rev}^{{commit}}")]); c }, &format!("resolving {rev} in {path}"))?;
            let repo = cache.dir(&["src", &format!("git-{}", &KeyBuilder::new("gitsrc").add("path", path.as_bytes()).finish()[..12])]);
            if !repo.join(".git").exists() {
                log(&format!("cloning {path} (shared objects)"));
                let mut c = Command::new("git");
                c.args(["clone", "--shared", "--no-checkout", "--quiet", path]).arg(&repo);
                run_ok(c, &format!("git clone --shared {path}"))?;
            } else {
                let mut c = git(&repo);
                c.args(["fetch", "--quiet", path, &commit]);
                run_ok(c, &format!("fetching {rev} from {path}"))?;
            }
            Ok(Base { repo, commit })
        }
    }
}

fn import_tarball(tarball: &Path, cache: &Cache, log: &mut dyn FnMut(&str)) -> Result<Base> {
    if !tarball.exists() {
        bail!("kernel source tarball {} does not exist", tarball.display());
    }
    let meta = std::fs::metadata(tarball)?;
    // Hashing 140 MB on every run is wasteful: remember it by size + mtime.
    let stamp = format!("{}-{:?}", meta.len(), meta.modified()?);
    let memo = cache.dir(&["src", "hashes", &KeyBuilder::new("stamp").add("p", tarball.to_string_lossy().as_bytes()).add("s", stamp.as_bytes()).finish()]);
    let sha = match std::fs::read_to_string(&memo) {
        Ok(s) => s.trim().to_string(),
        Err(_) => {
            log(&format!("hashing {}", tarball.display()));
            let s = sha256_file(tarball)?;
            crate::cache::write_atomic(&memo, s.as_bytes())?;
            s
        }
    };
    let id = format!("tar-{}", &sha[..16]);
    let repo = cache.dir(&["src", &id]);
    let done = repo.join(".kmatrix-imported");
    if !done.exists() {
        if repo.exists() {
            log("removing a half-imported source tree");
            std::fs::remove_dir_all(&repo)?;
        }
        std::fs::create_dir_all(&repo)?;
        log(&format!("extracting {}", tarball.display()));
        let st = Command::new("tar")
            .args(["-x", "--strip-components=1", "-f"])
            .arg(tarball)
            .current_dir(&repo)
            .status()
            .context("running tar")?;
        if !st.success() {
            bail!("extracting {} failed", tarball.display());
        }
        log("importing the base tree into git (once)");
        run_ok({ let mut c = git(&repo); c.args(["init", "--quiet"]); c }, "git init")?;
        // -f: the tarball may hold files the tree's .gitignore would hide.
        run_ok({ let mut c = git(&repo); c.args(["add", "-A", "-f"]); c }, "git add")?;
        run_ok({ let mut c = git(&repo); c.args(["commit", "--quiet", "--no-verify", "-m", &format!("base: {}", tarball.display())]); c }, "git commit")?;
        std::fs::write(&done, &sha)?;
    }
    let commit = run_ok({ let mut c = git(&repo); c.args(["rev-parse", "HEAD"]); c }, "git rev-parse")?;
    Ok(Base { repo, commit })
}

/// A checked-out tree for one variant.
pub struct Tree {
    pub path: PathBuf,
    /// Commit of the variant's HEAD.
    pub head: String,
}

/// Ensures `trees/<kernel>/<variant>` holds base + series, touching nothing
/// when it already does.
pub fn prepare_variant(
    base: &Base,
    kernel: &str,
    variant: &str,
    series: Option<&Series>,
    cache: &Cache,
    log: &mut dyn FnMut(&str),
) -> Result<std::result::Result<Tree, ApplyError>> {
    let path = cache.dir(&["trees", kernel, variant]);
    let state_file = cache.dir(&["trees", kernel, &format!("{variant}.state")]);
    let want = format!("{} {}", base.commit, series.map_or("none", |s| s.hash.as_str()));
    if !path.join(".git").exists() {
        std::fs::create_dir_all(path.parent().unwrap())?;
        let _ = std::fs::remove_dir_all(&path);
        run_ok({ let mut c = git(&base.repo); c.args(["worktree", "prune"]); c }, "git worktree prune")?;
        log("checking out the variant tree");
        let mut c = git(&base.repo);
        c.args(["worktree", "add", "--detach", "--force"]).arg(&path).arg(&base.commit);
        run_ok(c, "git worktree add")?;
    }
    let head = || run_ok({ let mut c = git(&path); c.args(["rev-parse", "HEAD"]); c }, "git rev-parse");
    if let Ok(state) = std::fs::read_to_string(&state_file) {
        let mut parts = state.trim().rsplitn(2, ' ');
        let (recorded_head, recorded_want) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        let clean = run_ok({ let mut c = git(&path); c.args(["status", "--porcelain", "--untracked-files=no"]); c }, "git status")?.is_empty();
        if recorded_want == want && head()? == recorded_head && clean {
            return Ok(Ok(Tree { path: path.clone(), head: recorded_head.to_string() }));
        }
    }
    let _ = std::fs::remove_file(&state_file);
    let _ = git(&path).args(["am", "--abort"]).output();
    run_ok({ let mut c = git(&path); c.args(["checkout", "--quiet", "--force", "--detach", &base.commit]); c }, "git checkout base")?;
    if let Some(s) = series {
        for p in &s.patches {
            log(&format!("applying {}", p.file_name().unwrap().to_string_lossy()));
            let abs = std::fs::canonicalize(p).with_context(|| format!("patch {}", p.display()))?;
            let out = git(&path).args(["am", "--quiet", "--keep-cr"]).arg(&abs).output()?;
            if !out.status.success() {
                let _ = git(&path).args(["am", "--abort"]).output();
                let detail = explain_apply_failure(&path, &abs, &String::from_utf8_lossy(&out.stderr), &String::from_utf8_lossy(&out.stdout));
                return Ok(Err(ApplyError { patch: p.clone(), detail }));
            }
        }
    }
    let h = head()?;
    crate::cache::write_atomic(&state_file, format!("{want} {h}").as_bytes())?;
    Ok(Ok(Tree { path, head: h }))
}

/// `git am` says little; `git apply --check -v` names the file and shows the
/// hunk it could not place.
fn explain_apply_failure(tree: &Path, patch: &Path, stderr: &str, stdout: &str) -> String {
    let verbose = git(tree).args(["apply", "--check", "-v"]).arg(patch).output();
    let mut lines: Vec<String> = Vec::new();
    if let Ok(v) = verbose {
        let text = String::from_utf8_lossy(&v.stderr).to_string() + &String::from_utf8_lossy(&v.stdout);
        lines.extend(text.lines().filter(|l| !l.starts_with("Checking patch")).take(40).map(str::to_string));
    }
    if lines.is_empty() {
        lines.extend(stderr.lines().chain(stdout.lines()).take(20).map(str::to_string));
    }
    lines.join("\n")
}

/// Identity of everything the kernel build reads: the tree minus tools/.
/// A patch that only touches tools/ leaves it unchanged, so it needs no new
/// kernel.
pub fn kernel_tree_id(tree: &Path) -> Result<String> {
    let listing = run_ok({ let mut c = git(tree); c.args(["ls-tree", "HEAD"]); c }, "git ls-tree")?;
    let kept: Vec<&str> = listing.lines().filter(|l| !l.ends_with("\ttools")).collect();
    Ok(KeyBuilder::new("kernel-tree").add("ls-tree", kept.join("\n").as_bytes()).finish())
}

/// Identity of one subdirectory's content (e.g. a selftest dir).
pub fn subtree_id(tree: &Path, sub: &str) -> Result<String> {
    run_ok({ let mut c = git(tree); c.args(["rev-parse", &format!("HEAD:{sub}")]); c }, &format!("git rev-parse HEAD:{sub}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, SystemTime};

    fn sh(dir: &Path, script: &str) {
        let st = Command::new("sh").arg("-ec").arg(script).current_dir(dir).env("GIT_CONFIG_GLOBAL", "/dev/null").status().unwrap();
        assert!(st.success(), "{script}");
    }

    /// A tiny "kernel": a base commit, and two one-patch series made with
    /// git format-patch, one touching kernel/ and one touching only tools/.
    fn fixture(root: &Path) -> (Base, Series, Series) {
        let repo = root.join("src");
        std::fs::create_dir_all(repo.join("kernel")).unwrap();
        std::fs::create_dir_all(repo.join("tools")).unwrap();
        sh(
            &repo,
            "git init -q; git config user.email t@t; git config user.name t;
             echo a > kernel/seccomp.c; echo b > kernel/fork.c; echo c > tools/bench.c;
             git add -A; git commit -qm base; git tag base;
             echo a2 > kernel/seccomp.c; git commit -qam k; git format-patch -q -1 -o ../k;
             git reset -q --hard base; echo c2 > tools/bench.c; git commit -qam t; git format-patch -q -1 -o ../t;
             git reset -q --hard base",
        );
        let commit = String::from_utf8(Command::new("git").args(["-C"]).arg(&repo).args(["rev-parse", "base"]).output().unwrap().stdout).unwrap();
        let base = Base { repo, commit: commit.trim().to_string() };
        (base, Series::load("k", &root.join("k")).unwrap(), Series::load("t", &root.join("t")).unwrap())
    }

    /// An empty directory of this test process's own.
    fn scratch(name: &str) -> PathBuf {
        let root = std::env::temp_dir().join(format!("kmatrix-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        root
    }

    #[test]
    fn tools_only_series_keeps_the_kernel_id_and_switching_keeps_mtimes() {
        let root = scratch("source");
        let (base, k, t) = fixture(&root);
        let cache = Cache::open(root.join("cache"), false).unwrap();
        let mut log = |_: &str| {};
        let tree = prepare_variant(&base, "6.1", "v", None, &cache, &mut log).unwrap().ok().unwrap();
        let base_id = kernel_tree_id(&tree.path).unwrap();
        let fork = tree.path.join("kernel/fork.c");
        let old = SystemTime::now() - Duration::from_secs(3600);
        std::fs::File::options().write(true).open(&fork).unwrap().set_modified(old).unwrap();

        // Same variant dir, now with the tools-only series: same kernel id.
        let tree = prepare_variant(&base, "6.1", "v", Some(&t), &cache, &mut log).unwrap().ok().unwrap();
        assert_eq!(kernel_tree_id(&tree.path).unwrap(), base_id);
        assert_eq!(std::fs::read_to_string(tree.path.join("tools/bench.c")).unwrap(), "c2\n");
        // Switched to the kernel series: new id, untouched files keep mtimes.
        let tree = prepare_variant(&base, "6.1", "v", Some(&k), &cache, &mut log).unwrap().ok().unwrap();
        assert_ne!(kernel_tree_id(&tree.path).unwrap(), base_id);
        assert_eq!(std::fs::read_to_string(tree.path.join("kernel/seccomp.c")).unwrap(), "a2\n");
        assert_eq!(std::fs::metadata(&fork).unwrap().modified().unwrap(), old);
        // Unchanged inputs: nothing is touched at all.
        let before = std::fs::metadata(tree.path.join("kernel/seccomp.c")).unwrap().modified().unwrap();
        prepare_variant(&base, "6.1", "v", Some(&k), &cache, &mut log).unwrap().ok().unwrap();
        assert_eq!(std::fs::metadata(tree.path.join("kernel/seccomp.c")).unwrap().modified().unwrap(), before);
        drop(cache);
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_patch_that_does_not_apply_names_the_file() {
        let root = scratch("apply");
        let (base, k, _) = fixture(&root);
        let text = std::fs::read_to_string(&k.patches[0]).unwrap().replace("-a\n", "-zzz\n");
        std::fs::write(&k.patches[0], text).unwrap();
        let broken = Series::load("k", &root.join("k")).unwrap();
        let cache = Cache::open(root.join("cache"), false).unwrap();
        let e = prepare_variant(&base, "6.1", "v", Some(&broken), &cache, &mut |_| {}).unwrap().err().expect("must not apply");
        assert!(e.patch.ends_with("0001-k.patch"), "{}", e.patch.display());
        assert!(e.detail.contains("kernel/seccomp.c"), "{}", e.detail);
        drop(cache);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
