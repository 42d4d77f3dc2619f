// Delegation in the dashboard: a run that one agent's ask_<name> call
// started (its events carry `parent`) is shown nested under that call,
// with a link to the child's run, and the child's run links back to the
// call. The parent fields are untrusted text: a parent is kept only when
// its agent and session are tokens and its run and call ids are plain
// ids, and links are built from those alone, each part encoded.
'use strict';

const TOKEN = /^[A-Za-z0-9_-]{1,128}$/;   // an agent or session name
const PLAIN_ID = /^[A-Za-z0-9_.:-]{1,256}$/; // a run or tool call id a link may carry
const MAX_NEST = 4;                       // child runs shown inside one another, at most

// parentOf returns the parent an event names, as {agent, session, runId,
// callId}, or null when it names none or one that fails the checks.
function parentOf(ev) {
  const p = ev && ev.parent;
  if (!p || typeof p !== 'object') return null;
  const { agent, session, run_id: runId, tool_call_id: callId } = p;
  if (![agent, session].every((s) => typeof s === 'string' && TOKEN.test(s))) return null;
  if (![runId, callId].every((s) => typeof s === 'string' && PLAIN_ID.test(s))) return null;
  return { agent, session, runId, callId };
}

// childKey names a tool call of a run, for the index of child runs.
function childKey(runId, callId) { return runId + '\n' + callId; }

// noteParent records run's parent from ev, once, in the index of child
// runs by the call that made them.
function noteParent(run, ev) {
  if (run.parent) return;
  const p = parentOf(ev);
  if (!p) return;
  run.parent = p;
  const k = childKey(p.runId, p.callId);
  const ids = state.children.get(k) || [];
  if (!ids.includes(run.id)) ids.push(run.id);
  state.children.set(k, ids);
}

// runLink returns the page's address of a session, a run of it and a
// call of that run (run and call optional), from checked parts.
function runLink(agent, session, runId, callId) {
  let h = '#' + encodeURIComponent(sessionKey(agent, session));
  if (runId && PLAIN_ID.test(runId)) h += '&run=' + encodeURIComponent(runId);
  if (callId && PLAIN_ID.test(callId)) h += '&call=' + encodeURIComponent(callId);
  return h;
}

// parseHash reads an address runLink made (or a bare #agent%2Fsession):
// {key, runId, callId}.
function parseHash(hash) {
  const [first, ...rest] = hash.replace(/^#/, '').split('&');
  let key = '';
  try { key = decodeURIComponent(first); } catch { return { key: '', runId: null, callId: null }; }
  const q = new URLSearchParams(rest.join('&'));
  const runId = q.get('run'), callId = q.get('call');
  return { key, runId: runId && PLAIN_ID.test(runId) ? runId : null, callId: callId && PLAIN_ID.test(callId) ? callId : null };
}

// parentFact shows, in a child run's head, the call that asked it, as a
// link to that call in the parent's run.
function parentFact(run) {
  const p = run.parent;
  return el('span', { className: 'fact parent', 'data-parent-agent': p.agent, 'data-parent-session': p.session },
    'asked by ', el('a', { className: 'parent-link', href: runLink(p.agent, p.session, p.runId, p.callId) },
      p.agent + '/' + p.session), ' call ', el('code', {}, p.callId));
}

// renderChildren shows under call c of run the runs it started: each
// with a link to it, its status, its final text and its own calls, and
// theirs, to MAX_NEST deep.
function renderChildren(run, c, depth = 0) {
  const ids = state.children.get(childKey(run.id, c.id)) || [];
  const out = [];
  for (const id of ids) {
    const child = state.runs.get(id);
    if (!child || depth >= MAX_NEST) continue;
    const box = el('div', { className: 'child-run', 'data-run-id': child.id, 'data-agent': child.agent, 'data-session': child.session, 'data-status': child.status },
      el('div', { className: 'child-head' },
        el('a', { className: 'child-link', href: runLink(child.agent, child.session, child.id) }, child.agent + '/' + child.session),
        el('span', { className: 'status status-' + child.status }, child.status),
        el('span', { className: 'muted' }, tokenText(child))));
    const last = [...child.turns.values()].sort((a, b) => a.n - b.n).filter((t) => t.text).pop();
    if (last) box.append(el('div', { className: 'text' }, shorten(last.text, FOLD)));
    for (const cc of child.calls.values()) {
      box.append(el('div', { className: 'child-call' + (cc.isError ? ' failed' : ''), 'data-tool-call-id': cc.id },
        el('span', { className: 'name' }, cc.name), ' ', el('span', { className: 'outcome' }, cc.outcome || 'running')),
        ...renderChildren(child, cc, depth + 1));
    }
    out.push(box);
  }
  return out;
}

// focusCall scrolls to the call the address names, once, and marks it.
function focusCall(box) {
  if (!state.focusCall) return;
  for (const d of box.querySelectorAll('.tool')) {
    if (d.dataset.toolCallId !== state.focusCall) continue;
    d.classList.add('focus');
    if (state.scrollToCall) {
      state.scrollToCall = false;
      d.scrollIntoView({ block: 'center' });
    }
  }
}

// dropChild removes a run the page forgets from the index of child runs.
function dropChild(run) {
  if (!run || !run.parent) return;
  const k = childKey(run.parent.runId, run.parent.callId);
  const ids = (state.children.get(k) || []).filter((id) => id !== run.id);
  if (ids.length) state.children.set(k, ids);
  else state.children.delete(k);
}

// nestedInShown reports whether run shows nested in the run on screen:
// its parent, or its parent's parent, to MAX_NEST, is that run.
function nestedInShown(run) {
  const shown = shownRunId();
  for (let r = run, n = 0; r && r.parent && n < MAX_NEST; n++) {
    if (r.parent.runId === shown) return true;
    r = state.runs.get(r.parent.runId);
  }
  return false;
}
