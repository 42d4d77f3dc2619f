// Package objref keeps the large payloads of tool calls in a JetStream
// Object Store bucket and passes references to them: a worker puts a
// result's bytes in the bucket as it produces them (streamed in chunks,
// never held whole) and sends a ref block (agentfleet.RefBlock) in their
// place; readers open the object by its reference. An object becomes
// readable only once its last chunk is stored (the Object Store writes
// its info after the chunks), so an upload cut short, by an error or a
// killed process, leaves nothing anyone reads.
//
// Objects are named <agent>/<session>/<unique id>, so that the objects of
// a session can be counted (its size limit) and deleted with it
// (Store.DeleteSession). The runs a delete stopped are marked in the KV
// bucket ErasedBucket first (Store.MarkErased); a worker reads the mark of
// its call's run after it stores an object, and deletes the object again
// when it is there, so that a call that ends after the delete's sweep
// leaves nothing of the session.
package objref
