//! Where a value sits in matrix.toml: the line and column of a key path
//! (`run.memory_mb`, `test.rseq.boots`, `within[2].split.at`), so every
//! refusal names `FILE:LINE:COL`. serde keeps spans only for the fields
//! typed `Spanned`; this reads them from the text itself (toml_edit), for
//! any key. Pure.

use std::ops::Range;

use toml_edit::{ImDocument, Item, Table, Value};

/// One step of a key path: a table key or an array index.
#[derive(Debug, Clone, Copy)]
pub enum Seg<'a> {
    Key(&'a str),
    Index(usize),
}

impl<'a> From<&'a str> for Seg<'a> {
    fn from(k: &'a str) -> Self {
        Seg::Key(k)
    }
}

impl<'a> From<&'a String> for Seg<'a> {
    fn from(k: &'a String) -> Self {
        Seg::Key(k)
    }
}

impl From<usize> for Seg<'_> {
    fn from(i: usize) -> Self {
        Seg::Index(i)
    }
}

/// A key path, written `keys![...]` in the validation code.
macro_rules! keys {
    ($($s:expr),* $(,)?) => {
        &[$($crate::plan::spans::Seg::from($s)),*][..]
    };
}
pub(crate) use keys;

/// matrix.toml's name and text, and its syntax tree for lookups (parsed
/// on the first lookup: only an error needs it).
pub struct Spans<'a> {
    pub path: &'a str,
    pub text: &'a str,
    doc: std::cell::OnceCell<Option<ImDocument<&'a str>>>,
}

#[derive(Clone, Copy)]
enum Node<'d> {
    Item(&'d Item),
    Value(&'d Value),
    Table(&'d Table),
}

impl<'d> Node<'d> {
    fn span(self) -> Option<Range<usize>> {
        match self {
            Node::Item(i) => i.span(),
            Node::Value(v) => v.span(),
            Node::Table(t) => t.span(),
        }
    }

    /// The child at `seg`, with the span of its key (tables only).
    fn child(self, seg: Seg) -> Option<(Option<Range<usize>>, Node<'d>)> {
        match (self, seg) {
            (Node::Table(t), Seg::Key(k)) => t
                .get_key_value(k)
                .map(|(key, item)| (key.span(), Node::Item(item))),
            (Node::Item(i), Seg::Key(k)) => i
                .as_table_like()?
                .get_key_value(k)
                .map(|(key, item)| (key.span(), Node::Item(item))),
            (Node::Value(Value::InlineTable(t)), Seg::Key(k)) => t
                .get_key_value(k)
                .map(|(key, item)| (key.span(), Node::Item(item))),
            (Node::Item(Item::ArrayOfTables(a)), Seg::Index(n)) => {
                a.get(n).map(|t| (None, Node::Table(t)))
            }
            (Node::Item(Item::Value(Value::Array(a))), Seg::Index(n))
            | (Node::Value(Value::Array(a)), Seg::Index(n)) => {
                a.get(n).map(|v| (None, Node::Value(v)))
            }
            _ => None,
        }
    }
}

impl<'a> Spans<'a> {
    pub fn new(path: &'a str, text: &'a str) -> Spans<'a> {
        Spans {
            path,
            text,
            doc: std::cell::OnceCell::new(),
        }
    }

    /// Walks `keys` as far as they go: the span of the deepest value found
    /// (else of its key), and of its key.
    fn walk(&self, keys: &[Seg]) -> (Range<usize>, Option<Range<usize>>) {
        let doc = self.doc.get_or_init(|| ImDocument::parse(self.text).ok());
        let Some(doc) = doc else {
            return (0..0, None);
        };
        let mut node = Node::Table(doc.as_table());
        let mut best = 0..0;
        let mut key_span = None;
        for seg in keys {
            let Some((k, next)) = node.child(*seg) else {
                break;
            };
            node = next;
            key_span = k.clone();
            if let Some(s) = next.span().or(k) {
                best = s;
            }
        }
        (best, key_span)
    }

    /// The span of the value at `keys`, or of the nearest enclosing one
    /// found (the file's start when none).
    pub fn span(&self, keys: &[Seg]) -> Range<usize> {
        self.walk(keys).0
    }

    /// The span of the last key of `keys` itself (a table's name), else
    /// what `span` gives.
    pub fn key_span(&self, keys: &[Seg]) -> Range<usize> {
        let (value, key) = self.walk(keys);
        key.unwrap_or(value)
    }

    /// `FILE:LINE:COL` of a byte offset.
    pub fn place(&self, offset: usize) -> String {
        let (l, c) = line_col(self.text, offset);
        format!("{}:{l}:{c}", self.path)
    }

    /// An error at a span.
    pub fn err(&self, span: Range<usize>, msg: impl std::fmt::Display) -> anyhow::Error {
        anyhow::anyhow!("{}: {msg}", self.place(span.start))
    }

    /// An error at the value of a key path.
    pub fn err_at(&self, keys: &[Seg], msg: impl std::fmt::Display) -> anyhow::Error {
        self.err(self.span(keys), msg)
    }

    /// An error at a key (a table's name).
    pub fn err_key(&self, keys: &[Seg], msg: impl std::fmt::Display) -> anyhow::Error {
        self.err(self.key_span(keys), msg)
    }
}

/// Turns a byte offset into (line, column) of `text`, both 1-based; an
/// offset past the end or inside a character counts from the last
/// character boundary before it.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let mut end = offset.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let before = &text[..end];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "[run]\nboots = 3\narches = [\"x86_64\", \"arm64\"]\n\n[kernel.\"6.1\"]\nsource = { git = { path = \"/l\", rev = \"v6.1\" } }\n\n[[within]]\nbase = \"a\"\n\n[[within]]\nbase = \"b\"\nsplit = { metric = \"m\", at = 1.0 }\n";

    fn at(keys: &[Seg]) -> String {
        let s = Spans::new("m.toml", TEXT);
        s.place(s.span(keys).start)
    }

    #[test]
    fn key_paths_find_their_values() {
        assert_eq!(at(keys!["run", "boots"]), "m.toml:2:9");
        assert_eq!(at(keys!["run", "arches", 1]), "m.toml:3:21");
        assert_eq!(
            at(keys!["kernel", "6.1", "source", "git", "rev"]),
            "m.toml:6:39"
        );
        assert_eq!(at(keys!["within", 1, "split", "at"]), "m.toml:13:30");
        assert_eq!(at(keys!["within", 0, "base"]), "m.toml:9:8");
        let s = Spans::new("m.toml", TEXT);
        assert_eq!(
            s.place(s.key_span(keys!["kernel", "6.1"]).start),
            "m.toml:5:9"
        );
    }

    #[test]
    fn a_path_not_there_falls_back_to_what_encloses_it() {
        // run.memory_mb is not written: the [run] table.
        assert_eq!(at(keys!["run", "memory_mb"]), "m.toml:1:1");
        // The 8th [[within]] is not there: the first.
        assert_eq!(at(keys!["within", 7, "base"]), "m.toml:8:1");
        assert_eq!(at(keys!["nothing"]), "m.toml:1:1");
        // Text that is no TOML: the start.
        let s = Spans::new("m.toml", "[run\n");
        assert_eq!(s.place(s.span(keys!["run"]).start), "m.toml:1:1");
    }

    #[test]
    fn offsets_inside_a_character_do_not_panic() {
        assert_eq!(line_col("é\nx", 1), (1, 1));
        assert_eq!(line_col("é\nx", 3), (2, 1));
        assert_eq!(line_col("ab", 99), (1, 3));
    }
}
