//! `cargo xtask`: repository tasks.

fn main() {
    eprintln!("usage: cargo xtask <bench-render|bench-verify>");
    std::process::exit(2);
}
