//! Build slots: up to [`MAX`] persistent O= dirs per kernel/arch/config,
//! all over the kernel's one build tree, each remembering the commit its
//! objects were built from.
//!
//! With one O= dir, a series that edits a header most of the kernel
//! includes costs a near-full build every time the dir goes from base to
//! series and back (patchcheck after a matrix run, a bisect step on the
//! other side of that patch). A second dir that keeps the base's objects
//! makes the way back a few seconds.
//!
//! make decides by mtimes, and the tree's mtimes are shared by every slot,
//! so they are set for the slot about to build: each file that differs
//! from what the slot last built (by `git diff` of the two commits, plus
//! what an unfinished make there may have left stale) gets the current
//! time, every other file a fixed old time ([`epoch`]), older than any
//! object. An object is then rebuilt exactly when one of its inputs
//! differs from what it was built from, whatever other slots did to the
//! tree in between. A slot whose record is missing, or that a make outside
//! the harness touched since, cannot be trusted: it is emptied and built
//! afresh.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::host::cache::write_atomic;
use crate::host::git::git_ok;
use crate::host::proc::{self, limit};

/// O= dirs kept per kernel/arch/config (about 100-200 MB each for the
/// matrix's tiny configs): the base, a series, and one more for a bisect
/// or patchcheck walking across a header change.
pub const MAX: usize = 3;

/// The mtime of every tree file a slot's objects are up to date with:
/// 2000-01-01 00:00:00 UTC, older than any object make writes.
pub fn epoch() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(946_684_800)
}

/// What a slot holds, kept in the slot as [`STATE`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct State {
    /// The commit of the slot's last make.
    commit: String,
    /// Files whose objects may be older than `commit`'s content: what
    /// differed when a make there failed, was interrupted or built only
    /// some objects. Empty after a whole build that succeeded.
    pending: Vec<String>,
    /// The newest mtime in the slot (ns since the epoch) when its last make
    /// ended; None while one runs (or when it was killed). Anything newer
    /// is a make that was not the harness's.
    stamp: Option<u128>,
    /// When the slot was last used (s since the epoch): the oldest is
    /// reused first.
    used: u64,
}

const STATE: &str = "kmatrix-slot.json";

/// What the selection sees of one slot.
#[derive(Debug, Clone, PartialEq)]
enum Seen {
    Empty,
    /// Content without a record that can be trusted.
    Unknown(String),
    /// Its record, and the files that differ from the commit to build.
    Known {
        used: u64,
        changed: Vec<String>,
    },
}

/// Which slot builds, and from which slot it is first copied.
#[derive(Debug, Clone, PartialEq)]
struct Plan {
    slot: usize,
    copy_from: Option<usize>,
}

/// How much of the kernel a change of `path` is likely to rebuild: a
/// header most of it, a build file some, a source file one object.
fn weight(path: &str) -> u64 {
    let name = path.rsplit('/').next().unwrap_or(path);
    if name.ends_with(".h") {
        100
    } else if name.starts_with("Kconfig") || name == "Makefile" || name == "Kbuild" {
        20
    } else {
        1
    }
}

/// A change at least this heavy (one header) is worth a copy of the slot,
/// so the state it leaves stays for the way back.
const HEAVY: u64 = 100;

fn plan(seen: &[Seen], whole: bool) -> Plan {
    let cost = |c: &[String]| c.iter().map(|p| weight(p)).sum::<u64>();
    let best = seen
        .iter()
        .enumerate()
        .filter_map(|(i, s)| match s {
            Seen::Known { used, changed } => Some((cost(changed), std::cmp::Reverse(*used), i)),
            _ => None,
        })
        .min()
        .map(|(c, _, i)| (c, i));
    let Some((c, b)) = best else {
        // Nothing to build over: slot 0 from scratch.
        return Plan {
            slot: 0,
            copy_from: None,
        };
    };
    if c < HEAVY || !whole || seen.len() < 2 {
        return Plan {
            slot: b,
            copy_from: None,
        };
    }
    let free = seen
        .iter()
        .position(|s| matches!(s, Seen::Unknown(_)))
        .or_else(|| seen.iter().position(|s| *s == Seen::Empty))
        .or_else(|| {
            seen.iter()
                .enumerate()
                .filter(|(i, _)| *i != b)
                .filter_map(|(i, s)| match s {
                    Seen::Known { used, .. } => Some((*used, i)),
                    _ => None,
                })
                .min()
                .map(|(_, i)| i)
        });
    match free {
        Some(f) => Plan {
            slot: f,
            copy_from: Some(b),
        },
        None => Plan {
            slot: b,
            copy_from: None,
        },
    }
}

/// The slots of one kernel/arch/config: `base` (the O= dir of earlier
/// versions, slot 0) and its siblings `<config>.slot1`, `<config>.slot2`.
#[derive(Debug, Clone)]
pub struct Slots {
    base: PathBuf,
    max: usize,
}

/// A slot taken for one make; [`Lease::done`] records what it then holds.
#[derive(Debug)]
pub struct Lease {
    pub dir: PathBuf,
    /// The slot held an earlier build (make reuses what did not change).
    pub incremental: bool,
    commit: String,
    pending: Vec<String>,
}

fn now_s() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn read_state(dir: &Path) -> Option<State> {
    serde_json::from_str(&std::fs::read_to_string(dir.join(STATE)).ok()?).ok()
}

fn write_state(dir: &Path, s: &State) -> Result<()> {
    write_atomic(
        &dir.join(STATE),
        serde_json::to_string_pretty(s)?.as_bytes(),
    )
}

/// The newest mtime of the files under `dir` (its record left out).
fn newest(dir: &Path) -> u128 {
    let mut top = 0u128;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let Ok(m) = e.path().symlink_metadata() else {
                continue;
            };
            if m.is_dir() {
                stack.push(e.path());
                continue;
            }
            if d == dir && e.file_name() == STATE {
                continue;
            }
            if let Ok(t) = m.modified() {
                if let Ok(n) = t.duration_since(UNIX_EPOCH) {
                    top = top.max(n.as_nanos());
                }
            }
        }
    }
    top
}

fn is_empty(dir: &Path) -> bool {
    std::fs::read_dir(dir)
        .map(|mut r| r.next().is_none())
        .unwrap_or(true)
}

/// Files that differ between two commits of the tree's repository, both
/// sides of a rename named.
fn changed(tree: &Path, from: &str, to: &str) -> Result<Vec<String>> {
    if from == to {
        return Ok(vec![]);
    }
    let out = git_ok(
        tree,
        &["diff", "--name-only", "--no-renames", from, to, "--"],
        "git diff --name-only",
    )?;
    Ok(out.lines().map(str::to_string).collect())
}

/// Sets the mtime of every regular file of `tree` (outside `.git`): the
/// files of `fresh` to now, the others to [`epoch`] (only those not there
/// already are written).
pub fn set_mtimes(tree: &Path, fresh: &BTreeSet<String>) -> Result<()> {
    let now = SystemTime::now();
    let old = epoch();
    let mut stack = vec![(tree.to_path_buf(), String::new())];
    while let Some((d, rel)) = stack.pop() {
        let entries = std::fs::read_dir(&d).with_context(|| format!("reading {}", d.display()))?;
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            if rel.is_empty() && name == ".git" {
                continue;
            }
            let path = e.path();
            let r = if rel.is_empty() {
                name
            } else {
                format!("{rel}/{name}")
            };
            let Ok(m) = path.symlink_metadata() else {
                continue;
            };
            if m.is_dir() {
                stack.push((path, r));
                continue;
            }
            if !m.is_file() {
                continue; // a symlink: make looks at what it points to
            }
            let want = if fresh.contains(&r) { now } else { old };
            if want == old && m.modified().ok() == Some(old) {
                continue;
            }
            std::fs::File::options()
                .write(true)
                .open(&path)
                .and_then(|f| f.set_modified(want))
                .with_context(|| format!("setting the mtime of {}", path.display()))?;
        }
    }
    Ok(())
}

impl Slots {
    /// `base`: `build/<kernel>/<arch>/<config>` in the cache.
    pub fn new(base: PathBuf) -> Slots {
        Slots { base, max: MAX }
    }

    pub fn dir(&self, i: usize) -> PathBuf {
        if i == 0 {
            return self.base.clone();
        }
        let name = self
            .base
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        self.base.with_file_name(format!("{name}.slot{i}"))
    }

    fn see(&self, i: usize, tree: &Path, commit: &str) -> Seen {
        let d = self.dir(i);
        if is_empty(&d) {
            return Seen::Empty;
        }
        let Some(s) = read_state(&d) else {
            return Seen::Unknown(format!(
                "{} has no record of what it last built (an older kmatrix made it)",
                d.display()
            ));
        };
        if let Some(stamp) = s.stamp {
            if newest(&d) > stamp {
                return Seen::Unknown(format!(
                    "{} was written after the harness's last make there (a make by hand?)",
                    d.display()
                ));
            }
        }
        match changed(tree, &s.commit, commit) {
            Ok(mut c) => {
                c.extend(s.pending.iter().cloned());
                c.sort();
                c.dedup();
                Seen::Known {
                    used: s.used,
                    changed: c,
                }
            }
            Err(_) => Seen::Unknown(format!(
                "{} was built from {}, which the kernel's repository no longer has",
                d.display(),
                s.commit
            )),
        }
    }

    /// Takes the slot that builds `commit` (the tree already at it) with
    /// the least to rebuild, and sets the tree's mtimes for it. `whole`: a
    /// build of the image (may copy a slot first, so a heavy change leaves
    /// the old state for the way back); else a few objects.
    pub fn enter(
        &self,
        tree: &Path,
        commit: &str,
        whole: bool,
        log: &mut dyn FnMut(&str),
    ) -> Result<Lease> {
        let seen: Vec<Seen> = (0..self.max).map(|i| self.see(i, tree, commit)).collect();
        let p = plan(&seen, whole);
        let dir = self.dir(p.slot);
        if let Seen::Unknown(why) = &seen[p.slot] {
            log(&format!("{why}: emptied, built afresh"));
        }
        if (p.copy_from.is_some() || matches!(seen[p.slot], Seen::Unknown(_))) && dir.exists() {
            std::fs::remove_dir_all(&dir).with_context(|| format!("emptying {}", dir.display()))?;
        }
        let source = p.copy_from.unwrap_or(p.slot);
        let fresh: Vec<String> = match &seen[source] {
            Seen::Known { changed, .. } => changed.clone(),
            _ => vec![],
        };
        if let Some(from) = p.copy_from {
            let from = self.dir(from);
            log(&format!(
                "{} kept as it is (the change rebuilds much); building in a copy, {}",
                from.display(),
                dir.display()
            ));
            let mut cp = std::process::Command::new("cp");
            cp.arg("-a").arg("--reflink=auto").arg(&from).arg(&dir);
            proc::checked("copying a build slot", cp, limit::scaled(limit::TAR))?;
        }
        std::fs::create_dir_all(&dir)?;
        let incremental = dir.join("vmlinux").exists();
        // Recorded before make runs: a make killed half way leaves objects
        // of either commit for these files, and the record says so.
        write_state(
            &dir,
            &State {
                commit: commit.to_string(),
                pending: fresh.clone(),
                stamp: None,
                used: now_s(),
            },
        )?;
        set_mtimes(tree, &fresh.iter().cloned().collect())?;
        Ok(Lease {
            dir,
            incremental,
            commit: commit.to_string(),
            pending: fresh,
        })
    }
}

impl Lease {
    /// What the slot holds after make: `complete` (every object of the
    /// image built from the commit) clears what was pending.
    pub fn done(self, complete: bool) -> Result<()> {
        let stamp = newest(&self.dir);
        write_state(
            &self.dir,
            &State {
                commit: self.commit,
                pending: if complete { vec![] } else { self.pending },
                stamp: Some(stamp),
                used: now_s(),
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known(used: u64, changed: &[&str]) -> Seen {
        Seen::Known {
            used,
            changed: changed.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn the_slot_with_least_to_rebuild_builds() {
        let seen = [
            known(5, &["include/linux/sched.h"]),
            known(1, &["kernel/seccomp.c", "kernel/fork.c"]),
            Seen::Empty,
        ];
        assert_eq!(
            plan(&seen, true),
            Plan {
                slot: 1,
                copy_from: None
            }
        );
    }

    #[test]
    fn a_header_change_builds_in_a_copy_and_keeps_the_old_state() {
        let seen = [
            known(5, &["include/linux/sched.h"]),
            Seen::Empty,
            Seen::Empty,
        ];
        assert_eq!(
            plan(&seen, true),
            Plan {
                slot: 1,
                copy_from: Some(0)
            }
        );
        // A few objects only (patchcheck's warnings): never worth a copy.
        assert_eq!(
            plan(&seen, false),
            Plan {
                slot: 0,
                copy_from: None
            }
        );
        // All slots in use: the one used longest ago is overwritten.
        let full = [
            known(9, &["include/linux/sched.h", "kernel/sched/core.c"]),
            known(3, &["include/linux/sched.h", "a.h"]),
            known(7, &["include/linux/sched.h", "a.h", "b.h"]),
        ];
        assert_eq!(
            plan(&full, true),
            Plan {
                slot: 1,
                copy_from: Some(0)
            }
        );
        // A slot that cannot be trusted is taken before a good one, and
        // before a new one.
        let unknown = [
            known(9, &["include/linux/sched.h"]),
            Seen::Empty,
            Seen::Unknown("no record".into()),
        ];
        assert_eq!(plan(&unknown, true).slot, 2);
    }

    #[test]
    fn with_no_known_slot_slot_zero_starts_afresh() {
        let seen = [Seen::Unknown("no record".into()), Seen::Empty, Seen::Empty];
        assert_eq!(
            plan(&seen, true),
            Plan {
                slot: 0,
                copy_from: None
            }
        );
    }

    #[test]
    fn of_equally_cheap_slots_the_last_used_builds() {
        let seen = [known(1, &[]), known(8, &[]), Seen::Empty];
        assert_eq!(plan(&seen, true).slot, 1);
    }

    /// A tree whose Makefile builds out of tree like kbuild (by mtime,
    /// `O=`), each object the concatenation of its inputs, each recipe
    /// counted in `made`; commits: base, a series editing the header, and
    /// base plus a source change.
    fn tiny_tree(root: &Path) -> (PathBuf, [String; 3]) {
        let tree = root.join("tree");
        std::fs::create_dir_all(&tree).unwrap();
        let sh = |script: &str| -> String {
            let o = std::process::Command::new("sh")
                .arg("-c")
                .arg(script)
                .current_dir(&tree)
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .output()
                .unwrap();
            assert!(o.status.success(), "{script}: {o:?}");
            String::from_utf8(o.stdout).unwrap().trim().to_string()
        };
        std::fs::write(
            tree.join("Makefile"),
            "$(O)/x.o: x.c a.h\n\tcat $^ > $@; echo x >> $(O)/made\n\
             $(O)/y.o: y.c\n\tcat $^ > $@; echo y >> $(O)/made\n\
             $(O)/img: $(O)/x.o $(O)/y.o\n\tcat $^ > $@\n",
        )
        .unwrap();
        sh(
            "git init -q; git config user.email t@t; git config user.name t;
            echo A > a.h; echo X > x.c; echo Y > y.c; git add -A; git commit -qm base",
        );
        let base = sh("git rev-parse HEAD");
        sh("echo A2 > a.h; git commit -qam series");
        let series = sh("git rev-parse HEAD");
        sh(&format!(
            "git checkout -q {base}; echo Y2 > y.c; git commit -qam planted"
        ));
        let planted = sh("git rev-parse HEAD");
        (tree, [base, series, planted])
    }

    /// What `img` must hold at each commit.
    const WANT: [&str; 3] = ["X\nA\nY\n", "X\nA2\nY\n", "X\nA\nY2\n"];

    fn build(
        slots: &Slots,
        tree: &Path,
        commit: &str,
        notes: &mut Vec<String>,
    ) -> (PathBuf, String) {
        let st = std::process::Command::new("git")
            .args(["-C"])
            .arg(tree)
            .args(["checkout", "-q", "--force", "--detach", commit])
            .status()
            .unwrap();
        assert!(st.success());
        let lease = slots
            .enter(tree, commit, true, &mut |l| notes.push(l.to_string()))
            .unwrap();
        let dir = lease.dir.clone();
        let _ = std::fs::remove_file(dir.join("made"));
        let st = std::process::Command::new("make")
            .arg("-s")
            .arg("-C")
            .arg(tree)
            .arg(format!("O={}", dir.display()))
            .arg(format!("{}/img", dir.display()))
            .status()
            .unwrap();
        assert!(st.success());
        lease.done(true).unwrap();
        let made = std::fs::read_to_string(dir.join("made")).unwrap_or_default();
        (dir, made)
    }

    #[test]
    fn make_rebuilds_what_differs_from_the_slots_own_last_build() {
        let root = crate::util::test_tmp().join(format!("kmatrix-slots-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let (tree, [base, series, planted]) = tiny_tree(&root);
        let slots = Slots::new(root.join("build/k/x86_64/tiny"));
        let mut notes = vec![];
        let (d0, made) = build(&slots, &tree, &base, &mut notes);
        assert_eq!((d0.clone(), made.as_str()), (slots.dir(0), "x\ny\n"));
        // The header change: built in a copy, slot 0 keeps the base.
        let (d1, made) = build(&slots, &tree, &series, &mut notes);
        assert_eq!((d1.clone(), made.as_str()), (slots.dir(1), "x\n"));
        assert!(
            notes.iter().any(|n| n.contains("building in a copy")),
            "{notes:?}"
        );
        // Base plus a source change: over slot 0, only y.o, although the
        // tree went through the series' header in between.
        let (d, made) = build(&slots, &tree, &planted, &mut notes);
        assert_eq!((d, made.as_str()), (slots.dir(0), "y\n"));
        assert_eq!(std::fs::read_to_string(d0.join("img")).unwrap(), WANT[2]);
        // Back to the series: nothing to build at all.
        let (d, made) = build(&slots, &tree, &series, &mut notes);
        assert_eq!((d, made.as_str()), (slots.dir(1), ""));
        assert_eq!(std::fs::read_to_string(d1.join("img")).unwrap(), WANT[1]);
        // A make by hand in slot 1 (the reproducer's kind): not trusted,
        // emptied and built afresh when next chosen.
        std::fs::write(d1.join("stray.o"), "by hand").unwrap();
        notes.clear();
        let (_, made) = build(&slots, &tree, &series, &mut notes);
        assert!(
            notes.iter().any(|n| n.contains("a make by hand")),
            "{notes:?}"
        );
        assert!(made.contains('x'), "{made}");
        let _ = std::fs::remove_dir_all(&root);
    }

    /// Any order of builds over the three commits: every image is what a
    /// build from scratch of its commit gives.
    #[test]
    fn every_image_is_right_whatever_the_order_of_builds() {
        let root =
            crate::util::test_tmp().join(format!("kmatrix-slots-any-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let (tree, commits) = tiny_tree(&root);
        let slots = Slots::new(root.join("build/k/x86_64/tiny"));
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut headers = 0;
        for _ in 0..40 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let k = (x % 3) as usize;
            let (dir, made) = build(&slots, &tree, &commits[k], &mut vec![]);
            headers += made.lines().filter(|l| *l == "x").count();
            assert_eq!(
                std::fs::read_to_string(dir.join("img")).unwrap(),
                WANT[k],
                "commit {k} in {}",
                dir.display()
            );
        }
        // The object that includes the header is made once for each of its
        // two contents, and never again: the series keeps a slot of its own.
        assert_eq!(headers, 2, "x.o made {headers} times in 40 builds");
        let _ = std::fs::remove_dir_all(&root);
    }
}
