//! Parsing and validation of matrix.toml: what serde cannot check
//! (names that refer to other tables, ranges, repeats, patterns), each
//! refusal naming FILE:LINE:COL and what was expected.

use anyhow::{bail, Result};
use toml::Spanned;

use super::expand::{parse_config_line, Filters};
use super::ranges::{number_at, Rule, BOOTS};
use super::schema::*;
use crate::plan::arch::Arch;
use crate::plan::spans::{keys, Seg, Spans};

/// The first entry of a list that repeats an earlier one: its index.
fn repeated<'s>(items: impl IntoIterator<Item = &'s str>) -> Option<(usize, &'s str)> {
    let mut seen = std::collections::HashSet::new();
    items
        .into_iter()
        .enumerate()
        .find(|(_, s)| !seen.insert(*s))
}

/// A list of names with each one at most once; the error is at the repeat.
fn once(at: &Spans, list: &[Spanned<String>], what: &str, why: &str) -> Result<()> {
    match repeated(list.iter().map(|s| s.get_ref().as_str())) {
        Some((i, s)) => Err(at.err(
            list[i].span(),
            format!("{what} lists `{s}` twice{why}; expected each once"),
        )),
        None => Ok(()),
    }
}

/// The same for a list without spans of its own, found by key path.
fn once_at(at: &Spans, keys: &[Seg], list: &[String], what: &str) -> Result<()> {
    match repeated(list.iter().map(String::as_str)) {
        Some((i, s)) => {
            let mut p = keys.to_vec();
            p.push(Seg::Index(i));
            Err(at.err_at(&p, format!("{what} lists `{s}` twice; expected each once")))
        }
        None => Ok(()),
    }
}

/// A kernel, series, config or test name: part of cell ids, of globs, and
/// of paths in the cache and the guest.
fn bad_name(name: &str) -> bool {
    name.is_empty()
        || name
            .chars()
            .any(|c| c == '/' || c == '*' || c.is_whitespace() || c.is_control())
}

const NAME_RULE: &str = "expected a name without `/`, `*` or white space";

impl Matrix {
    /// Parses and validates; errors name the file, line and column and what
    /// was expected. Reads nothing but `text` (the files it names are
    /// checked by `plan::files`).
    pub fn parse(path: &str, text: &str) -> Result<Matrix> {
        let m: Matrix = match toml::from_str(text) {
            Ok(m) => m,
            Err(e) => {
                let at = Spans::new(path, text);
                let offset = e.span().map_or(0, |s| s.start);
                let hint = number_at(text, offset)
                    .map(|h| format!("; {h}"))
                    .unwrap_or_default();
                let mut msg = e.message().trim_end().to_string();
                if msg.is_empty() {
                    // toml says nothing of some characters (NUL, controls).
                    let c = text.get(offset..).and_then(|t| t.chars().next());
                    msg = match c {
                        Some(c) => format!("unexpected character {c:?}, expected TOML"),
                        None => "unexpected end of the file, expected TOML".to_string(),
                    };
                }
                bail!("{}: {msg}{hint}", at.place(offset));
            }
        };
        let mut m = m;
        m.validate(&Spans::new(path, text))?;
        m.add_prefix_series();
        Ok(m)
    }

    /// A kernel's `NAME@K` (validated): the first K patches of series NAME,
    /// as a series of its own, as sweep and bisect name them.
    fn add_prefix_series(&mut self) {
        let listed: Vec<String> = self
            .kernel
            .values()
            .flat_map(|k| k.series.iter().map(|s| s.get_ref().clone()))
            .collect();
        for name in listed {
            if let Some((series, k)) = split_prefix(&name) {
                let dir = self.series[series].dir.clone();
                let origin = self.series[series].origin.clone();
                self.series.insert(
                    name.clone(),
                    SeriesSpec {
                        dir,
                        take: Some(k),
                        origin,
                    },
                );
            }
        }
    }

    /// Checks what serde cannot: names that refer to other tables, ranges,
    /// repeats, patterns. The first problem found is the error.
    fn validate(&self, at: &Spans) -> Result<()> {
        self.validate_run(at)?;
        self.validate_series(at)?;
        self.validate_kernels(at)?;
        self.validate_configs(at)?;
        self.validate_tests(at)?;
        self.validate_expectations(at)?;
        self.validate_comparisons(at)?;
        let Ok(cells) = self.cells(&Filters::default()) else {
            return Err(at.err_at(
                keys!["run"],
                "the matrix makes no cell: expected a kernel with a config (its `configs`, else run.configs) whose tests (its `tests`, else run.tests) are not empty",
            ));
        };
        self.validate_expected_cells(at, &cells)
    }

    /// [run]: the arches, configs and tests it names, and its numbers.
    fn validate_run(&self, at: &Spans) -> Result<()> {
        self.validate_run_names(at)?;
        let run = &self.run;
        let values: [(&str, u64); 4] = [
            ("smp", run.smp.into()),
            ("memory_mb", run.memory_mb.into()),
            ("cell_timeout_s", run.cell_timeout_s),
            ("boots", run.boots.into()),
        ];
        for (key, value) in values {
            Rule::of("run", key).check(at, keys!["run", key], &format!("run.{key}"), value)?;
        }
        if let Some(mb) = run.max_boots {
            if mb < run.boots || mb > *BOOTS.end() {
                return Err(at.err_at(
                    keys!["run", "max_boots"],
                    format!(
                        "run.max_boots = {mb} is out of range, expected run.boots ({})..={}",
                        run.boots,
                        BOOTS.end()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// [run]: the arches, configs, tests and build-only targets it names.
    fn validate_run_names(&self, at: &Spans) -> Result<()> {
        let run = &self.run;
        if run.arches.is_empty() {
            return Err(at.err_at(
                keys!["run", "arches"],
                format!(
                    "run.arches is empty, expected some of {:?}",
                    Arch::guest_names()
                ),
            ));
        }
        for a in &run.arches {
            match Arch::parse(a.get_ref()) {
                Some(arch) if !arch.info().boots => {
                    return Err(at.err(
                        a.span(),
                        format!(
                            "run.arches: {arch} is built, never booted (its guest programs would need a {arch} C library); name it in run.build_only as \"{arch}/CONFIG\" instead"
                        ),
                    ))
                }
                Some(_) => {}
                None => {
                    return Err(at.err(
                        a.span(),
                        format!(
                            "unknown arch `{}`, expected one of {:?}",
                            a.get_ref(),
                            Arch::guest_names()
                        ),
                    ))
                }
            }
        }
        once(
            at,
            &run.arches,
            "run.arches",
            " (each cell would run twice)",
        )?;
        for c in &run.configs {
            if !self.config.contains_key(c.get_ref()) {
                return Err(at.err(
                    c.span(),
                    format!(
                        "config `{}` is not defined in a [config.{}] table",
                        c.get_ref(),
                        c.get_ref()
                    ),
                ));
            }
        }
        once(
            at,
            &run.configs,
            "run.configs",
            " (each cell would run twice)",
        )?;
        for t in &run.tests {
            if !self.test.contains_key(t.get_ref()) {
                return Err(at.err(
                    t.span(),
                    format!(
                        "test `{}` is not defined in a [test.{}] table",
                        t.get_ref(),
                        t.get_ref()
                    ),
                ));
            }
        }
        once(at, &run.tests, "run.tests", " (it would run twice a boot)")?;
        for t in &run.build_only {
            let (arch, config) = t.get_ref().split_once('/').unwrap_or((t.get_ref(), ""));
            if Arch::parse(arch).is_none() {
                return Err(at.err(
                    t.span(),
                    format!(
                        "run.build_only: `{}` names no arch, expected ARCH/CONFIG with ARCH one of {:?}",
                        t.get_ref(),
                        Arch::names()
                    ),
                ));
            }
            if !self.config.contains_key(config) {
                return Err(at.err(
                    t.span(),
                    format!(
                        "run.build_only: `{}` names no config, expected ARCH/CONFIG with CONFIG one of {:?}",
                        t.get_ref(),
                        self.config.keys().collect::<Vec<_>>()
                    ),
                ));
            }
        }
        once(
            at,
            &run.build_only,
            "run.build_only",
            " (it would be built twice a patch)",
        )?;
        Ok(())
    }

    /// [kernel.*]: names, the series and configs they name, their sources.
    fn validate_kernels(&self, at: &Spans) -> Result<()> {
        if self.kernel.is_empty() {
            return Err(at.err_at(
                keys!["kernel"],
                "no kernel: expected a [kernel.NAME] table with a `source`",
            ));
        }
        for (name, k) in &self.kernel {
            if bad_name(name) || name == "base" {
                return Err(at.err_key(
                    keys!["kernel", name],
                    format!("kernel name `{name}`: {NAME_RULE}, and not `base`"),
                ));
            }
            for s in &k.series {
                if let Some((series, _)) = split_prefix(s.get_ref()) {
                    if !self.series.contains_key(series) {
                        return Err(at.err(
                            s.span(),
                            format!(
                                "`{}` names the first patches of series `{series}`, which is not defined in a [series.\"{series}\"] table",
                                s.get_ref()
                            ),
                        ));
                    }
                } else if s.get_ref().contains('@') {
                    return Err(at.err(
                        s.span(),
                        format!(
                            "`{}`: expected a series name, or NAME@K for its first K patches (K from 1)",
                            s.get_ref()
                        ),
                    ));
                } else if !self.series.contains_key(s.get_ref()) {
                    return Err(at.err(
                        s.span(),
                        format!(
                            "series `{}` is not defined in a [series.\"{}\"] table",
                            s.get_ref(),
                            s.get_ref()
                        ),
                    ));
                }
            }
            once(
                at,
                &k.series,
                &format!("kernel.{name}.series"),
                " (each of its cells would run twice)",
            )?;
            if let Some(from) = &k.selftests_from {
                if !k.series.iter().any(|s| s.get_ref() == from.get_ref())
                    && from.get_ref() != "base"
                {
                    return Err(at.err(
                        from.span(),
                        format!(
                            "selftests_from = `{}`: expected `base` or one of this kernel's series",
                            from.get_ref()
                        ),
                    ));
                }
            }
            for c in &k.configs {
                if !self.config.contains_key(c.get_ref()) {
                    return Err(at.err(
                        c.span(),
                        format!(
                            "config `{}` is not defined in a [config.{}] table",
                            c.get_ref(),
                            c.get_ref()
                        ),
                    ));
                }
            }
            once(
                at,
                &k.configs,
                &format!("kernel.{name}.configs"),
                " (each of its cells would run twice)",
            )?;
            let bad_source = match k.source.get_ref() {
                SourceSpec::Debian { package, .. } if !package.starts_with("linux-source-") => {
                    Some(format!(
                        "debian source `{package}`: expected a linux-source-X.Y package"
                    ))
                }
                SourceSpec::Download {
                    sha256: Some(sum), ..
                } if sum.len() != 64 || !sum.bytes().all(|b| b.is_ascii_hexdigit()) => Some(
                    format!("source sha256 `{sum}`: expected 64 hex digits"),
                ),
                SourceSpec::Download {
                    url, release: None, ..
                } => super::schema::url_file_name(url).err(),
                SourceSpec::Tarball(p) if p.trim().is_empty() => {
                    Some("tarball source: expected the path of a kernel tarball".into())
                }
                SourceSpec::Git { path, rev } if path.trim().is_empty() || rev.trim().is_empty() => {
                    Some(format!(
                        "git source `{path}` at `{rev}`: expected the path of a git tree and a revision"
                    ))
                }
                _ => None,
            };
            if let Some(msg) = bad_source {
                return Err(at.err(k.source.span(), msg));
            }
        }
        Ok(())
    }

    /// [series.*]: names (variant names, hence part of cell ids) and dirs.
    fn validate_series(&self, at: &Spans) -> Result<()> {
        for (name, s) in &self.series {
            if bad_name(name) || name == "base" || name == AA_VARIANT || name.contains('@') {
                return Err(at.err_key(
                    keys!["series", name],
                    format!(
                        "series name `{name}`: {NAME_RULE} or `@`, and not `base` (it names a variant)"
                    ),
                ));
            }
            if s.dir.trim().is_empty() {
                return Err(at.err_at(
                    keys!["series", name, "dir"],
                    format!("[series.{name}] dir is empty, expected a directory of patch files"),
                ));
            }
        }
        Ok(())
    }

    /// [config.*]: smp, the tests and arch fragments they name.
    fn validate_configs(&self, at: &Spans) -> Result<()> {
        for (name, c) in &self.config {
            if bad_name(name) {
                return Err(at.err_key(
                    keys!["config", name],
                    format!("config name `{name}`: {NAME_RULE}"),
                ));
            }
            if c.base.trim().is_empty() {
                return Err(at.err_at(
                    keys!["config", name, "base"],
                    format!("[config.{name}] base is empty, expected a make target (tinyconfig, defconfig)"),
                ));
            }
            if let Some(smp) = c.smp {
                Rule::of("config", "smp").check(
                    at,
                    keys!["config", name, "smp"],
                    &format!("[config.{name}] smp"),
                    smp,
                )?;
            }
            if let Some(tests) = &c.tests {
                if tests.is_empty() {
                    return Err(at.err_at(
                        keys!["config", name, "tests"],
                        format!("config.{name}.tests is empty, expected one or more tests (without the key: run.tests)"),
                    ));
                }
                for t in tests {
                    if !self.test.contains_key(t.get_ref()) {
                        return Err(at.err(
                            t.span(),
                            format!(
                                "config.{name}.tests: test `{}` is not defined in a [test.{}] table",
                                t.get_ref(),
                                t.get_ref()
                            ),
                        ));
                    }
                }
                once(
                    at,
                    tests,
                    &format!("config.{name}.tests"),
                    " (it would run twice a boot)",
                )?;
            }
            once_at(
                at,
                keys!["config", name, "fragments"],
                &c.fragments,
                &format!("config.{name}.fragments"),
            )?;
            for (a, frags) in &c.arch_fragments {
                if Arch::parse(a.get_ref()).is_none() {
                    return Err(at.err(
                        a.span(),
                        format!(
                            "config.{name}.arch_fragments: unknown arch `{}`, expected one of {:?}",
                            a.get_ref(),
                            Arch::names()
                        ),
                    ));
                }
                once_at(
                    at,
                    keys!["config", name, "arch_fragments", a.get_ref()],
                    frags,
                    &format!("config.{name}.arch_fragments.{}", a.get_ref()),
                )?;
            }
        }
        Ok(())
    }

    /// [test.*]: what each kind needs, Kconfig symbols, numbers, repeats.
    fn validate_tests(&self, at: &Spans) -> Result<()> {
        for (name, t) in &self.test {
            let here = keys!["test", name];
            if bad_name(name) {
                return Err(at.err_key(here, format!("test name `{name}`: {NAME_RULE}")));
            }
            let missing = match t.kind {
                TestKind::Kselftest if t.dir.is_none() || t.sources.is_empty() => {
                    Some("kind = \"kselftest\" needs `dir` and `sources`")
                }
                TestKind::Bench if t.source.is_none() => Some("kind = \"bench\" needs `source`"),
                TestKind::Shell if t.command.is_none() => Some("kind = \"shell\" needs `command`"),
                TestKind::Programs
                    if t.dir.is_none() || t.programs.is_empty() || t.cases.is_empty() =>
                {
                    Some("kind = \"programs\" needs `dir`, `programs` and `cases`")
                }
                TestKind::Perf if t.dir.is_none() || t.sources.is_empty() || t.cases.is_empty() => {
                    Some("kind = \"perf\" needs `dir` (tools/perf), `sources` (the files its benches are in) and `cases`")
                }
                TestKind::Target
                    if t.dir.as_deref().is_none_or(|d| target_name(d).is_none()) =>
                {
                    Some("kind = \"target\" needs `dir`, a directory of tools/testing/selftests (`tools/testing/selftests/pidfd`)")
                }
                _ => None,
            };
            let kunit = [("glob", &t.glob), ("kunitconfig", &t.kunitconfig)];
            for (key, v) in kunit {
                let Some(v) = v else { continue };
                let checked = if t.kind != TestKind::Kunit {
                    Err(anyhow::anyhow!("only kind = \"kunit\" has `{key}`"))
                } else if key == "glob" {
                    crate::plan::targets::check_glob(v)
                } else {
                    crate::plan::targets::check_kunitconfig(v)
                };
                if let Err(e) = checked {
                    return Err(at.err_key(
                        keys!["test", name, key],
                        format!("[test.{name}] {key}: {e}"),
                    ));
                }
            }
            if let Some(msg) = missing {
                return Err(at.err_key(here, format!("[test.{name}] {msg}")));
            }
            test_needs(at, name, t)?;
            if let Some(b) = t.boots {
                Rule::of("test", "boots").check(
                    at,
                    keys!["test", name, "boots"],
                    &format!("[test.{name}] boots"),
                    b,
                )?;
            }
            if let Some(r) = t.rounds {
                if t.kind != TestKind::Perf {
                    return Err(at.err_key(
                        keys!["test", name, "rounds"],
                        format!("[test.{name}] rounds: only kind = \"perf\" has rounds"),
                    ));
                }
                Rule::of("test", "rounds").check(
                    at,
                    keys!["test", name, "rounds"],
                    &format!("[test.{name}] rounds"),
                    r,
                )?;
            }
            if let Some(s) = t.timeout_s {
                Rule::of("test", "timeout_s").check(
                    at,
                    keys!["test", name, "timeout_s"],
                    &format!("[test.{name}] timeout_s"),
                    s,
                )?;
            }
            test_config(at, name, t)?;
            once_at(
                at,
                keys!["test", name, "sources"],
                &t.sources,
                &format!("[test.{name}] sources"),
            )?;
            let programs: Vec<String> = t.programs.iter().map(|p| p.name.clone()).collect();
            let cases: Vec<String> = t.cases.iter().map(|c| c.name.clone()).collect();
            for (what, names) in [("programs", &programs), ("cases", &cases)] {
                if let Some((i, n)) = repeated(names.iter().map(String::as_str)) {
                    return Err(at.err_at(
                        keys!["test", name, what, i, "name"],
                        format!(
                            "[test.{name}] {what}: `{n}` is named twice; expected each name once"
                        ),
                    ));
                }
                if let Some(i) = names.iter().position(|n| bad_name(n)) {
                    return Err(at.err_at(
                        keys!["test", name, what, i, "name"],
                        format!("[test.{name}] {what}: name `{}`: {NAME_RULE}", names[i]),
                    ));
                }
            }
            if let Some(i) = t.programs.iter().position(|p| p.sources.is_empty()) {
                return Err(at.err_at(
                    keys!["test", name, "programs", i, "sources"],
                    format!(
                        "[test.{name}] program `{}` has no sources, expected C files in `dir`",
                        t.programs[i].name
                    ),
                ));
            }
        }
        Ok(())
    }

    /// [[expect]] and [[known]]: tests, cell patterns, splat regexes.
    fn validate_expectations(&self, at: &Spans) -> Result<()> {
        for (i, e) in self.expect.iter().enumerate() {
            if !self.test.contains_key(e.test.get_ref()) {
                return Err(at.err(
                    e.test.span(),
                    format!("expect: unknown test `{}`", e.test.get_ref()),
                ));
            }
            if e.cell.split('/').count() != 4 {
                return Err(at.err_at(
                    keys!["expect", i, "cell"],
                    format!("expect.cell `{}`: expected kernel/variant/arch/config (use * as a wildcard)", e.cell),
                ));
            }
            let globs = [("cell", Some(&e.cell)), ("case", e.case.as_ref())];
            for (key, pattern) in globs {
                if let Some(Err(why)) = pattern.map(|p| crate::plan::glob::check(p)) {
                    return Err(at.err_at(keys!["expect", i, key], format!("expect.{key} {why}")));
                }
            }
        }
        for (i, k) in self.known.iter().enumerate() {
            if k.cell.split('/').count() != 4 {
                return Err(at.err_at(
                    keys!["known", i, "cell"],
                    format!("known.cell `{}`: expected kernel/variant/arch/config (use * as a wildcard)", k.cell),
                ));
            }
            if let Err(why) = crate::plan::glob::check(&k.cell) {
                return Err(at.err_at(keys!["known", i, "cell"], format!("known.cell {why}")));
            }
            match regex::Regex::new(&k.splat) {
                Err(e) => {
                    return Err(at.err_at(
                        keys!["known", i, "splat"],
                        format!("known.splat `{}`: not a regex: {e}", k.splat),
                    ))
                }
                // A pattern that matches the empty text matches inside any
                // report: every crash would count as known.
                Ok(re) if re.is_match("") => {
                    return Err(at.err_at(
                        keys!["known", i, "splat"],
                        format!(
                            "known.splat `{}` matches any text, so every crash would count as known: expected a pattern of the crash's own words (`BUG: kernel NULL pointer dereference`)",
                            k.splat
                        ),
                    ))
                }
                Ok(_) => {}
            }
        }
        Ok(())
    }

    /// [[expect]] and [[known]] against the cells the matrix makes: an
    /// entry that matches none (a misspelt kernel or series, a test its
    /// cells do not run) would silently expect nothing.
    fn validate_expected_cells(&self, at: &Spans, cells: &[Cell]) -> Result<()> {
        let sample = || {
            let ids: Vec<String> = cells.iter().take(4).map(Cell::id).collect();
            format!(
                "{}{}",
                ids.join(", "),
                if cells.len() > 4 { ", ..." } else { "" }
            )
        };
        for (i, e) in self.expect.iter().enumerate() {
            let test = e.test.get_ref();
            let matching: Vec<&Cell> = cells
                .iter()
                .filter(|c| crate::plan::glob::cell_matches(&e.cell, &c.id()))
                .collect();
            if matching.is_empty() {
                return Err(at.err_at(
                    keys!["expect", i, "cell"],
                    format!(
                        "[[expect]] cell `{}` matches no cell of the matrix (its cells: {})",
                        e.cell,
                        sample()
                    ),
                ));
            }
            // A test no config runs (declared for whoever adds it to
            // run.tests) keeps its expectations for that day.
            let runs = cells.iter().any(|c| c.tests.contains(test));
            if runs && !matching.iter().any(|c| c.tests.contains(test)) {
                return Err(at.err_at(
                    keys!["expect", i, "test"],
                    format!("[[expect]] test `{test}`: no cell matching `{}` runs it (the tests of a cell's config, else run.tests)", e.cell),
                ));
            }
        }
        for (i, k) in self.known.iter().enumerate() {
            if !cells
                .iter()
                .any(|c| crate::plan::glob::cell_matches(&k.cell, &c.id()))
            {
                return Err(at.err_at(
                    keys!["known", i, "cell"],
                    format!(
                        "[[known]] cell `{}` matches no cell of the matrix (its cells: {})",
                        k.cell,
                        sample()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// A metric name or prefix in a comparison or a [metric.*] rule: it
    /// begins with the name of a test that produces metrics (a `bench` or
    /// `perf` test) and a dot, or is that name, else no figure of any run
    /// would ever meet it.
    fn check_metric_name(&self, at: &Spans, here: &[Seg], what: &str, name: &str) -> Result<()> {
        let test = name.split('.').next().unwrap_or_default();
        let produces = |t: &TestSpec| matches!(t.kind, TestKind::Bench | TestKind::Perf);
        if self.test.get(test).is_some_and(produces) {
            return Ok(());
        }
        let benches: Vec<&str> = self
            .test
            .iter()
            .filter(|(_, t)| produces(t))
            .map(|(n, _)| n.as_str())
            .collect();
        let why = match self.test.get(test) {
            Some(t) => format!(
                "test `{test}` is a {} test, which measures nothing",
                format!("{:?}", t.kind).to_lowercase()
            ),
            None => format!("no test `{test}`"),
        };
        Err(at.err_at(
            here,
            format!(
                "{what} `{name}` names no metric a test produces ({why}): a metric's name begins with its test's name and a dot; the tests with metrics: {}",
                if benches.is_empty() { "none".to_string() } else { benches.join(", ") }
            ),
        ))
    }

    /// [[across]], [[within]] and [metric.*]: what is compared, and how.
    fn validate_comparisons(&self, at: &Spans) -> Result<()> {
        for name in self.metric.keys() {
            self.check_metric_name(at, keys!["metric", name], "[metric.NAME]", name)?;
        }
        for (i, a) in self.across.iter().enumerate() {
            self.check_metric_name(
                at,
                keys!["across", i, "metrics"],
                "[[across]] metrics",
                &a.metrics,
            )?;
        }
        for (i, w) in self.within.iter().enumerate() {
            self.check_metric_name(at, keys!["within", i, "base"], "[[within]] base", &w.base)?;
            self.check_metric_name(at, keys!["within", i, "new"], "[[within]] new", &w.new)?;
            if let Some(sp) = &w.split {
                self.check_metric_name(
                    at,
                    keys!["within", i, "split", "metric"],
                    "[within.split] metric",
                    &sp.metric,
                )?;
            }
        }
        for (i, a) in self.agree.iter().enumerate() {
            self.check_metric_name(at, keys!["agree", i, "a"], "[[agree]] a", &a.a)?;
            self.check_metric_name(at, keys!["agree", i, "b"], "[[agree]] b", &a.b)?;
        }
        for (name, m) in &self.metric {
            if let Some(p) = &m.power {
                self.check_metric_name(
                    at,
                    keys!["metric", name, "power", "metric"],
                    "[metric.NAME] power.metric",
                    &p.metric,
                )?;
            }
        }
        for (i, a) in self.across.iter().enumerate() {
            for (key, c) in [
                ("base_config", &a.base_config),
                ("new_config", &a.new_config),
            ] {
                if !self.config.contains_key(c) {
                    return Err(at.err_at(
                        keys!["across", i, key],
                        format!("[[across]] config `{c}` is not defined in a [config.{c}] table"),
                    ));
                }
            }
            if a.base_config == a.new_config {
                return Err(at.err_at(
                    keys!["across", i, "new_config"],
                    format!(
                        "[[across]] compares config `{}` with itself, expected two configs",
                        a.new_config
                    ),
                ));
            }
        }
        for (i, w) in self.within.iter().enumerate() {
            if w.base == w.new {
                return Err(at.err_at(
                    keys!["within", i, "new"],
                    format!(
                        "[[within]] compares `{}` with itself, expected two metric prefixes",
                        w.new
                    ),
                ));
            }
            if let Some(sp) = &w.split {
                if sp.metric.is_empty() || !sp.at.is_finite() {
                    return Err(at.err_at(
                        keys!["within", i, "split"],
                        format!(
                            "[[within]] {} vs {}: [within.split] needs a metric name and a finite `at` (got `{}`, {})",
                            w.new, w.base, sp.metric, sp.at
                        ),
                    ));
                }
                if sp.metric.starts_with(&w.base) || sp.metric.starts_with(&w.new) {
                    return Err(at.err_at(
                        keys!["within", i, "split", "metric"],
                        format!(
                            "[[within]] {} vs {}: [within.split] metric `{}` is one of the pair's own metrics; split by another (the host's state)",
                            w.new, w.base, sp.metric
                        ),
                    ));
                }
            }
        }
        for (i, a) in self.agree.iter().enumerate() {
            if a.a.is_empty() || a.b.is_empty() || a.a == a.b {
                return Err(at.err_at(
                    keys!["agree", i, "b"],
                    format!(
                        "[[agree]] needs two different metric names (got `{}` and `{}`)",
                        a.a, a.b
                    ),
                ));
            }
            Rule::of("agree", "factor").check(
                at,
                keys!["agree", i, "factor"],
                &format!("[[agree]] {} vs {}: factor", a.a, a.b),
                a.factor,
            )?;
        }
        for (name, m) in &self.metric {
            Rule::of("metric", "min_effect_pct").check(
                at,
                keys!["metric", name, "min_effect_pct"],
                &format!("[metric.{name}] min_effect_pct"),
                m.min_effect_pct,
            )?;
            if let Some(t) = m.target_ci_pct {
                Rule::of("metric", "target_ci_pct").check(
                    at,
                    keys!["metric", name, "target_ci_pct"],
                    &format!("[metric.{name}] target_ci_pct"),
                    t,
                )?;
            }
            if let Some(q) = m.quantile {
                Rule::of("metric", "quantile").check(
                    at,
                    keys!["metric", name, "quantile"],
                    &format!("[metric.{name}] quantile"),
                    q,
                )?;
            }
            if let Some(l) = m.layout_pct {
                Rule::of("metric", "layout_pct").check(
                    at,
                    keys!["metric", name, "layout_pct"],
                    &format!("[metric.{name}] layout_pct"),
                    l,
                )?;
            }
            if let Some(p) = &m.power {
                Rule::of("metric.power", "below").check(
                    at,
                    keys!["metric", name, "power", "below"],
                    &format!("[metric.{name}] power.below"),
                    p.below,
                )?;
                if self.compared(&p.metric) {
                    return Err(at.err_at(
                        keys!["metric", name, "power", "metric"],
                        format!("[metric.{name}] power.metric `{}` is itself compared; declare it `compare = false` (a figure about the host, not the kernel)", p.metric),
                    ));
                }
            }
        }
        Ok(())
    }
}

fn test_needs(at: &Spans, name: &str, t: &TestSpec) -> Result<()> {
    let needs = t.needs.iter().enumerate().map(|(i, n)| {
        (
            n,
            [
                Seg::Key("test"),
                Seg::Key(name),
                Seg::Key("needs"),
                Seg::Index(i),
            ]
            .to_vec(),
        )
    });
    let program_needs = t.programs.iter().enumerate().flat_map(|(p, prog)| {
        prog.needs.iter().enumerate().map(move |(i, n)| {
            (
                n,
                [
                    Seg::Key("test"),
                    Seg::Key(name),
                    Seg::Key("programs"),
                    Seg::Index(p),
                    Seg::Key("needs"),
                    Seg::Index(i),
                ]
                .to_vec(),
            )
        })
    });
    for (n, keys) in needs.chain(program_needs) {
        if !n.starts_with("CONFIG_") || n.contains('=') || n.contains(char::is_whitespace) {
            return Err(at.err_at(
                &keys,
                format!("[test.{name}] needs `{n}`: expected a Kconfig symbol, CONFIG_NAME"),
            ));
        }
    }
    Ok(())
}

/// A test's `config` lines: each an option line, no option set twice.
fn test_config(at: &Spans, name: &str, t: &TestSpec) -> Result<()> {
    let mut symbols = Vec::new();
    for line in &t.config {
        match parse_config_line(line.get_ref()) {
            None => {
                return Err(at.err(
                    line.span(),
                    format!(
                        "`{}`: expected CONFIG_NAME=value or `# CONFIG_NAME is not set`",
                        line.get_ref()
                    ),
                ))
            }
            Some((sym, _)) if symbols.contains(&sym) => {
                return Err(at.err(
                    line.span(),
                    format!("[test.{name}] config sets {sym} twice; expected each option once"),
                ))
            }
            Some((sym, _)) => symbols.push(sym),
        }
    }
    Ok(())
}
