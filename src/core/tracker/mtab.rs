//! 9beads' mount table, `<beads_root>/mtab`: one `name\tcwd` line per
//! mount (`readMtab` in 9beads' `p9/server.go`, in map order). It is how a
//! project's mount is found: 9beads names a mount with a random 8-hex
//! `shortID` at every mount, so only the directory stays the same.
//!
//! Pure: bytes in, rows out. Which rows are the project's is the shell's
//! to judge (it compares directories on the file system).

use super::valid_id;
use crate::core::lines::{quoted, LineError};

/// One mount of the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MtabRow {
    /// The mount's name, checked with [`valid_id`]: it becomes a path
    /// component under `beads_root`.
    pub name: String,
    /// The directory as 9beads keeps it (what was written to `mount`,
    /// trimmed, perhaps resolved to a `BEADS_PROJECT_DIRS` project): the
    /// rest of the line.
    pub cwd: String,
}

/// Parse `mtab`. Blank lines are skipped; a line with no tab, an invalid
/// name or an empty directory is a [`LineError`] and is dropped.
pub fn parse_mtab(text: &str) -> (Vec<MtabRow>, Vec<LineError>) {
    let mut rows = Vec::new();
    let mut errors = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        if line.trim().is_empty() {
            continue;
        }
        match parse_row(line) {
            Ok(row) => rows.push(row),
            Err(message) => errors.push(LineError::new(i + 1, message)),
        }
    }
    (rows, errors)
}

fn parse_row(line: &str) -> Result<MtabRow, String> {
    let Some((name, cwd)) = line.split_once('\t') else {
        return Err("expected `name<TAB>cwd`".into());
    };
    if !valid_id(name) {
        return Err(format!("invalid mount name {}", quoted(name)));
    }
    if cwd.is_empty() {
        return Err(format!("mount {} has no directory", quoted(name)));
    }
    Ok(MtabRow {
        name: name.to_string(),
        cwd: cwd.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_as_9beads_writes_them_and_bad_lines_apart() {
        let text = "1a2b3c4d\t/home/me/src/proj\n\n\
                    no-tab-here\n\
                    ../x\t/tmp\n\
                    empty\t\n\
                    9f8e7d6c\t/home/me/src/odd\tname\r\n";
        let (rows, errors) = parse_mtab(text);
        assert_eq!(
            rows,
            vec![
                MtabRow {
                    name: "1a2b3c4d".into(),
                    cwd: "/home/me/src/proj".into()
                },
                MtabRow {
                    name: "9f8e7d6c".into(),
                    cwd: "/home/me/src/odd\tname".into()
                },
            ]
        );
        let lines: Vec<usize> = errors.iter().map(|e| e.line).collect();
        assert_eq!(lines, [3, 4, 5], "{errors:?}");
    }
}
