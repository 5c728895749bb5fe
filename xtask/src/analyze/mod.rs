//! From what a guest left behind (console, results channel, QEMU's exit) to
//! test results and a cell outcome. Pure: no files, no processes.
pub mod classify;
pub mod console;
pub mod crash;
pub mod guestlog;
