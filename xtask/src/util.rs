//! Small helpers every stage may use; depends on nothing in the crate.

/// The last `n` lines of `text`, joined by newlines (for error messages and
/// evidence excerpts).
pub fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_keeps_the_last_lines() {
        assert_eq!(tail("a\nb\nc\n", 2), "b\nc");
        assert_eq!(tail("a\nb", 5), "a\nb");
        assert_eq!(tail("", 3), "");
        assert_eq!(tail("a\nb", 0), "");
    }
}
