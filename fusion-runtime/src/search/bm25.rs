//! Okapi BM25 over the words of each listed tool: the ranking behind `search_tools`.
//!
//! Small and bounded on purpose: words are runs of letters and digits (snake_case and
//! camelCase split, lowercased, a plural `s` dropped), never patterns, so a query cannot
//! make the search do more than one pass over its own text and one look-up per word and
//! tool. The statistics (how many tools hold a word, the mean length) are those of the
//! tools the caller is shown, so a hidden tool moves no score.

use std::collections::HashMap;

/// How fast a word's weight saturates as it repeats (BM25's `k1`).
const K1: f64 = 1.2;
/// How much a long document's words are discounted (BM25's `b`).
const B: f64 = 0.75;
/// A word longer than this is cut to it: no tool's word is longer, and a query's cannot
/// grow the work.
const MAX_WORD_BYTES: usize = 64;

/// The words of `text`, in order, as they are indexed and searched: split at anything that
/// is not a letter or a digit and where a lowercase letter or a digit meets an uppercase
/// one (`findNotes` → `find`, `notes`), lowercased, cut to [`MAX_WORD_BYTES`], a plural
/// `s` dropped (`notes` → `note`).
pub(crate) fn words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut previous_lower = false;
    for character in text.chars() {
        if !character.is_alphanumeric() {
            finish(&mut word, &mut words);
            previous_lower = false;
            continue;
        }
        if character.is_uppercase() && previous_lower {
            finish(&mut word, &mut words);
        }
        previous_lower = character.is_lowercase() || character.is_numeric();
        for lower in character.to_lowercase() {
            if word.len() + lower.len_utf8() <= MAX_WORD_BYTES {
                word.push(lower);
            }
        }
    }
    finish(&mut word, &mut words);
    words
}

/// Words too common to tell tools apart: left out of documents and queries.
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "in", "into", "is", "it",
    "its", "of", "on", "or", "that", "the", "this", "to", "with",
];

/// Whether `word` (as [`words`] gives it) is too common to search for.
pub(crate) fn is_stop_word(word: &str) -> bool {
    STOP_WORDS.contains(&word)
}

/// Ends the word being read: stemmed and added, when there is one.
fn finish(word: &mut String, words: &mut Vec<String>) {
    if word.is_empty() {
        return;
    }
    let mut done = std::mem::take(word);
    // A light stemmer: `notes` and `note` are one word, `status` and `class` stay whole.
    if done.len() > 3 && done.ends_with('s') && !done.ends_with("ss") && !done.ends_with("us") {
        done.pop();
    }
    words.push(done);
}

/// One document: how often each word occurs, and how many words it has.
#[derive(Debug)]
struct Document {
    counts: HashMap<String, u32>,
    length: u32,
}

/// The documents of one search, in catalog order.
#[derive(Debug)]
pub(crate) struct Index {
    documents: Vec<Document>,
    mean_length: f64,
}

impl Index {
    /// An index of `documents`, each the list of its words (a word given twice counts
    /// twice: that is how a field is weighted).
    pub(crate) fn new(documents: impl IntoIterator<Item = Vec<String>>) -> Self {
        let documents: Vec<Document> = documents
            .into_iter()
            .map(|words| {
                let length = u32::try_from(words.len()).unwrap_or(u32::MAX);
                let mut counts = HashMap::new();
                for word in words {
                    *counts.entry(word).or_insert(0u32) += 1;
                }
                Document { counts, length }
            })
            .collect();
        let total: f64 = documents.iter().map(|doc| f64::from(doc.length)).sum();
        let mean_length = if documents.is_empty() {
            0.0
        } else {
            total / documents.len() as f64
        };
        Self {
            documents,
            mean_length,
        }
    }

    /// How many documents the index holds.
    pub(crate) fn len(&self) -> usize {
        self.documents.len()
    }

    /// The documents that hold any of `query`'s words, best first, as (index, score):
    /// BM25 with the IDF of Lucene (never negative). Ties keep catalog order. Work: one
    /// look-up per distinct query word and document.
    pub(crate) fn rank(&self, query: &[String]) -> Vec<(usize, f64)> {
        let mut terms: Vec<&str> = query.iter().map(String::as_str).collect();
        terms.sort_unstable();
        terms.dedup();
        let count = self.documents.len() as f64;
        let idf: Vec<f64> = terms
            .iter()
            .map(|term| {
                let holding = self
                    .documents
                    .iter()
                    .filter(|doc| doc.counts.contains_key(*term))
                    .count() as f64;
                (1.0 + (count - holding + 0.5) / (holding + 0.5)).ln()
            })
            .collect();
        let mut scored: Vec<(usize, f64)> = self
            .documents
            .iter()
            .enumerate()
            .filter_map(|(index, doc)| {
                let norm = if self.mean_length > 0.0 {
                    1.0 - B + B * f64::from(doc.length) / self.mean_length
                } else {
                    1.0
                };
                let score: f64 = terms
                    .iter()
                    .zip(&idf)
                    .filter_map(|(term, idf)| {
                        let frequency = f64::from(*doc.counts.get(*term)?);
                        Some(idf * frequency * (K1 + 1.0) / (frequency + K1 * norm))
                    })
                    .sum();
                (score > 0.0).then_some((index, score))
            })
            .collect();
        // Stable: equal scores keep the catalog's order.
        scored.sort_by(|a, b| b.1.total_cmp(&a.1));
        scored
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(docs: &[&str]) -> Index {
        Index::new(docs.iter().map(|doc| words(doc)))
    }

    #[test]
    fn common_words_are_stop_words() {
        assert!(is_stop_word("the") && is_stop_word("a"));
        assert!(!is_stop_word("user"));
    }

    fn ranked(index: &Index, query: &str) -> Vec<usize> {
        index
            .rank(&words(query))
            .into_iter()
            .map(|(at, _)| at)
            .collect()
    }

    #[test]
    fn words_split_cases_punctuation_and_plurals() {
        assert_eq!(words("db_user find_many"), ["db", "user", "find", "many"]);
        assert_eq!(words("findNotes"), ["find", "note"]);
        assert_eq!(words("HTTPServer v2"), ["httpserver", "v2"]);
        assert_eq!(words("Status: class, bus!"), ["status", "class", "bus"]);
        assert_eq!(words("(a+)+$(a+)+$"), ["a", "a"]);
        assert!(words("  ,;  ").is_empty());
    }

    #[test]
    fn a_long_word_is_cut() {
        let long = "x".repeat(10_000);
        assert_eq!(words(&long), ["x".repeat(MAX_WORD_BYTES)]);
    }

    #[test]
    fn the_tool_that_holds_the_rare_word_ranks_first() {
        let index = index(&[
            "add_note Add a note to the notebook",
            "search_notes Find notes by text",
            "delete_user Delete a user account",
        ]);
        assert_eq!(ranked(&index, "delete account"), [2]);
        assert_eq!(ranked(&index, "find note"), [1, 0]);
        assert!(ranked(&index, "weather").is_empty());
    }

    #[test]
    fn repeated_words_saturate_and_long_documents_are_discounted() {
        let index = index(&[
            "refund refund refund refund refund refund",
            "refund order",
            "refund order payment invoice shipping",
            "other",
        ]);
        let scores: Vec<f64> = index
            .rank(&words("refund"))
            .iter()
            .map(|hit| hit.1)
            .collect();
        // Six times the word is worth less than twice once (k1 saturates it)...
        assert!(scores[0] < 2.0 * scores[1], "{scores:?}");
        // ...and the same word in a longer document counts for less.
        assert_eq!(ranked(&index, "refund"), [0, 1, 2]);
        assert!(scores[1] > scores[2]);
    }

    #[test]
    fn ties_keep_catalog_order_and_scores_are_finite() {
        let index = index(&["read file", "read file", "read file"]);
        let ranked = index.rank(&words("read"));
        assert_eq!(
            ranked.iter().map(|(at, _)| *at).collect::<Vec<_>>(),
            [0, 1, 2]
        );
        assert!(
            ranked
                .iter()
                .all(|(_, score)| score.is_finite() && *score > 0.0)
        );
    }

    #[test]
    fn an_empty_index_or_query_ranks_nothing() {
        assert!(
            Index::new(Vec::<Vec<String>>::new())
                .rank(&words("x"))
                .is_empty()
        );
        assert!(index(&["read file"]).rank(&[]).is_empty());
        let empty_doc = index(&["", "read"]);
        assert_eq!(ranked(&empty_doc, "read"), [1]);
    }
}
