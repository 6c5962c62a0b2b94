// A proxy in front of the scripted model server that can hold a chat-completions request for a
// while before forwarding it, so that a turn is "in flight but has produced nothing" (the
// scripted model writes its first word at once; `[delay:MS]` only spaces the following ones).
// Used by the recovery suite and the chaos script to cut turns before their first token.
// Owns: startStallProxy.
//
// Markers, looked for in every user message of the request (directives stay in the transcript,
// so a recovery attempt of the same turn carries them too):
//   [stall:MS]     hold every request whose context holds the marker for MS before forwarding.
//   [stall-once:MS] hold only the first such request (per marker text) for MS; later ones
//                  (the retry after an eviction) are forwarded at once.
// While a request is held, a client disconnect (the runtime was killed) drops it without
// reaching the model.

import http from 'node:http';
import { contentText } from './model-server.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/**
 * @param {{url: string, requests: object[]}} model a started scripted model server
 * @returns {Promise<{url: string, requests: object[], received: object[], held: number,
 *   close: () => Promise<void>}>} `url` is an OpenAI base URL to give the worker; `requests` is
 *   the model's own log (forwarded requests); `received` logs every request the proxy got.
 */
export async function startStallProxy(model) {
  const target = new URL(model.url);
  const basePath = target.pathname.replace(/\/$/, '');
  const received = [];
  const onceSeen = new Set();
  let held = 0;
  const server = http.createServer(async (req, res) => {
    let gone = false;
    res.on('close', () => { gone = true; });
    try {
      const raw = await readBody(req);
      let body = null;
      try { body = JSON.parse(raw.toString('utf8')); } catch { /* forwarded as is */ }
      if (body) received.push(body);
      const texts = (body?.messages ?? []).filter((m) => m?.role === 'user').map((m) => contentText(m.content));
      let stallMs = 0;
      for (const t of texts) {
        const all = /\[stall:(\d+)\]/.exec(t);
        if (all) stallMs = Math.max(stallMs, Number(all[1]));
        const once = /\[stall-once:(\d+)\]/.exec(t);
        if (once && !onceSeen.has(t)) {
          onceSeen.add(t);
          stallMs = Math.max(stallMs, Number(once[1]));
        }
      }
      if (stallMs > 0) {
        held++;
        await sleep(stallMs);
        held--;
      }
      if (gone) return;
      const path = req.url.startsWith(basePath) ? req.url : basePath + req.url.replace(/^\/v1/, '');
      const upstream = http.request({
        host: target.hostname,
        port: target.port,
        method: req.method,
        path,
        headers: { ...req.headers, host: target.host, 'content-length': raw.length },
      }, (up) => {
        res.writeHead(up.statusCode, up.headers);
        res.flushHeaders();
        up.pipe(res);
      });
      upstream.on('error', () => res.destroy());
      res.on('close', () => upstream.destroy());
      upstream.end(raw);
    } catch {
      res.destroy();
    }
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = server.address().port;
  return {
    url: `http://127.0.0.1:${port}${basePath}`,
    requests: model.requests,
    received,
    get held() { return held; },
    close() {
      return new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
