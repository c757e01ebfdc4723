//! Plain aligned tables for the human output: no colours and no box drawing, so the text
//! reads the same in a terminal, a pipe and a CI log.

/// How a column's cells line up.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Align {
    /// Text, padded on the right.
    Left,
    /// Numbers, padded on the left so their digits line up.
    Right,
}

/// A table: a header row, then rows of cells, one per column.
pub(crate) struct Table {
    headers: Vec<(&'static str, Align)>,
    rows: Vec<Vec<String>>,
}

/// The space between two columns.
const GAP: &str = "  ";

impl Table {
    /// A table with these column headers.
    pub(crate) fn new(headers: Vec<(&'static str, Align)>) -> Self {
        Self {
            headers,
            rows: Vec::new(),
        }
    }

    /// Adds a row; missing cells are blank.
    pub(crate) fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// The table as lines of text, the last column unpadded (no trailing spaces).
    pub(crate) fn render(&self) -> String {
        let mut widths: Vec<usize> = self
            .headers
            .iter()
            .map(|(header, _)| header.chars().count())
            .collect();
        for row in &self.rows {
            for (width, cell) in widths.iter_mut().zip(row) {
                *width = (*width).max(cell.chars().count());
            }
        }
        let header: Vec<String> = self
            .headers
            .iter()
            .map(|(header, _)| (*header).to_owned())
            .collect();
        let mut text = String::new();
        for row in std::iter::once(&header).chain(&self.rows) {
            let mut line = String::new();
            for (column, ((_, align), width)) in self.headers.iter().zip(&widths).enumerate() {
                let cell = row.get(column).map_or("", String::as_str);
                if column > 0 {
                    line.push_str(GAP);
                }
                let padding = width.saturating_sub(cell.chars().count());
                match align {
                    Align::Left => {
                        line.push_str(cell);
                        line.push_str(&" ".repeat(padding));
                    }
                    Align::Right => {
                        line.push_str(&" ".repeat(padding));
                        line.push_str(cell);
                    }
                }
            }
            text.push_str(line.trim_end());
            text.push('\n');
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_line_up_and_numbers_align_right() {
        let mut table = Table::new(vec![("TOOL", Align::Left), ("TOKENS", Align::Right)]);
        table.row(vec!["db_user".to_owned(), "478".to_owned()]);
        table.row(vec!["system".to_owned(), "91".to_owned()]);
        assert_eq!(
            table.render(),
            "TOOL     TOKENS\ndb_user     478\nsystem       91\n"
        );
    }
}
