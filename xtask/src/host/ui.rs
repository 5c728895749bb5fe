//! Progress: an indicatif spinner per cell on a terminal; plain, timestamped
//! lines in a CI log. A consumer of the runner's events (host::events);
//! nothing here decides anything.

use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Plain lines, no bars: stderr is not a terminal, or this is CI.
pub fn plain() -> bool {
    !std::io::IsTerminal::is_terminal(&std::io::stderr()) || ci()
}

/// Whether this is a CI run: `CI` set, to anything but empty, `0` or
/// `false` (GitHub Actions and `.ci/run` set `CI=true`). Under CI a test
/// whose tool is missing fails instead of skipping; the test suite's own
/// copy of this rule is `in_ci` in `tests/support`.
pub fn ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false")
}

pub struct Ui {
    mp: MultiProgress,
    plain: bool,
    start: Instant,
}

pub struct CellUi<'a> {
    ui: &'a Ui,
    pb: ProgressBar,
    tag: String,
    phase: std::sync::Mutex<(String, Instant)>,
}

impl Ui {
    pub fn new() -> Ui {
        let plain = plain();
        let mp = MultiProgress::with_draw_target(if plain {
            ProgressDrawTarget::hidden()
        } else {
            ProgressDrawTarget::stderr()
        });
        Ui {
            mp,
            plain,
            start: Instant::now(),
        }
    }

    /// A line above the bars (or in the log).
    pub fn println(&self, msg: &str) {
        if self.plain {
            eprintln!("[{:>6.1}s] {msg}", self.start.elapsed().as_secs_f64());
        } else {
            let _ = self.mp.println(msg);
        }
    }

    pub fn cell(&self, index: usize, total: usize, id: &str) -> CellUi<'_> {
        let pb = self.mp.add(ProgressBar::new_spinner());
        pb.set_style(
            ProgressStyle::with_template("{spinner} {prefix:.bold} {elapsed:>4} {wide_msg}")
                .unwrap(),
        );
        pb.set_prefix(format!("[{index}/{total}] {id}"));
        if !self.plain {
            pb.enable_steady_tick(Duration::from_millis(200));
        }
        CellUi {
            ui: self,
            pb,
            tag: format!("[{index}/{total}] {id}"),
            phase: std::sync::Mutex::new((String::new(), Instant::now())),
        }
    }
}

impl crate::host::events::Sink for CellUi<'_> {
    fn event(&self, e: crate::host::events::Event<'_>) {
        use crate::host::events::Event;
        match e {
            Event::Phase { phase, what, .. } => self.phase(&phase.to_string(), what),
            Event::Detail { line, .. } => self.detail(line),
            Event::Note { text, .. } => self.note(text),
        }
    }
}

impl CellUi<'_> {
    /// Enters a phase: source, config, build, rootfs, boot, tests.
    pub fn phase(&self, phase: &str, what: &str) {
        *self.phase.lock().unwrap() = (phase.to_string(), Instant::now());
        self.pb.set_message(format!("{phase}: {what}"));
        if self.ui.plain {
            self.ui.println(&format!("{} {phase}: {what}", self.tag));
        }
    }

    /// Frequent detail (a make line, a console line): only on the spinner.
    pub fn detail(&self, what: &str) {
        let p = self.phase.lock().unwrap();
        let mut w: String = what.chars().take(100).collect();
        if w.len() < what.len() {
            w.push('…');
        }
        self.pb.set_message(format!("{}: {w}", p.0));
    }

    /// A noteworthy message, kept in the log and above the bars.
    pub fn note(&self, what: &str) {
        self.ui.println(&format!("{} {what}", self.tag));
    }

    pub fn finish(&self, summary: &str) {
        self.pb.finish_and_clear();
        self.ui.println(&format!("{} {summary}", self.tag));
    }
}
