//! Objects: `required`, `properties` and `additionalProperties` (an unknown field named
//! with the closest declared one).

use serde_json::{Map, Value};

use crate::{
    failure::{issue::IssueCode, wording::args as words},
    suggest::closest,
};

use super::{
    super::node::{Additional, NodeId},
    Segment, Walk,
};

impl<'a> Walk<'a> {
    pub(super) fn check_object(&mut self, id: NodeId, object: &'a Map<String, Value>) {
        let nodes = self.nodes;
        let node = &nodes[id];
        if node.types.is_none() && node.properties.is_empty() && node.required.is_empty() {
            if let Additional::Schema(sub) = node.additional {
                for (key, item) in object {
                    self.path.push(Segment::Key(key));
                    self.check(sub, item);
                    self.path.pop();
                }
            }
            return;
        }
        for required in &node.required {
            if !object.contains_key(required) {
                let expected = node
                    .properties
                    .iter()
                    .find(|(name, _)| name == required)
                    .map(|(_, sub)| self.expectation(*sub))
                    .unwrap_or_else(words::any_value);
                self.path.push(Segment::Key(required));
                self.report(IssueCode::Missing, words::missing(expected), None);
                self.path.pop();
            }
        }
        for (key, item) in object {
            let known = node.properties.iter().find(|(name, _)| name == key);
            self.path.push(Segment::Key(key));
            match (known, &node.additional) {
                (Some((_, sub)), _) => {
                    let required = node.required.iter().any(|name| name == key);
                    if item.is_null() && required && !self.allows_null(*sub) {
                        let expected = self.expectation(*sub);
                        self.report(IssueCode::Null, words::required_null(expected), Some(item));
                    } else {
                        self.check(*sub, item);
                    }
                }
                (None, Additional::Denied) => {
                    let names = || node.properties.iter().map(|(name, _)| name.as_str());
                    let unknown = words::unknown_field(names(), closest(key, names()));
                    self.report(IssueCode::UnknownField, unknown, Some(item));
                }
                (None, Additional::Schema(sub)) => self.check(*sub, item),
                (None, Additional::Allowed) => {}
            }
            self.path.pop();
        }
    }
}
