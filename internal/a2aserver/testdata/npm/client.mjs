// A2A client driver: the JavaScript SDK's client (its v1.0 client with
// the v0.3 compatibility layer) against an A2A server. Reads one JSON
// command a line on stdin, writes one JSON answer a line on stdout:
//   {"op":"card","base":URL,"agent":NAME}
//   {"op":"send","base","agent","text","messageId"?,"contextId"?,"taskId"?,"stream"?:bool,"async"?:bool}
//   {"op":"get"|"cancel"|"resubscribe","base","agent","id"}
// An answer is {"ok":true,...} or {"ok":false,"error":message}. Task
// states are given as the SDK names them (TASK_STATE_...).
import readline from 'node:readline';
import { randomUUID } from 'node:crypto';
import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory, DefaultAgentCardResolver } from '@a2a-js/sdk/client';
import { TaskState } from '@a2a-js/sdk';

const token = process.env.A2A_TOKEN || '';
const authFetch = (url, init = {}) => {
  const headers = new Headers(init.headers || {});
  if (token) headers.set('Authorization', 'Bearer ' + token);
  return fetch(url, { ...init, headers });
};
const compat = { enabled: true };
const clients = new Map();
async function client(base, agent) {
  const key = base + ' ' + agent;
  if (!clients.has(key)) {
    const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl: authFetch, legacyCompat: compat })],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl: authFetch, legacyCompat: compat }),
    }));
    clients.set(key, await factory.createFromUrl(base + '/a2a/' + agent + '/.well-known/agent-card.json', ''));
  }
  return clients.get(key);
}
const stateName = (s) => (typeof s === 'number' ? TaskState[s] : String(s));
const text = (parts) => (parts || []).map((p) => (p.content && p.content.$case === 'text' ? p.content.value : '')).filter(Boolean).join('\n');
const task = (t) => ({
  id: t.id, contextId: t.contextId, state: stateName(t.status && t.status.state),
  status: text(t.status && t.status.message && t.status.message.parts),
  artifacts: (t.artifacts || []).map((a) => text(a.parts)), history: (t.history || []).length,
});
const event = (r) => {
  const p = r.payload || {};
  switch (p.$case) {
    case 'task': return { kind: 'task', ...task(p.value) };
    case 'statusUpdate': return { kind: 'status', state: stateName(p.value.status && p.value.status.state), text: text(p.value.status && p.value.status.message && p.value.status.message.parts) };
    case 'artifactUpdate': return { kind: 'artifact', text: text(p.value.artifact && p.value.artifact.parts) };
    case 'message': return { kind: 'message', text: text(p.value.parts) };
  }
  return { kind: String(p.$case) };
};

async function run(cmd) {
  switch (cmd.op) {
    case 'card': {
      const card = await new DefaultAgentCardResolver({ fetchImpl: authFetch, legacyCompat: compat }).resolve(cmd.base + '/a2a/' + cmd.agent + '/.well-known/agent-card.json', '');
      return { name: card.name, streaming: !!(card.capabilities && card.capabilities.streaming), interfaces: (card.supportedInterfaces || []).map((i) => i.url), security: Object.keys(card.securitySchemes || {}) };
    }
    case 'send': {
      const c = await client(cmd.base, cmd.agent);
      const message = { messageId: cmd.messageId || randomUUID(), role: 1, parts: [{ content: { $case: 'text', value: cmd.text } }], contextId: cmd.contextId || '', taskId: cmd.taskId || '', metadata: undefined, extensions: [], referenceTaskIds: [] };
      const configuration = cmd.async ? { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: true } : undefined;
      const req = { tenant: '', message, configuration, metadata: undefined };
      if (cmd.stream) {
        const events = [];
        for await (const r of c.sendMessageStream(req)) events.push(event(r));
        return { events };
      }
      const res = await c.sendMessage(req);
      return res.status ? { task: task(res) } : { message: text(res.parts) };
    }
    case 'get': return { task: task(await (await client(cmd.base, cmd.agent)).getTask({ tenant: '', id: cmd.id, historyLength: undefined })) };
    case 'cancel': return { task: task(await (await client(cmd.base, cmd.agent)).cancelTask({ tenant: '', id: cmd.id, metadata: undefined })) };
    case 'resubscribe': {
      const events = [];
      for await (const r of (await client(cmd.base, cmd.agent)).resubscribeTask({ tenant: '', id: cmd.id })) events.push(event(r));
      return { events };
    }
  }
  throw new Error('unknown op ' + cmd.op);
}

const rl = readline.createInterface({ input: process.stdin });
for await (const line of rl) {
  if (!line.trim()) continue;
  let out;
  try {
    out = { ok: true, ...(await run(JSON.parse(line))) };
  } catch (e) {
    out = { ok: false, error: String(e && e.message ? e.message : e) };
  }
  process.stdout.write(JSON.stringify(out) + '\n');
}
