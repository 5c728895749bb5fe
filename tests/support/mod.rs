//! Shared by the integration tests: what to do when a tool a test checks
//! with is missing.

/// True when running in CI (`CI` set to anything but empty, `0` or
/// `false`): there a missing tool is a failure, never a skip.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false")
}

/// Called by a test whose `tool` is missing: fails in CI, naming the tool
/// and the set-up command that installs it; elsewhere says the test was
/// skipped and why (the caller then returns).
#[track_caller]
pub fn missing(test: &str, tool: &str) {
    assert!(
        !in_ci(),
        "{test}: {tool} is missing, and CI is set: run `cargo xtask setup`, which installs it"
    );
    eprintln!("{test}: SKIPPED: {tool} is missing (run `cargo xtask setup`)");
}
