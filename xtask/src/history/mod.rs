//! The run history: every `matrix`, `sweep` and `merge` run added to a
//! database (`store`: SQLite, one file, results/history.sqlite by
//! default; or PostgreSQL), and what the runs say together (`trend`: per
//! metric its change points, per case its state across runs, crashes by
//! title).
//!
//! Reads `crate::schema` runs and computes with `crate::stats`; writes
//! nothing but its database, prints nothing.

pub mod store;
pub mod trend;

use std::fmt;
use std::path::{Path, PathBuf};

pub use store::{Added, Store};

/// Where a history lives: a SQLite file, or a PostgreSQL server named by
/// a `postgres://` (or `postgresql://`) URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    File(PathBuf),
    Postgres(Server),
}

/// A PostgreSQL server: its URL, and the user and password to use when
/// the URL names none (libpq's `$PGUSER` and `$PGPASSWORD`, given by the
/// caller).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Server {
    pub url: String,
    pub user: Option<String>,
    pub password: Option<String>,
}

impl Location {
    /// `--db` as given: a URL, else a path (relative to `base`).
    pub fn parse(db: &str, base: &Path) -> Location {
        if db.starts_with("postgres://") || db.starts_with("postgresql://") {
            Location::Postgres(Server {
                url: db.to_string(),
                user: None,
                password: None,
            })
        } else {
            Location::File(base.join(db))
        }
    }

    /// Whether there is a history to read: a SQLite file must exist; a
    /// server is asked when opened.
    pub fn exists(&self) -> bool {
        match self {
            Location::File(p) => p.exists(),
            Location::Postgres(_) => true,
        }
    }
}

/// A path as it is; a URL with its password replaced by `***`.
impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Location::File(p) => write!(f, "{}", p.display()),
            Location::Postgres(s) => f.write_str(&redact(&s.url)),
        }
    }
}

/// `postgres://user:secret@host/db` -> `postgres://user:***@host/db`; a
/// `password=` query parameter is hidden the same way.
fn redact(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let (authority, tail) = rest
        .find(['/', '?'])
        .map_or((rest, ""), |i| rest.split_at(i));
    let authority = match authority.rsplit_once('@') {
        Some((user, host)) => match user.split_once(':') {
            Some((name, _)) => format!("{name}:***@{host}"),
            None => authority.to_string(),
        },
        None => authority.to_string(),
    };
    let tail: Vec<String> = tail
        .split('&')
        .map(|kv| match kv.split_once("password=") {
            Some((pre, _)) if pre.is_empty() || pre.ends_with('?') => format!("{pre}password=***"),
            _ => kv.to_string(),
        })
        .collect();
    format!("{scheme}://{authority}{}", tail.join("&"))
}

/// The database a run in `run_dir` is added to when no `--db` is given:
/// `history.sqlite` beside the run directory (results/history.sqlite for
/// the runs under results/).
pub fn default_db(run_dir: &Path) -> PathBuf {
    run_dir
        .parent()
        .unwrap_or_else(|| Path::new("."))
        .join("history.sqlite")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(url: &str) -> Server {
        Server {
            url: url.into(),
            user: None,
            password: None,
        }
    }

    #[test]
    fn a_url_is_a_server_and_its_password_is_never_shown() {
        let base = Path::new("/repo");
        assert_eq!(
            Location::parse("results/h.sqlite", base),
            Location::File("/repo/results/h.sqlite".into())
        );
        assert_eq!(
            Location::parse("/abs/h.sqlite", base),
            Location::File("/abs/h.sqlite".into())
        );
        let url = "postgresql://ci:s3cr3t@db.example:5432/kmatrix?sslmode=disable";
        let at = Location::parse(url, base);
        assert_eq!(at, Location::Postgres(server(url)));
        assert_eq!(
            at.to_string(),
            "postgresql://ci:***@db.example:5432/kmatrix?sslmode=disable"
        );
        assert_eq!(
            Location::Postgres(server(
                "postgres://ci@127.0.0.1/k?password=hunter2&application_name=x"
            ))
            .to_string(),
            "postgres://ci@127.0.0.1/k?password=***&application_name=x"
        );
        assert_eq!(
            Location::Postgres(server("postgres://127.0.0.1:5433/k")).to_string(),
            "postgres://127.0.0.1:5433/k"
        );
    }
}
