use kelson_macros::tool;

struct Point {
    x: f64,
    y: f64,
}

/// The point's distance from the origin.
#[tool]
async fn norm(point: Point) -> String {
    (point.x * point.x + point.y * point.y).sqrt().to_string()
}

fn main() {}
