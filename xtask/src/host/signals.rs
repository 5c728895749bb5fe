//! Ctrl-C / SIGTERM: stop QEMU and make children, keep what finished.
//!
//! The handler only does async-signal-safe work: it sets a flag and sends
//! SIGTERM to the registered child pids. The runner checks `interrupted()`
//! between phases and saves results.json before exiting.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
const SLOTS: usize = 16;
static CHILDREN: [AtomicI32; SLOTS] = [const { AtomicI32::new(0) }; SLOTS];

extern "C" fn on_signal(_sig: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
    for slot in &CHILDREN {
        let pid = slot.load(Ordering::SeqCst);
        if pid > 0 {
            // make spawns compilers in its own group; -pid reaches them too.
            unsafe {
                libc::kill(-pid, libc::SIGTERM);
                libc::kill(pid, libc::SIGTERM);
            }
        }
    }
}

pub fn install() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        unsafe {
            libc::signal(
                sig,
                on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t,
            );
        }
    }
}

pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

pub fn register_child(pid: u32) {
    for slot in &CHILDREN {
        if slot
            .compare_exchange(0, pid as i32, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            return;
        }
    }
}

pub fn unregister_child(pid: u32) {
    for slot in &CHILDREN {
        let _ = slot.compare_exchange(pid as i32, 0, Ordering::SeqCst, Ordering::SeqCst);
    }
}
