//! Small helpers every stage may use; depends on nothing in the crate.

use std::borrow::Cow;

/// The last `n` lines of `text`, joined by newlines (for error messages and
/// evidence excerpts).
pub fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// The largest inputs read whole (a clear refusal past them, never a read
/// that exhausts memory): matrix.toml, an mbox or a patch, a results.json.
/// The kmatrix checkout this binary was built from (xtask/ sits in it).
pub fn checkout_root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask/ sits in the repository")
        .to_path_buf()
}

pub const MAX_MATRIX: u64 = 4 << 20;
pub const MAX_MAIL: u64 = 64 << 20;
pub const MAX_RESULTS: u64 = 512 << 20;

/// Reads the input file `path` (a `what`: "matrix file", "mbox") whole,
/// refusing what is not a regular file (a FIFO would block, a device
/// never end) and what is larger than `max` bytes, before reading.
pub fn read_input(path: &std::path::Path, max: u64, what: &str) -> anyhow::Result<Vec<u8>> {
    use std::io::Read;
    let shown = path.display();
    let meta =
        std::fs::metadata(path).map_err(|e| anyhow::anyhow!("cannot read {what} {shown}: {e}"))?;
    if !meta.is_file() {
        let kind = match meta.file_type() {
            t if t.is_dir() => "a directory",
            _ => "not a regular file (a FIFO, socket or device)",
        };
        anyhow::bail!("{what} {shown} is {kind}; expected a regular file");
    }
    if meta.len() > max {
        anyhow::bail!(
            "{what} {shown} has {} bytes; expected at most {max}",
            meta.len()
        );
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(max + 1).read_to_end(&mut bytes))
        .map_err(|e| anyhow::anyhow!("cannot read {what} {shown}: {e}"))?;
    if bytes.len() as u64 > max {
        anyhow::bail!("{what} {shown} grew past {max} bytes while read");
    }
    Ok(bytes)
}

/// `read_input` as text; bytes that are not UTF-8 are refused by offset.
pub fn read_input_text(path: &std::path::Path, max: u64, what: &str) -> anyhow::Result<String> {
    String::from_utf8(read_input(path, max, what)?).map_err(|e| {
        anyhow::anyhow!(
            "{what} {} is not UTF-8 text (at byte {})",
            path.display(),
            e.utf8_error().valid_up_to()
        )
    })
}

/// `s` as one POSIX shell word (shlex: bare when that is safe, else in
/// single or double quotes). A NUL byte is kept as it is: no shell word can
/// hold one, and refusing would lose the rest of the text.
pub fn shell_quote(s: &str) -> Cow<'_, str> {
    shlex::Quoter::new()
        .allow_nul(true)
        .quote(s)
        .expect("with NUL allowed, shlex's quoting cannot fail")
}

/// `words` as one shell command line, each quoted as `shell_quote` does:
/// a reproducer pasted into a shell runs that command and nothing else,
/// whatever paths, names and message ids it carries.
pub fn shell_line<S: AsRef<str>>(words: impl IntoIterator<Item = S>) -> String {
    words
        .into_iter()
        .map(|w| shell_quote(w.as_ref()).into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

/// `text` as one markdown code span: fenced by one more backtick than its
/// longest run of backticks (a linker's `` `f' `` quotes would end a
/// single-backtick span), padded when it starts or ends with one.
pub fn md_code(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    if text.starts_with('`') || text.ends_with('`') {
        format!("{fence} {text} {fence}")
    } else {
        format!("{fence}{text}{fence}")
    }
}

/// Where the unit tests keep their scratch directories: the build's
/// `target/tmp/unit`, never the user's /tmp.
#[cfg(test)]
pub fn test_tmp() -> std::path::PathBuf {
    let d = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/tmp/unit");
    std::fs::create_dir_all(&d).unwrap();
    // Without the `..`: some tests check how paths escape a directory.
    std::fs::canonicalize(&d).unwrap()
}

/// UTC `YYYYmmdd-HHMMSS`: run directory names and log line stamps.
pub fn timestamp() -> String {
    stamp(time::OffsetDateTime::now_utc())
}

fn stamp(t: time::OffsetDateTime) -> String {
    format!(
        "{:04}{:02}{:02}-{:02}{:02}{:02}",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    )
}

/// A kernel log line without its time: `[    1.234567] text` -> `text`
/// (the console's and `dmesg`'s alike).
pub fn strip_timestamp(line: &str) -> &str {
    let l = line.trim_end_matches('\r');
    if l.starts_with('[') {
        if let Some(end) = l.find("] ") {
            if l[1..end]
                .trim()
                .chars()
                .all(|c| c.is_ascii_digit() || c == '.')
            {
                return &l[end + 2..];
            }
        }
    }
    l
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_code_span_holds_the_backticks_of_its_text() {
        assert_eq!(md_code("make: Error 1"), "`make: Error 1`");
        assert_eq!(
            md_code("f.o: in function `f': undefined reference to `__udivdi3'"),
            "``f.o: in function `f': undefined reference to `__udivdi3'``"
        );
        assert_eq!(md_code("`x`"), "`` `x` ``");
    }

    use super::*;
    use std::path::Path;

    #[test]
    fn an_input_is_a_regular_file_within_its_bound() {
        let dir =
            crate::util::test_tmp().join(format!("kmatrix-read-input-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("m.toml");
        std::fs::write(&f, "0123456789").unwrap();
        assert_eq!(read_input(&f, 10, "matrix file").unwrap(), b"0123456789");
        let e = read_input(&f, 9, "matrix file").unwrap_err().to_string();
        assert_eq!(
            e,
            format!(
                "matrix file {} has 10 bytes; expected at most 9",
                f.display()
            )
        );
        let e = read_input(Path::new("/dev/zero"), 9, "mbox")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "mbox /dev/zero is not a regular file (a FIFO, socket or device); expected a regular file"
        );
        let e = read_input(&dir, 9, "results file").unwrap_err().to_string();
        assert!(
            e.ends_with("is a directory; expected a regular file"),
            "{e}"
        );
        std::fs::write(&f, b"ok\xff").unwrap();
        let e = read_input_text(&f, 9, "series file")
            .unwrap_err()
            .to_string();
        assert!(e.ends_with("is not UTF-8 text (at byte 2)"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn stamps_are_utc_and_zero_padded() {
        // 1709251199 = 2024-02-29 23:59:59 UTC (a leap day, last second).
        let t = time::OffsetDateTime::from_unix_timestamp(1_709_251_199).unwrap();
        assert_eq!(stamp(t), "20240229-235959");
        let t = time::OffsetDateTime::from_unix_timestamp(0).unwrap();
        assert_eq!(stamp(t), "19700101-000000");
    }

    #[test]
    fn shell_words_survive_a_real_shell() {
        let words = [
            "plain",
            "",
            "a b",
            "it's",
            "$HOME `x` \\ \"q\"",
            "it's $HOME",
            "!^*?[]{}~#",
            "tab\tnew\nline",
            "GLIBC_TUNABLES=x ./basic_test",
        ];
        assert_eq!(shell_quote("plain"), "plain");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), "\"it's\"");
        let line: Vec<String> = words.iter().map(|w| shell_quote(w).into_owned()).collect();
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("printf '%s\\0' {}", line.join(" ")))
            .output()
            .unwrap();
        let got: Vec<&str> = std::str::from_utf8(&out.stdout)
            .unwrap()
            .split_terminator('\0')
            .collect();
        assert_eq!(got, words);
    }

    #[test]
    fn tail_keeps_the_last_lines() {
        assert_eq!(tail("a\nb\nc\n", 2), "b\nc");
        assert_eq!(tail("a\nb", 5), "a\nb");
        assert_eq!(tail("", 3), "");
        assert_eq!(tail("a\nb", 0), "");
    }
}
