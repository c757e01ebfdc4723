//! Arrays: `minItems`, `maxItems`, `uniqueItems`, and each item against `items`.

use serde_json::Value;

use crate::failure::{issue::IssueCode, wording::args as words};

use super::{super::node::NodeId, Segment, Walk};

impl<'a> Walk<'a> {
    pub(super) fn check_array(&mut self, id: NodeId, items: &'a [Value], value: &Value) {
        let node = &self.nodes[id];
        let (min, max, unique, item_schema) = (
            node.min_items,
            node.max_items,
            node.unique_items,
            node.items,
        );
        let len = items.len() as u64;
        if let Some(min) = min
            && len < min
        {
            self.report(
                IssueCode::MinLength,
                words::too_few_items(min, len),
                Some(value),
            );
        }
        if let Some(max) = max
            && len > max
        {
            self.report(
                IssueCode::MaxLength,
                words::too_many_items(max, len),
                Some(value),
            );
        }
        if unique {
            for (index, item) in items.iter().enumerate() {
                if let Some(first) = items[..index].iter().position(|earlier| earlier == item) {
                    self.path.push(Segment::Index(index));
                    self.report(IssueCode::Unique, words::repeated_item(first), Some(item));
                    self.path.pop();
                }
            }
        }
        if let Some(item_schema) = item_schema {
            for (index, item) in items.iter().enumerate() {
                self.path.push(Segment::Index(index));
                self.check(item_schema, item);
                self.path.pop();
            }
        }
    }
}
