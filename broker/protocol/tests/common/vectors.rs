//! A reader for the golden-vector TSV files in `tests/vectors/`.
//!
//! The format is shared by every booblik client: `#` lines are comments, the **last** comment line
//! names the columns, fields are tab-separated, numbers are decimal and byte strings are hex. The
//! empty key is an empty *leading* field, so a row may start with a tab: a reader that trims
//! lines would silently lose that row, which is why the tests also pin the row counts.

/// A parsed vector file.
#[derive(Debug)]
pub struct VectorTable<'a> {
    columns: Vec<&'a str>,
    rows: Vec<VectorRow<'a>>,
}

/// One data row, with the column names it is read by.
#[derive(Debug, Clone)]
pub struct VectorRow<'a> {
    /// 1-based line number in the file, for failure messages.
    pub line_number: usize,
    columns: Vec<&'a str>,
    fields: Vec<&'a str>,
}

impl<'a> VectorTable<'a> {
    /// Parses a whole file. Panics (failing the test) on a row whose field count differs from
    /// the header's, or on a file without a header.
    pub fn parse(text: &'a str) -> Self {
        let mut header: Option<&'a str> = None;
        let mut raw_rows = Vec::new();
        for (index, line) in text.lines().enumerate() {
            if let Some(comment) = line.strip_prefix('#') {
                // Comments only precede the data; the last one is the header.
                assert!(
                    raw_rows.is_empty(),
                    "comment after data at line {}",
                    index + 1
                );
                header = Some(comment.trim_start());
            } else if !line.is_empty() {
                raw_rows.push((index + 1, line));
            }
        }
        let columns: Vec<&'a str> = header
            .expect("a vector file has a header")
            .split('\t')
            .collect();
        let rows = raw_rows
            .into_iter()
            .map(|(line_number, line)| {
                let fields: Vec<&'a str> = line.split('\t').collect();
                assert_eq!(
                    fields.len(),
                    columns.len(),
                    "line {line_number} has {} fields, the header has {}",
                    fields.len(),
                    columns.len()
                );
                VectorRow {
                    line_number,
                    columns: columns.clone(),
                    fields,
                }
            })
            .collect();
        Self { columns, rows }
    }

    /// The column names, from the header line.
    pub fn columns(&self) -> &[&'a str] {
        &self.columns
    }

    /// The data rows, in file order.
    pub fn rows(&self) -> &[VectorRow<'a>] {
        &self.rows
    }

    /// The row whose `name` column is `name`.
    pub fn row_named(&self, name: &str) -> &VectorRow<'a> {
        self.rows
            .iter()
            .find(|row| row.text("name") == name)
            .unwrap_or_else(|| panic!("no row named {name:?}"))
    }
}

impl<'a> VectorRow<'a> {
    /// The raw field of `column`.
    pub fn text(&self, column: &str) -> &'a str {
        let index = self
            .columns
            .iter()
            .position(|c| *c == column)
            .unwrap_or_else(|| panic!("no column {column:?} in {:?}", self.columns));
        self.fields[index]
    }

    /// A hex field as bytes (the empty field is the empty byte string).
    pub fn hex(&self, column: &str) -> Vec<u8> {
        hex::decode(self.text(column))
            .unwrap_or_else(|e| panic!("line {}: {column} is not hex: {e}", self.line_number))
    }

    /// A decimal field as `u32`.
    pub fn u32(&self, column: &str) -> u32 {
        self.text(column)
            .parse()
            .unwrap_or_else(|e| panic!("line {}: {column} is not a u32: {e}", self.line_number))
    }
}
