//! The state of tool search on a built server: its settings, the two listed tools, the
//! checks of their arguments, and the indexes of what callers are shown (one for a server
//! whose callers all see everything, else one per set of shown tools, kept and bounded
//! as `setup/visibility/` keeps lists).

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, OnceLock},
};

use rmcp::model::Tool;
use serde_json::Value;

use crate::{
    failure::issue::ArgIssue,
    search::{
        MAX_QUERY_CHARS, MAX_QUERY_WORDS, ToolSearch,
        bm25::{Index, is_stop_word, words},
        listed,
    },
    setup::visibility::Shown,
    validate::Validator,
};

/// At most this many indexes for distinct sets of shown tools; past it the cache starts
/// over (an index is rebuilt in well under a millisecond for a hundred tools).
const MAX_CACHED_INDEXES: usize = 64;

/// How much each field of a tool counts in its document: a word of the name counts as
/// three words of the description.
const NAME_WEIGHT: usize = 3;
/// The title, group and action names, and tags.
const LABEL_WEIGHT: usize = 2;

/// Tool search on a built server.
pub(crate) struct Searching {
    settings: ToolSearch,
    listed: Vec<Tool>,
    search_args: Validator,
    call_args: Validator,
    everyone: OnceLock<Arc<Indexed>>,
    by_shown: Mutex<HashMap<Shown, Arc<Indexed>>>,
    /// With tools a mounted upstream added since start: the indexes of what callers see,
    /// built for the table's generation they hold (`AddedTools::generation`), and made
    /// anew after the next change.
    with_added: Mutex<(u64, HashMap<IndexKey, Arc<Indexed>>)>,
}

/// What one index holds, when upstreams added tools: the registry's handlers the caller
/// is shown (`None`: all), and the names of the added tools it is shown.
#[derive(Clone, PartialEq, Eq, Hash)]
pub(crate) struct IndexKey {
    pub(crate) shown: Option<Shown>,
    pub(crate) added: Vec<&'static str>,
}

impl Searching {
    pub(crate) fn new(settings: ToolSearch) -> Self {
        Self {
            settings,
            listed: listed::listed(settings.limit()),
            search_args: Validator::compile(&listed::search_schema(settings.limit())),
            call_args: Validator::compile(&listed::call_schema()),
            everyone: OnceLock::new(),
            by_shown: Mutex::default(),
            with_added: Mutex::default(),
        }
    }

    /// The settings the server was built with.
    pub(crate) fn settings(&self) -> ToolSearch {
        self.settings
    }

    /// `search_tools` and `call_tool`, as `tools/list` lists them.
    pub(crate) fn listed(&self) -> &[Tool] {
        &self.listed
    }

    /// What is wrong with the arguments of a `search_tools` call.
    pub(crate) fn check_search(&self, args: &Value) -> Vec<ArgIssue> {
        self.search_args.validate(args)
    }

    /// What is wrong with the arguments of a `call_tool` call.
    pub(crate) fn check_call(&self, args: &Value) -> Vec<ArgIssue> {
        self.call_args.validate(args)
    }

    /// The index of what a caller shown `shown` sees (`None`: everything), built by
    /// `build` the first time.
    pub(crate) fn indexed(
        &self,
        shown: Option<&Shown>,
        build: impl FnOnce() -> Indexed,
    ) -> Arc<Indexed> {
        let Some(shown) = shown else {
            return Arc::clone(self.everyone.get_or_init(|| Arc::new(build())));
        };
        if let Some(found) = self
            .by_shown
            .lock()
            .ok()
            .and_then(|indexes| indexes.get(shown).cloned())
        {
            return found;
        }
        let built = Arc::new(build());
        if let Ok(mut indexes) = self.by_shown.lock() {
            if indexes.len() >= MAX_CACHED_INDEXES {
                indexes.clear();
            }
            indexes.insert(shown.clone(), Arc::clone(&built));
        }
        built
    }
}

impl Searching {
    /// The index of what a caller sees when upstreams added tools (`key`), as of the added
    /// tools' `generation`, built by `build` when there is none for both.
    pub(crate) fn indexed_with_added(
        &self,
        key: IndexKey,
        generation: u64,
        build: impl FnOnce() -> Indexed,
    ) -> Arc<Indexed> {
        if let Ok(mut cached) = self.with_added.lock() {
            let (built_for, indexes) = &mut *cached;
            if *built_for != generation {
                *built_for = generation;
                indexes.clear();
            }
            if let Some(found) = indexes.get(&key) {
                return Arc::clone(found);
            }
        }
        let built = Arc::new(build());
        if let Ok(mut cached) = self.with_added.lock() {
            let (built_for, indexes) = &mut *cached;
            if *built_for == generation {
                if indexes.len() >= MAX_CACHED_INDEXES {
                    indexes.clear();
                }
                indexes.insert(key, Arc::clone(&built));
            }
        }
        built
    }
}

/// The tools one caller is shown, as `tools/list` would describe them, and their index.
pub(crate) struct Indexed {
    tools: Vec<Tool>,
    index: Index,
}

impl Indexed {
    /// Indexes `tools`; `labels(tool)` gives the words the listing does not show (its
    /// group and action names, its tags).
    pub(crate) fn new(tools: Vec<Tool>, labels: impl Fn(&Tool) -> Vec<String>) -> Self {
        let index = Index::new(tools.iter().map(|tool| document(tool, &labels(tool))));
        Self { tools, index }
    }

    /// The tools that match `query`'s words, best first, at most `limit` of them, and
    /// how many matched in all.
    /// The best `limit` of the tools that match `query` and are `listed` now (a mounted
    /// upstream that is down lists none), and how many matched in all.
    pub(crate) fn search(
        &self,
        query: &[String],
        limit: usize,
        listed: impl Fn(&Tool) -> bool,
    ) -> (Vec<&Tool>, usize) {
        let matching: Vec<&Tool> = self
            .index
            .rank(query)
            .into_iter()
            .filter_map(|(at, _)| self.tools.get(at))
            .filter(|tool| listed(tool))
            .collect();
        let matched = matching.len();
        (matching.into_iter().take(limit).collect(), matched)
    }

    /// How many tools the caller is shown.
    pub(crate) fn len(&self) -> usize {
        self.index.len()
    }
}

/// The words of one tool's document, each field repeated by its weight.
fn document(tool: &Tool, labels: &[String]) -> Vec<String> {
    let mut document = Vec::new();
    let mut add = |text: &str, weight: usize| {
        let mut found = words(text);
        found.retain(|word| !is_stop_word(word));
        for _ in 0..weight {
            document.extend(found.iter().cloned());
        }
    };
    add(&tool.name, NAME_WEIGHT);
    if let Some(title) = &tool.title {
        add(title, LABEL_WEIGHT);
    }
    if let Some(description) = &tool.description {
        add(description, 1);
    }
    for label in labels {
        add(label, LABEL_WEIGHT);
    }
    if let Some(Value::Object(properties)) = tool.input_schema.get("properties") {
        for (name, property) in properties {
            add(name, 1);
            if let Some(description) = property.get("description").and_then(Value::as_str) {
                add(description, 1);
            }
        }
    }
    document
}

/// Why a query is not searched.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum QueryRefused {
    /// Over [`MAX_QUERY_CHARS`].
    #[error(
        "the query is longer than {MAX_QUERY_CHARS} characters ({size} bytes); search with a few words that say what the tool should do"
    )]
    TooLong {
        /// The query's size in bytes.
        size: usize,
    },
    /// Over [`MAX_QUERY_WORDS`].
    #[error(
        "the query has {count} words; at most {MAX_QUERY_WORDS} are searched: keep the few that say what the tool should do"
    )]
    TooManyWords {
        /// How many it has.
        count: usize,
    },
    /// Only punctuation or spaces.
    #[error(
        "the query has no words to search for (only punctuation, or words as common as \"the\"); say what the tool should do, e.g. \"create invoice\""
    )]
    NoWords,
}

/// The words a query is searched for, within the bounds: its length is checked before it
/// is read, and the words are counted as they are found.
pub(crate) fn query_words(query: &str) -> Result<Vec<String>, QueryRefused> {
    // Stops counting at the first character past the limit, however long the query.
    if query.len() > MAX_QUERY_CHARS && query.chars().nth(MAX_QUERY_CHARS).is_some() {
        return Err(QueryRefused::TooLong { size: query.len() });
    }
    // Every word counts towards the bound, common ones too: they are read all the same.
    let mut found = words(query);
    if found.len() > MAX_QUERY_WORDS {
        return Err(QueryRefused::TooManyWords { count: found.len() });
    }
    found.retain(|word| !is_stop_word(word));
    if found.is_empty() {
        return Err(QueryRefused::NoWords);
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::{DEFAULT_LIMIT, MAX_LIMIT};

    fn tool(name: &str, description: &str) -> Tool {
        let schema = serde_json::json!({
            "type": "object",
            "properties": { "invoice_id": { "type": "string", "description": "The customer's invoice" } },
        });
        let Value::Object(schema) = schema else {
            unreachable!()
        };
        Tool::new(name.to_owned(), description.to_owned(), Arc::new(schema))
    }

    #[test]
    fn bounds_of_the_query() {
        assert_eq!(
            query_words("find notes"),
            Ok(vec!["find".into(), "note".into()])
        );
        let long = "a".repeat(MAX_QUERY_CHARS + 1);
        assert_eq!(
            query_words(&long),
            Err(QueryRefused::TooLong {
                size: MAX_QUERY_CHARS + 1
            })
        );
        // Exactly at the limit, in characters (not bytes): searched.
        assert!(query_words(&"é".repeat(MAX_QUERY_CHARS)).is_ok());
        let regex_bomb = "(a+)+$".repeat(100);
        assert_eq!(
            query_words(&regex_bomb),
            Err(QueryRefused::TooManyWords { count: 100 })
        );
        assert_eq!(query_words("(+)*$ ... ?"), Err(QueryRefused::NoWords));
        let message = QueryRefused::TooLong { size: 1 << 20 }.to_string();
        assert!(message.contains("1024 characters"), "{message}");
    }

    #[test]
    fn labels_and_parameters_are_searched() {
        let indexed = Indexed::new(
            vec![tool("pay", "Pay an order."), tool("ship", "Ship an order.")],
            |tool| {
                if tool.name == "ship" {
                    vec!["logistics".to_owned()]
                } else {
                    Vec::new()
                }
            },
        );
        let (hits, matched) = indexed.search(&words("logistics"), 5, |_| true);
        assert_eq!((hits[0].name.as_ref(), matched), ("ship", 1));
        // Both have the parameter: both match, the name decides nothing here.
        let (hits, matched) = indexed.search(&words("invoice"), 1, |_| true);
        assert_eq!((hits.len(), matched), (1, 2));
        assert_eq!(indexed.len(), 2);
    }

    #[test]
    fn the_name_outweighs_the_description() {
        let indexed = Indexed::new(
            vec![
                tool("archive", "Move a report to the refund archive."),
                tool("refund", "Give the money back."),
            ],
            |_| Vec::new(),
        );
        let (hits, _) = indexed.search(&words("refund"), DEFAULT_LIMIT, |_| true);
        assert_eq!(hits[0].name, "refund");
    }

    #[test]
    fn the_listed_schemas_bound_the_arguments() {
        let searching = Searching::new(ToolSearch::always());
        assert!(
            searching
                .check_search(&serde_json::json!({ "query": "x" }))
                .is_empty()
        );
        for bad in [
            serde_json::json!({}),
            serde_json::json!({ "query": "x", "limit": 0 }),
            serde_json::json!({ "query": "x", "limit": MAX_LIMIT + 1 }),
            serde_json::json!({ "query": "x", "limit": 1e300 }),
            serde_json::json!({ "query": "x", "extra": true }),
            serde_json::json!({ "query": 5 }),
        ] {
            assert!(!searching.check_search(&bad).is_empty(), "{bad}");
        }
        assert!(
            searching
                .check_call(&serde_json::json!({ "name": "x" }))
                .is_empty()
        );
        assert!(
            !searching
                .check_call(&serde_json::json!({ "name": "x", "arguments": [] }))
                .is_empty()
        );
        let names: Vec<_> = searching
            .listed()
            .iter()
            .map(|tool| tool.name.to_string())
            .collect();
        assert_eq!(names, ["search_tools", "call_tool"]);
    }
}
