//! How the sample database is made: its schema, the seeded generator of its rows, and the file
//! built under a temporary name and linked into place.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, params};

use super::SampleOutcome;
use crate::calendar::civil;
use crate::error::SqlError;

const CUSTOMERS: usize = 500;
const ORDERS: usize = 2000;

const SCHEMA: &str = "
PRAGMA foreign_keys = ON;
CREATE TABLE categories (
    id          INTEGER PRIMARY KEY,
    name        TEXT NOT NULL UNIQUE,
    description TEXT NOT NULL
);
CREATE TABLE products (
    id          INTEGER PRIMARY KEY,
    name        TEXT NOT NULL,
    category_id INTEGER NOT NULL REFERENCES categories(id),
    price       REAL NOT NULL CHECK (price > 0),
    stock       INTEGER NOT NULL CHECK (stock >= 0)
);
CREATE INDEX products_category ON products(category_id);
CREATE TABLE customers (
    id           INTEGER PRIMARY KEY,
    name         TEXT NOT NULL,
    email        TEXT NOT NULL UNIQUE,
    city         TEXT NOT NULL,
    country      TEXT NOT NULL,
    signed_up_on TEXT NOT NULL
);
CREATE TABLE orders (
    id          INTEGER PRIMARY KEY,
    customer_id INTEGER NOT NULL REFERENCES customers(id),
    ordered_at  TEXT NOT NULL,
    status      TEXT NOT NULL CHECK (status IN ('pending', 'paid', 'shipped', 'delivered', 'cancelled'))
);
CREATE INDEX orders_customer ON orders(customer_id);
CREATE INDEX orders_ordered_at ON orders(ordered_at);
CREATE TABLE order_items (
    order_id   INTEGER NOT NULL REFERENCES orders(id),
    product_id INTEGER NOT NULL REFERENCES products(id),
    quantity   INTEGER NOT NULL CHECK (quantity > 0),
    unit_price REAL NOT NULL CHECK (unit_price > 0),
    PRIMARY KEY (order_id, product_id)
);
CREATE INDEX order_items_product ON order_items(product_id);
CREATE VIEW order_totals AS
    SELECT o.id AS order_id, o.customer_id, o.ordered_at, o.status,
           count(*) AS items, round(sum(i.quantity * i.unit_price), 2) AS total
    FROM orders o JOIN order_items i ON i.order_id = o.id
    GROUP BY o.id;
";

const CATEGORIES: &[(&str, &str, &[&str])] = &[
    (
        "Coffee",
        "Beans, ground coffee and capsules",
        &[
            "Espresso Beans",
            "Filter Roast",
            "Decaf Blend",
            "Cold Brew Pack",
            "Capsules",
        ],
    ),
    (
        "Tea",
        "Loose-leaf and bagged teas",
        &["Green Tea", "Earl Grey", "Chai", "Rooibos", "Mint Infusion"],
    ),
    (
        "Kitchen",
        "Tools for the kitchen",
        &[
            "Chef Knife",
            "Cutting Board",
            "Saucepan",
            "Grater",
            "Measuring Cups",
        ],
    ),
    (
        "Books",
        "Cookbooks and guides",
        &[
            "Baking Basics",
            "Coffee Atlas",
            "Weeknight Dinners",
            "Fermentation Guide",
            "Tea Handbook",
        ],
    ),
    (
        "Garden",
        "Seeds, pots and tools",
        &[
            "Herb Seeds",
            "Clay Pot",
            "Watering Can",
            "Pruning Shears",
            "Compost Bin",
        ],
    ),
    (
        "Outdoor",
        "Gear for trips and picnics",
        &[
            "Thermos",
            "Picnic Blanket",
            "Camp Mug",
            "Cooler Bag",
            "Folding Chair",
        ],
    ),
    (
        "Stationery",
        "Paper and pens",
        &[
            "Notebook",
            "Fountain Pen",
            "Sketchbook",
            "Planner",
            "Pencil Set",
        ],
    ),
    (
        "Gifts",
        "Boxes and cards",
        &[
            "Gift Box",
            "Greeting Card",
            "Tasting Set",
            "Gift Card",
            "Candle",
        ],
    ),
];

const EDITIONS: &[&str] = &["Classic", "Deluxe", "Travel"];

const FIRST_NAMES: &[&str] = &[
    "Ada", "Alan", "Amara", "Ana", "Arjun", "Ben", "Bruno", "Carla", "Chen", "Chloe", "Daniel",
    "Dara", "Elena", "Emil", "Fatima", "Felix", "Grace", "Hana", "Hugo", "Ines", "Ivan", "Jonas",
    "Julia", "Kai", "Lars", "Leila", "Liam", "Lucia", "Maya", "Mateo", "Nadia", "Noah", "Olga",
    "Omar", "Priya", "Quinn", "Rosa", "Sami", "Sofia", "Tomas",
];

const LAST_NAMES: &[&str] = &[
    "Almeida", "Berg", "Costa", "Dubois", "Eriksen", "Fischer", "Garcia", "Haddad", "Ivanova",
    "Jansen", "Kim", "Larsen", "Martin", "Nakamura", "Novak", "Okafor", "Petrov", "Quispe",
    "Rossi", "Silva", "Tanaka", "Urban", "Varga", "Weber", "Xu", "Yilmaz", "Zhang", "Moreau",
    "Kowalski", "Singh",
];

const CITIES: &[(&str, &str)] = &[
    ("Lisbon", "Portugal"),
    ("Porto", "Portugal"),
    ("Madrid", "Spain"),
    ("Barcelona", "Spain"),
    ("Paris", "France"),
    ("Lyon", "France"),
    ("Berlin", "Germany"),
    ("Hamburg", "Germany"),
    ("Amsterdam", "Netherlands"),
    ("Rotterdam", "Netherlands"),
    ("Copenhagen", "Denmark"),
    ("Stockholm", "Sweden"),
    ("Oslo", "Norway"),
    ("Warsaw", "Poland"),
    ("Prague", "Czechia"),
    ("Vienna", "Austria"),
    ("Milan", "Italy"),
    ("Rome", "Italy"),
    ("Dublin", "Ireland"),
    ("London", "United Kingdom"),
    ("Manchester", "United Kingdom"),
    ("Toronto", "Canada"),
    ("Montreal", "Canada"),
    ("Seoul", "South Korea"),
    ("Tokyo", "Japan"),
];

/// SplitMix64: a small, well-mixed generator, so the data is the same everywhere.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n`.
    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % n as u64).expect("below n")
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// Days since 1970-01-01 of a date.
const fn days(year: i64, month: i64, day: i64) -> i64 {
    // H. Hinnant's days_from_civil.
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn date(days: i64) -> String {
    let (y, m, d) = civil(days);
    format!("{y:04}-{m:02}-{d:02}")
}

fn fill(conn: &mut Connection) -> rusqlite::Result<()> {
    conn.execute_batch(SCHEMA)?;
    let tx = conn.transaction()?;
    let mut rng = Rng(0x5EED_2026_0728);
    {
        let mut category = tx.prepare("INSERT INTO categories VALUES (?1, ?2, ?3)")?;
        let mut product = tx.prepare("INSERT INTO products VALUES (?1, ?2, ?3, ?4, ?5)")?;
        let mut product_id = 0i64;
        for (c, (name, description, items)) in CATEGORIES.iter().enumerate() {
            let category_id = i64::try_from(c).expect("few categories") + 1;
            category.execute(params![category_id, name, description])?;
            for item in *items {
                for edition in EDITIONS {
                    product_id += 1;
                    let cents = 300 + rng.below(9_700);
                    let price = cents as f64 / 100.0;
                    let stock = rng.below(250);
                    product.execute(params![
                        product_id,
                        format!("{item} ({edition})"),
                        category_id,
                        price,
                        stock as i64
                    ])?;
                }
            }
        }

        let mut customer = tx.prepare("INSERT INTO customers VALUES (?1, ?2, ?3, ?4, ?5, ?6)")?;
        let signup_start = days(2022, 1, 1);
        for id in 1..=CUSTOMERS as i64 {
            let first = rng.pick(FIRST_NAMES);
            let last = rng.pick(LAST_NAMES);
            let (city, country) = rng.pick(CITIES);
            let email = format!(
                "{}.{}{id}@example.com",
                first.to_lowercase(),
                last.to_lowercase()
            );
            let signed_up = date(signup_start + rng.below(900) as i64);
            customer.execute(params![
                id,
                format!("{first} {last}"),
                email,
                city,
                country,
                signed_up
            ])?;
        }

        let mut order = tx.prepare("INSERT INTO orders VALUES (?1, ?2, ?3, ?4)")?;
        let mut line =
            tx.prepare("INSERT INTO order_items VALUES (?1, ?2, ?3, (SELECT price FROM products WHERE id = ?2))")?;
        let first_day = days(2024, 1, 1);
        let last_day = days(2025, 12, 31);
        let span = usize::try_from(last_day - first_day + 1).expect("a positive span");
        let products = i64::try_from(CATEGORIES.len() * 5 * EDITIONS.len()).expect("few products");
        for id in 1..=ORDERS as i64 {
            let customer_id = 1 + rng.below(CUSTOMERS) as i64;
            // Later orders are more frequent: the shop grows.
            let a = rng.below(span);
            let b = rng.below(span);
            let day = first_day + a.max(b) as i64;
            let (h, m, s) = (8 + rng.below(14), rng.below(60), rng.below(60));
            let ordered_at = format!("{} {h:02}:{m:02}:{s:02}", date(day));
            let age = last_day - day;
            let status = if rng.below(100) < 4 {
                "cancelled"
            } else if age > 30 {
                "delivered"
            } else if age > 10 {
                *rng.pick(&["shipped", "delivered"])
            } else {
                *rng.pick(&["pending", "paid", "shipped"])
            };
            order.execute(params![id, customer_id, ordered_at, status])?;
            let count = 1 + rng.below(5);
            let mut chosen: Vec<i64> = Vec::with_capacity(count);
            while chosen.len() < count {
                let p = 1 + rng.below(usize::try_from(products).expect("positive")) as i64;
                if !chosen.contains(&p) {
                    chosen.push(p);
                }
            }
            for p in chosen {
                let quantity = 1 + rng.below(4) as i64;
                line.execute(params![id, p, quantity])?;
            }
        }
    }
    tx.commit()?;
    conn.execute_batch("ANALYZE; PRAGMA optimize;")?;
    Ok(())
}

/// Creates the sample database at `path` unless a file is there (see
/// [`create_sample_database`](super::create_sample_database)).
pub(super) fn create(path: &Path) -> Result<SampleOutcome, SqlError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| SqlError::Io { path, source }
    };
    if path.exists() {
        return Ok(SampleOutcome::AlreadyExists);
    }
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(io(parent))?;
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".tmp-{}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    let _ = std::fs::remove_file(&tmp);
    let sqlite = |source| SqlError::Sqlite {
        path: tmp.clone(),
        source,
    };
    {
        let mut conn = Connection::open(&tmp).map_err(sqlite)?;
        if let Err(e) = fill(&mut conn) {
            drop(conn);
            let _ = std::fs::remove_file(&tmp);
            return Err(sqlite(e));
        }
    }
    // A hard link fails if the target exists, which a rename would overwrite.
    let outcome = match std::fs::hard_link(&tmp, path) {
        Ok(()) => Ok(SampleOutcome::Created),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(SampleOutcome::AlreadyExists),
        Err(e) => Err(io(path)(e)),
    };
    let _ = std::fs::remove_file(&tmp);
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn day_numbers_round_trip() {
        for d in [
            days(2024, 1, 1),
            days(2024, 2, 29),
            days(2025, 12, 31),
            days(1970, 1, 1),
        ] {
            let (y, m, dd) = civil(d);
            assert_eq!(days(y, i64::from(m), i64::from(dd)), d);
        }
        assert_eq!(date(days(2024, 2, 29)), "2024-02-29");
    }

    #[test]
    fn the_generator_is_fixed() {
        let mut a = Rng(1);
        let mut b = Rng(1);
        let xs: Vec<u64> = (0..4).map(|_| a.next()).collect();
        let ys: Vec<u64> = (0..4).map(|_| b.next()).collect();
        assert_eq!(xs, ys);
        assert!((0..1000).all(|_| a.below(7) < 7));
    }
}
