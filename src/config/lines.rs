//! Where each key of a configuration file is written: the line of every
//! section header and key, read from the file's own text with toml_edit's
//! spans (figment keeps values, not positions). Errors about a key name
//! its line, not only the file.

use std::collections::BTreeMap;

use toml_edit::{ImDocument, Item, Key, Table, Value};

/// Line numbers (1-based) by key path: `["project"]` is the `[project]`
/// header (or the first key that opens it), `["project", "name"]` its key.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Lines(BTreeMap<Vec<String>, usize>);

impl Lines {
    /// The lines of `text`, a TOML document figment already accepted (an
    /// unparsable text has no lines to give).
    pub fn of(text: &str) -> Lines {
        let mut lines = Lines::default();
        if let Ok(doc) = ImDocument::parse(text) {
            let starts = line_starts(text);
            lines.table(doc.as_table(), &mut Vec::new(), &starts);
        }
        lines
    }

    /// The line of `path`, or of the nearest enclosing key or section
    /// written in the file.
    pub fn find(&self, path: &[String]) -> Option<usize> {
        (1..=path.len())
            .rev()
            .find_map(|n| self.0.get(&path[..n]).copied())
    }

    fn put(&mut self, path: &[String], span: Option<std::ops::Range<usize>>, starts: &[usize]) {
        if let Some(span) = span {
            let line = starts.partition_point(|&s| s <= span.start);
            self.0.entry(path.to_vec()).or_insert(line);
        }
    }

    fn table(&mut self, t: &Table, path: &mut Vec<String>, starts: &[usize]) {
        for (name, item) in t.iter() {
            path.push(name.to_string());
            // A `[section]` header is where the section is; a key (also a
            // dotted one) where the key is.
            let header = match item {
                Item::Table(inner) if !inner.is_implicit() && !inner.is_dotted() => inner.span(),
                _ => None,
            };
            self.put(
                path,
                header.or_else(|| t.key(name).and_then(Key::span)),
                starts,
            );
            match item {
                Item::Table(inner) => self.table(inner, path, starts),
                Item::Value(Value::InlineTable(inner)) => {
                    for (k, _) in inner.iter() {
                        path.push(k.to_string());
                        self.put(path, inner.key(k).and_then(Key::span), starts);
                        path.pop();
                    }
                }
                _ => {}
            }
            path.pop();
        }
    }
}

/// The byte offset where each line starts.
fn line_starts(text: &str) -> Vec<usize> {
    std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(p: &[&str]) -> Vec<String> {
        p.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn sections_keys_and_entries_have_their_lines() {
        let text = "# c\n[project]\nname = \"p\"\n\nplan_dir = \"/x\"\n[events.assignees]\n\"a.b\" = \"s\"\n[log]\nlevel = { x = 1 }\n";
        let l = Lines::of(text);
        assert_eq!(l.find(&path(&["project"])), Some(2));
        assert_eq!(l.find(&path(&["project", "name"])), Some(3));
        assert_eq!(l.find(&path(&["project", "plan_dir"])), Some(5));
        assert_eq!(l.find(&path(&["events", "assignees", "a.b"])), Some(7));
        assert_eq!(l.find(&path(&["log", "level", "x"])), Some(9));
        // A key the file does not set is found at its section.
        assert_eq!(l.find(&path(&["project", "mode"])), Some(2));
        assert_eq!(l.find(&path(&["state", "dir"])), None);
    }

    #[test]
    fn dotted_keys_and_top_level_values() {
        let l = Lines::of("project = 3\nsessions.dir = \"/s\"\n");
        assert_eq!(l.find(&path(&["project"])), Some(1));
        assert_eq!(l.find(&path(&["sessions", "dir"])), Some(2));
    }
}
