// What a run view shows of its calls beyond their bars: direct calls (an
// MCP client's call outside any run, run id direct-…, which ends with its
// tool.end and has nothing to abort), retries and lost workers (the
// {"retry": {attempt, reason, worker}} progress the fleet announces before
// it tries again, the attempts and the worker_lost outcome of a tool.end),
// a call's state and live duration, and the context.compacted and
// budget.exceeded events of a run.
'use strict';

const MAX_RETRIES = 10;  // retries kept per call
const MAX_NOTES = 50;    // compactions kept per run

// isDirect reports whether a run id names a direct call (docs/PROTOCOL.md:
// agent.call.<agent>.<session>).
function isDirect(id) { return typeof id === 'string' && id.startsWith('direct-'); }

// settleDirect gives a direct call's run the state of its calls: running
// while one is, then stop, or error when one failed.
function settleDirect(run, ev) {
  let open = false, failedCall = false;
  for (const c of run.calls.values()) {
    if (!c.end) open = true;
    if (c.isError) failedCall = true;
  }
  run.status = open ? 'running' : (failedCall ? 'error' : 'stop');
  if (!open) run.end = ev.time || run.last;
}

// noteRetry records the retry a tool.update announces, if it is one.
function noteRetry(c, partial) {
  const r = partial && typeof partial === 'object' && partial.retry;
  if (!r || typeof r !== 'object') return false;
  c.retries.push({
    attempt: Number(r.attempt) || 0,
    reason: typeof r.reason === 'string' ? r.reason : '',
    worker: typeof r.worker === 'string' ? r.worker : '',
  });
  if (c.retries.length > MAX_RETRIES) c.retries.shift();
  return true;
}

// noteRunEvent keeps a context.compacted event in its turn of run, or a
// budget.exceeded event in run.
function noteRunEvent(run, ev) {
  if (ev.type === 'budget.exceeded') {
    run.budgets.push({ budget: String(ev.budget || ''), limit: Number(ev.limit) || 0, used: Number(ev.used) || 0,
      limit_usd: Number(ev.limit_usd) || 0, used_usd: Number(ev.used_usd) || 0, turn: ev.turn, time: ev.time });
    if (run.budgets.length > MAX_NOTES) run.budgets.shift();
    return;
  }
  turnOf(run, ev.turn).compactions.push({
    strategy: String(ev.strategy || ''), reason: String(ev.reason || ''),
    turns: Number(ev.dropped_turns) || 0, messages: Number(ev.dropped_messages) || 0,
    shortened: Number(ev.shortened_results) || 0, before: Number(ev.tokens_before) || 0, after: Number(ev.tokens_after) || 0,
  });
  const t = turnOf(run, ev.turn);
  if (t.compactions.length > MAX_NOTES) t.compactions.shift();
}

function compactionText(k) {
  const parts = [];
  if (k.turns || k.messages) parts.push('left out ' + k.turns + ' turns (' + k.messages + ' messages)');
  if (k.shortened) parts.push('shortened ' + k.shortened + ' tool results');
  if (k.before || k.after) parts.push('~' + k.before + ' → ~' + k.after + ' tokens');
  return 'context compacted' + (k.strategy ? ' (' + k.strategy + (k.reason ? ', ' + k.reason : '') + ')' : '') + (parts.length ? ': ' + parts.join(', ') : '');
}

// callState is what a call's label says it is doing: its outcome once it
// ended, else waiting for approval or running.
function callState(run, c) {
  if (c.outcome) return c.outcome === 'worker_lost' ? 'worker lost' : c.outcome;
  if (waitsForDecision(run, c)) return 'waiting for approval';
  return run.status === 'running' ? 'running' : 'unfinished';
}

// callDuration is a call's duration: its own once it ended, else the time
// since it started, growing with the clock while its run goes on.
function callDuration(run, c) {
  if (c.end) return msText(c.duration);
  const s = Date.parse(c.start);
  if (!s) return '';
  const until = run.status === 'running' ? Date.now() : Date.parse(run.end || run.last) || s;
  return msText(Math.max(0, until - s));
}

// workerLabel shows a worker's whole name/id, so that two workers never
// look the same.
function workerLabel(w) {
  return el('span', { className: 'worker', title: 'worker ' + w, 'data-worker': w }, 'worker ', el('code', {}, w));
}

// retryLines shows each retry of c: the attempt, the worker lost, why.
function retryLines(c) {
  return c.retries.map((r) => el('div', { className: 'retry', 'data-attempt': r.attempt },
    'retried: attempt ' + r.attempt + (r.worker ? ' after worker ' : ''), r.worker ? el('code', { title: r.worker }, r.worker) : '',
    r.worker ? ' was lost' : '', r.reason ? ' (' + shorten(r.reason, FOLD) + ')' : ''));
}
