// Makes a worker-build output reachable over Durable Object RPC. worker-build (0.8.7) exports each
// Durable Object as its wasm-bindgen class, which does not extend `DurableObject` from
// "cloudflare:workers", so the runtime refuses RPC calls to it. This script replaces
// <buildDir>/index.js with one ES module bundling the worker-build output and, for every class that
// `chat_agent!` declared (the ones with the wasm-bindgen method `durableChatRpc`), a class of the
// same name that extends `DurableObject`, forwards fetch / webSocketMessage / webSocketClose /
// webSocketError / alarm to the Rust class (a WebSocket message over the agent's frame limit is
// refused by its length before it is copied into wasm: `durableChatFrameLimit`,
// `durableChatFrameTooLarge`), and exposes the agent's RPC methods (Think's names) by
// forwarding them to `durableChatRpc(method, args)`, and so the author's own methods, whose names
// the first instance reads from `durableChatRpcMethods()` and adds to the class's prototype (the
// runtime looks a called method up on the prototype). Everything else worker-build exports (the
// worker's default entry) is re-exported unchanged; index_bg.wasm stays beside it.
//
//   node scripts/rpc-bridge.mjs [buildDir]      (default: build; scripts/build.sh runs it)
//
// It ships in the crate's package: an agent crate's build finds it through `cargo metadata` (the
// durable-chat package's folder) and runs it in the worker's folder, whose node_modules provide
// esbuild when the script's own location has none.
// Running it twice is harmless: a bundle it already wrote is recognised and left alone.

import { readFileSync, renameSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

/** esbuild from beside this script, else from the folder it runs in; an error saying so when neither has it. */
async function loadEsbuild() {
  try {
    return await import('esbuild');
  } catch {
    try {
      return createRequire(join(process.cwd(), 'package.json'))('esbuild');
    } catch {
      throw new Error(`rpc-bridge: esbuild not found beside ${import.meta.url} nor in ${process.cwd()} (npm install esbuild)`);
    }
  }
}

/** The RPC methods every agent class gets (named and shaped as @cloudflare/think's). */
export const RPC_METHODS = [
  'chat',
  'cancelChat',
  'cancelAllChats',
  'runTurn',
  'submitMessages',
  'inspectSubmission',
  'waitForSubmission',
  'listSubmissions',
  'cancelSubmission',
  'deleteSubmission',
  'deleteSubmissions',
  'getMessages',
  'clearMessages',
  'addMessages',
  'saveMessages',
  'continueLastTurn',
  'destroy',
];

const MARKER = '// durable-chat rpc bridge';

/** The names a worker-build module exports (its last `export{…}` statement). */
export function exportedNames(glue) {
  const match = glue.match(/export\s*\{([^}]*)\}\s*;?\s*$/);
  if (!match) throw new Error('rpc-bridge: no export statement at the end of the worker-build output');
  return match[1]
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean)
    .map((entry) => entry.split(/\s+as\s+/).pop().trim());
}

/** The exported classes `chat_agent!` declared: wasm-bindgen names their RPC method `<class>_durableChatRpc`. */
export function agentClasses(glue) {
  return exportedNames(glue).filter((name) => name !== 'default' && glue.includes(`${name.toLowerCase()}_durableChatRpc`));
}

/** The entry module: the bridge classes, and worker-build's other exports as they are. */
export function bridgeSource(glueFile, classes) {
  const forward = RPC_METHODS.map(
    (method) => `    ${method}(...args) { return this.#agent.durableChatRpc(${JSON.stringify(method)}, args); }`,
  ).join('\n');
  return `${MARKER}
import { DurableObject } from 'cloudflare:workers';
import * as rust from './${glueFile}';
export * from './${glueFile}';
export { default } from './${glueFile}';

function agentClass(Rust, name) {
  const Agent = class extends DurableObject {
    #agent;
    #frameLimit;
    constructor(ctx, env) {
      super(ctx, env);
      this.#agent = new Rust(ctx, env);
      // The author's own methods (the agent skips a name that shadows anything here).
      for (const method of this.#agent.durableChatRpcMethods?.() ?? []) {
        if (Object.hasOwn(Agent.prototype, method)) continue;
        Object.defineProperty(Agent.prototype, method, {
          value: function (...args) { return this.#agent.durableChatRpc(method, args); },
          writable: true,
          configurable: true,
        });
      }
    }
    fetch(request) { return this.#agent.fetch(request); }
    webSocketMessage(ws, message) {
      // A message over the agent's frame limit (its \`Limits\`, read once from the Rust class) is
      // refused by its length, before its text is copied into wasm memory: the agent answers with
      // the error frame it sends for any frame over the limit, and the socket stays open. A text
      // message is measured in UTF-16 units, never more than its UTF-8 bytes.
      const size = typeof message === 'string' ? message.length : message.byteLength;
      this.#frameLimit ??= this.#agent.durableChatFrameLimit();
      if (size > this.#frameLimit) {
        const head = typeof message === 'string' ? message.slice(0, 256) : '';
        return this.#agent.durableChatFrameTooLarge(ws, size, head);
      }
      return this.#agent.webSocketMessage(ws, message);
    }
    webSocketClose(ws, code, reason, wasClean) { return this.#agent.webSocketClose(ws, code, reason, wasClean); }
    webSocketError(ws, error) { return this.#agent.webSocketError(ws, error); }
    alarm() { return this.#agent.alarm(); }
${forward}
  };
  Object.defineProperty(Agent, 'name', { value: name });
  return Agent;
}

${classes.map((name) => `export const ${name} = agentClass(rust.${name}, ${JSON.stringify(name)});`).join('\n')}
`;
}

export async function bridge(buildDir) {
  const index = join(buildDir, 'index.js');
  const glue = readFileSync(index, 'utf8');
  if (glue.startsWith(MARKER)) return { classes: [], already: true };
  const classes = agentClasses(glue);
  if (classes.length === 0) return { classes };
  const glueFile = 'agent-glue.js';
  const entryFile = join(buildDir, 'rpc-entry.mjs');
  renameSync(index, join(buildDir, glueFile));
  writeFileSync(entryFile, bridgeSource(glueFile, classes));
  try {
    const { build } = await loadEsbuild();
    await build({
      entryPoints: [entryFile],
      outfile: index,
      bundle: true,
      format: 'esm',
      platform: 'neutral',
      target: 'es2022',
      external: ['cloudflare:*', './index_bg.wasm'],
      banner: { js: MARKER },
      logLevel: 'warning',
    });
  } catch (error) {
    renameSync(join(buildDir, glueFile), index);
    throw error;
  } finally {
    rmSync(entryFile, { force: true });
  }
  rmSync(join(buildDir, glueFile), { force: true });
  return { classes };
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const dir = resolve(process.argv[2] ?? 'build');
  if (!existsSync(join(dir, 'index.js'))) {
    console.error(`rpc-bridge: ${join(dir, 'index.js')} missing (run worker-build first)`);
    process.exit(1);
  }
  const { classes, already } = await bridge(dir);
  console.log(already ? 'rpc-bridge: already bridged' : `rpc-bridge: ${classes.length ? classes.join(', ') : 'no agent classes'} reachable over RPC`);
}
