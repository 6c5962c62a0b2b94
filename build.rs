//! Embeds the demo chat page into the worker: the bundled React page from
//! `demo/dist/index.html` when it has been built (scripts/build.sh does),
//! otherwise the dependency-free `demo/basic.html`. Stamps the crate version
//! into the page so a user can see which build answered.

use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=demo/dist/index.html");
    println!("cargo:rerun-if-changed=demo/basic.html");
    let bundled = Path::new("demo/dist/index.html");
    let source = if bundled.exists() {
        bundled
    } else {
        Path::new("demo/basic.html")
    };
    let page = std::fs::read_to_string(source)
        .unwrap_or_else(|e| panic!("cannot read the demo page {}: {e}", source.display()));
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    let page = page.replace("{{VERSION}}", &version);
    let out_dir = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    std::fs::write(Path::new(&out_dir).join("demo_page.html"), page).expect("write demo page");
}
