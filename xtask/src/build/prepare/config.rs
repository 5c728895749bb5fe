//! The config phase: the kernel config a cell's tests ask for (the
//! config's fragments, each test's `config` file and matrix.toml lines),
//! made by merge_config + olddefconfig and cached by its inputs, every
//! requested option checked; then what the tests `need` of it.

use std::path::{Path, PathBuf};

use super::{stop, Phased, Source, Stage};
use crate::build::kbuild::{self, ConfigOutcome, ConfigRequest};
use crate::build::source;
use crate::host::events::{CellEvents, Phase};
use crate::kinds::kunit;
use crate::plan::matrix::{Cell, TestKind};
use crate::schema::{CellResult, Evidence, EvidenceKind, Outcome, TestResult};

/// What the tests are about (`needs`): the symbols this kernel lacks and
/// the tests settled before any boot (skipped for a missing symbol; the
/// programs phase adds a `perf` test whose perf did not build).
pub struct Needs {
    pub absent: Vec<String>,
    pub settled: Vec<TestResult>,
}

/// What the kernel config is made of: the config's base target and
/// fragments, and every option the config's tests ask for.
fn request(st: &Stage, cell: &Cell, src: &Source) -> ConfigRequest {
    let cspec = &st.matrix.config[&cell.config];
    let mut req = ConfigRequest {
        base_target: cspec.base.clone(),
        llvm: cspec.llvm,
        ..Default::default()
    };
    req.fragments
        .extend(cspec.fragments.iter().map(|f| st.repo_root.join(f)));
    for (a, frags) in &cspec.arch_fragments {
        if a.get_ref() == cell.arch.name() {
            req.fragments
                .extend(frags.iter().map(|f| st.repo_root.join(f)));
        }
    }
    // Every test of the cell's config shapes the kernel, not only the
    // selected ones: `--test` filters what runs, it never changes what is
    // built.
    for tname in &st.matrix.config_tests(&cell.config) {
        let spec = &st.matrix.test[tname];
        let files = match spec.kind {
            TestKind::Kselftest | TestKind::Programs | TestKind::Target => vec![dir_config(spec)],
            TestKind::Kunit => {
                for l in kunit::NEEDED {
                    req.lines.push((
                        l.to_string(),
                        "kmatrix (KUnit results are read from debugfs)".into(),
                    ));
                }
                kunit::config_files(spec)
            }
            _ => vec![],
        };
        // From the commit, not the build tree: that is switched only
        // when something is built. The first of the files there is; an
        // absolute path is a host file (a developer's own .kunitconfig).
        let read = |rel: &String| {
            if rel.starts_with('/') {
                std::fs::read_to_string(rel).ok()
            } else {
                source::read_at(&src.trees.repo, &src.commit, rel)
            }
        };
        if let Some((rel, text)) = files
            .into_iter()
            .find_map(|rel| Some((rel.clone(), read(&rel)?)))
        {
            for l in text
                .lines()
                .filter(|l| crate::plan::matrix::parse_config_line(l).is_some())
            {
                req.lines.push((l.trim().to_string(), rel.clone()));
            }
        }
        for l in &spec.config {
            req.lines
                .push((l.get_ref().clone(), format!("matrix.toml [test.{tname}]")));
        }
    }
    req
}

/// The final .config (cached by its inputs), every requested option checked.
pub fn config(
    st: &Stage,
    cell: &Cell,
    ev: &CellEvents,
    dir: &Path,
    src: &Source,
    r: &mut CellResult,
) -> Phased<PathBuf> {
    ev.phase(Phase::Config, &cell.config);
    let req = request(st, cell, src);
    let config_log = dir.join("config.log");
    r.logs.config = Some(config_log.clone());
    let outcome = kbuild::configure(
        st.cache,
        &src.trees.build,
        &|| src.checkout(),
        &src.kconfig_id,
        cell.arch,
        &req,
        &config_log,
    );
    let config = match outcome {
        Ok(ConfigOutcome::Ok { config, cached }) => {
            if cached {
                ev.detail("config: cached");
            }
            config
        }
        // A kselftest target's own `config` asks for what it can use; one
        // this config cannot give skips that target (`needs`), the rest of
        // the cell runs.
        Ok(ConfigOutcome::Dropped { missing, config })
            if missing
                .iter()
                .all(|(_, origin, _)| target_configs(st, cell).contains(origin)) =>
        {
            let names: Vec<&str> = missing.iter().map(|(l, _, _)| l.as_str()).collect();
            ev.note(&format!(
                "config {}: kselftest targets' options it cannot give: {}",
                cell.config,
                names.join(", ")
            ));
            config
        }
        Ok(ConfigOutcome::Dropped { missing, config }) => {
            let lines: Vec<String> = missing
                .iter()
                .map(|(l, o, got)| format!("{l} (from {o}): final .config has {got}"))
                .collect();
            let names: Vec<&str> = missing.iter().map(|(l, _, _)| l.as_str()).collect();
            let what = format!(
                "requested options dropped by olddefconfig: {}",
                names.join(", ")
            );
            return stop(
                Outcome::ConfigError,
                Evidence::new(EvidenceKind::Host, what, lines.join("\n"), Some(config)),
            );
        }
        Err(e) => {
            return stop(
                Outcome::ConfigError,
                Evidence::new(
                    EvidenceKind::Host,
                    "kernel configuration failed",
                    format!("{e:#}"),
                    Some(config_log),
                ),
            )
        }
    };
    let _ = std::fs::copy(&config, dir.join("config"));
    Ok(config)
}

/// The `config` files of the kselftest targets among a cell's config's
/// tests, as `request` names them.
fn target_configs(st: &Stage, cell: &Cell) -> Vec<String> {
    st.matrix
        .config_tests(&cell.config)
        .iter()
        .map(|t| &st.matrix.test[t])
        .filter(|t| t.kind == TestKind::Target)
        .map(dir_config)
        .collect()
}

/// A selftest directory's `config` file, as the requests name its lines.
fn dir_config(spec: &crate::plan::matrix::TestSpec) -> String {
    format!("{}/config", spec.dir.as_deref().unwrap_or_default())
}

/// A kselftest target whose `config` asks for options the final .config
/// lacks (a dependency this config leaves off) is skipped, naming them.
fn target_skips(st: &Stage, cell: &Cell, src: &Source, final_config: &str) -> Vec<TestResult> {
    let mut out = Vec::new();
    for tname in &cell.tests {
        let spec = &st.matrix.test[tname];
        if spec.kind != TestKind::Target {
            continue;
        }
        let rel = dir_config(spec);
        let Some(text) = source::read_at(&src.trees.repo, &src.commit, &rel) else {
            continue;
        };
        let wanted: Vec<(String, String, String)> = text
            .lines()
            .filter_map(crate::plan::matrix::parse_config_line)
            .map(|(n, v)| (n, v, rel.clone()))
            .collect();
        let missing = kbuild::verify(final_config, &wanted);
        if missing.is_empty() {
            continue;
        }
        let said: Vec<String> = missing
            .iter()
            .map(|(l, _, got)| format!("{l} (the final .config has {got})"))
            .collect();
        out.push(TestResult {
            name: tname.clone(),
            outcome: Outcome::Skip,
            reason: Some(format!(
                "{rel} asks for what config {} cannot give (a dependency is off): {}",
                cell.config,
                said.join(", ")
            )),
            duration_s: None,
            cases: vec![],
            failed_by_cases: false,
        });
    }
    out
}

/// A symbol a test `needs` that the tree lacks skips the test (or
/// program); one the tree defines but the config left off is an error.
pub fn needs(
    st: &Stage,
    cell: &Cell,
    ev: &CellEvents,
    src: &Source,
    config: &Path,
) -> Phased<Needs> {
    let final_config = std::fs::read_to_string(config).unwrap_or_default();
    let mut needs = Needs {
        absent: Vec::new(),
        settled: target_skips(st, cell, src, &final_config),
    };
    for tname in &cell.tests {
        let spec = &st.matrix.test[tname];
        for sym in spec
            .needs
            .iter()
            .chain(spec.programs.iter().flat_map(|p| &p.needs))
        {
            if needs.absent.contains(sym)
                || final_config.lines().any(|l| l.trim() == format!("{sym}=y"))
            {
                continue;
            }
            if source::kconfig_defines(&src.trees.repo, &src.commit, sym)? {
                let what = format!(
                    "{sym} (needed by test {tname}) is not set in the final .config, though this tree defines it"
                );
                let excerpt = format!(
                    "{what}: one of its dependencies is off; add them to the test's `config` in matrix.toml.\n{}",
                    final_config
                        .lines()
                        .filter(|l| l.contains(sym.as_str()))
                        .collect::<Vec<_>>()
                        .join("\n")
                );
                return stop(
                    Outcome::ConfigError,
                    Evidence::new(
                        EvidenceKind::Host,
                        what,
                        excerpt,
                        Some(config.to_path_buf()),
                    ),
                );
            }
            needs.absent.push(sym.clone());
        }
        if let Some(sym) = spec.needs.iter().find(|s| needs.absent.contains(s)) {
            ev.note(&format!("test {tname}: skipped, no {sym} in this kernel"));
            needs.settled.push(TestResult {
                name: tname.clone(),
                outcome: Outcome::Skip,
                reason: Some(format!("no {sym} in this kernel ({})", cell.kernel)),
                duration_s: None,
                cases: vec![],
                failed_by_cases: false,
            });
        }
    }
    Ok(needs)
}
