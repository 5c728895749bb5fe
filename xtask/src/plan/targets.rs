//! The kernel's own tests named on the command line. Kselftest targets
//! (`--kselftest TARGET`, `TARGET:PROGRAM` for one program): each becomes
//! a `kind = "target"` test of the matrix, run by every config, as if
//! matrix.toml declared `[test.TARGET] kind = "target", dir =
//! "tools/testing/selftests/TARGET"`. KUnit suites (`--kunit GLOB`,
//! `--kunitconfig PATH`): one `kind = "kunit"` test named `kunit`. Pure:
//! whether the tree has the target or suite is known only once it is
//! built.

use anyhow::{bail, Result};
use toml::Spanned;

use crate::plan::matrix::{target_name, Matrix, TestKind, TestSpec, SELFTESTS};

/// The test name a target gets: its path with `/` as `-` (a test name
/// has no `/`).
pub fn test_name(target: &str) -> String {
    target.replace('/', "-")
}

/// The test a `--kselftest TARGET[:PROGRAM]` flag declares.
pub fn test_of(flag: &str) -> String {
    test_name(flag.split(':').next().unwrap_or(flag))
}

/// Declares the targets of `flags` (`TARGET` or `TARGET:PROGRAM`, each as
/// typed) as tests run by every config; returns their test names, in
/// order, once each. A program named for a target narrows it to the
/// programs named; the target alone runs them all.
pub fn declare(m: &mut Matrix, flags: &[String]) -> Result<Vec<String>> {
    let mut names: Vec<String> = Vec::new();
    let mut whole: Vec<String> = Vec::new();
    for flag in flags {
        let (target, program) = match flag.split_once(':') {
            Some((t, p)) => (t, Some(p)),
            None => (flag.as_str(), None),
        };
        let dir = format!("{SELFTESTS}{}", target.trim_end_matches('/'));
        let Some(target) = target_name(&dir) else {
            bail!(
                "--kselftest {flag}: `{target}` is no kselftest target name; expected a directory of tools/testing/selftests as `make kselftest TARGETS=` names it (pidfd, net/forwarding), optionally with `:PROGRAM`"
            );
        };
        if let Some(p) = program {
            if p.is_empty() || p.contains('/') || p.chars().any(|c| c.is_whitespace()) {
                bail!("--kselftest {flag}: `{p}` is no program name; expected TARGET:PROGRAM as kselftest-list.txt has it (pidfd:pidfd_open_test)");
            }
        }
        let name = test_name(target);
        match m.test.get_mut(&name) {
            Some(t) if t.kind != TestKind::Target || t.dir.as_deref() != Some(dir.as_str()) => {
                bail!(
                    "--kselftest {flag}: the matrix already has a test `{name}` that is not this target; declare the target under another name in matrix.toml"
                );
            }
            Some(t) => {
                if let Some(p) = program {
                    if !whole.contains(&name) && !t.only.iter().any(|o| o == p) {
                        t.only.push(p.to_string());
                    }
                } else {
                    t.only.clear();
                    whole.push(name.clone());
                }
            }
            None => {
                let only = program.map(|p| vec![p.to_string()]).unwrap_or_default();
                if program.is_none() {
                    whole.push(name.clone());
                }
                m.test.insert(name.clone(), TestSpec::target(&dir, only));
            }
        }
        if !names.contains(&name) {
            names.push(name);
        }
    }
    run_everywhere(m, &names);
    Ok(names)
}

/// The name of the test `--kunit` and `--kunitconfig` declare.
pub const KUNIT_TEST: &str = "kunit";

/// Declares the KUnit test of `--kunit GLOB` and `--kunitconfig PATH`
/// (either alone: every suite the default config builds that the glob
/// matches, or every suite the .kunitconfig builds) as a test every config
/// runs; returns its name, None when neither flag was given.
pub fn declare_kunit(
    m: &mut Matrix,
    glob: Option<&str>,
    kunitconfig: Option<&str>,
) -> Result<Option<String>> {
    if glob.is_none() && kunitconfig.is_none() {
        return Ok(None);
    }
    if let Some(g) = glob {
        check_glob(g).map_err(|e| anyhow::anyhow!("--kunit {g}: {e}"))?;
    }
    if let Some(p) = kunitconfig {
        check_kunitconfig(p).map_err(|e| anyhow::anyhow!("--kunitconfig {p}: {e}"))?;
    }
    if m.test
        .get(KUNIT_TEST)
        .is_some_and(|t| t.kind != TestKind::Kunit)
    {
        bail!("--kunit: the matrix already has a test `{KUNIT_TEST}` that is not a KUnit test; rename it in matrix.toml");
    }
    m.test.insert(
        KUNIT_TEST.to_string(),
        TestSpec::kunit(glob.map(str::to_string), kunitconfig.map(str::to_string)),
    );
    run_everywhere(m, &[KUNIT_TEST.to_string()]);
    Ok(Some(KUNIT_TEST.to_string()))
}

/// `names` run by every config of `m` (once each).
fn run_everywhere(m: &mut Matrix, names: &[String]) {
    let add = |tests: &mut Vec<Spanned<String>>| {
        for n in names {
            if !tests.iter().any(|t| t.get_ref() == n) {
                tests.push(Spanned::new(0..0, n.clone()));
            }
        }
    };
    add(&mut m.run.tests);
    for c in m.config.values_mut() {
        if let Some(t) = c.tests.as_mut() {
            add(t);
        }
    }
}

/// A glob the kernel's `kunit.filter_glob` takes: `SUITE_GLOB` or
/// `SUITE_GLOB.CASE_GLOB`, of the characters names and globs are made of
/// (it goes on the kernel command line, which splits at spaces).
pub fn check_glob(g: &str) -> Result<()> {
    let ok = |c: char| c.is_ascii_alphanumeric() || "_-*?[]!.".contains(c);
    if g.is_empty() || !g.chars().all(ok) || g.matches('.').count() > 1 {
        bail!("`{g}` is no KUnit filter glob; expected SUITE_GLOB or SUITE_GLOB.CASE_GLOB, as kunit.filter_glob takes it (`cmdline*`, `kunit*.example_simple_test`)");
    }
    Ok(())
}

/// A `.kunitconfig` (or a directory holding one): relative, a path
/// inside the kernel tree; absolute, a file of this host (a developer's
/// own, as kunit_tool takes any path), which must exist.
pub fn check_kunitconfig(p: &str) -> Result<()> {
    if p.starts_with('/') {
        let path = std::path::Path::new(p);
        let file = if path.is_dir() {
            path.join(".kunitconfig")
        } else {
            path.to_path_buf()
        };
        if !file.is_file() {
            bail!("`{}`: no such file", file.display());
        }
        return Ok(());
    }
    let bad =
        p.is_empty() || p.split('/').any(|part| part == "..") || p.chars().any(char::is_whitespace);
    if bad {
        bail!("`{p}` is no path inside the kernel tree; expected a tree-relative .kunitconfig or its directory (`lib/kunit/.kunitconfig`, `lib/kunit`), or an absolute path of this host");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matrix() -> Matrix {
        crate::plan::load(std::path::Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../matrix.toml"
        )))
        .unwrap()
    }

    #[test]
    fn a_target_is_a_directory_of_the_selftests_as_make_names_it() {
        assert_eq!(target_name("tools/testing/selftests/pidfd"), Some("pidfd"));
        assert_eq!(
            target_name("tools/testing/selftests/net/forwarding/"),
            Some("net/forwarding")
        );
        for bad in [
            "tools/testing/selftests/",
            "tools/testing/selftests/../../perf",
            "tools/testing/selftests/a//b",
            "tools/testing/selftests/a b",
            "tools/testing/selftests/$(x)",
            "tools/perf",
            "pidfd",
        ] {
            assert_eq!(target_name(bad), None, "{bad}");
        }
    }

    /// Each flag a test of every config, once; programs of one target
    /// gathered; the target alone wins over its programs.
    #[test]
    fn flags_declare_tests_every_config_runs() {
        let mut m = matrix();
        let names = declare(
            &mut m,
            &[
                "pidfd:pidfd_open_test".into(),
                "timens".into(),
                "pidfd:pidfd_getfd_test".into(),
                "net/forwarding".into(),
            ],
        )
        .unwrap();
        assert_eq!(names, ["pidfd", "timens", "net-forwarding"]);
        let t = &m.test["pidfd"];
        assert_eq!(t.kind, TestKind::Target);
        assert_eq!(t.dir.as_deref(), Some("tools/testing/selftests/pidfd"));
        assert_eq!(t.only, ["pidfd_open_test", "pidfd_getfd_test"]);
        assert!(m.test["timens"].only.is_empty());
        assert_eq!(
            m.test["net-forwarding"].dir.as_deref(),
            Some("tools/testing/selftests/net/forwarding")
        );
        for config in m.config.keys() {
            let tests = m.config_tests(config);
            for n in &names {
                assert_eq!(
                    tests.iter().filter(|t| *t == n).count(),
                    1,
                    "{config}: {tests:?}"
                );
            }
        }
        let mut m = matrix();
        declare(
            &mut m,
            &["pidfd:a".into(), "pidfd".into(), "pidfd:b".into()],
        )
        .unwrap();
        assert!(m.test["pidfd"].only.is_empty());
    }

    #[test]
    fn a_flag_that_names_no_target_or_clashes_is_refused_with_the_flag() {
        let err = |flag: &str| {
            declare(&mut matrix(), &[flag.to_string()])
                .unwrap_err()
                .to_string()
        };
        assert!(
            err("../perf")
                .starts_with("--kselftest ../perf: `../perf` is no kselftest target name"),
            "{}",
            err("../perf")
        );
        assert!(
            err("pidfd:").contains("`` is no program name"),
            "{}",
            err("pidfd:")
        );
        assert!(err("pidfd:a b").contains("`a b` is no program name"));
        // The default matrix's seccomp_bpf is a kselftest of its own kind.
        assert!(
            err("seccomp_bpf").contains("already has a test `seccomp_bpf` that is not this target"),
            "{}",
            err("seccomp_bpf")
        );
    }

    #[test]
    fn kunit_flags_declare_one_test_every_config_runs() {
        let mut m = matrix();
        assert_eq!(declare_kunit(&mut m, None, None).unwrap(), None);
        assert!(!m.test.contains_key(KUNIT_TEST));
        let name = declare_kunit(&mut m, Some("cmdline*"), Some("lib/kunit")).unwrap();
        assert_eq!(name.as_deref(), Some("kunit"));
        let t = &m.test["kunit"];
        assert_eq!(t.kind, TestKind::Kunit);
        assert_eq!(t.glob.as_deref(), Some("cmdline*"));
        assert_eq!(t.kunitconfig.as_deref(), Some("lib/kunit"));
        for config in m.config.keys() {
            assert!(
                m.config_tests(config).contains(&"kunit".to_string()),
                "{config}"
            );
        }
    }

    #[test]
    fn a_kunit_glob_or_kunitconfig_the_kernel_could_not_take_is_refused_with_its_flag() {
        let err = |g: Option<&str>, k: Option<&str>| {
            declare_kunit(&mut matrix(), g, k).unwrap_err().to_string()
        };
        for g in ["", "a b", "a.b.c", "x;y", "$(x)"] {
            assert!(
                err(Some(g), None)
                    .starts_with(&format!("--kunit {g}: `{g}` is no KUnit filter glob")),
                "{}",
                err(Some(g), None)
            );
        }
        for k in ["../x/.kunitconfig", "a b", "lib/../../x"] {
            assert!(
                err(None, Some(k)).contains("is no path inside the kernel tree"),
                "{}",
                err(None, Some(k))
            );
        }
        // A host file must be there.
        assert_eq!(
            err(None, Some("/nonexistent/.kunitconfig")),
            "--kunitconfig /nonexistent/.kunitconfig: `/nonexistent/.kunitconfig`: no such file"
        );
        let own =
            crate::util::test_tmp().join(format!("kmatrix-kunitconfig-{}", std::process::id()));
        std::fs::create_dir_all(&own).unwrap();
        std::fs::write(own.join(".kunitconfig"), "CONFIG_KUNIT=y\n").unwrap();
        check_kunitconfig(own.to_str().unwrap()).unwrap();
        std::fs::remove_dir_all(&own).unwrap();
        for g in ["cmdline", "kunit*", "kunit*.example_simple_test", "[a-c]?x"] {
            check_glob(g).unwrap();
        }
    }
}
