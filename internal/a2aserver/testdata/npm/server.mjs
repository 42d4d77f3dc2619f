// A2A sample server: the JavaScript SDK's server (a 1.0 server with its
// 0.3 compatibility layer on) at /a2a, for the tests of the fleet's A2A
// client. It prints "listening <port>" once it listens, and
// "canceled <task id>" when a task is canceled. What it does depends on
// the message text:
//   hello...  an artifact "hi from js", completed
//   stream    three working updates, an artifact, completed
//   fail      failed, with a message
//   hang      working until canceled
//   input     input-required ("which color?"); the next message completes it
// With A2A_TOKEN set, a request without "Authorization: Bearer <token>" is a 401.
import express from 'express';
import { DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import { TaskState } from '@a2a-js/sdk';

const text = (parts) => (parts || []).map((p) => (p.content && p.content.$case === 'text' ? p.content.value : '')).join(' ');
const part = (value) => ({ content: { $case: 'text', value }, metadata: undefined, filename: '', mediaType: 'text/plain' });
const agentMessage = (ctx, value) => ({ messageId: 'm-' + Math.random().toString(16).slice(2), contextId: ctx.contextId, taskId: ctx.taskId, role: 2, parts: [part(value)], metadata: undefined, extensions: [], referenceTaskIds: [] });
const status = (ctx, state, value) => ({ kind: 'statusUpdate', data: { taskId: ctx.taskId, contextId: ctx.contextId, status: { state, message: value ? agentMessage(ctx, value) : undefined, timestamp: new Date().toISOString() }, metadata: undefined } });
const artifact = (ctx, value) => ({ kind: 'artifactUpdate', data: { taskId: ctx.taskId, contextId: ctx.contextId, artifact: { artifactId: 'answer', name: 'answer', description: '', parts: [part(value)], metadata: undefined, extensions: [] }, append: false, lastChunk: true, metadata: undefined } });

const hanging = new Map();
const executor = {
  async execute(ctx, bus) {
    const said = text(ctx.userMessage.parts).trim();
    if (!ctx.task) {
      bus.publish({ kind: 'task', data: { id: ctx.taskId, contextId: ctx.contextId, status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: new Date().toISOString() }, artifacts: [], history: [ctx.userMessage], metadata: undefined } });
    } else {
      bus.publish({ kind: 'task', data: ctx.task });
    }
    if (ctx.task && ctx.task.status && ctx.task.status.state === TaskState.TASK_STATE_INPUT_REQUIRED) {
      bus.publish(artifact(ctx, 'color: ' + said));
      bus.publish(status(ctx, TaskState.TASK_STATE_COMPLETED));
    } else if (said.startsWith('hello')) {
      bus.publish(artifact(ctx, 'hi from js'));
      bus.publish(status(ctx, TaskState.TASK_STATE_COMPLETED));
    } else if (said === 'stream') {
      for (const i of [1, 2, 3]) bus.publish(status(ctx, TaskState.TASK_STATE_WORKING, 'step ' + i));
      bus.publish(artifact(ctx, 'streamed answer'));
      bus.publish(status(ctx, TaskState.TASK_STATE_COMPLETED));
    } else if (said === 'fail') {
      bus.publish(status(ctx, TaskState.TASK_STATE_FAILED, 'the js agent failed on purpose'));
    } else if (said === 'hang') {
      bus.publish(status(ctx, TaskState.TASK_STATE_WORKING, 'hanging'));
      await new Promise((resolve) => hanging.set(ctx.taskId, resolve));
      return;
    } else if (said === 'input') {
      bus.publish(status(ctx, TaskState.TASK_STATE_INPUT_REQUIRED, 'which color?'));
    } else {
      bus.publish(status(ctx, TaskState.TASK_STATE_FAILED, 'unknown request: ' + said));
    }
    bus.finished();
  },
  async cancelTask(taskId, bus) {
    process.stdout.write('canceled ' + taskId + '\n');
    bus.publish({ kind: 'statusUpdate', data: { taskId, contextId: '', status: { state: TaskState.TASK_STATE_CANCELED, message: undefined, timestamp: new Date().toISOString() }, metadata: undefined } });
    const resolve = hanging.get(taskId);
    hanging.delete(taskId);
    bus.finished();
    if (resolve) resolve();
  },
};

const card = {
  name: 'js-sample', description: 'the A2A JavaScript SDK sample agent of the tests', version: '1.0.0',
  supportedInterfaces: [{ url: 'http://127.0.0.1/a2a', protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '0.3' }],
  provider: undefined, capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
  securitySchemes: {}, securityRequirements: [], defaultInputModes: ['text/plain'], defaultOutputModes: ['text/plain'], skills: [], signatures: [],
};
const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
const app = express();
const token = process.env.A2A_TOKEN || '';
app.use((req, res, next) => {
  if (token && req.headers.authorization !== 'Bearer ' + token) return res.status(401).send('401 unauthorized');
  next();
});
app.use('/a2a', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication, legacyCompat: { enabled: true } }));
const server = app.listen(0, '127.0.0.1', () => process.stdout.write('listening ' + server.address().port + '\n'));
