//! What the runner tells the world while it works: an event stream. The
//! terminal UI (`ui.rs`) consumes it today; a JSON or CI reporter, bisect
//! and sweep drivers can consume the same events. The runner never prints.

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Source,
    Config,
    Build,
    Rootfs,
    Boot,
    Tests,
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Phase::Source => "source",
            Phase::Config => "config",
            Phase::Build => "build",
            Phase::Rootfs => "rootfs",
            Phase::Boot => "boot",
            Phase::Tests => "tests",
        })
    }
}

/// Every event names its cell, for consumers that see many cells at once
/// (a JSON or CI reporter); the terminal UI has one spinner per cell.
#[derive(Debug, Clone, Copy)]
#[allow(dead_code)]
pub enum Event<'a> {
    /// A cell enters a phase.
    Phase {
        cell: &'a str,
        phase: Phase,
        what: &'a str,
    },
    /// Frequent detail: a make line, a console line.
    Detail { cell: &'a str, line: &'a str },
    /// Something worth keeping in the log: a cached build, a retry, an
    /// accelerator decision, KVM given up, a corrupt cache entry.
    Note { cell: &'a str, text: &'a str },
}

pub trait Sink: Sync {
    fn event(&self, e: Event<'_>);
}

/// Events of one cell, with the id filled in.
pub struct CellEvents<'a> {
    pub cell: &'a str,
    pub sink: &'a dyn Sink,
}

impl CellEvents<'_> {
    pub fn phase(&self, phase: Phase, what: &str) {
        self.sink.event(Event::Phase {
            cell: self.cell,
            phase,
            what,
        });
    }
    pub fn detail(&self, line: &str) {
        self.sink.event(Event::Detail {
            cell: self.cell,
            line,
        });
    }
    pub fn note(&self, text: &str) {
        self.sink.event(Event::Note {
            cell: self.cell,
            text,
        });
    }
}
