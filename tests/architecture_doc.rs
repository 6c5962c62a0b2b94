//! The architecture page's file list (docs/design/architecture.md, "File
//! list") names every source file under `src/`, and only files that exist.
//! The page gives a folder as a bold path (**`src/core/turn/`**) and its
//! files as bullets under it (- `phases.rs` — …); this test reads both, so a
//! file moved to another folder needs only its line moved on the page.

use std::collections::BTreeSet;
use std::path::Path;

const PAGE: &str = "docs/design/architecture.md";
const SECTION: &str = "\n## File list\n";

/// The paths the page's file list names, as `src/…/file.rs`.
fn listed() -> BTreeSet<String> {
    let page = std::fs::read_to_string(PAGE).expect("the architecture page");
    let section = page.split(SECTION).nth(1).expect("a File list section");
    let section = section.split("\n## ").next().unwrap_or_default();
    let mut folder: Option<&str> = None;
    let mut paths = BTreeSet::new();
    for line in section.lines() {
        if let Some(rest) = line.strip_prefix("**`") {
            let path = rest.split('`').next().unwrap_or_default();
            assert!(
                path.starts_with("src/") && path.ends_with('/'),
                "{PAGE}: a folder heading of the file list is a path under src/ ending in /: {line}"
            );
            folder = Some(path);
        } else if let Some(rest) = line.strip_prefix("- `") {
            let name = rest.split('`').next().unwrap_or_default();
            if !name.ends_with(".rs") {
                continue;
            }
            let folder = folder.unwrap_or_else(|| panic!("{PAGE}: `{name}` before any folder"));
            assert!(
                !name.contains('/'),
                "{PAGE}: `{name}` under {folder}: name a file by its name, under its folder's heading"
            );
            assert!(
                paths.insert(format!("{folder}{name}")),
                "{PAGE}: {folder}{name} is listed twice"
            );
        }
    }
    paths
}

/// Every `.rs` file under `dir`, as a path from the crate's root.
fn sources(dir: &Path, out: &mut BTreeSet<String>) {
    for entry in std::fs::read_dir(dir).expect("a source folder") {
        let path = entry.expect("a folder entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.insert(path.to_string_lossy().replace('\\', "/"));
        }
    }
}

#[test]
fn the_architecture_page_lists_every_source_file_and_no_other() {
    let listed = listed();
    let mut actual = BTreeSet::new();
    sources(Path::new("src"), &mut actual);
    let missing: Vec<_> = actual.difference(&listed).collect();
    let gone: Vec<_> = listed.difference(&actual).collect();
    assert!(
        missing.is_empty(),
        "{PAGE} (File list) lacks a line for: {missing:?} — add `- `name.rs` — what it holds` under its folder's heading"
    );
    assert!(
        gone.is_empty(),
        "{PAGE} (File list) names files that do not exist: {gone:?}"
    );
}

/// The stages of scripts/test.sh (its `stage_…` functions, the set-up aside),
/// each of which the testing page must show as `--only <stage>`.
#[test]
fn the_testing_page_names_every_stage_of_the_test_script() {
    let script = std::fs::read_to_string("scripts/test.sh").expect("the test script");
    let page = std::fs::read_to_string("docs/design/testing.md").expect("the testing page");
    let stages: Vec<&str> = script
        .lines()
        .filter_map(|l| l.strip_prefix("stage_")?.strip_suffix("() {"))
        .filter(|s| *s != "setup")
        .collect();
    assert!(
        stages.len() >= 5,
        "stages read from scripts/test.sh: {stages:?}"
    );
    for stage in stages {
        assert!(
            page.contains(&format!("`--only {stage}")),
            "docs/design/testing.md does not name the stage `--only {stage}` of scripts/test.sh"
        );
    }
}
