#!/usr/bin/env python3
"""Fails when a lower layer of the crate names a higher one, or when files of
src/ import each other in a circle.

Layers, lowest first (a file may use its own layer and those below it):
  crate:  protocol, model, routing, outbound  <  core  <  store, log (the console), mcp  <  agent, router  <  demo, worker_entry, test_kit
  core:   vocab < rows < contract < data < (admit, turn, recovery, synced_state, callables, logging.rs, mcp.rs, mod.rs)
  agent:  (settings, body, ids, typed_handler, binding_model) < access < (storage, connections) < handle
          < (callables, tools) < subagents < definition < (engine_config, author_hooks, builtin_tools,
          debug_tools, durable_object) < host < rpc_target < mod.rs
A file of a lower core or agent layer must name the items it uses by their layered path
(`crate::core::vocab::...`, `crate::agent::handle::...`): the flat names of `core/mod.rs` and
`agent/mod.rs` sit at the top.
Imports are read from `use` paths and inline `crate::`/`super::` paths.

Calls and imports between the behaviour folders of src/core go one way, highest first:
  recovery  >  admit, callables  >  turn  >  synced_state
A folder's files may name items of a folder below it (what its `mod.rs` re-exports:
its files are private modules), never of one above or beside it. A folder's code may call the `Core` methods of its own folder and those on the
face of a folder below it (the `Face` list in the header of that folder's `mod.rs`); a call
into a folder above or beside it, or to a method not on the face, fails. Every
method of a folder visible to the whole core (`pub(in crate::core)`) must be on
its face. The dispatcher (`core/mod.rs`, `core/settle.rs` and the other files at
the top of core) may call any face.

`--self-test` plants a call against the direction, a call to a method off a face
and a method visible beyond its folder without being on the face, and fails
unless the check reports each of them."""
import os, re, sys
from collections import defaultdict

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'src')
CRATE_RANK = {'protocol': 0, 'model': 0, 'routing': 0, 'outbound': 0, 'log': 2, 'core': 1, 'store': 2, 'mcp': 2,
              'testing': 2, 'agent': 3, 'router': 3, 'prelude': 4, 'demo': 5, 'worker_entry': 5,
              'test_kit': 5}
CORE_RANK = {'vocab': 0, 'rows': 1, 'contract': 2, 'data': 3, 'admit': 4, 'turn': 4,
             'recovery': 4, 'logging': 4, 'mcp': 4, 'mod': 4, 'synced_state': 4, 'callables': 4}

PATH_MODULES = {}  # file included with #[path] -> its module path

def module_of(path):
    if os.path.abspath(path) in PATH_MODULES:
        return PATH_MODULES[os.path.abspath(path)]
    rel = os.path.relpath(path, ROOT)[:-3].split(os.sep)
    if rel[-1] == 'mod':
        rel = rel[:-1]
    return [] if rel == ['lib'] else rel

def file_of(mod):
    """The longest prefix of module path `mod` that is a file of src/."""
    for n in range(len(mod), 0, -1):
        base = os.path.join(ROOT, *mod[:n])
        for cand in (base + '.rs', os.path.join(base, 'mod.rs')):
            if os.path.isfile(cand):
                return cand, mod[n:]
    return os.path.join(ROOT, 'lib.rs'), mod

def strip_tests(text):
    """Drops `#[cfg(test)] mod tests { ... }` blocks and comments."""
    text = re.sub(r'//[^\n]*', '', text)
    text = re.sub(r'pub\(in [\w:]+\)', 'pub', text)
    out, i = [], 0
    for m in re.finditer(r'#\[cfg\(test\)\]\s*mod\s+\w+\s*\{', text):
        if m.start() < i:
            continue
        out.append(text[i:m.start()])
        depth, j = 1, m.end()
        while depth and j < len(text):
            depth += {'{': 1, '}': -1}.get(text[j], 0)
            j += 1
        i = j
    out.append(text[i:])
    return ''.join(out)

def expand_use(body):
    """`a::{b, c::{d, e}}` -> ['a::b', 'a::c::d', 'a::c::e']."""
    body = re.sub(r'\s+', '', body)
    def split(s):
        parts, depth, cur = [], 0, ''
        for ch in s:
            if ch == ',' and depth == 0:
                parts.append(cur); cur = ''
                continue
            depth += ch == '{'; depth -= ch == '}'
            cur += ch
        if cur:
            parts.append(cur)
        return parts
    def go(s):
        m = re.match(r'^(.*?)::\{(.*)\}$', s)
        if m:
            return [m.group(1) + '::' + x if x != 'self' else m.group(1)
                    for part in split(m.group(2)) for x in go(part)]
        return [re.sub(r'as\w+$', '', s)]
    return go(body)

def uses_of(path):
    """Every path the file's `use` items and inline paths name, and its `pub use` re-exports."""
    text = strip_tests(open(path).read())
    paths, reexports = [], {}
    for m in re.finditer(r'\b(pub(?:\([^)]*\))?\s+)?use\s+([^;]+);', text):
        for p in expand_use(m.group(2)):
            paths.append(p)
            if m.group(1):
                reexports[p.split('::')[-1]] = p
    paths += re.findall(r'(?<![\w:])((?:crate|super)(?:::\w+)+)', text)
    children = set(re.findall(r'^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;', text, re.M))
    return paths, reexports, children

CACHE = {}

def parsed(path):
    if path not in CACHE:
        CACHE[path] = uses_of(path)
    return CACHE[path]

def resolve(p, path, depth=0):
    """The file that defines what path `p`, written in file `path`, names:
    re-exports (`pub use`) of a module's face are followed to the file
    that defines the name."""
    here = module_of(path)
    _, _, children = parsed(path)
    seg = p.split('::')
    if seg[0] == 'crate':
        mod = seg[1:]
    elif seg[0] == 'super':
        base = here
        while seg and seg[0] == 'super':
            base = base[:-1]; seg = seg[1:]
        mod = base + seg
    elif seg[0] in children:
        mod = here + seg
    elif seg[0] == 'self':
        mod = here + seg[1:]
    else:
        return None
    target, rest = file_of(mod)
    target = os.path.abspath(target)
    if rest and depth < 8:
        _, reexports, _ = parsed(target)
        if rest[0] in reexports:
            deeper = resolve(reexports[rest[0]], target, depth + 1)
            if deeper:
                return deeper
    return target

def imports(path):
    paths, _, _ = parsed(path)
    found = set()
    for p in paths:
        target = resolve(p, path)
        if target and target != os.path.abspath(path):
            found.add(target)
    return found

def rank(path):
    mod = module_of(path)
    if not mod:
        return None
    crate = CRATE_RANK.get(mod[0])
    inner = None
    if mod[0] == 'core':
        inner = ('core', CORE_RANK.get(mod[1] if len(mod) > 1 else 'mod', 4))
    elif mod[0] == 'agent':
        inner = ('agent', AGENT_RANK.get(mod[1] if len(mod) > 1 else 'mod', 10))
    return crate, inner

def main():
    files = [os.path.abspath(os.path.join(d, f)) for d, _, fs in os.walk(ROOT)
             for f in fs if f.endswith('.rs')]
    for f in files:
        for m in re.finditer(r'#\[path\s*=\s*"([^"]+)"\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)', open(f).read()):
            PATH_MODULES[os.path.abspath(os.path.join(os.path.dirname(f), m.group(1)))] = module_of(f) + [m.group(2)]
    graph = {f: imports(f) for f in files}
    problems = []
    for f, targets in graph.items():
        rf = rank(f)
        if rf is None:
            continue
        for t in targets:
            rt = rank(t)
            if rt is None or rf[0] is None or rt[0] is None:
                continue
            name = lambda p: os.path.relpath(p, os.path.join(ROOT, '..'))
            if rt[0] > rf[0]:
                problems.append(f'{name(f)} (layer {module_of(f)[0]}) names {name(t)} above it')
            elif rf[1] is not None and rt[1] is not None and rf[1][0] == rt[1][0] and rt[1][1] > rf[1][1]:
                problems.append(f'{name(f)} ({module_of(f)[1]}) names {name(t)} above it')
            else:
                bf = behaviour_of('/'.join(module_of(f)) + '/x.rs')
                bt = behaviour_of('/'.join(module_of(t)) + '/x.rs')
                if bf and bt and bf != bt and BEHAVIOUR_RANK[bt] >= BEHAVIOUR_RANK[bf]:
                    problems.append(f'{name(f)} ({bf}) names {name(t)} of {bt}, which is not below it')
    # circles (strongly connected components of more than one file)
    index, low, stack, on, comps, counter = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(10000)
    def visit(v):
        index[v] = low[v] = counter[0]; counter[0] += 1
        stack.append(v); on.add(v)
        for w in graph.get(v, ()):
            if w not in graph:
                continue
            if w not in index:
                visit(w); low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop(); on.discard(w); comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(comp)
    for v in graph:
        if v not in index:
            visit(v)
    for comp in comps:
        problems.append('import circle: ' + ', '.join(sorted(os.path.relpath(c, ROOT) for c in comp)))
    for p in problems:
        print('layers:', p)
    if problems:
        sys.exit(1)
    print(f'layers: {len(files)} files, no lower layer names a higher one, no import circle, '
          'core folders call one way through their faces')

AGENT_RANK = {'settings': 0, 'body': 0, 'ids': 0, 'typed_handler': 0, 'binding_model': 0,
              'access': 1, 'storage': 2, 'connections': 2, 'handle': 3, 'callables': 4, 'tools': 4,
              'subagents': 5, 'definition': 6, 'engine_config': 7, 'author_hooks': 7,
              'builtin_tools': 7, 'debug_tools': 7, 'durable_object': 7, 'effect_handlers': 7,
              'host': 8, 'rpc_target': 9,
              'mod': 10}
BEHAVIOUR_RANK = {'recovery': 4, 'admit': 3, 'callables': 3, 'turn': 2, 'synced_state': 1}
WIDE = ('pub(in crate::core)', 'pub(crate)')

def behaviour_of(rel):
    """The behaviour folder of a path relative to src/ (`core/turn/x.rs` -> 'turn')."""
    parts = rel.split('/')
    if len(parts) > 2 and parts[0] == 'core' and parts[1] in BEHAVIOUR_RANK:
        return parts[1]
    return None

def core_methods(rel, text):
    """(name, visibility) of each method of the `impl Core` blocks of a file."""
    text = re.sub(r'//[^\n]*', '', text)
    found = []
    for m in re.finditer(r'\bimpl\s+Core\s*\{', text):
        depth, j = 1, m.end()
        while depth and j < len(text):
            depth += {'{': 1, '}': -1}.get(text[j], 0)
            j += 1
        body, level = text[m.end():j - 1], 0
        for t in re.finditer(r'[{}]|(pub(?:\([^)]*\))?\s+)?fn\s+(\w+)', body):
            if t.group(0) == '{':
                level += 1
            elif t.group(0) == '}':
                level -= 1
            elif level == 0:
                found.append((t.group(2), (t.group(1) or 'private').strip()))
    return found

def faces_of(sources):
    """The names each behaviour folder's `mod.rs` lists after `Face:`."""
    faces = {}
    for folder in BEHAVIOUR_RANK:
        text = sources.get(f'core/{folder}/mod.rs', '')
        m = re.search(r'Face\b[^:]*:(.*?)(?:\n//!\s*\n|\n(?!//!))', text, re.S)
        faces[folder] = set(re.findall(r'`(\w+)`', m.group(1))) if m else set()
    return faces

def call_problems(sources):
    """Calls against the declared direction or off a face, and methods visible
    to the whole core without being on their folder's face. `sources`: text by
    path relative to src/."""
    faces = faces_of(sources)
    owner, problems = {}, []
    for rel, text in sources.items():
        folder = behaviour_of(rel)
        for name, vis in core_methods(rel, text):
            if folder:
                owner[name] = (folder, rel)
                if vis in WIDE and name not in faces[folder]:
                    problems.append(f'src/{rel}: `{name}` is visible to the whole core ({vis}) '
                                    f'but not on the face of {folder}/mod.rs')
    for folder, names in faces.items():
        for name in sorted(names):
            if owner.get(name, (None,))[0] != folder:
                problems.append(f'src/core/{folder}/mod.rs: the face names `{name}`, '
                                f'which is no method of `Core` in {folder}/')
    for rel, text in sources.items():
        caller = behaviour_of(rel)
        if not caller:
            continue
        code = re.sub(r'//[^\n]*', '', text)
        for m in re.finditer(r'\b(?:self|core)\.(\w+)\s*\(', code):
            name = m.group(1)
            callee = owner.get(name, (None,))[0]
            if callee is None or callee == caller:
                continue
            line = code.count('\n', 0, m.start()) + 1
            if BEHAVIOUR_RANK[callee] >= BEHAVIOUR_RANK[caller]:
                problems.append(f'src/{rel}:{line} ({caller}) calls `{name}` of {callee}, '
                                f'which is not below it')
            elif name not in faces[callee]:
                problems.append(f'src/{rel}:{line} ({caller}) calls `{name}`, '
                                f'which is not on the face of {callee}')
    return problems

def read_sources():
    out = {}
    for d, _, fs in os.walk(ROOT):
        for f in fs:
            if f.endswith('.rs'):
                path = os.path.join(d, f)
                out[os.path.relpath(path, ROOT).replace(os.sep, '/')] = open(path).read()
    return out

def plant(sources, rel, method):
    """`sources` with one more `impl Core` block holding `method` in file `rel`."""
    changed = dict(sources)
    changed[rel] = sources[rel] + '\nimpl Core {\n' + method + '\n}\n'
    return changed

def self_test():
    sources = read_sources()
    cases = [
        ('a turn calls admit\'s pump (against the direction)', 'core/turn/phases.rs',
         '    fn planted(&mut self) {\n        self.pump();\n    }', 'calls `pump` of admit'),
        ('admit calls a method private to turn', 'core/admit/chat.rs',
         '    fn planted(&mut self) {\n        self.begin_step();\n    }',
         'calls `begin_step`, which is not on the face of turn'),
        ('a method visible to the whole core off the face', 'core/turn/phases.rs',
         '    pub(in crate::core) fn planted(&mut self) {}', '`planted` is visible to the whole core'),
    ]
    failed = 0
    for what, rel, method, expected in cases:
        found = [p for p in call_problems(plant(sources, rel, method)) if expected in p]
        print(f'layers self-test: {what}:', 'reported' if found else 'NOT REPORTED')
        failed += not found
    if call_problems(sources):
        print('layers self-test: the tree itself has call problems')
        failed += 1
    sys.exit(1 if failed else 0)

if __name__ == '__main__':
    if sys.argv[1:] == ['--self-test']:
        self_test()
    problems = call_problems(read_sources())
    for p in problems:
        print('layers:', p)
    if problems:
        sys.exit(1)
    main()
