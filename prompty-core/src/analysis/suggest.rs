//! "Did you mean" suggestions for misspelt names.

/// Edit distance (insertions, deletions, substitutions, and swaps of neighbours): the optimal
/// string alignment distance, counted in chars.
pub(crate) fn distance(a: &str, b: &str) -> usize {
    strsim::osa_distance(a, b)
}

/// The candidate closest to `name` (at most 2 edits, or a case-insensitive match), for "did you
/// mean" hints.
///
/// ```
/// use prompty_core::analysis::closest;
/// assert_eq!(closest("questoin", ["name", "question"]), Some("question"));
/// assert_eq!(closest("zzz", ["question"]), None);
/// ```
pub fn closest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .into_iter()
        .filter(|c| *c != name)
        .map(|c| (if c.eq_ignore_ascii_case(name) { 0 } else { distance(name, c) }, c))
        .filter(|(d, _)| *d <= 2)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// The candidates close to `name`, closest first (then by name), at most `max` of them: within
/// two edits (or a third of the name's length, when longer) of the candidate or of its last
/// `.`-separated segment (`refund` finds `support.refund`), or equal ignoring case.
///
/// ```
/// use prompty_core::analysis::ranked;
/// let ids = ["greeting", "support.refund", "support.triage", "farewell"];
/// assert_eq!(ranked("greting", ids, 3), ["greeting"]);
/// assert_eq!(ranked("refund", ids, 3), ["support.refund"]);
/// assert!(ranked("zzz", ids, 3).is_empty());
/// ```
pub fn ranked<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>, max: usize) -> Vec<&'a str> {
    let limit = 2.max(name.chars().count() / 3);
    let mut scored: Vec<(usize, &str)> = candidates
        .into_iter()
        .filter(|c| *c != name)
        .map(|c| {
            let last = c.rsplit('.').next().unwrap_or(c);
            let score = if c.eq_ignore_ascii_case(name) { 0 } else { distance(name, c).min(distance(name, last)) };
            (score, c)
        })
        .filter(|(d, _)| *d <= limit)
        .collect();
    scored.sort();
    scored.into_iter().take(max).map(|(_, c)| c).collect()
}

/// `" (did you mean `x`?)"` or nothing.
///
/// ```
/// use prompty_core::analysis::did_you_mean;
/// assert_eq!(did_you_mean("strng", ["string", "integer"]), " (did you mean `string`?)");
/// assert_eq!(did_you_mean("zzz", ["string"]), "");
/// ```
pub fn did_you_mean<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    match closest(name, candidates) {
        Some(c) => format!(" (did you mean `{c}`?)"),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions() {
        assert_eq!(distance("questoin", "question"), 1);
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(closest("questoin", ["name", "question"]), Some("question"));
        assert_eq!(closest("Question", ["question"]), Some("question"));
        assert_eq!(closest("zzz", ["question"]), None);
        assert_eq!(did_you_mean("strng", ["string", "integer"]), " (did you mean `string`?)");
    }
}
