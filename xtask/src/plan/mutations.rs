//! A bounded, seeded property test of loading matrix.toml: the real
//! matrix.toml, mutated a few places at a time (numbers to 0, -1, huge,
//! inf, nan; keys repeated or removed; list entries repeated; names and
//! paths changed to ones that are not there; tables repeated or dropped;
//! characters of several bytes or NUL put in; the text cut short), must
//! never make `Matrix::parse`, the file checks or the expansion into cells
//! panic, and is either accepted or refused with an error that starts
//! `matrix.toml:LINE:COL: ` at a line of the text.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::time::Instant;

use rand_xoshiro::rand_core::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256StarStar;

use crate::plan::files;
use crate::plan::matrix::{Filters, Matrix};

/// Mutated matrices per run: a few seconds of a debug build.
const ITERATIONS: usize = 1500;
const SEED: u64 = 0x006b_6d61_7472_6978;

/// Values a number (or any value) is replaced with.
const VALUES: &[&str] = &[
    "0",
    "-1",
    "1",
    "51",
    "4294967295",
    "4294967296",
    "18446744073709551615",
    "99999999999999999999999",
    "1e309",
    "inf",
    "-inf",
    "nan",
    "+nan",
    "0.0",
    "-0.0",
    "0.5",
    "1.0",
    "100.0",
    "\"6\"",
    "true",
    "[]",
    "{}",
    "1979-05-27",
];

struct Gen(Xoshiro256StarStar);

impl Gen {
    fn below(&mut self, n: usize) -> usize {
        (self.0.next_u64() % n.max(1) as u64) as usize
    }

    /// A random element; None of an empty slice (the mutation is then
    /// tried again with another kind).
    fn pick<'a, T>(&mut self, v: &'a [T]) -> Option<&'a T> {
        v.get(self.below(v.len()))
    }
}

/// Byte ranges of `key = value` lines' values (one-line values only).
fn values(lines: &[String]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let t = l.trim_start();
        if t.starts_with('#') || t.starts_with('[') {
            continue;
        }
        if let Some(eq) = l.find(" = ") {
            out.push((i, eq + 3));
        }
    }
    out
}

/// One mutation of the text, by line; returns it and what it did, or None
/// when the text has nothing of the kind drawn.
fn mutate(g: &mut Gen, text: &str) -> Option<(String, String)> {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    if lines.is_empty() {
        return None;
    }
    let vals = values(&lines);
    let what;
    match g.below(11) {
        // A value, most often a number, replaced.
        0 | 1 => {
            let nums: Vec<&(usize, usize)> = vals
                .iter()
                .filter(|(i, at)| {
                    let v = lines[*i][*at..].trim();
                    v.parse::<f64>().is_ok() || g.below(8) == 0
                })
                .collect();
            let (i, at) = **g.pick(&nums)?;
            let v = g.pick(VALUES)?;
            what = format!("line {}: value -> {v}", i + 1);
            lines[i] = format!("{}{v}", &lines[i][..at]);
        }
        // A key repeated.
        2 => {
            let (i, _) = *g.pick(&vals)?;
            what = format!("line {} repeated", i + 1);
            let l = lines[i].clone();
            lines.insert(i + 1, l);
        }
        // A key removed.
        3 => {
            let (i, _) = *g.pick(&vals)?;
            what = format!("line {} removed", i + 1);
            lines.remove(i);
        }
        // The first entry of a list repeated.
        4 => {
            let lists: Vec<usize> = (0..lines.len())
                .filter(|i| lines[*i].contains("[\"") || lines[*i].trim_start().starts_with('"'))
                .collect();
            let i = *g.pick(&lists)?;
            let l = &lines[i];
            let start = l.find('"')?;
            let end = start + 1 + l[start + 1..].find('"')?;
            let entry = l[start..=end].to_string();
            what = format!("line {}: {entry} listed twice", i + 1);
            lines[i] = format!("{}{entry}, {}", &l[..start], &l[start..]);
        }
        // A path or a name changed to one that is not there.
        5 | 6 => {
            let quoted: Vec<usize> = (0..lines.len())
                .filter(|i| {
                    !lines[*i].trim_start().starts_with('#') && lines[*i].matches('"').count() >= 2
                })
                .collect();
            let i = *g.pick(&quoted)?;
            let l = &lines[i];
            let start = l.find('"')? + 1;
            let end = start + l[start..].find('"')?;
            let to = *g.pick(&["-missing", "/nonexistent", "@2", "/", "*", " ", "", "base"])?;
            let new = match to {
                "base" | "" => to.to_string(),
                _ => format!("{}{to}", &l[start..end]),
            };
            what = format!("line {}: \"{}\" -> \"{new}\"", i + 1, &l[start..end]);
            lines[i] = format!("{}{new}{}", &l[..start], &l[end..]);
        }
        // A table header repeated or removed.
        7 => {
            let heads: Vec<usize> = (0..lines.len())
                .filter(|i| lines[*i].starts_with('['))
                .collect();
            let i = *g.pick(&heads)?;
            if g.below(2) == 0 {
                what = format!("header {} repeated", lines[i]);
                let h = lines[i].clone();
                lines.push(String::new());
                lines.push(h);
            } else {
                what = format!("header {} removed", lines[i]);
                lines.remove(i);
            }
        }
        // A list emptied.
        8 => {
            let lists: Vec<&(usize, usize)> = vals
                .iter()
                .filter(|(i, at)| lines[*i][*at..].starts_with('[') && lines[*i].ends_with(']'))
                .collect();
            let (i, at) = **g.pick(&lists)?;
            what = format!("line {}: list emptied", i + 1);
            lines[i] = format!("{}[]", &lines[i][..at]);
        }
        // A character of several bytes put in a line.
        9 if g.below(2) == 0 => {
            let i = g.below(lines.len());
            let mut at = g.below(lines[i].len() + 1).min(lines[i].len());
            while !lines[i].is_char_boundary(at) {
                at -= 1;
            }
            let c = *g.pick(&['é', '—', '\u{1F980}', '\u{0}', '\t'])?;
            what = format!("line {}: {c:?} put at {at}", i + 1);
            lines[i].insert(at, c);
        }
        // A line cut short.
        9 => {
            let i = g.below(lines.len());
            let cut = g.below(lines[i].len() + 1);
            let mut cut = cut.min(lines[i].len());
            while !lines[i].is_char_boundary(cut) {
                cut -= 1;
            }
            what = format!("line {} cut at {cut}", i + 1);
            lines[i].truncate(cut);
        }
        // The text cut short.
        _ => {
            let n = g.below(lines.len()) + 1;
            what = format!("text cut after line {n}");
            lines.truncate(n);
        }
    }
    Some((lines.join("\n") + "\n", what))
}

/// Parse, check files, expand: Ok, or the error.
fn load(text: &str, root: &Path) -> anyhow::Result<usize> {
    let m = Matrix::parse("matrix.toml", text)?;
    files::check(&m, "matrix.toml", text, root)?;
    Ok(m.cells(&Filters::default())?.len())
}

#[test]
fn mutated_matrices_are_accepted_or_refused_at_a_place_never_panic() {
    let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
    let original = std::fs::read_to_string(root.join("matrix.toml")).unwrap();
    let place = regex::Regex::new(r"^matrix\.toml:(\d+):(\d+): \S").unwrap();
    let mut g = Gen(Xoshiro256StarStar::seed_from_u64(SEED));
    let t = Instant::now();
    let (mut accepted, mut refused) = (0, 0);
    let mut panics = Vec::new();
    let mut unplaced = Vec::new();
    for _ in 0..ITERATIONS {
        let mut text = original.clone();
        let mut done = Vec::new();
        for _ in 0..=g.below(3) {
            if let Some((t, what)) = (0..20).find_map(|_| mutate(&mut g, &text)) {
                text = t;
                done.push(what);
            }
        }
        match catch_unwind(AssertUnwindSafe(|| load(&text, root))) {
            Err(_) => panics.push(done.join("; ")),
            Ok(Ok(_)) => accepted += 1,
            Ok(Err(e)) => {
                refused += 1;
                let e = format!("{e:#}");
                let line_ok = place.captures(&e).is_some_and(|c| {
                    let l: usize = c[1].parse().unwrap();
                    let col: usize = c[2].parse().unwrap();
                    l >= 1 && l <= text.lines().count().max(1) + 1 && col >= 1
                });
                if !line_ok {
                    unplaced.push(format!("{}: {e}", done.join("; ")));
                }
            }
        }
    }
    println!(
        "{ITERATIONS} mutated matrices in {:.2}s: {accepted} accepted, {refused} refused, {} panics",
        t.elapsed().as_secs_f64(),
        panics.len()
    );
    assert!(panics.is_empty(), "panicked after: {panics:#?}");
    assert!(
        unplaced.is_empty(),
        "{} refusals without matrix.toml:LINE:COL, e.g. {:#?}",
        unplaced.len(),
        &unplaced[..unplaced.len().min(10)]
    );
    // The mutations bite: most are refused, some accepted.
    assert!(
        refused > ITERATIONS / 2 && accepted > 0,
        "{accepted} {refused}"
    );
}
