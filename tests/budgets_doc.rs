//! The docs' table of input budgets (docs/guides/configuration.md, "Input
//! budgets") states every budget of `protocol::gate::BUDGETS` as declared:
//! its bytes, JSON values, nesting and what it may cost in wasm memory.

use durable_chat::protocol::gate::{self, Budget, BUDGETS};

const PAGE: &str = "docs/guides/configuration.md";
const SECTION: &str = "### Input budgets";

/// Bytes as the docs write them: whole MiB or KiB, else the count.
fn bytes(n: usize) -> String {
    match n {
        n if n % (1024 * 1024) == 0 => format!("{} MiB", n / (1024 * 1024)),
        n if n % 1024 == 0 => format!("{} KiB", n / 1024),
        n => n.to_string(),
    }
}

/// The cells the table must give a budget (all but the free-text second).
fn expected(budget: &Budget) -> Vec<String> {
    let mib = gate::most_memory(budget) as f64 / (1024.0 * 1024.0);
    vec![
        format!("`{}`", budget.name),
        bytes(budget.max_bytes),
        budget.max_values.to_string(),
        budget.max_depth.to_string(),
        format!("{mib:.1} MiB"),
    ]
}

/// The table's rows (cells trimmed, the free-text second left out).
fn table_rows() -> Vec<Vec<String>> {
    let page = std::fs::read_to_string(PAGE).expect("the configuration page");
    let section = page
        .split(SECTION)
        .nth(1)
        .expect("an Input budgets section");
    section
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .map(|line| {
            let cells: Vec<String> = line
                .trim_matches('|')
                .split(" | ")
                .map(|c| c.trim().to_string())
                .collect();
            cells
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != 1)
                .map(|(_, c)| c.clone())
                .collect()
        })
        .collect()
}

#[test]
fn the_docs_table_states_every_budget_as_declared() {
    let rows = table_rows();
    let want: Vec<Vec<String>> = BUDGETS.iter().map(expected).collect();
    for (budget, row) in BUDGETS.iter().zip(&want) {
        assert!(
            rows.contains(row),
            "{PAGE} ({SECTION}) lacks the row of `{}`: | {} | … | {} |",
            budget.name,
            row[0],
            row[1..].join(" | ")
        );
    }
    assert_eq!(rows.len(), want.len(), "a row for no budget: {rows:?}");
}
