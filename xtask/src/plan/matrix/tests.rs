//! matrix.toml's unit tests: parsing, every refusal, expansion.

use super::*;
use crate::plan::arch::Arch;

const GOOD: &str = r#"
[run]
arches = ["x86_64", "arm64"]
configs = ["tiny"]
tests = ["t1"]

[kernel."6.1"]
source = { debian = "linux-source-6.1" }
series = ["s1"]

[series.s1]
dir = "kernels/series/s1"

[config.tiny]
base = "tinyconfig"

[test.t1]
kind = "kselftest"
dir = "tools/testing/selftests/seccomp"
sources = ["seccomp_bpf.c"]

[[expect]]
cell = "*/base/*/*"
test = "t1"
case = "global.x"
outcome = "fail"
reason = "r"
"#;

/// A benchmark test `b`, whose metrics are named `b.*`.
const BENCH_B: &str = "\n[test.b]\nkind = \"bench\"\nsource = \"rootfs/guest/b.c\"\n";

const BENCH_P: &str = "\n[test.p]\nkind = \"perf\"\ndir = \"tools/perf\"\nsources = [\"bench/sched-pipe.c\"]\ncases = [{ name = \"p.x\", run = \"bench sched pipe\" }]\n";

fn parse_err(text: &str) -> String {
    Matrix::parse("matrix.toml", text).unwrap_err().to_string()
}

#[test]
fn expands_kernel_variant_arch_config() {
    let m = Matrix::parse("matrix.toml", GOOD).unwrap();
    let ids: Vec<String> = m
        .cells(&Filters::default())
        .unwrap()
        .iter()
        .map(Cell::id)
        .collect();
    assert_eq!(
        ids,
        [
            "6.1/base/x86_64/tiny",
            "6.1/base/arm64/tiny",
            "6.1/s1/x86_64/tiny",
            "6.1/s1/arm64/tiny"
        ]
    );
}

#[test]
fn filters_select_and_reject() {
    let m = Matrix::parse("matrix.toml", GOOD).unwrap();
    let f = Filters {
        arch: vec!["arm64".into()],
        variant: vec!["s1".into()],
        ..Default::default()
    };
    let ids: Vec<String> = m.cells(&f).unwrap().iter().map(Cell::id).collect();
    assert_eq!(ids, ["6.1/s1/arm64/tiny"]);
    let f = Filters {
        cell: vec!["*/base/*/tiny".into()],
        ..Default::default()
    };
    assert_eq!(m.cells(&f).unwrap().len(), 2);
    // A glob naming what the matrix has not: the component and the
    // known values; one that selects nothing: said so.
    let f = Filters {
        cell: vec!["6.1/base/riscv/*".into()],
        ..Default::default()
    };
    assert_eq!(
        m.cells(&f).unwrap_err().to_string(),
        "--cell 6.1/base/riscv/*: no arch `riscv` in the matrix; known: x86_64, arm64"
    );
    let f = Filters {
        cell: vec!["6.1/base/*".into()],
        ..Default::default()
    };
    assert!(m
        .cells(&f)
        .unwrap_err()
        .to_string()
        .contains("expected kernel/variant/arch/config"));
    let f = Filters {
        arch: vec!["arm64".into()],
        cell: vec!["*/*/x86_64/*".into()],
        ..Default::default()
    };
    assert!(m
        .cells(&f)
        .unwrap_err()
        .to_string()
        .contains("matches no cell"));
    let f = Filters {
        arch: vec!["riscv".into()],
        ..Default::default()
    };
    assert!(m
        .cells(&f)
        .unwrap_err()
        .to_string()
        .contains("--arch riscv"));
}

#[test]
fn unknown_key_names_file_and_line() {
    let bad = GOOD.replace(
        "base = \"tinyconfig\"",
        "base = \"tinyconfig\"\nfragmnets = []",
    );
    let e = parse_err(&bad);
    assert!(e.starts_with("matrix.toml:16:"), "{e}");
    assert!(e.contains("fragmnets"), "{e}");
}

#[test]
fn bad_values_name_line_and_expectation() {
    let e = parse_err(&GOOD.replace("\"x86_64\", \"arm64\"", "\"x86_64\", \"mips\""));
    assert!(
        e.starts_with("matrix.toml:3:") && e.contains("unknown arch `mips`"),
        "{e}"
    );
    let e = parse_err(&GOOD.replace("series = [\"s1\"]", "series = [\"s2\"]"));
    assert!(
        e.starts_with("matrix.toml:9:") && e.contains("series `s2`"),
        "{e}"
    );
    let e = parse_err(&GOOD.replace("kind = \"kselftest\"", "kind = \"unit\""));
    assert!(
        e.starts_with("matrix.toml:18:") && e.contains("unknown variant `unit`"),
        "{e}"
    );
    let e = parse_err(&GOOD.replace(
        "tests = [\"t1\"]",
        "tests = [\"t1\"]\nboots = 6\nmax_boots = 4",
    ));
    assert!(
        e.contains("run.max_boots = 4 is out of range, expected run.boots (6)..=50"),
        "{e}"
    );
    // A split must name another metric than the pair's, and a number.
    let within = |split: &str| {
        format!("{GOOD}{BENCH_B}\n[[within]]\nbase = \"b.default.\"\nnew = \"b.sync.\"\nsplit = {split}\n")
    };
    let e = parse_err(&within("{ metric = \"b.sync.unpinned\", at = 20.0 }"));
    assert!(
        e.contains("[within.split] metric `b.sync.unpinned` is one of the pair's own metrics"),
        "{e}"
    );
    let e = parse_err(&within("{ metric = \"b.host.gap\", at = nan }"));
    assert!(
        e.contains("b.sync. vs b.default.: [within.split] needs a metric name and a finite `at`"),
        "{e}"
    );
    let e = parse_err(&within(
        "{ metric = \"b.host.gap\", at = 20.0, below = true }",
    ));
    assert!(e.contains("unknown field `below`"), "{e}");
    assert!(Matrix::parse(
        "matrix.toml",
        &within("{ metric = \"b.host.gap\", at = 20.0 }")
    )
    .is_ok());
    // Two tools on one quantity: two names, and a factor above 1.
    let agree = |a: &str, factor: &str| {
        format!(
            "{GOOD}{BENCH_B}{BENCH_P}\n[[agree]]\na = \"{a}\"\nb = \"b.x\"\nfactor = {factor}\n"
        )
    };
    let e = parse_err(&agree("b.x", "2.0"));
    assert!(
        e.contains("[[agree]] needs two different metric names (got `b.x` and `b.x`)"),
        "{e}"
    );
    for bad in ["1.0", "0.5", "nan", "inf", "-2.0"] {
        let e = parse_err(&agree("p.x", bad));
        assert!(
            e.contains("[[agree]] p.x vs b.x: factor = ")
                && e.contains("is out of range, expected a ratio above 1"),
            "{bad}: {e}"
        );
    }
    assert_eq!(
        Matrix::parse("matrix.toml", &agree("p.x", "2.0"))
            .unwrap()
            .agree[0]
            .factor,
        2.0
    );
    let e = parse_err(&GOOD.replace("outcome = \"fail\"", "outcome = 3"));
    assert!(
        e.starts_with("matrix.toml:26:11:") && e.contains("wanted string"),
        "{e}"
    );
}

/// i386 is built, never booted: refused in run.arches with the way to
/// build it; run.build_only names an arch and a config of the file.
#[test]
fn build_only_targets_and_the_arches_cells_boot_on() {
    let e = parse_err(&GOOD.replace(
        "arches = [\"x86_64\", \"arm64\"]",
        "arches = [\"x86_64\", \"i386\"]",
    ));
    assert!(
        e.starts_with("matrix.toml:3:")
            && e.contains("run.arches: i386 is built, never booted")
            && e.contains("name it in run.build_only as \"i386/CONFIG\""),
        "{e}"
    );
    let with = |list: &str| {
        GOOD.replace(
            "tests = [\"t1\"]",
            &format!("tests = [\"t1\"]\nbuild_only = {list}"),
        )
    };
    let e = parse_err(&with("[\"i686/tiny\"]"));
    assert!(
        e.starts_with("matrix.toml:6:") && e.contains("run.build_only: `i686/tiny` names no arch"),
        "{e}"
    );
    let e = parse_err(&with("[\"i386/huge\"]"));
    assert!(
        e.contains("run.build_only: `i386/huge` names no config, expected ARCH/CONFIG with CONFIG one of [\"tiny\"]"),
        "{e}"
    );
    let e = parse_err(&with("[\"i386/tiny\", \"i386/tiny\"]"));
    assert!(e.contains("run.build_only lists `i386/tiny` twice"), "{e}");
    let m = Matrix::parse("matrix.toml", &with("[\"i386/tiny\", \"arm64/tiny\"]")).unwrap();
    assert_eq!(
        m.build_only(),
        [
            (Arch::I386, "tiny".to_string()),
            (Arch::Arm64, "tiny".to_string())
        ]
    );
    assert_eq!(m.build_arches(), ["x86_64", "arm64", "i386"]);
    // No cell boots i386.
    assert!(m
        .cells(&Filters::default())
        .unwrap()
        .iter()
        .all(|c| c.arch != Arch::I386));
    assert_eq!(crate::plan::debian_packages(&m), ["linux-source-6.1"]);
    // A config built with clang: set-up installs clang and lld for it;
    // it is no cell's config, so a selection cannot name it.
    let clang = format!(
        "{}\n[config.tiny-clang]\nbase = \"tinyconfig\"\nllvm = true\n",
        with("[\"arm64/tiny-clang\"]")
    );
    let m = Matrix::parse("matrix.toml", &clang).unwrap();
    assert!(m.config["tiny-clang"].llvm && !m.config["tiny"].llvm);
    assert_eq!(
        crate::plan::debian_packages(&m),
        ["linux-source-6.1", "clang", "lld", "llvm"]
    );
    assert_eq!(m.names().config, ["tiny"]);
}

#[test]
fn config_lines() {
    assert_eq!(
        parse_config_line("CONFIG_KCMP=y"),
        Some(("CONFIG_KCMP".into(), "y".into()))
    );
    assert_eq!(
        parse_config_line("# CONFIG_KCMP is not set"),
        Some(("CONFIG_KCMP".into(), "n".into()))
    );
    assert_eq!(parse_config_line("KCMP=y"), None);
    assert_eq!(parse_config_line("CONFIG_KCMP="), None);
}

#[test]
fn metric_declarations_longest_prefix_and_ranges() {
    let text = format!("{GOOD}{BENCH_B}\n[metric.b]\nbetter = \"higher\"\n[metric.\"b.x\"]\nbetter = \"lower\"\nmin_effect_pct = 2.0\ntarget_ci_pct = 3.0\n");
    let m = Matrix::parse("matrix.toml", &text).unwrap();
    assert_eq!(m.metric_spec("b.x.y"), (Better::Lower, 2.0));
    assert_eq!(m.metric_decl("b.x.y").unwrap().target_ci_pct, Some(3.0));
    assert_eq!(m.metric_spec("b.z"), (Better::Higher, 5.0));
    assert_eq!(m.metric_decl("b.z").unwrap().target_ci_pct, None);
    assert_eq!(m.metric_spec("c"), (Better::Lower, 5.0));
    assert!(m.compared("b.x.y") && m.compared("c"));
    let e = parse_err(&text.replace("target_ci_pct = 3.0", "target_ci_pct = 0.0"));
    assert!(e.contains("[metric.b.x] target_ci_pct = 0"), "{e}");
    let e = parse_err(&text.replace("min_effect_pct = 2.0", "min_effect_pct = -1.0"));
    assert!(e.contains("min_effect_pct = -1"), "{e}");
    assert_eq!(m.metric_quantile("b.x.y"), 0.5);
    let q = Matrix::parse(
        "m.toml",
        &text.replace("target_ci_pct = 3.0", "quantile = 0.1"),
    )
    .unwrap();
    assert_eq!(q.metric_quantile("b.x.y"), 0.1);
    assert_eq!(q.metric_quantile("b.z"), 0.5);
    let e = parse_err(&text.replace("target_ci_pct = 3.0", "quantile = 1.0"));
    assert!(
        e.contains("[metric.b.x] quantile = 1 is out of range, expected a number in (0, 1) (0.5: the median)"),
        "{e}"
    );
}

#[test]
fn expectations_follow_the_cells_tests() {
    let text = format!("{GOOD}\n[test.t2]\nkind = \"shell\"\ncommand = \"true\"\n[[expect]]\ncell = \"*/*/*/*\"\ntest = \"t2\"\noutcome = \"skip\"\nreason = \"r2\"\n");
    let m = Matrix::parse("matrix.toml", &text).unwrap();
    let cell = |variant: &str, tests: &[&str]| Cell {
        kernel: "6.1".into(),
        variant: variant.into(),
        arch: Arch::X86_64,
        config: "tiny".into(),
        tests: tests.iter().map(|t| t.to_string()).collect(),
    };
    let reasons = |c: &Cell| {
        m.expectations(c)
            .iter()
            .map(|e| e.reason.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(reasons(&cell("base", &["t1", "t2"])), ["r", "r2"]);
    assert_eq!(reasons(&cell("s1", &["t1", "t2"])), ["r2"]);
    // `--test t1`: the expectation about t2 must not report it missing.
    assert_eq!(reasons(&cell("base", &["t1"])), ["r"]);
    assert_eq!(reasons(&cell(AA_VARIANT, &["t1"])), ["r"]);
}

/// tests/planted: base, four delay series and a layout twin per arch,
/// one patch each, the benchmark only, its placement shares never
/// compared.
#[test]
fn the_planted_matrix_is_valid() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let path = format!("{root}/tests/planted/matrix.toml");
    let m = Matrix::parse(&path, &std::fs::read_to_string(&path).unwrap()).unwrap();
    let cells = m.cells(&Filters::default()).unwrap();
    assert_eq!(cells.len(), 12);
    assert!(cells.iter().all(|c| c.tests == ["seccomp_notify"]));
    // The default matrix's boots, so what it detects is the default's.
    let default = concat!(env!("CARGO_MANIFEST_DIR"), "/../matrix.toml");
    let d = Matrix::parse(default, &std::fs::read_to_string(default).unwrap()).unwrap();
    assert_eq!(
        (m.run.boots, m.run.max_boots),
        (d.run.boots, d.run.max_boots)
    );
    for (name, spec) in &m.series {
        let patches =
            crate::plan::series::files(name, &std::path::Path::new(root).join(&spec.dir)).unwrap();
        assert_eq!(patches.len(), 1, "{name}");
        let patch = std::fs::read_to_string(&patches[0]).unwrap();
        if name == "layout" {
            // Code that moves what follows, and nothing that runs.
            assert!(patch.contains("+\tasm volatile(\".skip 1500\");\n"));
            assert!(!patch.contains("udelay"));
            continue;
        }
        let us = name.trim_start_matches("delay-").trim_end_matches("us");
        assert!(patch.contains(&format!("+\tudelay({us});\n")), "{name}");
    }
    assert!(!m.compared("seccomp_notify.placement.default.unpinned.same_cpu_share"));
    assert!(!m.compared("seccomp_notify.host.disturbed_share"));
    assert!(m.compared("seccomp_notify.default.same-cpu"));
}

/// The layout twins run with the default matrix (`--series DIR`): each
/// one patch that adds never-run code of a stated size to one file,
/// and nothing that runs.
#[test]
fn the_layout_twins_move_code_and_run_none() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    for (dir, file, bytes) in [
        ("layout", "kernel/seccomp.c", 1500),
        ("layout-sched", "kernel/sched/core.c", 2900),
        ("layout-rseq", "kernel/rseq.c", 700),
        ("layout-wait", "kernel/sched/wait.c", 700),
        ("layout-wait-big", "kernel/sched/wait.c", 2900),
    ] {
        let path = std::path::Path::new(root).join("tests/planted").join(dir);
        let patches = crate::plan::series::files(dir, &path).unwrap();
        assert_eq!(patches.len(), 1, "{dir}");
        let patch = std::fs::read_to_string(&patches[0]).unwrap();
        assert!(patch.contains(&format!("+++ b/{file}\n")), "{dir}");
        assert_eq!(patch.matches("+++ b/").count(), 1, "{dir}");
        assert!(
            patch.contains(&format!("+\tasm volatile(\".skip {bytes}\");\n")),
            "{dir}"
        );
        let added: Vec<&str> = patch
            .lines()
            .filter(|l| l.starts_with('+') && !l.starts_with("+++"))
            .collect();
        assert!(added.iter().all(|l| !l.contains("udelay")), "{dir}");
        assert_eq!(
            patch
                .lines()
                .filter(|l| l.starts_with('-') && !l.starts_with("--"))
                .count(),
            0,
            "{dir}"
        );
    }
}

#[test]
fn the_repository_matrix_is_valid() {
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../matrix.toml")).unwrap();
    let mut m = Matrix::parse("matrix.toml", &text).unwrap();
    let cells = m.cells(&Filters::default()).unwrap();
    assert_eq!(cells.len(), 16);
    // 6.1 has no `wide` config; the wide cells run the mm_cid check only.
    let wide: Vec<&Cell> = cells.iter().filter(|c| c.config == "wide").collect();
    assert_eq!(wide.len(), 6);
    // Patch 1 of mm-cid-work alone, as sweep and bisect name it.
    assert_eq!(m.series["mm-cid-work@1"].take, Some(1));
    assert_eq!(m.series["mm-cid-work@1"].dir, m.series["mm-cid-work"].dir);
    assert!(cells
        .iter()
        .any(|c| c.id() == "6.12/mm-cid-work@1/arm64/wide"));
    assert!(wide
        .iter()
        .all(|c| c.kernel == "6.12" && c.tests == ["mm_cid"]));
    assert_eq!(m.config_smp("wide"), 255);
    assert_eq!(m.config_smp("tiny"), 2);
    // What the speed checks report is about the host: never compared.
    assert!(!m.compared("seccomp_notify.host.check_speed"));
    assert!(m.compared("seccomp_notify.sync.unpinned"));
    // Every boot of a cell runs seccomp_notify; the other benchmarks
    // stop after 3, the correctness tests after 1. A wide cell (only
    // mm_cid) stops when mm_cid does; --boots 2 caps everything.
    let cell = |variant: &str, config: &str| {
        cells
            .iter()
            .find(|c| {
                c.kernel == "6.12"
                    && c.variant == variant
                    && c.config == config
                    && c.arch == Arch::X86_64
            })
            .unwrap()
    };
    // Up to the maximum a comparison may add: the tiny cells' benchmark
    // takes all of it, the wide cells' only their test's 3.
    let run_boots = m.run.max_boots.unwrap();
    assert!(run_boots > 3);
    assert_eq!(m.cell_boots(cell("base", "tiny"), run_boots), run_boots);
    assert_eq!(m.cell_boots(cell("base", "wide"), run_boots), 3);
    assert_eq!(m.cell_boots(cell("base", "wide"), 2), 2);
    assert_eq!(m.cell_boots(cell("base", "tiny"), 0), 1);
    for t in ["rseq", "rseq_own", "membarrier", "mm_cid"] {
        assert_eq!(m.test[t].boots, Some(3), "{t}");
    }
    assert_eq!(m.test["seccomp_notify"].boots, None);
    // Boots added to a too-noisy comparison measure what runs in every
    // boot: seccomp_notify, not rseq (first 3) nor rseq_own's metrics
    // under the rseq prefix.
    let tiny = cell("base", "tiny");
    assert_eq!(
        m.metric_test(tiny, "rseq_own.cpu_id.rseq"),
        Some("rseq_own")
    );
    assert_eq!(m.metric_test(tiny, "rseq.cpu_id.rseq"), Some("rseq"));
    assert_eq!(m.metric_test(tiny, "seccomp_notifyx.a"), None);
    assert!(m.measured_in_boot(tiny, "seccomp_notify.default.unpinned", 7));
    assert!(m.measured_in_boot(tiny, "rseq.cpu_id.rseq", 3));
    assert!(!m.measured_in_boot(tiny, "rseq_own.cpu_id.rseq", 4));
    assert!(!m.measured_in_boot(tiny, "unknown.metric", 1));
    assert!(m.run.max_boots.unwrap_or(m.run.boots) >= m.run.boots);
    // --aa: the base twice per kernel, arch and config, the twin right
    // after the base.
    m.aa = true;
    let ids: Vec<String> = m
        .cells(&Filters::default())
        .unwrap()
        .iter()
        .map(Cell::id)
        .collect();
    assert_eq!(
        ids,
        [
            "6.1/base/x86_64/tiny",
            "6.1/base/arm64/tiny",
            "6.1/base~aa/x86_64/tiny",
            "6.1/base~aa/arm64/tiny",
            "6.1/seccomp-sync-wakeup/x86_64/tiny",
            "6.1/seccomp-sync-wakeup/arm64/tiny",
            "6.12/base/x86_64/tiny",
            "6.12/base/x86_64/wide",
            "6.12/base/arm64/tiny",
            "6.12/base/arm64/wide",
            "6.12/base~aa/x86_64/tiny",
            "6.12/base~aa/x86_64/wide",
            "6.12/base~aa/arm64/tiny",
            "6.12/base~aa/arm64/wide",
            "6.12/mm-cid-work@1/x86_64/tiny",
            "6.12/mm-cid-work@1/x86_64/wide",
            "6.12/mm-cid-work@1/arm64/tiny",
            "6.12/mm-cid-work@1/arm64/wide",
            "6.12/mm-cid-work/x86_64/tiny",
            "6.12/mm-cid-work/x86_64/wide",
            "6.12/mm-cid-work/arm64/tiny",
            "6.12/mm-cid-work/arm64/wide"
        ]
    );
    let only_aa = Filters {
        variant: vec![AA_VARIANT.into()],
        ..Default::default()
    };
    assert_eq!(m.cells(&only_aa).unwrap().len(), 6);
    assert_eq!(built_as(AA_VARIANT), "base");
    assert_eq!(built_as("seccomp-sync-wakeup"), "seccomp-sync-wakeup");
}

#[test]
fn configs_per_kernel_and_tests_per_config() {
    let text = GOOD.replace(
        "[config.tiny]",
        "[kernel.\"6.12\"]\nsource = { debian = \"linux-source-6.12\" }\nconfigs = [\"tiny\", \"wide\"]\n\n\
         [config.wide]\nbase = \"tinyconfig\"\nsmp = 255\ncmdline = [\"maxcpus=2\"]\ntests = [\"t2\"]\n\n[config.tiny]",
    ) + "\n[test.t2]\nkind = \"shell\"\ncommand = \"true\"\n";
    let m = Matrix::parse("m.toml", &text).unwrap();
    let ids = |f: &Filters| -> Vec<String> {
        m.cells(f)
            .unwrap()
            .iter()
            .map(|c| format!("{} {:?}", c.id(), c.tests))
            .collect()
    };
    let all = ids(&Filters {
        arch: vec!["x86_64".into()],
        ..Default::default()
    });
    assert_eq!(
        all,
        [
            "6.1/base/x86_64/tiny [\"t1\"]",
            "6.1/s1/x86_64/tiny [\"t1\"]",
            "6.12/base/x86_64/tiny [\"t1\"]",
            "6.12/base/x86_64/wide [\"t2\"]",
        ]
    );
    // A test only a config runs is a known --test; the cells that do
    // not run it drop out instead of running nothing.
    let t2 = ids(&Filters {
        test: vec!["t2".into()],
        arch: vec!["arm64".into()],
        ..Default::default()
    });
    assert_eq!(t2, ["6.12/base/arm64/wide [\"t2\"]"]);
    assert_eq!(m.config["wide"].cmdline, ["maxcpus=2"]);
    // Unknown names are errors that say where.
    let bad = text.replace(
        "configs = [\"tiny\", \"wide\"]",
        "configs = [\"tiny\", \"huge\"]",
    );
    let e = Matrix::parse("m.toml", &bad).unwrap_err().to_string();
    assert!(e.contains("m.toml:") && e.contains("config `huge`"), "{e}");
    let bad = text.replace("tests = [\"t2\"]", "tests = [\"t3\"]");
    let e = Matrix::parse("m.toml", &bad).unwrap_err().to_string();
    assert!(e.contains("config.wide.tests: test `t3`"), "{e}");
    let bad = text.replace("smp = 255", "smp = 4096");
    assert!(Matrix::parse("m.toml", &bad)
        .unwrap_err()
        .to_string()
        .contains("smp = 4096"));
}

/// The default matrix with `from` replaced by `to` (which must be there).
fn default_with(from: &str, to: &str) -> String {
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../matrix.toml")).unwrap();
    assert!(text.contains(from), "{from}");
    text.replacen(from, to, 1)
}

/// Where the last `to` is: the line and column of the last `value` in it.
fn place_of(text: &str, to: &str, value: &str) -> String {
    let start = text.rfind(to).unwrap() + to.rfind(value).unwrap();
    let (l, c) = crate::plan::spans::line_col(text, start);
    format!("matrix.toml:{l}:{c}: ")
}

#[test]
fn numbers_out_of_range_are_refused_at_their_value_with_the_range() {
    let cases = [
        (
            "cell_timeout_s = 600",
            "cell_timeout_s = 0",
            "0",
            "run.cell_timeout_s = 0 is out of range, expected 1..=86400 seconds",
        ),
        (
            "memory_mb = 1024",
            "memory_mb = 4294967295",
            "4294967295",
            "run.memory_mb = 4294967295 is out of range, expected 128..=65536 MB",
        ),
        (
            "memory_mb = 1024",
            "memory_mb = 64",
            "64",
            "run.memory_mb = 64 is out of range, expected 128..=65536 MB",
        ),
        (
            "smp = 2",
            "smp = 0",
            "0",
            "run.smp = 0 is out of range, expected 1..=64 CPUs",
        ),
        (
            "boots = 3",
            "boots = 0",
            "0",
            "run.boots = 0 is out of range, expected 1..=50",
        ),
        (
            "boots = 3",
            "boots = 51",
            "51",
            "run.boots = 51 is out of range, expected 1..=50",
        ),
        (
            "max_boots = 18",
            "max_boots = 51",
            "51",
            "run.max_boots = 51 is out of range, expected run.boots (3)..=50",
        ),
        (
            "max_boots = 18",
            "max_boots = 2",
            "2",
            "run.max_boots = 2 is out of range, expected run.boots (3)..=50",
        ),
        (
            "timeout_s = 300",
            "timeout_s = 0",
            "0",
            "[test.seccomp_notify] timeout_s = 0 is out of range, expected 1..=86400 seconds",
        ),
        (
            "timeout_s = 60\nboots = 3",
            "timeout_s = 60\nboots = 4000000000",
            "4000000000",
            "[test.mm_cid] boots = 4000000000 is out of range, expected 1..=50",
        ),
        (
            "timeout_s = 60\nboots = 3",
            "timeout_s = 60\nboots = 0",
            "0",
            "[test.mm_cid] boots = 0 is out of range, expected 1..=50",
        ),
        (
            "smp = 255",
            "smp = 513",
            "513",
            "[config.wide] smp = 513 is out of range, expected 1..=512 CPUs",
        ),
        (
            "min_effect_pct = 20.0",
            "min_effect_pct = inf",
            "inf",
            "[metric.mm_cid] min_effect_pct = inf is out of range, expected 0..=1000 (percent)",
        ),
        (
            "min_effect_pct = 20.0",
            "min_effect_pct = nan",
            "nan",
            "[metric.mm_cid] min_effect_pct = NaN is out of range, expected 0..=1000 (percent)",
        ),
        (
            "min_effect_pct = 20.0",
            "min_effect_pct = -5.0",
            "-5.0",
            "[metric.mm_cid] min_effect_pct = -5 is out of range, expected 0..=1000 (percent)",
        ),
        (
            "min_effect_pct = 20.0",
            "min_effect_pct = 1e9",
            "1e9",
            "[metric.mm_cid] min_effect_pct = 1000000000 is out of range",
        ),
        (
            "target_ci_pct = 3.0\n#",
            "target_ci_pct = inf\n#",
            "inf",
            "[metric.seccomp_notify] target_ci_pct = inf is out of range, expected a percentage in (0, 100)",
        ),
        (
            "split = { metric = \"seccomp_notify.host.wake_gap_pct\", at = 17.0 }",
            "split = { metric = \"seccomp_notify.host.wake_gap_pct\", at = inf }",
            "{ metric",
            "[within.split] needs a metric name and a finite `at`",
        ),
    ];
    for (from, to, value, says) in cases {
        let bad = default_with(from, to);
        let e = parse_err(&bad);
        let place = place_of(&bad, to, value);
        assert!(
            e.starts_with(&place) && e.contains(says),
            "{to}: {e}, wanted {place}{says}"
        );
    }
    // Beyond the type: serde's refusal, also at the value.
    for (to, says) in [
        ("cell_timeout_s = -1", "invalid value: integer `-1`"),
        ("cell_timeout_s = 18446744073709551616", "number too large"),
        ("cell_timeout_s = nan", "invalid type: floating point `NaN`"),
        ("cell_timeout_s = \"600\"", "invalid type: string"),
    ] {
        let bad = default_with("cell_timeout_s = 600", to);
        let e = parse_err(&bad);
        assert!(
            e.starts_with("matrix.toml:18:")
                && e.contains(says)
                && e.ends_with("; run.cell_timeout_s: expected 1..=86400 seconds"),
            "{to}: {e}"
        );
    }
    // A character toml names no problem for: it, and where.
    let bad = default_with("# Per-boot budget", "# Per-boot\u{0} budget");
    let e = parse_err(&bad);
    assert!(
        e.starts_with("matrix.toml:17:11: unexpected character '\\0', expected TOML"),
        "{e}"
    );
    let bad = default_with("timeout_s = 300", "timeout_s = -300");
    assert!(
        parse_err(&bad).ends_with("; [test] timeout_s: expected 1..=86400 seconds"),
        "{}",
        parse_err(&bad)
    );
}

/// `NAME@K` in a kernel's series: the first K >= 1 patches of a
/// declared series (whether it has K: `plan::files`).
#[test]
fn a_series_prefix_names_a_declared_series_and_a_count_from_1() {
    for (to, says) in [
        (
            "mm-cid-work@0",
            "`mm-cid-work@0`: expected a series name, or NAME@K",
        ),
        (
            "mm-cid-work@+1",
            "`mm-cid-work@+1`: expected a series name, or NAME@K",
        ),
        (
            "mm-cid-work@",
            "`mm-cid-work@`: expected a series name, or NAME@K",
        ),
        ("mm@cid@1", "`mm@cid@1`: expected a series name, or NAME@K"),
        (
            "mm-cid@1",
            "`mm-cid@1` names the first patches of series `mm-cid`, which is not defined",
        ),
    ] {
        let bad = default_with("[\"mm-cid-work@1\",", &format!("[\"{to}\","));
        let e = parse_err(&bad);
        assert!(
            e.starts_with("matrix.toml:60:11: ") && e.contains(says),
            "{to}: {e}"
        );
    }
}

#[test]
fn a_source_is_one_kind_with_only_its_own_keys() {
    let from = "source = { debian = \"linux-source-6.12\", version = \"6.12.117-1~deb12u1\" }";
    for (to, says) in [
        (
            "source = { }",
            "source: expected one of debian, tarball, git, release or url",
        ),
        (
            "source = { debian = \"linux-source-6.12\", tarball = \"/x.tar\" }",
            "source: more than one kind of source",
        ),
        (
            "source = { tarball = \"/x.tar\", version = \"1\" }",
            "source: `version` does not apply to this kind of source",
        ),
        (
            "source = { url = \"https://h/linux.tar.xz\" }",
            "source: url `https://h/linux.tar.xz` needs its sha256",
        ),
        (
            "source = { release = \"6.6.x\" }",
            "source: release `6.6.x` is not a kernel version like 6.6.63",
        ),
        (
            "source = { release = \"6.6.63\", sha256 = \"abc\" }",
            "source sha256 `abc`: expected 64 hex digits",
        ),
        (
            "source = { debian = \"linux-6.12\" }",
            "expected a linux-source-X.Y package",
        ),
        (
            "source = { url = \"file:///etc/passwd\", sha256 = \"0000000000000000000000000000000000000000000000000000000000000000\" }",
            "source url `file:///etc/passwd`: expected an http:// or https:// URL of a tarball",
        ),
        (
            "source = { url = \"https://example.org/pub/\", sha256 = \"0000000000000000000000000000000000000000000000000000000000000000\" }",
            "source url `https://example.org/pub/`: expected a URL that ends in the tarball's file name",
        ),
        (
            "source = { url = \"https://example.org/x/..?a=b\", sha256 = \"0000000000000000000000000000000000000000000000000000000000000000\" }",
            "expected a URL that ends in the tarball's file name",
        ),
        (
            "source = { url = \"http:///linux.tar.xz\", sha256 = \"0000000000000000000000000000000000000000000000000000000000000000\" }",
            "source url `http:///linux.tar.xz`: expected a host after the scheme",
        ),
    ] {
        let e = parse_err(&default_with(from, to));
        assert!(e.starts_with("matrix.toml:57:10: "), "{to}: {e}");
        assert!(e.contains(says), "{to}: {e}");
    }
    let m = Matrix::parse(
        "matrix.toml",
        &default_with(from, "source = { release = \"6.6.63\" }"),
    )
    .unwrap();
    assert_eq!(
        m.kernel["6.12"].source.get_ref(),
        &SourceSpec::Download {
            url: "https://cdn.kernel.org/pub/linux/kernel/v6.x/linux-6.6.63.tar.xz".into(),
            sha256: None,
            release: Some("6.6.63".into()),
        }
    );
    let m = Matrix::parse("matrix.toml", &default_with("[run]", "[run]")).unwrap();
    assert_eq!(
        m.kernel["6.1"].source.get_ref(),
        &SourceSpec::Debian {
            package: "linux-source-6.1".into(),
            version: Some("6.1.192-3".into()),
            suite: "bookworm".into(),
        }
    );
}

#[test]
fn a_name_listed_twice_is_refused_at_the_repeat() {
    let cases = [
        (
            "arches = [\"x86_64\", \"arm64\"]",
            "arches = [\"x86_64\", \"arm64\", \"x86_64\"]",
            "\"x86_64\"]",
            "run.arches lists `x86_64` twice (each cell would run twice)",
        ),
        (
            "\"seccomp_bpf\", \"seccomp_notify\", \"perf_bench\",\n",
            "\"seccomp_bpf\", \"seccomp_notify\", \"perf_bench\", \"seccomp_bpf\",\n",
            "\"seccomp_bpf\",\n",
            "run.tests lists `seccomp_bpf` twice",
        ),
        (
            "configs = [\"tiny\"]",
            "configs = [\"tiny\", \"tiny\"]",
            "\"tiny\"]",
            "run.configs lists `tiny` twice",
        ),
        (
            "series = [\"mm-cid-work@1\", \"mm-cid-work\"]",
            "series = [\"mm-cid-work@1\", \"mm-cid-work\", \"mm-cid-work\"]",
            "\"mm-cid-work\"]",
            "kernel.6.12.series lists `mm-cid-work` twice",
        ),
        (
            "configs = [\"tiny\", \"wide\"]",
            "configs = [\"tiny\", \"wide\", \"tiny\"]",
            "\"tiny\"]",
            "kernel.6.12.configs lists `tiny` twice",
        ),
        (
            "tests = [\"mm_cid\"]",
            "tests = [\"mm_cid\", \"mm_cid\"]",
            "\"mm_cid\"]",
            "config.wide.tests lists `mm_cid` twice",
        ),
        (
            "fragments = [\"kernels/configs/base.config\"]",
            "fragments = [\"kernels/configs/base.config\", \"kernels/configs/base.config\"]",
            "\"kernels/configs/base.config\"]",
            "config.tiny.fragments lists `kernels/configs/base.config` twice",
        ),
        (
            "config = [\"CONFIG_RSEQ=y\"]\nboots = 1",
            "config = [\"CONFIG_RSEQ=y\", \"CONFIG_RSEQ=n\"]\nboots = 1",
            "\"CONFIG_RSEQ=n",
            "[test.rseq_selftests] config sets CONFIG_RSEQ twice",
        ),
        (
            "{ name = \"param_test.list\",",
            "{ name = \"param_test.spinlock\",",
            "\"param_test.spinlock",
            "[test.rseq_selftests] cases: `param_test.spinlock` is named twice",
        ),
    ];
    for (from, to, value, says) in cases {
        let bad = default_with(from, to);
        let e = parse_err(&bad);
        let place = place_of(&bad, to, value);
        assert!(
            e.starts_with(&place) && e.contains(says),
            "{to}: {e}, wanted {place}{says}"
        );
    }
}

#[test]
fn names_that_would_break_cell_ids_and_empty_lists_are_refused() {
    let cases = [
        (
            "[series.mm-cid-work]",
            "[series.\"mm/cid\"]",
            "series = [\"mm-cid-work@1\", \"mm-cid-work\"]",
            "series = [\"mm/cid\"]",
            "series name `mm/cid`",
        ),
        (
            "[series.mm-cid-work]",
            "[series.\"mm@2\"]",
            "series = [\"mm-cid-work@1\", \"mm-cid-work\"]",
            "series = [\"mm@2\"]",
            "series name `mm@2`",
        ),
        (
            "[config.wide]",
            "[config.\"wi de\"]",
            "configs = [\"tiny\", \"wide\"]",
            "configs = [\"tiny\", \"wi de\"]",
            "config name `wi de`",
        ),
        (
            "arches = [\"x86_64\", \"arm64\"]",
            "arches = []",
            "x",
            "x",
            "run.arches is empty",
        ),
        (
            "configs = [\"tiny\"]",
            "configs = []",
            "configs = [\"tiny\", \"wide\"]",
            "configs = []",
            "matrix.toml:7:1: the matrix makes no cell",
        ),
        (
            "tests = [\"mm_cid\"]",
            "tests = []",
            "x",
            "x",
            "config.wide.tests is empty",
        ),
        (
            "base = \"seccomp_notify.default.\"\nnew = \"seccomp_notify.sync.\"",
            "base = \"seccomp_notify.sync.\"\nnew = \"seccomp_notify.sync.\"",
            "x",
            "x",
            "[[within]] compares `seccomp_notify.sync.` with itself",
        ),
        (
            "new_config = \"wide\"",
            "new_config = \"tiny\"",
            "x",
            "x",
            "[[across]] compares config `tiny` with itself",
        ),
    ];
    for (from, to, from2, to2, says) in cases {
        let mut bad = default_with(from, to);
        if from2 != "x" {
            bad = bad.replacen(from2, to2, 1);
        }
        let e = parse_err(&bad);
        assert!(
            e.starts_with("matrix.toml:") && e.contains(says),
            "{to}: {e}"
        );
    }
}

#[test]
fn globs_that_are_not_globs_are_refused_where_they_stand() {
    let bad_cell = GOOD.replace("cell = \"*/base/*/*\"", "cell = \"*/[base/*/*\"");
    let e = parse_err(&bad_cell);
    assert!(
        e.starts_with("matrix.toml:23:8: expect.cell `*/[base/*/*` is not a glob"),
        "{e}"
    );
    let bad_case = GOOD.replace("case = \"global.x\"", "case = \"global.{x\"");
    let e = parse_err(&bad_case);
    assert!(
        e.starts_with("matrix.toml:25:8: expect.case `global.{x` is not a glob"),
        "{e}"
    );
}

#[test]
fn cell_globs_on_the_command_line_are_checked_part_by_part() {
    let m = Matrix::parse("matrix.toml", GOOD).unwrap();
    let names = m.names();
    let with = |g: &str| Filters {
        cell: vec![g.into()],
        ..Default::default()
    };
    let e = names.check(&with("6.1/[base/*/*")).unwrap_err().to_string();
    assert!(e.starts_with("--cell `6.1/[base/*/*` is not a glob"), "{e}");
    let e = names.check(&with("6.1/bsae/*/*")).unwrap_err().to_string();
    assert!(
        e.starts_with("--cell 6.1/bsae/*/*: no variant `bsae`"),
        "{e}"
    );
    names.check(&with("6.1/{base,s1}/*/tiny")).unwrap();
    names.check(&with("6.1/b?se/x86_*/*")).unwrap();
    let ids: Vec<String> = m
        .cells(&with("6.1/{base,s1}/x86_64/*"))
        .unwrap()
        .iter()
        .map(Cell::id)
        .collect();
    assert_eq!(ids, ["6.1/base/x86_64/tiny", "6.1/s1/x86_64/tiny"]);
}

#[test]
fn rules_that_could_never_apply_are_refused_where_they_stand() {
    let two_configs = |text: String| {
        text.replace("configs = [\"tiny\"]", "configs = [\"tiny\", \"wide\"]")
            .replace(
                "[config.tiny]",
                "[config.wide]\nbase = \"tinyconfig\"\ntests = [\"b\"]\n\n[config.tiny]",
            )
    };
    // A metric rule or comparison naming no test that measures.
    for (add, says) in [
        (
            "[metric.bb]\nbetter = \"lower\"\n",
            "[metric.NAME] `bb` names no metric a test produces (no test `bb`): a metric's name begins with its test's name and a dot; the tests with metrics: b",
        ),
        (
            "[metric.\"t1.x\"]\nbetter = \"lower\"\n",
            "[metric.NAME] `t1.x` names no metric a test produces (test `t1` is a kselftest test, which measures nothing)",
        ),
        (
            "[[within]]\nbase = \"b.default.\"\nnew = \"c.sync.\"\n",
            "[[within]] new `c.sync.` names no metric a test produces (no test `c`)",
        ),
        (
            "[[across]]\nbase_config = \"tiny\"\nnew_config = \"wide\"\nmetrics = \"x.\"\n",
            "[[across]] metrics `x.` names no metric a test produces",
        ),
        (
            "[[agree]]\na = \"b.x\"\nb = \"seccomp.x\"\nfactor = 2.0\n",
            "[[agree]] b `seccomp.x` names no metric a test produces",
        ),
    ] {
        let e = parse_err(&two_configs(format!("{GOOD}{BENCH_B}\n{add}")));
        assert!(e.contains(says), "{add}: {e}");
        let bad = says.split('`').nth(1).unwrap();
        let line: usize = e.split(':').nth(1).unwrap().parse().unwrap();
        let text = two_configs(format!("{GOOD}{BENCH_B}\n{add}"));
        let at = text.lines().nth(line - 1).unwrap();
        assert!(at.contains(bad), "{add}: {e} points at `{at}`");
    }
    // A known crash pattern that matches any text.
    for splat in ["", ".*", "a*|b", "(?i)x?"] {
        let e = parse_err(&format!(
            "{GOOD}\n[[known]]\ncell = \"*/*/*/*\"\nsplat = \"{splat}\"\nreason = \"r\"\n"
        ));
        assert!(
            e.starts_with("matrix.toml:31:9: ")
                && e.contains(&format!(
                    "known.splat `{splat}` matches any text, so every crash would count as known"
                )),
            "{splat}: {e}"
        );
    }
    // An expectation or a known crash for cells the matrix does not make.
    let e = parse_err(&GOOD.replace("cell = \"*/base/*/*\"", "cell = \"6.12/base/*/*\""));
    assert_eq!(
        e,
        "matrix.toml:23:8: [[expect]] cell `6.12/base/*/*` matches no cell of the matrix (its cells: 6.1/base/x86_64/tiny, 6.1/base/arm64/tiny, 6.1/s1/x86_64/tiny, 6.1/s1/arm64/tiny)"
    );
    let e = parse_err(&format!(
        "{GOOD}\n[[known]]\ncell = \"6.1/s9/*/*\"\nsplat = \"BUG:\"\nreason = \"r\"\n"
    ));
    assert!(
        e.starts_with("matrix.toml:30:8: ")
            && e.contains("[[known]] cell `6.1/s9/*/*` matches no cell of the matrix"),
        "{e}"
    );
    // ... or for a test its cells do not run (b runs only on wide).
    let text = two_configs(format!(
        "{GOOD}{BENCH_B}\n[[expect]]\ncell = \"*/*/*/tiny\"\ntest = \"b\"\noutcome = \"skip\"\nreason = \"r\"\n"
    ));
    let e = parse_err(&text);
    assert!(
        e.contains("[[expect]] test `b`: no cell matching `*/*/*/tiny` runs it"),
        "{e}"
    );
    assert!(Matrix::parse("matrix.toml", &text.replace("*/*/*/tiny", "*/*/*/wide")).is_ok());
}
