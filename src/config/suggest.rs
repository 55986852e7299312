//! "Did you mean": the known name a misspelt one was most likely meant to
//! be, for the errors about unknown keys and values. Its own module, since
//! both the schema check and the layers' value checks ask it.

/// The candidate closest to `word` if it is a near miss: at most two edits
/// away, and fewer than a third of the word changed.
pub(crate) fn suggest<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    candidates
        .iter()
        .map(|c| (edit_distance(word, c), *c))
        .filter(|&(d, c)| d <= 2 && d * 3 <= word.len().max(c.len()))
        .min_by_key(|&(d, _)| d)
        .map(|(_, c)| c)
}

/// Levenshtein distance, counting an adjacent transposition as one edit
/// (`plna_dir` is one slip from `plan_dir`).
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn near_misses_are_suggested_and_far_ones_are_not() {
        let keys = ["plan_dir", "default_session", "mode", "name"];
        assert_eq!(suggest("plan_dri", &keys), Some("plan_dir"));
        assert_eq!(suggest("plandir", &keys), Some("plan_dir"));
        assert_eq!(suggest("default_sesion", &keys), Some("default_session"));
        assert_eq!(suggest("mdoe", &keys), Some("mode"));
        assert_eq!(suggest("colour", &keys), None);
        assert_eq!(suggest("x", &keys), None);
    }
}
