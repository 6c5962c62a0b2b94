//! Writes the guides as the crate's docs show them, and embeds the demo chat
//! page into the worker for the `demo` feature only.
//!
//! The guides (`docs/guides/*.md`, shipped in the package) link each other
//! and the repository by relative paths, which work on GitHub. `src/guides.rs`
//! includes the copies written here, whose links are rewritten for rustdoc
//! and docs.rs: a guide to the guide's module page, anything else in the
//! repository to its page under the package's `repository` URL.
//!
//! The demo page (a crate that defines its own agents builds none): the bundled
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
    write_guides();
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

/// Each `docs/guides/NAME.md` as `$OUT_DIR/guides/NAME.md`, links rewritten.
fn write_guides() {
    println!("cargo:rerun-if-changed=docs/guides");
    let out = Path::new(&std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("guides");
    std::fs::create_dir_all(&out).expect("make the guides' folder");
    let repository = std::env::var("CARGO_PKG_REPOSITORY").unwrap_or_default();
    let Ok(entries) = std::fs::read_dir("docs/guides") else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "md") {
            continue;
        }
        println!("cargo:rerun-if-changed={}", path.display());
        let text = std::fs::read_to_string(&path).expect("read a guide");
        let name = path.file_name().expect("a guide's name");
        std::fs::write(out.join(name), rewrite_links(&text, &repository)).expect("write a guide");
    }
}

/// The targets of inline links `](target)` outside code blocks, rewritten.
fn rewrite_links(text: &str, repository: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_code = false;
    for line in text.split_inclusive('\n') {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
        }
        if in_code {
            out.push_str(line);
            continue;
        }
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            let (before, after) = rest.split_at(at + 2);
            out.push_str(before);
            let end = after.find(')').unwrap_or(after.len());
            out.push_str(&rewrite_target(&after[..end], repository));
            rest = &after[end..];
        }
        out.push_str(rest);
    }
    out
}

/// `other-guide.md#part` → `../other_guide/index.html#part`; a path in the
/// repository (relative to `docs/guides/`) → its page under `repository`;
/// a URL or a `#part` of the same page as it is.
fn rewrite_target(target: &str, repository: &str) -> String {
    if target.contains("://") || target.starts_with('#') || target.starts_with("mailto:") {
        return target.to_string();
    }
    let (path, fragment) = match target.split_once('#') {
        Some((path, fragment)) => (path, format!("#{fragment}")),
        None => (target, String::new()),
    };
    if !path.contains('/') {
        if let Some(stem) = path.strip_suffix(".md") {
            return format!("../{}/index.html{fragment}", stem.replace('-', "_"));
        }
    }
    let mut parts = vec!["docs", "guides"];
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            part => parts.push(part),
        }
    }
    let kind = if path.ends_with('/') { "tree" } else { "blob" };
    format!(
        "{}/{kind}/main/{}{fragment}",
        repository.trim_end_matches('/'),
        parts.join("/")
    )
}
