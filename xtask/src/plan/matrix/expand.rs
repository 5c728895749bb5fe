//! A matrix expanded: its cells (kernel x variant x arch x config, with
//! the tests each runs), the filters of the command line, and what a cell
//! asks of the matrix (its boots, metrics, expectations, known crashes).

use anyhow::{bail, Result};

use super::schema::*;
use crate::plan::arch::Arch;
use crate::plan::glob::cell_matches;

#[derive(Debug, Default, Clone)]
pub struct Filters {
    pub arch: Vec<String>,
    pub kernel: Vec<String>,
    pub variant: Vec<String>,
    pub test: Vec<String>,
    pub cell: Vec<String>,
}

/// What a selection may name (`Matrix::names`): the matrix's arches,
/// kernels, variants, configs and tests. The CLI adjusts it for what its
/// source flags will make of the matrix before checking its flags.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Names {
    pub arch: Vec<String>,
    pub kernel: Vec<String>,
    pub variant: Vec<String>,
    pub config: Vec<String>,
    pub test: Vec<String>,
}

/// `--WHAT VALUE` is one of `known`, else an error naming the flag and
/// listing the known values.
pub fn known_value(what: &str, value: &str, known: &[String]) -> Result<()> {
    if known.iter().any(|k| k == value) {
        return Ok(());
    }
    bail!(
        "--{what} {value}: not in the matrix; known: {}",
        known.join(", ")
    )
}

impl Names {
    /// Every filter value is known; every `--cell` glob is a glob of four
    /// components, each matching a known value (`*` any).
    pub fn check(&self, f: &Filters) -> Result<()> {
        for (what, wanted, known) in [
            ("arch", &f.arch, &self.arch),
            ("kernel", &f.kernel, &self.kernel),
            ("test", &f.test, &self.test),
            ("variant", &f.variant, &self.variant),
        ] {
            for w in wanted {
                known_value(what, w, known)?;
            }
        }
        for g in &f.cell {
            if let Err(e) = crate::plan::glob::check(g) {
                bail!("--cell {e} (see docs/matrix-toml.md, globs)");
            }
            let parts: Vec<&str> = g.split('/').collect();
            if parts.len() != 4 {
                bail!("--cell {g}: expected kernel/variant/arch/config, `*` for any one");
            }
            let places = [
                ("kernel", &self.kernel),
                ("variant", &self.variant),
                ("arch", &self.arch),
                ("config", &self.config),
            ];
            for (part, (what, known)) in parts.iter().zip(places) {
                if !known
                    .iter()
                    .any(|k| crate::plan::glob::name_matches(part, k))
                {
                    bail!(
                        "--cell {g}: no {what} `{part}` in the matrix; known: {}",
                        known.join(", ")
                    );
                }
            }
        }
        Ok(())
    }
}

impl Matrix {
    /// The values `--arch`, `--kernel`, `--variant`, `--test`, `--config`
    /// and `--cell` may name: what this matrix has.
    pub fn names(&self) -> Names {
        let mut tests: Vec<String> = Vec::new();
        for c in self.config.keys() {
            for t in self.config_tests(c) {
                if !tests.contains(&t) {
                    tests.push(t);
                }
            }
        }
        let mut variants = vec!["base".to_string()];
        if self.aa {
            variants.push(AA_VARIANT.to_string());
        }
        variants.extend(self.series.keys().cloned());
        Names {
            arch: self
                .run
                .arches
                .iter()
                .map(|a| a.get_ref().clone())
                .collect(),
            kernel: self.kernel.keys().cloned().collect(),
            variant: variants,
            // The configs cells have: a build-only one (tiny-clang) is no
            // cell's.
            config: self
                .config
                .keys()
                .filter(|c| {
                    self.kernel
                        .keys()
                        .any(|k| self.kernel_configs(k).contains(c))
                })
                .cloned()
                .collect(),
            test: tests,
        }
    }

    /// Expands the matrix into cells, in build order, keeping those the
    /// filters select. Unknown filter values are errors, not empty runs.
    pub fn cells(&self, f: &Filters) -> Result<Vec<Cell>> {
        self.names().check(f)?;
        let arches: Vec<String> = self
            .run
            .arches
            .iter()
            .map(|a| a.get_ref().clone())
            .collect();

        let keep = |wanted: &[String], v: &str| wanted.is_empty() || wanted.iter().any(|w| w == v);
        let mut cells = Vec::new();
        for (kname, k) in &self.kernel {
            let mut vs = vec!["base".to_string()];
            if self.aa {
                vs.push(AA_VARIANT.to_string());
            }
            vs.extend(k.series.iter().map(|s| s.get_ref().clone()));
            for v in &vs {
                for a in &arches {
                    for c in self.kernel_configs(kname) {
                        let tests: Vec<String> = self
                            .config_tests(&c)
                            .into_iter()
                            .filter(|t| keep(&f.test, t))
                            .collect();
                        let cell = Cell {
                            kernel: kname.clone(),
                            variant: v.clone(),
                            arch: Arch::parse(a).expect("validated"),
                            config: c,
                            tests,
                        };
                        // A config none of whose tests is selected has
                        // nothing to run.
                        if !cell.tests.is_empty()
                            && keep(&f.kernel, kname)
                            && keep(&f.variant, v)
                            && keep(&f.arch, a)
                            && (f.cell.is_empty()
                                || f.cell.iter().any(|g| cell_matches(g, &cell.id())))
                        {
                            cells.push(cell);
                        }
                    }
                }
            }
        }
        for g in &f.cell {
            if !cells.iter().any(|c| cell_matches(g, &c.id())) {
                bail!("--cell {g}: matches no cell of the matrix (ids are kernel/variant/arch/config)");
            }
        }
        if cells.is_empty() {
            bail!("the filters select no cell");
        }
        Ok(cells)
    }

    /// `run.build_only`: the targets built but never booted, as (arch,
    /// config), in the file's order.
    pub fn build_only(&self) -> Vec<(Arch, String)> {
        self.run
            .build_only
            .iter()
            .filter_map(|t| {
                let (a, c) = t.get_ref().split_once('/')?;
                Some((Arch::parse(a)?, c.to_string()))
            })
            .collect()
    }

    /// Every arch a kernel of the matrix is built for: run.arches, then the
    /// build-only targets' arches.
    pub fn build_arches(&self) -> Vec<String> {
        let mut all: Vec<String> = self
            .run
            .arches
            .iter()
            .map(|a| a.get_ref().clone())
            .collect();
        for (a, _) in self.build_only() {
            if !all.iter().any(|x| x == a.name()) {
                all.push(a.name().to_string());
            }
        }
        all
    }

    /// The configs a kernel is built with: its own `configs`, else run.configs.
    pub fn kernel_configs(&self, kernel: &str) -> Vec<String> {
        let own = self
            .kernel
            .get(kernel)
            .map(|k| &k.configs)
            .filter(|c| !c.is_empty());
        own.unwrap_or(&self.run.configs)
            .iter()
            .map(|c| c.get_ref().clone())
            .collect()
    }

    /// The tests a config's cells run and whose Kconfig options the config
    /// gets: its own `tests`, else run.tests.
    pub fn config_tests(&self, config: &str) -> Vec<String> {
        self.config
            .get(config)
            .and_then(|c| c.tests.as_ref())
            .unwrap_or(&self.run.tests)
            .iter()
            .map(|t| t.get_ref().clone())
            .collect()
    }

    /// QEMU `-smp` of a config's cells.
    /// Whether a boot of the cell runs a benchmark (a `bench` or `perf`
    /// test): such a boot runs alone (`--jobs`).
    pub fn measures(&self, cell: &Cell) -> bool {
        cell.tests.iter().any(|t| {
            self.test
                .get(t)
                .is_some_and(|t| matches!(t.kind, TestKind::Bench | TestKind::Perf))
        })
    }

    pub fn config_smp(&self, config: &str) -> u32 {
        self.config
            .get(config)
            .and_then(|c| c.smp)
            .unwrap_or(self.run.smp)
    }

    /// (good direction, minimum effect %) for a metric; lower-is-better and
    /// 5% when nothing is declared.
    pub fn metric_spec(&self, name: &str) -> (Better, f64) {
        self.metric_decl(name)
            .map_or((Better::Lower, default_min_effect()), |m| {
                (m.better, m.min_effect_pct)
            })
    }

    /// The quantile comparisons of this metric use (0.5 unless declared).
    pub fn metric_quantile(&self, name: &str) -> f64 {
        self.metric_decl(name)
            .and_then(|m| m.quantile)
            .unwrap_or(0.5)
    }

    /// The test of `cell` that measured `metric`: the one whose name and a
    /// dot begin it (the longest such: `rseq_own.x` is rseq_own's).
    pub fn metric_test<'c>(&self, cell: &'c Cell, metric: &str) -> Option<&'c str> {
        cell.tests
            .iter()
            .filter(|t| {
                metric
                    .strip_prefix(t.as_str())
                    .is_some_and(|r| r.starts_with('.'))
            })
            .max_by_key(|t| t.len())
            .map(String::as_str)
    }

    /// Whether boot `boot` of `cell` measures `metric` again: its test is
    /// not limited to earlier boots (`[test] boots`).
    pub fn measured_in_boot(&self, cell: &Cell, metric: &str, boot: u32) -> bool {
        self.metric_test(cell, metric).is_some_and(|t| {
            self.test
                .get(t)
                .is_none_or(|spec| spec.boots.is_none_or(|b| boot <= b))
        })
    }

    /// Boots a cell gets out of `boots` asked for (run.boots or --boots):
    /// no more than its longest-running test wants, so a cell whose tests
    /// all stop after boot 3 (`[test] boots = 3`) is not booted a 4th time
    /// for nothing. A cell with no tests boots once.
    pub fn cell_boots(&self, cell: &Cell, boots: u32) -> u32 {
        let boots = boots.max(1);
        cell.tests
            .iter()
            .map(|t| {
                self.test
                    .get(t)
                    .and_then(|spec| spec.boots)
                    .map_or(boots, |b| b.min(boots))
            })
            .max()
            .unwrap_or(1)
    }

    /// The power figure this metric's comparisons need (`[metric] power`).
    pub fn metric_power(&self, name: &str) -> Option<&Power> {
        self.metric_decl(name).and_then(|m| m.power.as_ref())
    }

    /// What code layout alone moves this metric by (`[metric] layout_pct`).
    pub fn metric_layout(&self, name: &str) -> Option<f64> {
        self.metric_decl(name).and_then(|m| m.layout_pct)
    }

    /// Whether comparisons take this metric: not when its declaration says
    /// `compare = false`.
    pub fn compared(&self, name: &str) -> bool {
        self.metric_decl(name).is_none_or(|m| m.compare)
    }

    /// The `[metric.PREFIX]` with the longest prefix of `name`.
    pub fn metric_decl(&self, name: &str) -> Option<&MetricSpec> {
        self.metric
            .iter()
            .filter(|(prefix, _)| name.starts_with(prefix.as_str()))
            .max_by_key(|(prefix, _)| prefix.len())
            .map(|(_, m)| m)
    }

    /// The `[[known]]` crashes that apply to a cell.
    pub fn known_crashes<'a>(&'a self, cell: &Cell) -> Vec<&'a Known> {
        self.known
            .iter()
            .filter(|k| cell_matches(&k.cell, &cell.id()))
            .collect()
    }

    /// Expectations that apply to a cell, in file order: its id matches and
    /// the test is one the cell runs (`--test` may have left tests out).
    /// The A/A twin has its base's expectations.
    pub fn expectations<'a>(&'a self, cell: &Cell) -> Vec<&'a Expect> {
        let id = Cell {
            variant: built_as(&cell.variant).to_string(),
            tests: vec![],
            ..cell.clone()
        }
        .id();
        self.expect
            .iter()
            .filter(|e| cell_matches(&e.cell, &id) && cell.tests.contains(e.test.get_ref()))
            .collect()
    }
}

/// `CONFIG_FOO=y` -> ("CONFIG_FOO", "y"); `# CONFIG_FOO is not set` -> ("CONFIG_FOO", "n").
pub fn parse_config_line(line: &str) -> Option<(String, String)> {
    let line = line.trim();
    if let Some(rest) = line.strip_prefix("# ") {
        let name = rest.strip_suffix(" is not set")?;
        return name
            .starts_with("CONFIG_")
            .then(|| (name.to_string(), "n".to_string()));
    }
    let (k, v) = line.split_once('=')?;
    (k.starts_with("CONFIG_") && !v.is_empty()).then(|| (k.to_string(), v.to_string()))
}
