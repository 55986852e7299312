//! One line of the live view, made to fit the terminal: text from plan
//! files and agents is data, so control characters (an escape sequence in
//! a step title would reach the terminal) become spaces, and a line longer
//! than the terminal is cut with `…` — the view truncates, never wraps.

/// How many columns `c` takes in a terminal: 0 for combining marks, 2 for
/// the wide East Asian ranges and emoji, else 1. An estimate (no table of
/// every code point), so the screen also turns autowrap off: a line whose
/// estimate is short by a column is clipped by the terminal, not wrapped.
pub fn columns(c: char) -> usize {
    match u32::from(c) {
        0x0300..=0x036F | 0x200B..=0x200F | 0x20D0..=0x20FF | 0xFE00..=0xFE0F => 0,
        0x1100..=0x115F
        | 0x2E80..=0x303E
        | 0x3041..=0x33FF
        | 0x3400..=0x4DBF
        | 0x4E00..=0x9FFF
        | 0xA000..=0xA4CF
        | 0xAC00..=0xD7A3
        | 0xF900..=0xFAFF
        | 0xFE30..=0xFE4F
        | 0xFF00..=0xFF60
        | 0xFFE0..=0xFFE6
        | 0x1F300..=0x1F64F
        | 0x1F900..=0x1F9FF
        | 0x20000..=0x3FFFD => 2,
        _ => 1,
    }
}

/// `text` with control characters as spaces, cut to at most `width`
/// columns; a cut line ends with `…`.
pub fn fit(text: &str, width: usize) -> String {
    let safe = text.chars().map(|c| if c.is_control() { ' ' } else { c });
    let total: usize = safe.clone().map(columns).sum();
    if total <= width {
        return safe.collect();
    }
    let mut out = String::new();
    let mut used = 0;
    // Room for the `…`, which takes one column.
    for c in safe {
        let w = columns(c);
        if used + w + 1 > width {
            break;
        }
        out.push(c);
        used += w;
    }
    if width > 0 {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn width(s: &str) -> usize {
        s.chars().map(columns).sum()
    }

    #[test]
    fn a_short_line_is_left_alone() {
        assert_eq!(fit("ready s2 Build", 80), "ready s2 Build");
    }

    #[test]
    fn a_long_line_is_cut_to_the_width_with_an_ellipsis() {
        let long = "x".repeat(200);
        let cut = fit(&long, 80);
        assert_eq!(width(&cut), 80);
        assert!(cut.ends_with('…'));
    }

    #[test]
    fn wide_characters_count_twice_and_are_never_split() {
        let cut = fit(&"漢".repeat(50), 11);
        assert!(width(&cut) <= 11, "{cut:?}");
        assert_eq!(cut, format!("{}…", "漢".repeat(5)));
    }

    #[test]
    fn control_characters_never_reach_the_terminal() {
        let s = fit("evil \x1b[2J title\tand\nmore", 80);
        assert!(!s.chars().any(char::is_control), "{s:?}");
        assert_eq!(s, "evil  [2J title and more");
    }

    #[test]
    fn no_room_at_all_is_an_empty_line() {
        assert_eq!(fit("abc", 0), "");
        assert_eq!(fit("abc", 1), "…");
    }
}
