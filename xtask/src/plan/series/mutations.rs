//! A bounded, seeded property test of reading a series from mail: the
//! seccomp series as `git format-patch --stdout` writes it, mutated a few
//! places at a time the way mail from strangers differs (subject counters
//! huge, zero, past the end or not numbers; messages dropped, repeated or
//! cut; separators broken; encoded words, transfer encodings and MIME
//! parts garbled; very long, NUL-holding or invalid UTF-8 lines), must
//! never make `mbox::patches` panic. Each mutated mbox is either read, as
//! patches numbered 1..=N in order whose file names stay inside their
//! directory, or refused with an error that starts with the mbox's name.
//! The slowest input's time is printed: reading is linear in the input,
//! whatever a subject line claims.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::time::{Duration, Instant};

use rand_xoshiro::rand_core::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256StarStar;

use super::mbox::{self, MAX_PATCHES};

/// Mutated mboxes per run: a few seconds of a debug build.
const ITERATIONS: usize = 600;
const SEED: u64 = 0x006d_6169_6c73;

const COUNTERS: &[&str] = &[
    "[PATCH 0/6]",
    "[PATCH 7/6]",
    "[PATCH 3/0]",
    "[PATCH 1/1000000000]",
    "[PATCH 1/18446744073709551616]",
    "[PATCH 99999999999999999999/6]",
    "[PATCH v4294967296 1/6]",
    "[PATCH v2 1/6]",
    "[PATCH -1/6]",
    "[PATCH 1/6/7]",
    "[PATCH]",
    "[patch 2/6]",
    "[RFC PATCH 2/6]",
    "[PATCH 2/6",
    "Re: [PATCH 2/6]",
    "[PATCH 10000/10000]",
];

const HEADERS: &[&str] = &[
    "Subject: =?UTF-8?B?////?=",
    "Subject: =?UTF-8?q?=E2=80=94?= [PATCH 2/6] x",
    "Subject: =?x-unknown?Q?a?= [PATCH 2/6] x",
    "Content-Transfer-Encoding: base64",
    "Content-Transfer-Encoding: quoted-printable",
    "Content-Type: multipart/mixed; boundary=\"\"",
    "Content-Type: multipart/mixed; boundary=x",
    "Content-Type: text/plain; charset=x-nonesuch",
    "Subject:",
    " folded continuation with no header before it",
    "Message-Id: <a'$(touch X)'@b>",
];

struct Gen(Xoshiro256StarStar);

impl Gen {
    fn below(&mut self, n: usize) -> usize {
        (self.0.next_u64() % n.max(1) as u64) as usize
    }

    fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.below(v.len())]
    }
}

/// The series' messages, each as format-patch wrote it.
fn original() -> Vec<String> {
    let dir = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../kernels/series/seccomp-sync-wakeup"
    ));
    super::files("seccomp-sync-wakeup", dir)
        .unwrap()
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect()
}

/// One mutation of the messages; what it did.
fn mutate(g: &mut Gen, msgs: &mut Vec<Vec<u8>>) -> String {
    let i = g.below(msgs.len());
    let lines = |m: &[u8]| -> Vec<Vec<u8>> {
        m.split_inclusive(|b| *b == b'\n')
            .map(<[u8]>::to_vec)
            .collect()
    };
    match g.below(10) {
        // The subject's counter.
        0 | 1 => {
            let c = g.pick(COUNTERS);
            let text = String::from_utf8_lossy(&msgs[i]).to_string();
            let re = regex::Regex::new(r"(?m)^Subject: \[[^\]]*\]").unwrap();
            msgs[i] = re
                .replace(&text, format!("Subject: {c}").as_str())
                .into_owned()
                .into_bytes();
            format!("message {}: subject counter {c}", i + 1)
        }
        // A message dropped or repeated.
        2 if msgs.len() > 1 => {
            msgs.remove(i);
            format!("message {} dropped", i + 1)
        }
        2 | 3 => {
            let m = msgs[i].clone();
            msgs.push(m);
            format!("message {} repeated", i + 1)
        }
        // A header put in after the first header line.
        4 | 5 => {
            let h = g.pick(HEADERS);
            let mut ls = lines(&msgs[i]);
            let at = 1 + g.below(ls.len().min(6));
            ls.insert(at.min(ls.len()), format!("{h}\n").into_bytes());
            msgs[i] = ls.concat();
            format!("message {}: `{h}` at line {}", i + 1, at + 1)
        }
        // The separator line broken.
        6 => {
            let mut ls = lines(&msgs[i]);
            ls[0] = b"From nobody\n".to_vec();
            msgs[i] = ls.concat();
            format!("message {}: separator broken", i + 1)
        }
        // A line made huge, or given a NUL or bytes that are not UTF-8.
        7 => {
            let mut ls = lines(&msgs[i]);
            let at = g.below(ls.len());
            let what = match g.below(3) {
                0 => {
                    ls[at] = [vec![b'x'; 200_000], b"\n".to_vec()].concat();
                    "200,000 bytes"
                }
                1 => {
                    ls[at].insert(0, 0);
                    "a NUL"
                }
                _ => {
                    ls[at].splice(0..0, [0xff, 0xfe, 0xc3]);
                    "bytes that are not UTF-8"
                }
            };
            msgs[i] = ls.concat();
            format!("message {}: line {} given {what}", i + 1, at + 1)
        }
        // A message cut short.
        _ => {
            let cut = g.below(msgs[i].len() + 1);
            msgs[i].truncate(cut);
            format!("message {} cut at byte {cut}", i + 1)
        }
    }
}

#[test]
fn mutated_mail_is_read_or_refused_by_name_never_panics() {
    campaign(ITERATIONS, SEED);
}

/// The longer campaign, by hand:
/// `cargo test -p xtask -- --ignored --nocapture a_longer_mail_campaign`.
#[test]
#[ignore = "a longer campaign, run by hand"]
fn a_longer_mail_campaign() {
    campaign(30 * ITERATIONS, SEED + 1);
}

fn campaign(iterations: usize, seed: u64) {
    let base: Vec<Vec<u8>> = original().into_iter().map(String::into_bytes).collect();
    let shown = "series.mbx";
    let mut g = Gen(Xoshiro256StarStar::seed_from_u64(seed));
    let t = Instant::now();
    let (mut read, mut refused) = (0, 0);
    let mut slowest = (Duration::ZERO, String::new());
    let mut bad = Vec::new();
    for _ in 0..iterations {
        let mut msgs = base.clone();
        let done: Vec<String> = (0..=g.below(3))
            .map(|_| mutate(&mut g, &mut msgs))
            .collect();
        let done = done.join("; ");
        // An mbox is read as text whatever its bytes (`series::count`).
        let text = String::from_utf8_lossy(&msgs.concat()).to_string();
        let one = Instant::now();
        let got = catch_unwind(AssertUnwindSafe(|| mbox::patches(shown, &text)));
        if one.elapsed() > slowest.0 {
            slowest = (one.elapsed(), done.clone());
        }
        match got {
            Err(_) => bad.push(format!("panicked: {done}")),
            Ok(Ok(patches)) => {
                read += 1;
                let numbers: Vec<usize> = patches.iter().map(|p| p.number).collect();
                let want: Vec<usize> = (1..=patches.len()).collect();
                if numbers != want || patches.len() > MAX_PATCHES {
                    bad.push(format!("read as patches {numbers:?}: {done}"));
                }
                for p in &patches {
                    let f = mbox::file_name(p);
                    let inside = !f.contains('/')
                        && !f.starts_with('.')
                        && f.len() <= 70
                        && f.ends_with(".patch");
                    if !inside {
                        bad.push(format!("file name {f:?}: {done}"));
                    }
                }
            }
            Ok(Err(e)) => {
                refused += 1;
                let e = format!("{e:#}");
                if !e.starts_with(&format!("{shown}: ")) || e.len() > 2000 {
                    bad.push(format!("refused as {e:?}: {done}"));
                }
            }
        }
    }
    println!(
        "{iterations} mutated mboxes in {:.2}s: {read} read, {refused} refused; slowest {:.1} ms ({})",
        t.elapsed().as_secs_f64(),
        slowest.0.as_secs_f64() * 1e3,
        slowest.1
    );
    assert!(
        bad.is_empty(),
        "{} bad, e.g. {:#?}",
        bad.len(),
        &bad[..bad.len().min(10)]
    );
    // The mutations bite both ways.
    assert!(
        read > iterations / 10 && refused > iterations / 4,
        "{read} read, {refused} refused"
    );
}
