//! A series from the mailing list: `b4 am MSGID` (b4 from PyPI, in the
//! tools venv) writes the thread's patches as one mbox, which is then used
//! as `--series FILE`. The archive is `KMATRIX_LORE` (default
//! https://lore.kernel.org/all), passed to b4 as its `b4.midmask` through
//! git's environment config, so the user's git and b4 configuration are
//! neither read for it nor changed. The mbox is kept in the cache by
//! message id: a second run uses the same patches.

use std::path::PathBuf;
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::host::cache::KeyBuilder;
use crate::host::proc::{self, limit};

pub const DEFAULT_LORE: &str = "https://lore.kernel.org/all";

pub use crate::schema::SeriesOrigin as Origin;

pub struct Fetched {
    pub mbox: PathBuf,
    pub origin: Origin,
}

/// The archive URL (no trailing slash).
pub fn archive() -> String {
    std::env::var("KMATRIX_LORE")
        .ok()
        .filter(|v| !v.trim().is_empty())
        .unwrap_or_else(|| DEFAULT_LORE.into())
        .trim_end_matches('/')
        .to_string()
}

/// `<id>` or `id` or a lore URL ending in the id: the bare id; the error
/// names the id as given, quoted.
pub fn clean_msgid(raw: &str) -> Result<String> {
    msgid_of(raw).map_err(|why| anyhow::anyhow!("--lore {}: {why}", crate::util::shell_quote(raw)))
}

/// `clean_msgid`'s id, or what is wrong with it.
pub fn msgid_of(raw: &str) -> std::result::Result<String, String> {
    let mut s = raw.trim().trim_end_matches('/');
    if s.starts_with("http://") || s.starts_with("https://") {
        s = s.rsplit('/').next().unwrap_or(s);
    }
    let s = s.trim_start_matches('<').trim_end_matches('>');
    match msgid_fault(s) {
        Some(why) => Err(format!(
            "{why}; expected a message id like 20241202140735.56368-1-gmonaco@redhat.com"
        )),
        None => Ok(s.to_string()),
    }
}

/// Characters of a message id beside letters and digits: those of real
/// ids (`CAHk-=wh...@mail.gmail.com`, `87a5...fsf@x.org`, `+` tags), none
/// with a meaning to a shell or a path.
const MSGID_PUNCT: &str = ".-_+=%~";

/// What makes `s` no message id to fetch: `local@domain`, at most 250
/// characters of MSGID_PUNCT, letters and digits, starting with none of
/// `-` (an option to b4), `.` (a hidden or parent path) and `~` (a shell's
/// home directory).
fn msgid_fault(s: &str) -> Option<String> {
    let bad = s
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || MSGID_PUNCT.contains(*c) || *c == '@'));
    match s.split_once('@') {
        _ if s.len() > 250 => Some(format!("{} characters, more than 250", s.len())),
        _ if bad.is_some() => Some(format!(
            "{:?} is no character of a message id",
            bad.unwrap()
        )),
        _ if s.starts_with(['-', '.', '~']) => Some("it starts with `-`, `.` or `~`".into()),
        Some((local, domain))
            if !local.is_empty() && !domain.is_empty() && !domain.contains('@') =>
        {
            None
        }
        _ => Some("no `local@domain`".into()),
    }
}

/// A name for the series: the message id, with what names cannot hold
/// replaced.
fn series_name(msgid: &str) -> String {
    msgid
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect()
}

fn b4_version(b4: &std::path::Path) -> String {
    let mut c = Command::new(b4);
    c.arg("--version");
    crate::host::proc::query(c)
        .map(|f| f.stdout.trim().to_string())
        .unwrap_or_default()
}

/// Fetches the series `msgid` belongs to with `b4 am` (`install`: b4's
/// venv may be made first).
pub fn am(raw: &str, install: bool, log: &mut dyn FnMut(&str)) -> Result<Fetched> {
    let msgid = clean_msgid(raw)?;
    let archive = archive();
    let b4 = crate::host::tools::b4(install)?;
    let key = KeyBuilder::new("lore")
        .add("archive", archive.as_bytes())
        .add("msgid", msgid.as_bytes())
        .finish();
    let dir = crate::host::cache::default_root()
        .join("lore")
        .join(&key[..16]);
    let name = series_name(&msgid);
    let mbox = dir.join(format!("{name}.mbx"));
    let origin = Origin {
        series: name.clone(),
        message_id: msgid.clone(),
        archive: archive.clone(),
        b4: b4_version(&b4),
    };
    if mbox.exists() {
        log(&format!(
            "--lore {msgid}: the series fetched before, {} (delete it to fetch again)",
            mbox.display()
        ));
        return Ok(Fetched { mbox, origin });
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let work = dir.join("b4-out");
    let _ = std::fs::remove_dir_all(&work);
    log(&format!("--lore {msgid}: b4 am from {archive}"));
    let mut c = Command::new(&b4);
    c.args(["--no-interactive", "am", "--no-cache", "--outdir"])
        .arg(&work)
        .args(["--mbox-name", &name, &msgid])
        .env("GIT_CONFIG_COUNT", "2")
        .env("GIT_CONFIG_KEY_0", "b4.midmask")
        .env("GIT_CONFIG_VALUE_0", format!("{archive}/%s"))
        // No DKIM look-ups: they need DNS, and the patches are checked by
        // building them.
        .env("GIT_CONFIG_KEY_1", "b4.attestation-policy")
        .env("GIT_CONFIG_VALUE_1", "off")
        .env("XDG_CACHE_HOME", dir.join("b4-cache"))
        .current_dir(&dir);
    let f = proc::run(c, limit::scaled(limit::TOOLS)).context("running b4 am")?;
    // b4 shortens the name it is given (it drops what looks like an
    // extension): take the one mbox it wrote.
    let wrote = std::fs::read_dir(&work)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|e| e == "mbx"))
        .unwrap_or_else(|| work.join(format!("{name}.mbx")));
    if !f.success() || !wrote.exists() {
        bail!(
            "--lore {msgid}: `b4 am` from {archive} {}:\n{}",
            if f.success() {
                "wrote no mbox".to_string()
            } else {
                f.describe()
            },
            crate::util::tail(&format!("{}\n{}", f.stdout, f.stderr), 15)
        );
    }
    std::fs::rename(&wrote, &mbox)?;
    let _ = std::fs::remove_dir_all(&work);
    log(&format!("--lore {msgid}: {}", mbox.display()));
    Ok(Fetched { mbox, origin })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_id_is_taken_bare_bracketed_or_as_a_lore_url() {
        let id = "20241202140735.56368-1-gmonaco@redhat.com";
        for raw in [
            id.to_string(),
            format!("<{id}>"),
            format!("https://lore.kernel.org/all/{id}/"),
        ] {
            assert_eq!(clean_msgid(&raw).unwrap(), id, "{raw}");
        }
        // A stranger's id is data: nothing with a meaning to a shell, a
        // path or b4's options is taken.
        for (raw, why) in [
            ("no-at-sign", "no `local@domain`"),
            ("a@b@c", "no `local@domain`"),
            ("@b", "no `local@domain`"),
            ("a'$(touch X)'@b", "'\\'' is no character of a message id"),
            ("a/../../x@b", "'/' is no character of a message id"),
            ("a b@c", "' ' is no character of a message id"),
            ("-o@b", "it starts with `-`, `.` or `~`"),
            ("~t@h", "it starts with `-`, `.` or `~`"),
        ] {
            let e = clean_msgid(raw).unwrap_err().to_string();
            assert!(
                e.contains(&format!(": {why}; expected a message id")),
                "{raw}: {e}"
            );
        }
        // The id in the refusal is one shell word, as given.
        let e = clean_msgid("a'$(touch X)'@b").unwrap_err().to_string();
        let quoted = e
            .strip_prefix("--lore ")
            .unwrap()
            .split(": ")
            .next()
            .unwrap();
        assert_eq!(shlex::split(quoted).unwrap(), ["a'$(touch X)'@b"]);
        let long = format!("{}@b", "a".repeat(300));
        assert!(clean_msgid(&long)
            .unwrap_err()
            .to_string()
            .contains("302 characters"));
        for real in [
            "CAHk-=wh3x+Y_5@mail.gmail.com",
            "87a5fsf%40x@x.org",
            "t~1@h",
        ] {
            assert_eq!(clean_msgid(real).unwrap(), real);
        }
        assert_eq!(series_name(id), "20241202140735.56368-1-gmonaco-redhat.com");
    }

    /// Seeded random ids from a stranger's mail (shell and path characters,
    /// spaces, several `@`, letters of several bytes, lengths past the
    /// bound, URL and bracket forms): none panics; what is taken is made of
    /// characters a shell argument and a file name give no meaning to,
    /// `local@domain`, one word as quoted; what is
    /// refused says what a message id is.
    #[test]
    fn random_message_ids_are_taken_only_as_plain_words() {
        use rand_xoshiro::rand_core::{Rng, SeedableRng};
        let mut g = rand_xoshiro::Xoshiro256StarStar::seed_from_u64(0x006d_7367_6964);
        let alphabet: Vec<char> = "abcXYZ019.-_+=%~abc@/\\'\"$`;&|<>(){}[]*?! \t\n#é—\u{0}"
            .chars()
            .collect();
        let (mut taken, mut refused) = (0, 0);
        for _ in 0..20_000 {
            let len = match g.next_u64() % 10 {
                0 => 240 + (g.next_u64() % 30) as usize,
                _ => (g.next_u64() % 40) as usize,
            };
            // Most from an id's own characters with one `@` put in (some
            // then given one stranger character), the rest from anything.
            let from = if g.next_u64() % 3 == 0 {
                &alphabet[..]
            } else {
                &alphabet[..19]
            };
            let mut id: String = (0..len)
                .map(|_| from[(g.next_u64() % from.len() as u64) as usize])
                .collect();
            if from.len() == 19 {
                let at = (g.next_u64() as usize) % (id.len() + 1);
                id.insert(at, '@');
                if g.next_u64() % 2 == 0 {
                    let c = alphabet[(g.next_u64() % alphabet.len() as u64) as usize];
                    let at = (g.next_u64() as usize) % (id.len() + 1);
                    id.insert(at, c);
                }
            }
            id = match g.next_u64() % 4 {
                0 => format!("<{id}>"),
                1 => format!("https://lore.kernel.org/all/{id}/"),
                _ => id,
            };
            match msgid_of(&id) {
                Ok(m) => {
                    taken += 1;
                    // Characters a shell gives no meaning to inside an
                    // argument, and one word as quoted.
                    assert!(
                        m.chars()
                            .all(|c| c.is_ascii_alphanumeric() || "._+=%~@-".contains(c)),
                        "{id:?}"
                    );
                    let q = crate::util::shell_quote(&m);
                    assert_eq!(
                        shlex::split(&q).unwrap(),
                        std::slice::from_ref(&m),
                        "{id:?}"
                    );
                    assert_eq!(m.matches('@').count(), 1, "{id:?}");
                    assert!(
                        !m.contains('/') && !m.starts_with(['-', '.']) && m.len() <= 250,
                        "{id:?}"
                    );
                    assert!(!series_name(&m).contains('/'), "{id:?}");
                }
                Err(e) => {
                    refused += 1;
                    assert!(
                        e.ends_with(
                            "expected a message id like 20241202140735.56368-1-gmonaco@redhat.com"
                        ),
                        "{id:?}: {e}"
                    );
                }
            }
        }
        assert!(
            taken > 100 && refused > 10_000,
            "{taken} taken, {refused} refused"
        );
    }
}
