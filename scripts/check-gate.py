#!/usr/bin/env python3
"""Fails when code under src/ reads input without the gate (src/protocol/gate.rs).

Every byte from outside the agent's own code goes through `protocol::gate` (a budget of bytes,
JSON values and nesting per input kind) before anything is built from it. This check finds the
ways around it outside gate.rs:
  serde_json::from_str / from_slice / from_value / from_reader (and `from_str::<…>` imported),
  `.json()` / `.text()` of a request or response body,
  serde_wasm_bindgen::from_value, `JsValue::into_serde`,
and fails on any call site not in the reviewed allow-list below. An allow-list entry names a file,
how many such call sites it may hold, and why they are safe (the agent's own data, bounded by its
own writer; text already counted by the gate; test-only code). Code in `#[cfg(test)]` modules,
`tests.rs` and `*_tests.rs` files (unit tests) and src/testing/ (the in-memory store of the tests) is not looked at.
The test kit (src/test_kit/) reads the frames the agent under test sent, in `cargo test` only.

  python3 scripts/check-gate.py          (exit 1 and a list of call sites when it fails)
"""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
SRC = os.path.join(ROOT, 'src')
GATE = 'src/protocol/gate.rs'

PATTERNS = [
    (re.compile(r'serde_json::from_(str|slice|value|reader)\b'), 'serde_json::from_*'),
    (re.compile(r'(?<![\w:])from_(str|slice|value|reader)::<'), 'from_* (imported)'),
    (re.compile(r'\.json(::<[^>]*>)?\(\)'), '.json() of a body'),
    (re.compile(r'\.text\(\)\s*\.await'), '.text() of a body'),
    (re.compile(r'serde_wasm_bindgen::from_value\b'), 'serde_wasm_bindgen::from_value'),
    (re.compile(r'\binto_serde\b'), 'JsValue::into_serde'),
]

OWN = "the agent's own rows, written by it under the row limit and read back"

# file: (call sites allowed, why)
ALLOW = {
    # --- the agent's own data -------------------------------------------------------------
    'src/core/rows/persisted.rs': (6, OWN + '; the state row is counted by the gate first'),
    'src/core/rows/shape.rs': (2, OWN + ' (the versioned row reader)'),
    'src/core/contract/history.rs': (2, OWN + ' (message rows)'),
    'src/core/recovery/evictions.rs': (1, OWN + ' (a cut stream\'s chunk log)'),
    'src/core/recovery/join_recovery.rs': (1, OWN + ' (a cut stream\'s chunk log)'),
    'src/core/data/accumulator.rs': (1, 'a tool call\'s arguments, already bounded by max_model_stream_bytes'),
    'src/store/reads.rs': (1, OWN + ' (a page of message rows joined by SQLite)'),
    'src/agent/storage/mod.rs': (2, "the author's own key-value rows (MAX_ROW_BYTES)"),
    'src/agent/handle/schedule_callback.rs': (1, "a schedule's payload the agent stored itself"),
    'src/agent/connections/mod.rs': (1, 'the socket attachment the agent wrote (MAX_CONNECTION_STATE_BYTES)'),
    'src/agent/callables/mod.rs': (2, 'a callable\'s arguments, from a call frame the gate counted (gate::CALL)'),
    'src/agent/tools/mod.rs': (1, 'tool arguments streamed by the model, bounded by max_model_stream_bytes'),
    'src/mcp/oauth/credentials.rs': (1, OWN + ' (an MCP server\'s stored sign-in)'),
    'src/mcp/record.rs': (1, OWN + ' (an MCP server\'s stored record)'),
    # --- text the gate or a frame reader already counted ---------------------------------
    'src/protocol/client.rs': (11, 'a chat frame read field by field after its shape was counted (Limits::shape)'),
    'src/protocol/posted_message.rs': (3, 'one posted message of a chat request body whose shape client.rs counted (Limits::shape)'),
    'src/protocol/channel.rs': (3, 'a parent\'s channel frame, counted by Limits::shape first'),
    'src/protocol/message.rs': (4, 'a message part inside a counted frame or an own row'),
    'src/model/openai/wire.rs': (1, 'a `usage` object inside a model event read through gate::MODEL_EVENT'),
    'src/model/scripted/rules.rs': (2, 'directives in a user message of a chat request the gate counted (gate::CHAT)'),
    'src/demo/connections.rs': (1, 'only a frame\'s `type`, borrowed (nothing else is built), within the frame limit'),
}


def strip_tests(text):
    """Blanks `#[cfg(test)] mod … { … }` blocks and `//` comments, keeping line numbers."""
    text = re.sub(r'//[^\n]*', lambda m: ' ' * len(m.group(0)), text)
    out = list(text)
    for m in re.finditer(r'#\[cfg\(test\)\]\s*(pub(\([^)]*\))?\s+)?mod\s+\w+\s*\{', text):
        depth, j = 1, m.end()
        while depth and j < len(text):
            depth += {'{': 1, '}': -1}.get(text[j], 0)
            j += 1
        for k in range(m.start(), j):
            if out[k] != '\n':
                out[k] = ' '
    return ''.join(out)


def skipped(rel):
    return (rel == GATE or rel.startswith('src/testing/') or rel.startswith('src/test_kit/')
            or os.path.basename(rel) == 'tests.rs' or rel.endswith('_tests.rs'))


def call_sites():
    """{file: [(line, what, text)]} of every unguarded read under src/."""
    found = {}
    for base, _, files in os.walk(SRC):
        for name in sorted(files):
            if not name.endswith('.rs'):
                continue
            path = os.path.join(base, name)
            rel = os.path.relpath(path, ROOT).replace(os.sep, '/')
            if skipped(rel):
                continue
            raw = open(path, encoding='utf-8').read()
            lines = raw.split('\n')
            for n, line in enumerate(strip_tests(raw).split('\n'), 1):
                for pattern, what in PATTERNS:
                    if pattern.search(line):
                        found.setdefault(rel, []).append((n, what, lines[n - 1].strip()))
                        break
    return found


def main():
    found = call_sites()
    failed = False
    for rel, sites in sorted(found.items()):
        allowed, why = ALLOW.get(rel, (0, None))
        if len(sites) <= allowed:
            continue
        failed = True
        print(f'check-gate: {rel} reads input without the gate ({len(sites)} call sites, '
              f'{allowed} allowed{": " + why if why else ""}):')
        for n, what, text in sites:
            print(f'  {rel}:{n}: {what}: {text}')
    stale = sorted(rel for rel, (allowed, _) in ALLOW.items() if len(found.get(rel, [])) < allowed)
    for rel in stale:
        print(f'check-gate: {rel} allows {ALLOW[rel][0]} call sites but holds '
              f'{len(found.get(rel, []))}: lower its allow-list entry')
    if failed or stale:
        print('check-gate: read it through src/protocol/gate.rs (a budget in BUDGETS), or, for the '
              "agent's own data, add a reviewed entry to ALLOW in scripts/check-gate.py")
        return 1
    print(f'check-gate: ok ({sum(len(s) for s in found.values())} reviewed call sites in '
          f'{len(found)} files)')
    return 0


if __name__ == '__main__':
    sys.exit(main())
