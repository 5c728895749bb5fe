//! Kernel sources: the pristine base (Debian package, tarball or git tree)
//! imported once as a git repository; each variant (base + a series) is a
//! commit in it, made once by `git am` and kept under `refs/kmatrix/`.
//!
//! Two worktrees per kernel: `build`, switched in place to the variant a
//! cell builds (a `git checkout` rewrites only files whose content differs;
//! build::slots then sets every file's mtime for the O= dir about to build,
//! so it rebuilds only what differs from its own last build), and `work`, where series are applied and selftests and
//! headers are taken from, so neither disturbs the build tree's mtimes.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::build::series::Series;
use crate::host::cache::{sha256_file, Cache, KeyBuilder};
use crate::host::git::{git, git_ok, run_ok};
use crate::host::proc::{self, limit};
use crate::plan::matrix::SourceSpec;

/// Why a variant tree could not be made: the patch and the rejected hunk.
#[derive(Debug, Clone)]
pub struct ApplyError {
    pub patch: PathBuf,
    pub detail: String,
}

/// The pristine base as a git repository whose HEAD is the base commit.
pub struct Base {
    pub repo: PathBuf,
    pub commit: String,
}

/// Where a base comes from, once fetched: a tarball on this host, or a
/// git tree's commit.
pub enum Located {
    Tarball(PathBuf),
    Git { path: String, commit: String },
}

/// The base's bytes made local: a download fetched and checked against its
/// SHA-256, a pinned Debian package fetched, a tarball or a git revision
/// found. Cached, so a run checks every kernel it needs this way before any
/// cell starts (a source that cannot be had stops the run there), and the
/// cell's source phase finds it again at no cost.
pub fn locate(spec: &SourceSpec, cache: &Cache, log: &mut dyn FnMut(&str)) -> Result<Located> {
    match spec {
        SourceSpec::Debian {
            package,
            version,
            suite,
        } => {
            let tarball_in = |root: &Path| {
                root.join(format!(
                    "usr/src/linux-source-{}.tar.xz",
                    package.trim_start_matches("linux-source-")
                ))
            };
            let host = tarball_in(Path::new("/"));
            let installed = crate::host::debian::installed_version(package);
            let tarball = match version {
                Some(v) if installed.as_deref() == Some(v.as_str()) && host.exists() => host,
                Some(v) => {
                    let root = crate::host::debian::fetch(package, v, suite, cache, log)?;
                    let t = tarball_in(&root);
                    if !t.exists() {
                        bail!("{package} {v} holds no {}", t.display());
                    }
                    t
                }
                None => {
                    if !host.exists() {
                        crate::host::setup::ensure(std::slice::from_ref(package), false)?;
                    }
                    note_unpinned(package, installed.as_deref(), cache, log);
                    host
                }
            };
            Ok(Located::Tarball(tarball))
        }
        SourceSpec::Tarball(path) => {
            let p = Path::new(path);
            if !p.is_file() {
                bail!("source tarball {path}: no such file");
            }
            Ok(Located::Tarball(p.to_path_buf()))
        }
        SourceSpec::Download {
            url,
            sha256,
            release,
        } => {
            // A release comes from kernel.org, or the mirror standing in for it.
            let url = &match release {
                Some(_) => crate::host::download::mirrored(url),
                None => url.clone(),
            };
            let sum = match sha256 {
                Some(s) => s.clone(),
                None => release_sum(url, release.as_deref().unwrap_or(url), log)?,
            };
            Ok(Located::Tarball(crate::host::download::fetch(
                url, &sum, cache, log,
            )?))
        }
        SourceSpec::Git { path, rev } => {
            let commit = run_ok(
                {
                    let mut c = git(Path::new(path));
                    c.args(["rev-parse", "--verify", &format!("{rev}^{{commit}}")]);
                    c
                },
                &format!("resolving {rev} in {path}"),
            )?;
            Ok(Located::Git {
                path: path.clone(),
                commit,
            })
        }
    }
}

pub fn prepare_base(spec: &SourceSpec, cache: &Cache, log: &mut dyn FnMut(&str)) -> Result<Base> {
    match locate(spec, cache, log)? {
        Located::Tarball(t) => import_tarball(&t, cache, log),
        Located::Git { path, commit } => {
            let repo = cache.dir(&[
                "src",
                &format!(
                    "git-{}",
                    &KeyBuilder::new("gitsrc")
                        .add("path", path.as_bytes())
                        .finish()[..12]
                ),
            ]);
            if !repo.join(".git").exists() {
                log(&format!("cloning {path} (shared objects)"));
                let mut c = Command::new("git");
                c.args(["clone", "--shared", "--no-checkout", "--quiet", &path])
                    .arg(&repo);
                run_ok(c, &format!("git clone --shared {path}"))?;
            } else {
                let mut c = git(&repo);
                c.args(["fetch", "--quiet", &path, &commit]);
                run_ok(c, &format!("fetching {commit} from {path}"))?;
            }
            Ok(Base { repo, commit })
        }
    }
}

/// The SHA-256 kernel.org lists for a release tarball, from the
/// `sha256sums.asc` beside it (its signature is not checked: pin `sha256`
/// in matrix.toml to check against a sum you trust).
fn release_sum(url: &str, release: &str, log: &mut dyn FnMut(&str)) -> Result<String> {
    let (dir, name) = url
        .rsplit_once('/')
        .context("a release URL has a directory")?;
    let list_url = format!("{dir}/sha256sums.asc");
    let list = crate::host::download::text(&list_url)
        .with_context(|| format!("release {release}: its checksum list"))?;
    let sum = crate::host::download::sum_for(&list, name)
        .with_context(|| format!("release {release}: {list_url} lists no {name}"))?;
    log(&format!(
        "release {release}: SHA-256 {sum} from {list_url} (pin it as sha256 in matrix.toml)"
    ));
    Ok(sum)
}

/// An unpinned Debian source is whatever the host installed: say which
/// version, and warn when it is not the one the last run on this host used.
fn note_unpinned(package: &str, now: Option<&str>, cache: &Cache, log: &mut dyn FnMut(&str)) {
    let Some(now) = now else {
        return;
    };
    let memo = cache.dir(&["src", "debian-last", package]);
    let last = std::fs::read_to_string(&memo).ok();
    match last.as_deref().map(str::trim) {
        Some(before) if before != now => log(&format!(
            "warning: {package} is {now} on this host, {before} at the last run: a different kernel (pin it with version = \"{before}\" in the source)"
        )),
        Some(_) => {}
        None => log(&format!(
            "{package} {now}, as installed on this host (version = \"{now}\" pins it)"
        )),
    }
    if let Some(dir) = memo.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let _ = crate::host::cache::write_atomic(&memo, now.as_bytes());
}

fn import_tarball(tarball: &Path, cache: &Cache, log: &mut dyn FnMut(&str)) -> Result<Base> {
    if !tarball.exists() {
        bail!("kernel source tarball {} does not exist", tarball.display());
    }
    let meta = std::fs::metadata(tarball)?;
    // Hashing 140 MB on every run is wasteful: remember it by size + mtime.
    let stamp = format!("{}-{:?}", meta.len(), meta.modified()?);
    let memo = cache.dir(&[
        "src",
        "hashes",
        &KeyBuilder::new("stamp")
            .add("p", tarball.to_string_lossy().as_bytes())
            .add("s", stamp.as_bytes())
            .finish(),
    ]);
    let sha = match std::fs::read_to_string(&memo) {
        Ok(s) => s.trim().to_string(),
        Err(_) => {
            log(&format!("hashing {}", tarball.display()));
            let s = sha256_file(tarball)?;
            crate::host::cache::write_atomic(&memo, s.as_bytes())?;
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
        let mut tar = Command::new("tar");
        tar.args(["-x", "--strip-components=1", "-f"])
            .arg(tarball)
            .current_dir(&repo);
        proc::checked(
            &format!("extracting {}", tarball.display()),
            tar,
            limit::scaled(limit::TAR),
        )?;
        log("importing the base tree into git (once)");
        run_ok(
            {
                let mut c = git(&repo);
                c.args(["init", "--quiet"]);
                c
            },
            "git init",
        )?;
        // -f: the tarball may hold files the tree's .gitignore would hide.
        run_ok(
            {
                let mut c = git(&repo);
                c.args(["add", "-A", "-f"]);
                c
            },
            "git add",
        )?;
        run_ok(
            {
                let mut c = git(&repo);
                c.args([
                    "commit",
                    "--quiet",
                    "--no-verify",
                    "-m",
                    &format!("base: {}", tarball.display()),
                ]);
                c
            },
            "git commit",
        )?;
        std::fs::write(&done, &sha)?;
    }
    let commit = run_ok(
        {
            let mut c = git(&repo);
            c.args(["rev-parse", "HEAD"]);
            c
        },
        "git rev-parse",
    )?;
    Ok(Base { repo, commit })
}

/// Whether the worktree at `path` is one of `repo`'s.
fn belongs_to(path: &Path, repo: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(path.join(".git")) else {
        return false;
    };
    let Some(gitdir) = text.trim().strip_prefix("gitdir: ") else {
        return false;
    };
    match (
        std::fs::canonicalize(gitdir),
        std::fs::canonicalize(repo.join(".git/worktrees")),
    ) {
        (Ok(g), Ok(w)) => g.starts_with(w),
        _ => false,
    }
}

/// The commit `rev` names in a local git tree (read only).
pub fn resolve_rev(tree: &Path, rev: &str) -> Result<String> {
    git_ok(
        tree,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("{rev}^{{commit}}"),
        ],
        &format!("resolving {rev} in {}", tree.display()),
    )
    .map_err(|_| anyhow::anyhow!("{}: `{rev}` names no commit", tree.display()))
}

/// The commits of `range` (`A..B`) in the user's tree as a series: the
/// patch files are written once under the cache by `git format-patch`
/// (nothing is written into the tree). Returns the base commit (A) and
/// the directory.
pub fn export_range(tree: &Path, range: &str, cache: &Cache) -> Result<(String, PathBuf)> {
    let Some((a, b)) = range.split_once("..") else {
        bail!("--range {range}: expected BASE..TIP, e.g. v6.1..my-branch");
    };
    let (a, b) = (
        if a.is_empty() { "HEAD" } else { a },
        if b.is_empty() { "HEAD" } else { b },
    );
    let base = resolve_rev(tree, a)?;
    let tip = resolve_rev(tree, b)?;
    let mut anc = git(tree);
    anc.args(["merge-base", "--is-ancestor", &base, &tip]);
    if !proc::run(anc, limit::scaled(limit::GIT))?.success() {
        bail!(
            "--range {range}: {a} is not an ancestor of {b} in {}",
            tree.display()
        );
    }
    let merges = git_ok(
        tree,
        &["rev-list", "--merges", &format!("{base}..{tip}")],
        "git rev-list --merges",
    )?;
    if !merges.is_empty() {
        bail!(
            "--range {range} has merge commits ({}): a series is a line of patches; bisect merges with `git bisect run cargo xtask bisect-step`",
            merges.lines().next().unwrap_or_default()
        );
    }
    let count = git_ok(
        tree,
        &["rev-list", "--count", &format!("{base}..{tip}")],
        "git rev-list --count",
    )?;
    if count.trim() == "0" {
        bail!("--range {range} has no commits");
    }
    let key = KeyBuilder::new("range")
        .add("tree", tree.display().to_string().as_bytes())
        .add("base", base.as_bytes())
        .add("tip", tip.as_bytes())
        .finish();
    let dir = cache.dir(&["series", &format!("range-{key}")]);
    if !dir.join("series").exists() {
        let tmp = cache.dir(&["series", &format!("range-{key}.tmp")]);
        let _ = std::fs::remove_dir_all(&tmp);
        std::fs::create_dir_all(&tmp)?;
        let mut fp = git(tree);
        fp.args(["format-patch", "--quiet", "--no-signature", "-o"])
            .arg(&tmp)
            .arg(format!("{base}..{tip}"));
        run_ok(fp, &format!("git format-patch {range}"))?;
        let mut names: Vec<String> = std::fs::read_dir(&tmp)?
            .flatten()
            .map(|e| e.file_name().to_string_lossy().to_string())
            .filter(|n| n.ends_with(".patch"))
            .collect();
        names.sort();
        std::fs::write(tmp.join("series"), names.join("\n") + "\n")?;
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::rename(&tmp, &dir)?;
    }
    Ok((base, dir))
}

/// A plain git checkout of `commit` at `dest` (branch `kmatrix`, tag
/// `kmatrix-base` at `base`), cloned from the cache's repo with its own
/// objects: a tree the user owns.
pub fn export_tree(repo: &Path, base: &str, commit: &str, dest: &Path) -> Result<()> {
    let mut c = Command::new("git");
    c.args(["clone", "--quiet", "--no-checkout"])
        .arg(repo)
        .arg(dest);
    run_ok(c, &format!("git clone {}", repo.display()))?;
    let r = dest.display().to_string();
    git_ok(
        dest,
        &["fetch", "--quiet", &repo.display().to_string(), commit],
        "git fetch",
    )?;
    git_ok(dest, &["tag", "kmatrix-base", base], "git tag")?;
    git_ok(
        dest,
        &["checkout", "--quiet", "-b", "kmatrix", commit],
        &format!("git checkout in {r}"),
    )?;
    Ok(())
}

/// The two worktrees of one kernel (see the module doc).
pub struct Trees {
    pub repo: PathBuf,
    pub base_commit: String,
    pub build: PathBuf,
    pub work: PathBuf,
}

fn ensure_worktree(
    repo: &Path,
    path: &Path,
    commit: &str,
    log: &mut dyn FnMut(&str),
) -> Result<()> {
    if path.join(".git").exists() {
        if belongs_to(path, repo) {
            return Ok(());
        }
        // Another source of the same kernel name (a different --tree):
        // this worktree is of another repository. Made anew.
        log(&format!(
            "{} belongs to another source: replacing it",
            path.display()
        ));
    }
    std::fs::create_dir_all(path.parent().unwrap())?;
    let _ = std::fs::remove_dir_all(path);
    git_ok(repo, &["worktree", "prune"], "git worktree prune")?;
    log(&format!("checking out {}", path.display()));
    let mut c = git(repo);
    c.args(["worktree", "add", "--detach", "--force"])
        .arg(path)
        .arg(commit);
    run_ok(c, "git worktree add")?;
    Ok(())
}

impl Trees {
    pub fn open(
        base: &Base,
        kernel: &str,
        cache: &Cache,
        log: &mut dyn FnMut(&str),
    ) -> Result<Trees> {
        let t = Trees {
            repo: base.repo.clone(),
            base_commit: base.commit.clone(),
            build: cache.dir(&["trees", kernel, "build"]),
            work: cache.dir(&["trees", kernel, "work"]),
        };
        if remove_old_layout(cache, kernel, log) {
            let _ = git_ok(&t.repo, &["worktree", "prune"], "git worktree prune");
        }
        ensure_worktree(&t.repo, &t.build, &t.base_commit, log)?;
        ensure_worktree(&t.repo, &t.work, &t.base_commit, log)?;
        Ok(t)
    }

    /// The commit of base + `series` (None: the base itself). Applied once
    /// in the work tree with `git am` (one commit per patch, so every prefix
    /// of the series is a commit too) and remembered as a ref.
    pub fn variant_commit(
        &self,
        series: Option<&Series>,
        log: &mut dyn FnMut(&str),
    ) -> Result<std::result::Result<String, ApplyError>> {
        let Some(s) = series else {
            return Ok(Ok(self.base_commit.clone()));
        };
        let refname = |hash: &str| {
            let id = KeyBuilder::new("variant")
                .add("base", self.base_commit.as_bytes())
                .add("series", hash.as_bytes())
                .finish();
            format!("refs/kmatrix/variants/{}", &id[..24])
        };
        let known = |hash: &str| {
            git_ok(
                &self.repo,
                &[
                    "rev-parse",
                    "--verify",
                    "--quiet",
                    &format!("{}^{{commit}}", refname(hash)),
                ],
                "git rev-parse",
            )
            .ok()
        };
        if let Some(c) = known(&s.hash) {
            return Ok(Ok(c));
        }
        // The longest prefix already applied (a sweep or bisect step, or a
        // series that grew by a patch) is the starting point.
        let (done, start) = (1..s.patches.len())
            .rev()
            .find_map(|i| known(&s.prefix_hashes[i - 1]).map(|c| (i, c)))
            .unwrap_or((0, self.base_commit.clone()));
        // An `am` interrupted in an earlier run would refuse the next one.
        self.am_abort();
        checkout(&self.work, &start)?;
        for (i, p) in s.patches.iter().enumerate().skip(done) {
            log(&format!(
                "applying {}",
                p.file_name().unwrap().to_string_lossy()
            ));
            let abs = std::fs::canonicalize(p).with_context(|| format!("patch {}", p.display()))?;
            let mut am = git(&self.work);
            am.args(["am", "--quiet", "--keep-cr"]).arg(&abs);
            let out = proc::run(am, limit::scaled(limit::GIT))?;
            if !out.success() {
                self.am_abort();
                let mut detail = explain_apply_failure(&self.work, &abs, &out.stderr, &out.stdout);
                if out.timed_out {
                    detail = format!("git am {}\n{detail}", out.describe());
                }
                return Ok(Err(ApplyError {
                    patch: p.clone(),
                    detail,
                }));
            }
            // Every prefix is remembered: its commit is a variant too.
            let head = git_ok(&self.work, &["rev-parse", "HEAD"], "git rev-parse HEAD")?;
            git_ok(
                &self.repo,
                &["update-ref", &refname(&s.prefix_hashes[i]), &head],
                "git update-ref",
            )?;
        }
        Ok(Ok(known(&s.hash).context("the applied series has no ref")?))
    }

    fn am_abort(&self) {
        clear_stale_lock(&self.work);
        let mut c = git(&self.work);
        c.args(["am", "--abort"]);
        let _ = proc::run(c, limit::scaled(limit::GIT));
    }

    /// Switches the build tree to `commit`, rewriting only files that differ.
    pub fn checkout_build(&self, commit: &str) -> Result<&Path> {
        checkout(&self.build, commit)?;
        Ok(&self.build)
    }

    /// Switches the work tree (selftests, headers) to `commit`.
    pub fn checkout_work(&self, commit: &str) -> Result<&Path> {
        checkout(&self.work, commit)?;
        Ok(&self.work)
    }
}

/// Earlier versions kept a worktree per variant (`trees/<kernel>/<variant>`
/// with a `.state` file) and an O= dir per variant
/// (`build/<kernel>/<variant>/<arch>/...`): gigabytes that nothing reads
/// any more. Built images stay (`kernels/`, keyed by content, still valid).
fn remove_old_layout(cache: &Cache, kernel: &str, log: &mut dyn FnMut(&str)) -> bool {
    let trees = cache.dir(&["trees", kernel]);
    let builds = cache.dir(&["build", kernel]);
    let arch_names = crate::plan::arch::Arch::names();
    let old_trees: Vec<PathBuf> = std::fs::read_dir(&trees)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join(".git").is_file() || p.extension().is_some_and(|e| e == "state"))
        .filter(|p| {
            !matches!(
                p.file_name().and_then(|n| n.to_str()),
                Some("build" | "work")
            )
        })
        .collect();
    let old_builds: Vec<PathBuf> = std::fs::read_dir(&builds)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.is_dir()
                && !p
                    .file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| arch_names.contains(&n))
        })
        .collect();
    if old_trees.is_empty() && old_builds.is_empty() {
        return false;
    }
    log("removing per-variant trees and build dirs of an older kmatrix (variants now share one)");
    for p in old_trees.iter().chain(&old_builds) {
        let _ = if p.is_dir() {
            std::fs::remove_dir_all(p)
        } else {
            std::fs::remove_file(p)
        };
    }
    true
}

/// Removes a worktree's `index.lock` left by a git that was killed (a step
/// bound, SIGINT): the cache lock guarantees no other kmatrix git runs.
fn clear_stale_lock(tree: &Path) {
    let gitdir = match std::fs::read_to_string(tree.join(".git")) {
        Ok(t) => t.trim().strip_prefix("gitdir: ").map(PathBuf::from),
        Err(_) => None,
    };
    for d in gitdir.into_iter().chain([tree.join(".git")]) {
        let lock = d.join("index.lock");
        if lock.is_file() {
            let _ = std::fs::remove_file(&lock);
        }
    }
}

/// `git checkout --force` of `commit`: files whose content is already right
/// are not rewritten (their mtimes stay), stray edits are undone.
fn checkout(tree: &Path, commit: &str) -> Result<()> {
    clear_stale_lock(tree);
    // Refresh the index's stat data first: a file whose mtime changed but
    // whose content did not is then left alone instead of rewritten.
    let _ = git_ok(
        tree,
        &["update-index", "-q", "--refresh"],
        "git update-index",
    );
    // The refresh is only an optimisation: if its bound killed it, the
    // index.lock it leaves must not fail the checkout.
    clear_stale_lock(tree);
    git_ok(
        tree,
        &["checkout", "--quiet", "--force", "--detach", commit],
        &format!("git checkout {commit} in {}", tree.display()),
    )?;
    Ok(())
}

/// `git am` says little; `git apply --check -v` names the file and shows the
/// hunk it could not place.
fn explain_apply_failure(tree: &Path, patch: &Path, stderr: &str, stdout: &str) -> String {
    let mut check = git(tree);
    check.args(["apply", "--check", "-v"]).arg(patch);
    let verbose = proc::run(check, limit::scaled(limit::GIT));
    let mut lines: Vec<String> = Vec::new();
    if let Ok(v) = verbose {
        let text = v.stderr + &v.stdout;
        lines.extend(
            text.lines()
                .filter(|l| !l.starts_with("Checking patch"))
                .take(40)
                .map(str::to_string),
        );
    }
    if lines.is_empty() {
        lines.extend(
            stderr
                .lines()
                .chain(stdout.lines())
                .take(20)
                .map(str::to_string),
        );
    }
    lines.join("\n")
}

/// Identity of everything the kernel build reads: the commit's tree minus
/// tools/. A patch that only touches tools/ leaves it unchanged, so it
/// needs no new kernel.
pub fn kernel_tree_id(repo: &Path, commit: &str) -> Result<String> {
    let listing = run_ok(
        {
            let mut c = git(repo);
            c.args(["ls-tree", commit]);
            c
        },
        "git ls-tree",
    )?;
    let kept: Vec<&str> = listing
        .lines()
        .filter(|l| !l.ends_with("\ttools"))
        .collect();
    Ok(KeyBuilder::new("kernel-tree")
        .add("ls-tree", kept.join("\n").as_bytes())
        .finish())
}

/// Identity of what the config step (`make tinyconfig`, merge_config.sh,
/// olddefconfig) reads at `commit`: every `Kconfig*` file, `scripts/`
/// (kconfig itself and the scripts Kconfig's `$(shell,...)` runs), every
/// `configs/` directory (the `*.config` fragments make targets merge) and
/// the top-level and arch Makefiles. A series that changes only `.c` or
/// `.h` files keeps it, so its variant reuses the base's .config instead of
/// making it again.
pub fn kconfig_id(repo: &Path, commit: &str) -> Result<String> {
    let listing = git_ok(
        repo,
        &["ls-tree", "-r", "--full-tree", commit],
        "git ls-tree -r (kconfig)",
    )?;
    let kept: Vec<&str> = listing
        .lines()
        .filter(|l| {
            let path = l.split_once('\t').map_or("", |(_, p)| p);
            let name = path.rsplit('/').next().unwrap_or(path);
            let in_arch_top = path
                .strip_prefix("arch/")
                .is_some_and(|rest| rest.split('/').count() == 2);
            name.starts_with("Kconfig")
                || path.starts_with("scripts/")
                || path.contains("/configs/")
                || path == "Makefile"
                || (in_arch_top && name == "Makefile")
        })
        .collect();
    Ok(KeyBuilder::new("kconfig")
        .add("ls-tree", kept.join("\n").as_bytes())
        .finish())
}

/// Identity of what `make headers_install` reads at `commit` for `arch`:
/// the uapi trees, the syscall tables the x86 unistd headers are generated
/// from, the scripts and Makefiles that run it. A series that changes only
/// `.c` files keeps it, so its test programs (built against those headers)
/// are not rebuilt at every bisect step.
pub fn uapi_id(repo: &Path, commit: &str, arch: &str) -> Result<String> {
    let srcarch = match arch {
        "x86_64" | "i386" => "x86",
        a => a,
    };
    let paths = [
        "include/uapi".to_string(),
        format!("arch/{srcarch}/include/uapi"),
        format!("arch/{srcarch}/entry/syscalls"),
        format!("arch/{srcarch}/Makefile"),
        "scripts".to_string(),
        "usr".to_string(),
        "Makefile".to_string(),
    ];
    let mut args = vec!["ls-tree", commit, "--"];
    args.extend(paths.iter().map(String::as_str));
    let listing = git_ok(repo, &args, "git ls-tree (uapi)")?;
    Ok(KeyBuilder::new("uapi")
        .add("arch", arch.as_bytes())
        .add("ls-tree", listing.as_bytes())
        .finish())
}

/// A file's content at `commit` (None when it has none there).
/// Whether the tree at `commit` defines the Kconfig symbol `CONFIG_NAME`
/// (a `config NAME` or `menuconfig NAME` entry in any Kconfig file).
pub fn kconfig_defines(repo: &Path, commit: &str, symbol: &str) -> Result<bool> {
    let name = symbol.strip_prefix("CONFIG_").unwrap_or(symbol);
    let pattern = format!("^[[:space:]]*(menu)?config[[:space:]]+{name}[[:space:]]*$");
    let mut c = git(repo);
    c.args([
        "grep",
        "-q",
        "-E",
        &pattern,
        commit,
        "--",
        ":(glob)**/Kconfig*",
    ]);
    let out = crate::host::proc::run(
        c,
        crate::host::proc::limit::scaled(crate::host::proc::limit::GIT),
    )?;
    match (out.code, out.timed_out) {
        (Some(0), false) => Ok(true),
        (Some(1), false) => Ok(false),
        _ => anyhow::bail!(
            "git grep for `config {name}` in {commit}: {}",
            out.describe()
        ),
    }
}

pub fn read_at(repo: &Path, commit: &str, path: &str) -> Option<String> {
    git_ok(repo, &["show", &format!("{commit}:{path}")], "git show").ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, SystemTime};

    fn sh(dir: &Path, script: &str) {
        let st = Command::new("sh")
            .arg("-ec")
            .arg(script)
            .current_dir(dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .status()
            .unwrap();
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
        let commit = String::from_utf8(
            Command::new("git")
                .args(["-C"])
                .arg(&repo)
                .args(["rev-parse", "base"])
                .output()
                .unwrap()
                .stdout,
        )
        .unwrap();
        let base = Base {
            repo,
            commit: commit.trim().to_string(),
        };
        (
            base,
            Series::load("k", &root.join("k")).unwrap(),
            Series::load("t", &root.join("t")).unwrap(),
        )
    }

    /// An empty directory of this test process's own.
    fn scratch(name: &str) -> PathBuf {
        let root = crate::util::test_tmp().join(format!("kmatrix-{name}-{}", std::process::id()));
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
        let trees = Trees::open(&base, "6.1", &cache, &mut log).unwrap();
        let b = trees.variant_commit(None, &mut log).unwrap().unwrap();
        let kc = trees.variant_commit(Some(&k), &mut log).unwrap().unwrap();
        let tc = trees.variant_commit(Some(&t), &mut log).unwrap().unwrap();
        assert_eq!(b, base.commit);
        // Remembered: asking again applies nothing and gives the same commit.
        assert_eq!(
            trees
                .variant_commit(Some(&k), &mut |l| panic!("re-applied: {l}"))
                .unwrap()
                .unwrap(),
            kc
        );
        let base_id = kernel_tree_id(&trees.repo, &b).unwrap();
        assert_eq!(
            kernel_tree_id(&trees.repo, &tc).unwrap(),
            base_id,
            "tools/ only: same kernel"
        );
        assert_ne!(kernel_tree_id(&trees.repo, &kc).unwrap(), base_id);

        let tree = trees.checkout_build(&b).unwrap().to_path_buf();
        let fork = tree.join("kernel/fork.c");
        let old = SystemTime::now() - Duration::from_secs(3600);
        std::fs::File::options()
            .write(true)
            .open(&fork)
            .unwrap()
            .set_modified(old)
            .unwrap();
        let seccomp = tree.join("kernel/seccomp.c");
        std::fs::File::options()
            .write(true)
            .open(&seccomp)
            .unwrap()
            .set_modified(old)
            .unwrap();
        // Applying series happens in the work tree: the build tree is untouched.
        let t2 = Series::load("k", &root.join("k")).unwrap();
        trees.variant_commit(Some(&t2), &mut log).unwrap().unwrap();
        trees.checkout_work(&tc).unwrap();
        assert_eq!(
            std::fs::metadata(&seccomp).unwrap().modified().unwrap(),
            old
        );
        // Switching the build tree rewrites only what differs.
        trees.checkout_build(&kc).unwrap();
        assert_eq!(std::fs::read_to_string(&seccomp).unwrap(), "a2\n");
        assert!(std::fs::metadata(&seccomp).unwrap().modified().unwrap() > old);
        assert_eq!(std::fs::metadata(&fork).unwrap().modified().unwrap(), old);
        // The same commit again: nothing is touched at all.
        let before = std::fs::metadata(&seccomp).unwrap().modified().unwrap();
        trees.checkout_build(&kc).unwrap();
        assert_eq!(
            std::fs::metadata(&seccomp).unwrap().modified().unwrap(),
            before
        );
        // A git killed mid-checkout (a step bound, SIGINT) leaves index.lock
        // behind; the next checkout must not fail on it.
        let gitdir = std::fs::read_to_string(trees.build.join(".git")).unwrap();
        let lock =
            PathBuf::from(gitdir.trim().strip_prefix("gitdir: ").unwrap()).join("index.lock");
        std::fs::write(&lock, "").unwrap();
        trees.checkout_build(&b).unwrap();
        assert!(!lock.exists());
        trees.checkout_build(&kc).unwrap();
        // A stray edit in the build tree is undone by the next checkout.
        std::fs::write(&fork, "edited").unwrap();
        trees.checkout_build(&kc).unwrap();
        assert_eq!(std::fs::read_to_string(&fork).unwrap(), "b\n");
        assert_eq!(
            std::fs::read_to_string(trees.work.join("tools/bench.c")).unwrap(),
            "c2\n"
        );
        drop(cache);
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn the_per_variant_layout_of_older_versions_is_removed() {
        let root = scratch("old-layout");
        let (base, _, _) = fixture(&root);
        let cache = Cache::open(root.join("cache"), false).unwrap();
        let old_tree = cache.dir(&["trees", "6.1", "seccomp-sync-wakeup"]);
        std::fs::create_dir_all(&old_tree).unwrap();
        std::fs::write(old_tree.join(".git"), "gitdir: /nowhere\n").unwrap();
        std::fs::write(
            cache.dir(&["trees", "6.1", "seccomp-sync-wakeup.state"]),
            "x",
        )
        .unwrap();
        let old_build = cache.dir(&["build", "6.1", "base", "x86_64", "tiny"]);
        let new_build = cache.dir(&["build", "6.1", "x86_64", "tiny"]);
        std::fs::create_dir_all(&old_build).unwrap();
        std::fs::create_dir_all(&new_build).unwrap();
        let mut said = Vec::new();
        let trees = Trees::open(&base, "6.1", &cache, &mut |l| said.push(l.to_string())).unwrap();
        assert!(
            !old_tree.exists()
                && !cache
                    .dir(&["trees", "6.1", "seccomp-sync-wakeup.state"])
                    .exists()
        );
        assert!(!cache.dir(&["build", "6.1", "base"]).exists());
        assert!(
            new_build.exists()
                && trees.build.join(".git").exists()
                && trees.work.join(".git").exists()
        );
        assert!(said.iter().any(|l| l.contains("older kmatrix")), "{said:?}");
        drop(cache);
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn every_prefix_of_a_series_is_a_commit_applied_once() {
        let root = scratch("prefix");
        let (base, _, _) = fixture(&root);
        sh(
            &base.repo,
            "git checkout -q base; for i in 1 2 3; do echo $i >> kernel/fork.c;
             git commit -q --author='A U Thor <a@example.org>' -am \"fork: step $i\"; done;
             git format-patch -q base..HEAD -o ../three; git checkout -q base",
        );
        let cache = Cache::open(root.join("cache"), false).unwrap();
        let mut log = |_: &str| {};
        let trees = Trees::open(&base, "6.1", &cache, &mut log).unwrap();
        let dir = root.join("three");
        let full = Series::load_prefix("s", &dir, None).unwrap();
        assert_eq!(full.prefix_hashes.len(), 3);
        let two = Series::load_prefix("s", &dir, Some(2)).unwrap();
        assert_eq!(two.hash, full.prefix_hashes[1]);
        assert!(Series::load_prefix("s", &dir, Some(4)).is_err());
        let mut applied = vec![];
        let c3 = trees
            .variant_commit(Some(&full), &mut |l| applied.push(l.to_string()))
            .unwrap()
            .unwrap();
        assert_eq!(applied.len(), 3);
        // The prefix of two is the full series' second commit: nothing applied.
        let c2 = trees
            .variant_commit(Some(&two), &mut |l| panic!("re-applied: {l}"))
            .unwrap()
            .unwrap();
        assert_eq!(
            git_ok(&trees.repo, &["rev-parse", &format!("{c3}~1")], "p").unwrap(),
            c2
        );
        let info = full.info();
        assert_eq!(info[1].subject, "fork: step 2");
        assert_eq!(info[1].author, "A U Thor <a@example.org>");
        assert_eq!(info[1].commit.len(), 40);
        assert!(info[1].file.starts_with("0002-"));
    }

    #[test]
    fn a_range_of_the_users_tree_becomes_a_series_without_touching_it() {
        let root = scratch("range");
        let (base, _, _) = fixture(&root);
        sh(
            &base.repo,
            "git checkout -q -b topic base; echo x >> kernel/fork.c; git commit -qam one;
             echo y >> kernel/fork.c; git commit -qam two",
        );
        let status = |r: &Path| git_ok(r, &["status", "--porcelain", "--ignored"], "s").unwrap();
        let before = status(&base.repo);
        let cache = Cache::open(root.join("cache"), false).unwrap();
        let (b, dir) = export_range(&base.repo, "base..topic", &cache).unwrap();
        assert_eq!(b, base.commit);
        let s = Series::load_prefix("r", &dir, None).unwrap();
        assert_eq!(
            s.info()
                .iter()
                .map(|i| i.subject.as_str())
                .collect::<Vec<_>>(),
            ["one", "two"]
        );
        assert_eq!(status(&base.repo), before, "the user's tree was written to");
        let e = export_range(&base.repo, "topic..base", &cache)
            .unwrap_err()
            .to_string();
        assert!(e.contains("no commits") || e.contains("ancestor"), "{e}");
        let e = export_range(&base.repo, "nosuch..topic", &cache)
            .unwrap_err()
            .to_string();
        assert!(e.contains("nosuch"), "{e}");
    }

    #[test]
    fn a_worktree_of_another_source_with_the_same_name_is_replaced() {
        let root = scratch("foreign");
        let (base, _, _) = fixture(&root);
        let other = root.join("other");
        std::fs::create_dir_all(&other).unwrap();
        sh(
            &other,
            "git init -q; echo z > f; git add f; git -c user.name=t -c user.email=t@t commit -qm o",
        );
        let cache = Cache::open(root.join("cache"), false).unwrap();
        let mut log = |_: &str| {};
        let ob = Base {
            repo: other.clone(),
            commit: git_ok(&other, &["rev-parse", "HEAD"], "p").unwrap(),
        };
        let t1 = Trees::open(&ob, "linux", &cache, &mut log).unwrap();
        assert!(t1.build.join("f").exists());
        let t2 = Trees::open(&base, "linux", &cache, &mut log).unwrap();
        assert!(t2.build.join("kernel/fork.c").exists());
        t2.checkout_build(&base.commit).unwrap();
    }

    #[test]
    fn the_uapi_id_changes_with_uapi_headers_not_with_c_files() {
        let root = scratch("uapi");
        let (base, _, _) = fixture(&root);
        let r = &base.repo;
        sh(
            r,
            "git checkout -q base; mkdir -p include/uapi/linux arch/x86/include/uapi/asm;
             echo 1 > include/uapi/linux/seccomp.h; echo 1 > arch/x86/include/uapi/asm/x.h;
             git add -A; git commit -qm uapi; git tag u0;
             echo c >> kernel/seccomp.c; git commit -qam c; git tag u1;
             echo 2 >> include/uapi/linux/seccomp.h; git commit -qam h; git tag u2;
             echo 2 >> arch/x86/include/uapi/asm/x.h; git commit -qam a; git tag u3",
        );
        let id = |t: &str, arch: &str| uapi_id(r, t, arch).unwrap();
        assert_eq!(id("u0", "x86_64"), id("u1", "x86_64"), "a .c change");
        assert_ne!(id("u1", "x86_64"), id("u2", "x86_64"), "a uapi header");
        assert_ne!(id("u2", "x86_64"), id("u3", "x86_64"), "x86's own uapi");
        assert_eq!(id("u2", "arm64"), id("u3", "arm64"), "another arch's uapi");
        assert_ne!(id("u0", "x86_64"), id("u0", "arm64"));
    }

    #[test]
    fn the_kconfig_id_changes_with_what_kconfig_reads_not_with_c_files() {
        let root = scratch("kconfig");
        let (base, _, _) = fixture(&root);
        let r = &base.repo;
        sh(
            r,
            "git checkout -q base; mkdir -p init scripts/kconfig arch/x86/configs drivers/x;
             echo 'config A' > init/Kconfig; echo t > scripts/kconfig/conf.c;
             echo 'CONFIG_A=y' > arch/x86/configs/tiny.config; echo x > drivers/x/x.c;
             echo all: > Makefile; git add -A; git commit -qm k; git tag k0;
             echo c >> kernel/seccomp.c; echo h > drivers/x/x.h; git add -A; git commit -qm c; git tag k1;
             echo 'config B' > drivers/x/Kconfig.debug; git add -A; git commit -qm kd; git tag k2;
             echo u >> scripts/kconfig/conf.c; git commit -qam s; git tag k3;
             echo 'CONFIG_B=y' >> arch/x86/configs/tiny.config; git commit -qam f; git tag k4;
             echo y >> Makefile; git commit -qam m; git tag k5",
        );
        let id = |t: &str| kconfig_id(r, t).unwrap();
        assert_eq!(id("k0"), id("k1"), "a .c and a .h change");
        assert_ne!(id("k1"), id("k2"), "a new Kconfig.debug");
        assert_ne!(id("k2"), id("k3"), "kconfig's own source");
        assert_ne!(id("k3"), id("k4"), "a configs/ fragment");
        assert_ne!(id("k4"), id("k5"), "the top Makefile");
    }

    #[test]
    fn a_patch_that_does_not_apply_names_the_file() {
        let root = scratch("apply");
        let (base, k, _) = fixture(&root);
        let text = std::fs::read_to_string(&k.patches[0])
            .unwrap()
            .replace("-a\n", "-zzz\n");
        std::fs::write(&k.patches[0], text).unwrap();
        let broken = Series::load("k", &root.join("k")).unwrap();
        let cache = Cache::open(root.join("cache"), false).unwrap();
        let trees = Trees::open(&base, "6.1", &cache, &mut |_| {}).unwrap();
        let e = trees
            .variant_commit(Some(&broken), &mut |_| {})
            .unwrap()
            .expect_err("must not apply");
        assert!(e.patch.ends_with("0001-k.patch"), "{}", e.patch.display());
        assert!(e.detail.contains("kernel/seccomp.c"), "{}", e.detail);
        drop(cache);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
