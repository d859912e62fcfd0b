//! The sample database: a small shop (categories, products, customers, orders, order items and an
//! `order_totals` view), generated deterministically without a network, so that a newcomer can list
//! tables and run queries at once.

#[cfg(feature = "sqlite")]
mod generate;

use std::path::Path;

use crate::error::SqlError;

/// The tables of the sample database and their row counts, in creation order. The data is the same
/// on every machine and every run.
pub const SAMPLE_TABLES: &[(&str, usize)] = &[
    ("categories", 8),
    ("products", 120),
    ("customers", 500),
    ("orders", 2000),
    ("order_items", ORDER_ITEMS),
];

/// The views of the sample database.
pub const SAMPLE_VIEWS: &[&str] = &["order_totals"];

/// Rows of `order_items`: one to five products per order, drawn from the seeded generator.
const ORDER_ITEMS: usize = 6008;

/// What [`create_sample_database`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SampleOutcome {
    /// The file was created and filled.
    Created,
    /// A file was already there and was left alone.
    AlreadyExists,
}

/// Creates the sample database at `path` on first run: a new file (and its parent folders) filled
/// with the sample data. An existing file is never touched, whatever it holds.
///
/// The file is built under a temporary name beside `path` and linked into place only if `path`
/// still does not exist, so a concurrent start or a crash never leaves a half-filled database
/// behind under the real name.
///
/// The file is an SQLite database: without the `sqlite` feature this is
/// [`SqlError::EngineNotCompiled`].
pub fn create_sample_database(path: impl AsRef<Path>) -> Result<SampleOutcome, SqlError> {
    #[cfg(feature = "sqlite")]
    {
        generate::create(path.as_ref())
    }
    #[cfg(not(feature = "sqlite"))]
    {
        let _ = path;
        Err(crate::engine::no_sqlite())
    }
}
