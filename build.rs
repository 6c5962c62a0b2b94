//! Embeds the demo chat page into the worker, for the `demo` feature only
//! (a crate that defines its own agents builds nothing here): the bundled
//! React page from `demo/dist/index.html` when it has been built
//! (scripts/build.sh does), otherwise the dependency-free `demo/basic.html`,
//! otherwise (a packaged crate without the demo's files) a one-line page.
//! Stamps the crate version into the page so a user can see which build
//! answered.

use std::path::Path;

const NO_PAGE: &str = "<!doctype html><title>durable-chat</title>\
<p>durable-chat {{VERSION}}: the demo page is not part of this build.</p>";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var_os("CARGO_FEATURE_DEMO").is_none() {
        return;
    }
    println!("cargo:rerun-if-changed=demo/dist/index.html");
    println!("cargo:rerun-if-changed=demo/basic.html");
    let page = ["demo/dist/index.html", "demo/basic.html"]
        .iter()
        .find_map(|source| std::fs::read_to_string(Path::new(source)).ok())
        .unwrap_or_else(|| NO_PAGE.to_string());
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    let page = page.replace("{{VERSION}}", &version);
    let out_dir = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    std::fs::write(Path::new(&out_dir).join("demo_page.html"), page).expect("write demo page");
}
