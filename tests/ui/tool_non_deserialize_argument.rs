/// Not `Deserialize` nor `JsonSchema`: it cannot be decoded from the model's JSON arguments.
pub struct Point {
    pub x: i32,
    pub y: i32,
}

/// Moves to a point.
#[prompty::tool]
fn move_to(point: Point) -> i32 {
    point.x + point.y
}

fn main() {}
