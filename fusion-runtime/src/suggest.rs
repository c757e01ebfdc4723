//! Did-you-mean: the closest of a server's own names to a name a client sent.

/// The longest word [`closest`] compares, in bytes. Jaro-Winkler allocates and walks both
/// words for every candidate, so a suggestion for a 15 MiB key cost seconds; a word this
/// long is no typo of a name anyway.
const MAX_SUGGEST_BYTES: usize = crate::limits::MAX_KEY_BYTES;

/// The closest of `candidates` to `word`, if one is close enough to be a likely typo. No
/// suggestion for a word over [`MAX_SUGGEST_BYTES`], nor for candidates over it (a server's
/// own names, bounded, but the cost must not depend on anyone's input).
pub(crate) fn closest<'a>(
    word: &str,
    candidates: impl Iterator<Item = &'a str>,
) -> Option<&'a str> {
    if word.len() > MAX_SUGGEST_BYTES {
        return None;
    }
    let candidates = candidates.filter(|candidate| candidate.len() <= MAX_SUGGEST_BYTES);
    let folded = fold(word);
    let mut best: Option<(f64, &str)> = None;
    for candidate in candidates {
        // `userId` for `user_id`, `City` for `city`: the same word spelled another way.
        let score = if fold(candidate) == folded {
            2.0
        } else {
            strsim::jaro_winkler(&word.to_lowercase(), &candidate.to_lowercase())
        };
        if score >= 0.8 && best.is_none_or(|(top, _)| score > top) {
            best = Some((score, candidate));
        }
    }
    best.map(|(_, name)| name)
}

fn fold(word: &str) -> String {
    word.chars()
        .filter(|c| *c != '_' && *c != '-')
        .flat_map(char::to_lowercase)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closest_folds_case_and_separators() {
        let names = ["user_id", "limit"];
        assert_eq!(closest("userId", names.iter().copied()), Some("user_id"));
        assert_eq!(closest("limt", names.iter().copied()), Some("limit"));
        assert_eq!(closest("zzz", names.iter().copied()), None);
    }

    #[test]
    fn suggestions_only_for_bounded_words() {
        let names = ["user_id", "limit"];
        let giant = format!("user_id{}", "x".repeat(crate::limits::MAX_KEY_BYTES));
        assert_eq!(closest(&giant, names.iter().copied()), None);
        let near = format!("user_i{}", "d".repeat(3));
        assert_eq!(closest(&near, names.iter().copied()), Some("user_id"));
    }
}
