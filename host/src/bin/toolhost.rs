//! The `toolhost` command.

fn main() {
    println!("toolhost {}", env!("CARGO_PKG_VERSION"));
}
