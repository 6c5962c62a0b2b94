// scripts/rpc-bridge.mjs on worker-build-shaped text: which exports it bridges (only classes with
// the `durableChatRpc` method that `chat_agent!` adds), and the module it writes (a class extending
// DurableObject per agent, every RPC method forwarded, worker-build's other exports kept).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { agentClasses, bridgeSource, exportedNames, RPC_METHODS } from '../../scripts/rpc-bridge.mjs';

const glue = [
  'var S=class{durableChatRpc(e,t){return _.chatagent_durableChatRpc(this.__wbg_ptr,e,t)}};',
  'var j=class{durableChatRpc(e,t){return _.supportagentdo_durableChatRpc(this.__wbg_ptr,e,t)}};',
  'var k=class{get css(){return _.__wbg_get_minifyconfig_css(this.__wbg_ptr)}};',
  'var Te=new Proxy(D,W),Pe=new Proxy(S,W),Me=new Proxy(j,W),Le=new Proxy(k,W);',
  'export{Pe as ChatAgent,Le as MinifyConfig,Me as SupportAgentDO,Te as default};',
].join('');

test('every export is read, and only the agent classes are bridged', () => {
  assert.deepEqual(exportedNames(glue), ['ChatAgent', 'MinifyConfig', 'SupportAgentDO', 'default']);
  assert.deepEqual(agentClasses(glue), ['ChatAgent', 'SupportAgentDO']);
  assert.deepEqual(agentClasses(glue.replaceAll('durableChatRpc', 'fetch')), []);
});

test('the bridge module extends DurableObject per agent class and forwards every method', () => {
  const source = bridgeSource('agent-glue.js', ['ChatAgent', 'SupportAgentDO']);
  assert.match(source, /import \{ DurableObject \} from 'cloudflare:workers'/);
  assert.match(source, /class extends DurableObject/);
  assert.match(source, /export \* from '\.\/agent-glue\.js'/);
  assert.match(source, /export \{ default \} from '\.\/agent-glue\.js'/);
  assert.match(source, /export const ChatAgent = agentClass\(rust\.ChatAgent, "ChatAgent"\)/);
  assert.match(source, /export const SupportAgentDO = agentClass\(rust\.SupportAgentDO, "SupportAgentDO"\)/);
  for (const event of ['fetch(request)', 'webSocketMessage(ws, message)', 'webSocketClose(ws, code, reason, wasClean)', 'webSocketError(ws, error)', 'alarm()']) {
    assert.ok(source.includes(event), event);
  }
  for (const method of RPC_METHODS) {
    assert.ok(source.includes(`${method}(...args) { return this.#agent.durableChatRpc(${JSON.stringify(method)}, args); }`), method);
  }
});

test('the bridge refuses a WebSocket message over the agent\'s own frame limit before handing it to the Rust class', () => {
  const source = bridgeSource('agent-glue.js', ['ChatAgent']);
  const handler = source.slice(source.indexOf('webSocketMessage(ws, message) {'), source.indexOf('webSocketClose('));
  assert.match(handler, /this\.#agent\.durableChatFrameLimit\(\)/, 'the limit comes from the Rust class');
  assert.match(handler, /message\.length : message\.byteLength/);
  assert.ok(
    handler.indexOf('durableChatFrameTooLarge(ws, size, head)') < handler.indexOf('this.#agent.webSocketMessage(ws, message)'),
    'refused before the message is forwarded',
  );
});
