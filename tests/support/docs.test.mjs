// The documentation's code and links stay true to the repository.
//
// Every fenced ```rust block in README.md and docs/**/*.md is either
//   - in a guide (docs/guides/*.md), a block rustdoc compiles and runs (```rust or ```rust,no_run,
//     without `ignore`): the guides are the crate's `guides` module (src/guides.rs), so
//     `cargo test --doc` checks it; or
//   - an excerpt of a file under examples/, announced by the line right before the block:
//       <!-- excerpt: examples/support-agent/src/lib.rs from "impl AgentDefinition for" to "^}" -->
//     The excerpt is the lines of that file from the first line containing the `from` text to the
//     next line (after it) containing the `to` text, both included. An anchor text that starts
//     with `^` must begin the line (`"^}"`: a closing brace in the first column). Without
//     `from … to …` the excerpt is the whole file. The block must equal the excerpt line for line,
//     after removing the indentation common to all its lines (and trailing spaces); or
//   - marked as an illustrative fragment that nothing checks:
//       <!-- not-checked: why -->
// A block of another language (toml, sh, …) is checked the same way when an excerpt comment
// announces it. And every relative link in README.md, docs/**/*.md and bench/README.md must name
// a file or directory that exists, and a `#fragment` must name a heading of the target page.
//
// Run: node --test tests/support/docs.test.mjs

import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

function markdownUnder(dir) {
  const out = [];
  const abs = path.join(ROOT, dir);
  if (!fs.existsSync(abs)) return out;
  for (const entry of fs.readdirSync(abs, { withFileTypes: true })) {
    const rel = path.posix.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...markdownUnder(rel));
    else if (entry.name.endsWith(".md")) out.push(rel);
  }
  return out.sort();
}

// The pages whose code blocks are checked, and those whose links are.
const CODE_DOCS = ["README.md", ...markdownUnder("docs")];
const LINK_DOCS = [...CODE_DOCS, "bench/README.md"];

// ---- fenced blocks -------------------------------------------------------------------------

/** The fenced blocks of a Markdown text: `{lang, start (1-based line of the fence), lines, marker}`. */
export function fencedBlocks(text) {
  const lines = text.split("\n");
  const blocks = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^ {0,3}(`{3,}|~{3,})\s*([^\s`]*)/.exec(lines[i]);
    if (!open) continue;
    const fence = open[1];
    const body = [];
    let j = i + 1;
    while (j < lines.length && !new RegExp(`^ {0,3}${fence[0]}{${fence.length},}\\s*$`).test(lines[j])) {
      body.push(lines[j]);
      j++;
    }
    let k = i - 1;
    while (k >= 0 && lines[k].trim() === "") k--;
    const before = k >= 0 ? lines[k].trim() : "";
    const [lang, ...attrs] = open[2].toLowerCase().split(",");
    blocks.push({ lang, attrs, start: i + 1, lines: body, marker: parseMarker(before) });
    i = j;
  }
  return blocks;
}

const QUOTED = String.raw`"((?:[^"\\]|\\.)*)"`;

/** `<!-- excerpt: path from "a" to "b" -->`, `<!-- excerpt: path -->` or `<!-- not-checked: why -->`. */
export function parseMarker(line) {
  const notChecked = /^<!--\s*not-checked:\s*(.*?)\s*-->$/.exec(line);
  if (notChecked) return { kind: "not-checked", reason: notChecked[1] };
  const excerpt = /^<!--\s*excerpt:\s*(.*?)\s*-->$/.exec(line);
  if (!excerpt) return null;
  const spec = excerpt[1];
  const ranged = new RegExp(`^(\\S+)\\s+from\\s+${QUOTED}\\s+to\\s+${QUOTED}$`).exec(spec);
  if (ranged) {
    return {
      kind: "excerpt",
      file: ranged[1],
      from: JSON.parse(`"${ranged[2]}"`),
      to: JSON.parse(`"${ranged[3]}"`),
    };
  }
  if (/^\S+$/.test(spec)) return { kind: "excerpt", file: spec };
  return { kind: "malformed", text: line };
}

function matches(line, anchor) {
  return anchor.startsWith("^") ? line.startsWith(anchor.slice(1)) : line.includes(anchor);
}

/** The lines an excerpt names, or an error text. */
export function excerptLines(fileText, from, to) {
  const lines = fileText.replace(/\n$/, "").split("\n");
  if (from === undefined) return { lines, first: 1 };
  const start = lines.findIndex((l) => matches(l, from));
  if (start < 0) return { error: `no line contains the "from" anchor ${JSON.stringify(from)}` };
  const end = lines.findIndex((l, i) => i > start && matches(l, to));
  if (end < 0) {
    return {
      error: `no line after line ${start + 1} (${JSON.stringify(lines[start].trim())}) contains the "to" anchor ${JSON.stringify(to)}`,
    };
  }
  return { lines: lines.slice(start, end + 1), first: start + 1 };
}

/** Lines without trailing spaces, leading/trailing blank lines, or the indentation they share. */
export function normalise(lines) {
  let out = lines.map((l) => l.replace(/\s+$/, ""));
  while (out.length && out[0] === "") out.shift();
  while (out.length && out[out.length - 1] === "") out.pop();
  const indents = out.filter((l) => l !== "").map((l) => /^[ \t]*/.exec(l)[0].length);
  const common = indents.length ? Math.min(...indents) : 0;
  return out.map((l) => l.slice(common));
}

/** Whether `cargo test --doc` compiles the block: a Rust block of a guide without `ignore`. */
export function isDoctest(doc, block) {
  return doc.startsWith("docs/guides/") && block.lang === "rust" && !block.attrs.includes("ignore");
}

function checkBlock(doc, index, block) {
  const fence = [block.lang || "(no language)", ...(block.attrs ?? [])].join(",");
  const where = `${doc}: block ${index + 1} (\`\`\`${fence} at line ${block.start})`;
  const marker = block.marker;
  if (marker?.kind === "malformed") {
    return `${where}: the comment before it is not understood: ${marker.text}\n  expected <!-- excerpt: examples/<file> from "<text>" to "<text>" --> or <!-- not-checked: <reason> -->`;
  }
  if (marker?.kind === "not-checked") {
    return marker.reason ? null : `${where}: <!-- not-checked: … --> needs a reason`;
  }
  if (!marker && isDoctest(doc, block)) return null;
  if (!marker) {
    return block.lang === "rust"
      ? `${where}: a Rust block must be an excerpt of a file under examples/ (<!-- excerpt: examples/<file> from "<text>" to "<text>" --> on the line before it)${doc.startsWith("docs/guides/") ? ", compiled by rustdoc (no `ignore`)" : ""} or be marked <!-- not-checked: <reason> -->`
      : null;
  }
  if (!marker.file.startsWith("examples/")) {
    return `${where}: excerpts are taken from files under examples/, not ${marker.file}`;
  }
  const abs = path.join(ROOT, marker.file);
  if (!fs.existsSync(abs)) return `${where}: the excerpt's file ${marker.file} does not exist`;
  const found = excerptLines(fs.readFileSync(abs, "utf8"), marker.from, marker.to);
  const range = marker.from === undefined ? marker.file : `${marker.file} from ${JSON.stringify(marker.from)} to ${JSON.stringify(marker.to)}`;
  if (found.error) return `${where}: excerpt of ${range}: ${found.error} — re-sync the anchors with the file`;
  const want = normalise(found.lines);
  const have = normalise(block.lines);
  for (let i = 0; i < Math.max(want.length, have.length); i++) {
    if (want[i] !== have[i]) {
      const show = (l) => (l === undefined ? "(no line: the other side ends here)" : JSON.stringify(l));
      return [
        `${where}: differs from ${range} (file lines ${found.first}–${found.first + found.lines.length - 1})`,
        `  first difference at line ${i + 1} of the block (${marker.file}:${found.first + i}):`,
        `    doc:     ${show(have[i])}`,
        `    example: ${show(want[i])}`,
        `  re-sync the block with the file (or its anchors)`,
      ].join("\n");
    }
  }
  return null;
}

for (const doc of CODE_DOCS) {
  test(`code blocks of ${doc} match examples/`, () => {
    const blocks = fencedBlocks(fs.readFileSync(path.join(ROOT, doc), "utf8"));
    const problems = blocks.map((b, i) => checkBlock(doc, i, b)).filter(Boolean);
    assert.equal(problems.length, 0, `\n${problems.join("\n\n")}\n`);
  });
}

// ---- relative links ------------------------------------------------------------------------

/** The text with fenced blocks and inline code blanked (so their brackets are not links). */
function proseOnly(text) {
  const lines = text.split("\n");
  let fence = null;
  return lines
    .map((line) => {
      const m = /^ {0,3}(`{3,}|~{3,})/.exec(line);
      if (fence) {
        if (m && m[1][0] === fence[0] && m[1].length >= fence.length) fence = null;
        return "";
      }
      if (m) {
        fence = m[1];
        return "";
      }
      return line.replace(/`+[^`]*`+/g, (s) => " ".repeat(s.length));
    })
    .join("\n");
}

/** Link targets: `[text](target)`, `![alt](target)` and `[ref]: target`, with their line. */
export function linkTargets(text) {
  const out = [];
  proseOnly(text)
    .split("\n")
    .forEach((line, i) => {
      for (const m of line.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
        out.push({ target: m[1], line: i + 1 });
      }
      const ref = /^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(\s|$)/.exec(line);
      if (ref) out.push({ target: ref[1], line: i + 1 });
      for (const m of line.matchAll(/<(?:img|a)\s[^>]*(?:src|href)="([^"]+)"/g)) {
        out.push({ target: m[1], line: i + 1 });
      }
    });
  return out;
}

/** GitHub's anchor of each heading of a Markdown text. */
export function headingAnchors(text) {
  const seen = new Map();
  const anchors = new Set();
  for (const line of proseOnly(text.replace(/`/g, "")).split("\n")) {
    const m = /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const base = m[1]
      .replace(/<[^>]+>/g, "")
      .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, "")
      .replace(/\s/g, "-");
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

for (const doc of LINK_DOCS) {
  test(`relative links of ${doc} resolve`, () => {
    const abs = path.join(ROOT, doc);
    if (!fs.existsSync(abs)) return;
    const text = fs.readFileSync(abs, "utf8");
    const problems = [];
    for (const { target, line } of linkTargets(text)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:, …
      const [pathPart, fragment] = target.split("#");
      const resolved = pathPart === "" ? abs : path.resolve(path.dirname(abs), decodeURIComponent(pathPart.split("?")[0]));
      const shown = path.relative(ROOT, resolved) || ".";
      if (!resolved.startsWith(ROOT)) {
        problems.push(`${doc}:${line}: link ${target} leaves the repository`);
        continue;
      }
      if (!fs.existsSync(resolved)) {
        problems.push(`${doc}:${line}: link ${target} names ${shown}, which does not exist`);
        continue;
      }
      if (fragment && resolved.endsWith(".md") && !headingAnchors(fs.readFileSync(resolved, "utf8")).has(fragment)) {
        problems.push(`${doc}:${line}: link ${target}: ${shown} has no heading with the anchor #${fragment}`);
      }
    }
    assert.equal(problems.length, 0, `\n${problems.join("\n")}\n`);
  });
}
