//! The guides ship as the crate's docs: every page of `docs/guides/` is a
//! module of `src/guides.rs` (so docs.rs shows it and `cargo test --doc`
//! compiles its Rust blocks), the crate's front page links each one, and the
//! package includes the pages (`include` in Cargo.toml), without which the
//! published crate would not build its docs.

use std::collections::BTreeSet;

/// The guides' file names without `.md`, from the folder.
fn guides() -> BTreeSet<String> {
    std::fs::read_dir("docs/guides")
        .expect("the guides' folder")
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            Some(name.strip_suffix(".md")?.to_string())
        })
        .collect()
}

#[test]
fn every_guide_is_a_module_of_the_crate_docs_and_linked_from_its_front_page() {
    let modules = std::fs::read_to_string("src/guides.rs").expect("src/guides.rs");
    let front = std::fs::read_to_string("src/lib.rs").expect("src/lib.rs");
    let guides = guides();
    assert!(guides.len() >= 10, "guides found: {guides:?}");
    for guide in &guides {
        let module = guide.replace('-', "_");
        assert!(
            modules.contains(&format!("\"/guides/{guide}.md\"))]\npub mod {module} {{}}")),
            "src/guides.rs lacks the module of docs/guides/{guide}.md: \
             #[doc = include_str!(concat!(env!(\"OUT_DIR\"), \"/guides/{guide}.md\"))] pub mod {module} {{}}"
        );
        assert!(
            front.contains(&format!("](guides::{module})")),
            "src/lib.rs (Guides) does not link docs/guides/{guide}.md as [Title](guides::{module})"
        );
    }
    let included = modules.matches("include_str!").count();
    assert_eq!(
        included,
        guides.len(),
        "src/guides.rs includes a page that is not a guide"
    );
}

#[test]
fn the_package_ships_the_guides() {
    let manifest = std::fs::read_to_string("Cargo.toml").expect("Cargo.toml");
    let include = manifest
        .split("\ninclude = [")
        .nth(1)
        .and_then(|rest| rest.split(']').next())
        .expect("an include list in Cargo.toml");
    assert!(
        include.contains("\"/docs/guides/*.md\""),
        "Cargo.toml's include lacks \"/docs/guides/*.md\": {include}"
    );
}
