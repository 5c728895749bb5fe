//! The one glob dialect of matrix.toml and the command line, globset's:
//! `*` any run of characters, `?` one character, `[abc]` / `[!abc]` a
//! class, `{a,b}` alternatives. In a cell id (`kernel/variant/arch/config`:
//! `[[expect]] cell`, `[[known]] cell`, `--cell`) no wildcard crosses a
//! `/`, so `*` stands for one part; in a case name (`[[expect]] case`) it
//! stands for anything.

use globset::{GlobBuilder, GlobMatcher};

fn build(pattern: &str, in_cell_id: bool) -> Result<GlobMatcher, String> {
    GlobBuilder::new(pattern)
        .literal_separator(in_cell_id)
        .backslash_escape(true)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| format!("`{pattern}` is not a glob: {}", e.kind()))
}

/// `pattern` compiled once, for many matches: `in_cell_id` as in
/// `cell_matches`, otherwise as in `name_matches`.
pub fn compile(pattern: &str, in_cell_id: bool) -> Result<GlobMatcher, String> {
    build(pattern, in_cell_id)
}

/// Whether `pattern` is a glob: the refusal says why not.
pub fn check(pattern: &str) -> Result<(), String> {
    build(pattern, true).map(|_| ())
}

/// Whether the cell id `id` matches `pattern`, each `*` one part of it.
/// A pattern that is not a glob matches nothing (matrix.toml's are
/// checked when it is read).
pub fn cell_matches(pattern: &str, id: &str) -> bool {
    build(pattern, true).is_ok_and(|g| g.is_match(id))
}

/// Whether a name (a test case's) matches `pattern`.
pub fn name_matches(pattern: &str, name: &str) -> bool {
    build(pattern, false).is_ok_and(|g| g.is_match(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_star_is_one_part_of_a_cell_id() {
        assert!(cell_matches("*/base/*/*", "6.1/base/arm64/tiny"));
        assert!(!cell_matches("*/base/*/*", "6.1/base-x/arm64/tiny"));
        assert!(!cell_matches("*/base/*", "6.1/base/arm64/tiny"));
        assert!(!cell_matches("6.1/*", "6.1/base/arm64/tiny"));
        assert!(cell_matches(
            "6.1/mm-cid-work@*/*/*",
            "6.1/mm-cid-work@1/x86_64/tiny"
        ));
        assert!(cell_matches(
            "*/{base,sync}/x86_64/*",
            "6.1/sync/x86_64/tiny"
        ));
        assert!(!cell_matches(
            "*/{base,sync}/x86_64/*",
            "6.1/sync/arm64/tiny"
        ));
    }

    #[test]
    fn a_star_is_anything_in_a_case_name() {
        assert!(name_matches(
            "seccomp_notify.sync.*",
            "seccomp_notify.sync.same-cpu"
        ));
        assert!(!name_matches(
            "seccomp_notify.sync.*",
            "seccomp_notify.default.same-cpu"
        ));
        assert!(name_matches("a*b*c", "axxbyyc"));
        assert!(!name_matches("a*b*c", "ac"));
        assert!(name_matches("exact", "exact") && !name_matches("exact", "exactly"));
        assert!(name_matches("global.*", "global.user_notification/sync"));
        assert!(name_matches(
            "TRACE_syscall.ptrace.\\[x\\]",
            "TRACE_syscall.ptrace.[x]"
        ));
    }

    #[test]
    fn what_is_not_a_glob_is_said_and_matches_nothing() {
        let e = check("6.1/[base/*/*").unwrap_err();
        assert!(e.contains("`6.1/[base/*/*` is not a glob"), "{e}");
        assert!(!cell_matches("6.1/[base/*/*", "6.1/[base/x86_64/tiny"));
        assert!(check("*/base/*/*").is_ok());
    }
}
