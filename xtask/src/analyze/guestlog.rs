//! The results channel: `@@KMATRIX@@` framing written by rootfs/init, split
//! into one block per test. What a block's output means is its kind's
//! business (kinds/).
//!
//! Pure: text in, blocks out. Markers are found anywhere in a line, so a test
//! that ends without a newline cannot hide its END marker.

const MARK: &str = "@@KMATRIX@@ ";

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Session {
    pub began: bool,
    pub done: bool,
    pub nproc: Option<u32>,
    /// /sys/devices/system/cpu/{possible,online} as the guest saw them.
    pub possible: Option<String>,
    pub online: Option<String>,
    pub kernel: Option<String>,
    pub begin_uptime: Option<f64>,
    pub done_uptime: Option<f64>,
    pub tests: Vec<Block>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Block {
    pub name: String,
    pub output: String,
    /// None: the stream ended inside this test (crash or cell timeout).
    pub rc: Option<i32>,
    pub start_uptime: Option<f64>,
    pub end_uptime: Option<f64>,
    pub timeout_s: Option<f64>,
}

impl Block {
    pub fn duration(&self) -> Option<f64> {
        Some(self.end_uptime? - self.start_uptime?)
    }
    /// Killed by its own timeout: SIGKILL (rc 137) at or after the limit.
    pub fn timed_out(&self) -> bool {
        self.rc == Some(137)
            && matches!((self.duration(), self.timeout_s), (Some(d), Some(t)) if d >= t - 0.5)
    }
}

fn field<'a>(words: &[&'a str], key: &str) -> Option<&'a str> {
    words
        .iter()
        .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
}

pub fn parse(text: &str) -> Session {
    let mut s = Session::default();
    let mut current: Option<Block> = None;
    for raw in text.split('\n') {
        let (before, marker) = match raw.find(MARK) {
            Some(i) => (&raw[..i], Some(&raw[i + MARK.len()..])),
            None => (raw, None),
        };
        if let Some(b) = current.as_mut() {
            if marker.is_none() || !before.is_empty() {
                b.output.push_str(before);
                if marker.is_none() {
                    b.output.push('\n');
                }
            }
        }
        let Some(m) = marker else { continue };
        let words: Vec<&str> = m.split_whitespace().collect();
        let num = |k| field(&words, k).and_then(|v| v.parse::<f64>().ok());
        match words.first().copied() {
            Some("BEGIN") => {
                s.began = true;
                s.begin_uptime = num("uptime");
                s.nproc = field(&words, "nproc").and_then(|v| v.parse().ok());
                s.kernel = field(&words, "kernel").map(str::to_string);
                s.possible = field(&words, "possible").map(str::to_string);
                s.online = field(&words, "online").map(str::to_string);
            }
            Some("START") => {
                if let Some(b) = current.take() {
                    s.tests.push(b);
                }
                current = Some(Block {
                    name: words.get(1).unwrap_or(&"?").to_string(),
                    output: String::new(),
                    rc: None,
                    start_uptime: num("uptime"),
                    end_uptime: None,
                    timeout_s: num("timeout"),
                });
            }
            Some("END") => {
                if let Some(mut b) = current.take() {
                    b.rc = field(&words, "rc").and_then(|v| v.parse().ok());
                    b.end_uptime = num("uptime");
                    // The init adds one newline before END; drop it.
                    if b.output.ends_with("\n\n") {
                        b.output.pop();
                    }
                    s.tests.push(b);
                }
            }
            Some("DONE") => {
                s.done = true;
                s.done_uptime = num("uptime");
            }
            _ => {}
        }
    }
    if let Some(b) = current.take() {
        s.tests.push(b);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_and_framing() {
        let t = "@@KMATRIX@@ BEGIN uptime=1.50 nproc=2 kernel=6.1.192 machine=x86_64\n\
                 @@KMATRIX@@ START a uptime=1.60 timeout=180\nTAP version 13\nok 1 x\n\n@@KMATRIX@@ END a rc=0 uptime=2.60\n\
                 @@KMATRIX@@ START b uptime=2.70 timeout=5\npartial\n@@KMATRIX@@ END b rc=137 uptime=7.70\n\
                 @@KMATRIX@@ DONE uptime=7.80\n";
        let s = parse(t);
        assert!(s.began && s.done);
        assert_eq!(s.nproc, Some(2));
        assert_eq!(s.kernel.as_deref(), Some("6.1.192"));
        assert_eq!(s.tests.len(), 2);
        assert_eq!(s.tests[0].output, "TAP version 13\nok 1 x\n");
        assert_eq!(s.tests[0].rc, Some(0));
        assert!((s.tests[0].duration().unwrap() - 1.0).abs() < 1e-9);
        assert!(!s.tests[0].timed_out());
        assert!(s.tests[1].timed_out());
    }

    #[test]
    fn marker_after_partial_line_and_cut_stream() {
        let s = parse("@@KMATRIX@@ START a uptime=1 timeout=9\nno newline@@KMATRIX@@ END a rc=1 uptime=2\n@@KMATRIX@@ START b uptime=3 timeout=9\nhalf");
        assert_eq!(s.tests[0].output, "no newline");
        assert_eq!(s.tests[0].rc, Some(1));
        assert_eq!(s.tests[1].rc, None);
        assert_eq!(s.tests[1].output, "half\n");
        assert!(!s.done);
    }
}
