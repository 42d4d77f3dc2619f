// Package model is the fault-injection harness's model: an
// OpenAI-compatible chat completions server whose answer is a pure
// function of the request (failure injection aside):
//
//   - the last user message reads "task <msgid>";
//   - if no assistant message with tool calls follows it, the model asks for
//     echo {"text": msgid}, sleep {"ms": N} (N from a hash of msgid, 10–400)
//     and, for about one message in three, ledger {"arg": msgid}, with call
//     ids "call_<msgid>_<i>"; when the request offers ask_helper, about
//     one message in four also asks agent helper "task <msgid>.c" (a
//     child's task delegates no further);
//   - otherwise it answers "answer <msgid>: " and the text of every tool
//     result after the last user message, in order, joined by " | ".
//
// It imports only the standard library: the harness starts it, and its
// checker asks it what a run must have answered.
package model
