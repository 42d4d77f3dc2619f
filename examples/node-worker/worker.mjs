// An agentfleet tool worker in JavaScript, written from docs/PROTOCOL.md
// ("Tool workers" and "Writing a worker in another language"). It serves one
// tool, countdown, which counts down with a progress frame per step (or, with
// quiet, with heartbeats only), and stops when the orchestrator cancels it;
// and export_rows, whose result of any size goes by reference: it streams
// the rows into the Object Store bucket agentfleet_objects and answers a
// ref block ("Large results by reference").
//
//   NATS_URL=nats://127.0.0.1:4222 node worker.mjs
//
// Environment: NATS_URL (default nats://127.0.0.1:4222), PREFIX (default
// agent), HB_MS (heartbeat interval, default 1000), BEAT_MS (presence beat
// interval, default 1000), CONCURRENCY (default 16).
// It prints "ready <service id>" once it serves, and exits 0 after SIGTERM
// once its calls in flight have ended.
import { connect } from "@nats-io/transport-node";
import { Svcm } from "@nats-io/services";
import { Objm } from "@nats-io/obj";
import { decode, encode } from "@msgpack/msgpack";
import { createHash } from "node:crypto";

const url = process.env.NATS_URL ?? "nats://127.0.0.1:4222";
const prefix = process.env.PREFIX ?? "agent";
const hbMS = Number(process.env.HB_MS ?? 1000);
const beatMS = Number(process.env.BEAT_MS ?? 1000);
const limit = Number(process.env.CONCURRENCY ?? 16);
const protocol = 1;

const tool = {
  name: "countdown",
  metadata: {
    "agentfleet.protocol": String(protocol),
    label: "Countdown",
    description: "Counts down from n, one step every ms milliseconds, reporting each step. With quiet, reports nothing until the end.",
    input_schema: JSON.stringify({
      type: "object",
      properties: {
        n: { type: "integer", minimum: 1, maximum: 1000, description: "where to start" },
        ms: { type: "integer", minimum: 1, maximum: 10000, description: "milliseconds per step (default 50)" },
        quiet: { type: "boolean", description: "no progress frames, heartbeats only" },
      },
      required: ["n"],
      additionalProperties: false,
    }),
    annotations: JSON.stringify({ read_only: true, idempotent: true, destructive: false }),
    parallel: "true",
    timeout_ms: "60000",
  },
};

const exportTool = {
  name: "export_rows",
  metadata: {
    "agentfleet.protocol": String(protocol),
    label: "Export rows",
    description: "Exports n rows of a table as CSV; the file is returned by reference.",
    input_schema: JSON.stringify({
      type: "object",
      properties: { rows: { type: "integer", minimum: 1, maximum: 10000000, description: "how many rows" } },
      required: ["rows"],
      additionalProperties: false,
    }),
    annotations: JSON.stringify({ read_only: true, idempotent: true, destructive: false }),
    parallel: "true",
    timeout_ms: "120000",
  },
};

const nc = await connect({ servers: url, name: "node-worker", maxReconnectAttempts: -1 });
const svc = await new Svcm(nc).add({
  name: "nodeworker",
  version: "1.0.0",
  description: "agentfleet tool worker in JavaScript",
  metadata: { "agentfleet.protocol": String(protocol), prefix, concurrency: String(limit), beat_ms: String(beatMS) },
  queue: "agentfleet",
});
const id = svc.info().id;
const worker = `nodeworker/${id}`;
const cancelSubject = `${prefix}.worker.${id}.cancel`;

// Calls in flight, by "<call id> <reply subject>": call ids alone may repeat
// across sessions.
const calls = new Map();
let draining = false;

const send = (subject, frame) => nc.publish(subject, encode(frame));

const endpoint = (t, runTool) => svc.addEndpoint(t.name, {
  subject: `${prefix}.tool.${t.name}`,
  queue: "agentfleet",
  metadata: t.metadata,
  handler: (err, msg) => {
    if (err) {
      console.error("endpoint:", err);
      return;
    }
    if (!msg.reply) {
      return; // nobody to answer: do not run the tool
    }
    let req;
    try {
      req = decode(msg.data);
    } catch (e) {
      msg.respondError(400, "bad request", encode({ t: "error", id: "", worker, error: `call request does not decode: ${e.message}`, code: "400" }));
      return;
    }
    if (typeof req !== "object" || req === null || typeof req.id !== "string") {
      msg.respondError(400, "bad request", encode({ t: "error", id: "", worker, error: "call request is not a map with a string id", code: "400" }));
      return;
    }
    if (req.v > protocol) {
      msg.respondError(400, "bad request", encode({ t: "error", id: req.id, worker, error: `protocol version ${req.v} is newer than ${protocol}`, code: "400" }));
      return;
    }
    if (draining || calls.size >= limit) {
      msg.respondError(503, "busy", encode({ t: "busy", id: req.id, worker, in_flight: calls.size, limit }));
      return;
    }
    runTool(req, msg.reply);
  },
});
endpoint(tool, run);
endpoint(exportTool, exportRows);

// The bucket of large results, created when it is missing.
const objects = await new Objm(nc).create("agentfleet_objects", { storage: "file" });

// exportRows streams the rows into the bucket, as <agent>/<session>/<unique
// name>, and answers a ref block with their size and sha256.
async function exportRows(req, reply) {
  const key = `${req.id} ${reply}`;
  calls.set(key, { cancelled: false });
  send(reply, { t: "ack", id: req.id, worker, cancel: cancelSubject, hb_ms: hbMS });
  const hb = setInterval(() => send(reply, { t: "hb", id: req.id }), hbMS);
  try {
    const rows = Number(req.args?.rows ?? 1);
    const hash = createHash("sha256");
    let i = 0;
    const enc = new TextEncoder();
    const stream = new ReadableStream({
      pull(ctl) {
        if (i >= rows) return ctl.close();
        let chunk = "";
        for (let j = 0; j < 4096 && i < rows; j++, i++) chunk += `${i},row ${i}\n`;
        const bytes = enc.encode(chunk);
        hash.update(bytes);
        ctl.enqueue(bytes);
      },
    });
    const name = `${req.agent}/${req.session}/node-${id}-${req.id}-${Date.now()}`;
    const info = await objects.put({ name }, stream);
    send(reply, {
      t: "result", id: req.id, worker,
      result: { content: [
        { type: "text", text: `exported ${rows} rows` },
        { type: "ref", $ref: `obj://agentfleet_objects/${name}`, size: info.size, sha256: hash.digest("hex"), mime_type: "text/csv", name: "rows.csv" },
      ] },
    });
  } catch (e) {
    send(reply, { t: "result", id: req.id, worker, result: { content: [{ type: "text", text: `Tool export_rows: ${e.message}` }] }, is_error: true });
  } finally {
    clearInterval(hb);
    calls.delete(key);
  }
}

async function run(req, reply) {
  const key = `${req.id} ${reply}`;
  const call = { cancelled: false, wake: null };
  calls.set(key, call);
  send(reply, { t: "ack", id: req.id, worker, cancel: cancelSubject, hb_ms: hbMS });
  const hb = setInterval(() => send(reply, { t: "hb", id: req.id }), hbMS);
  const args = req.args ?? {};
  const n = Number(args.n ?? 1);
  const ms = Number(args.ms ?? 50);
  let left = n;
  try {
    while (left > 0 && !call.cancelled) {
      await new Promise((resolve) => {
        call.wake = resolve;
        setTimeout(resolve, ms);
      });
      if (call.cancelled) break;
      left--;
      if (!args.quiet) {
        send(reply, { t: "progress", id: req.id, partial: { left } });
      }
    }
    const text = call.cancelled ? `Tool countdown: cancelled with ${left} of ${n} to go` : `counted down from ${n}`;
    send(reply, {
      t: "result", id: req.id, worker,
      result: { content: [{ type: "text", text }], details: { left } },
      is_error: call.cancelled,
    });
  } finally {
    clearInterval(hb);
    calls.delete(key);
  }
}

// Cancels: {"t":"cancel","id":...,"inbox":...} in MessagePack; without inbox,
// every call of that id.
const cancels = nc.subscribe(cancelSubject, {
  callback: (err, msg) => {
    if (err) return;
    let c;
    try {
      c = decode(msg.data);
    } catch {
      return;
    }
    for (const [key, call] of calls) {
      const [callID, inbox] = key.split(" ");
      if (callID === c.id && (!c.inbox || c.inbox === inbox)) {
        call.cancelled = true;
        call.wake?.();
        console.log(`cancelled ${callID}`);
      }
    }
  },
});

const announce = (event) =>
  nc.publish(`${prefix}.fleet`, JSON.stringify({ event, service: "nodeworker", id, tools: [tool.name, exportTool.name], beat_ms: beatMS }));

await nc.flush();
announce("joined");
// Presence: orchestrators drop a worker that misses three beats.
const beats = setInterval(() => announce("beat"), beatMS);
await nc.flush();
console.log(`ready ${id}`);

process.on("SIGTERM", async () => {
  // Stop taking calls (requests still delivered are refused as busy), let
  // the calls in flight end, say we left, and drain before exiting, or the
  // last results are lost.
  draining = true;
  while (calls.size > 0) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  await svc.stop();
  cancels.unsubscribe();
  clearInterval(beats);
  announce("left");
  await nc.drain();
  process.exit(0);
});
