package bus

import "errors"

// ErrDeleted is wrapped by the refusal of input to a session that was
// deleted while the input waited (internal/bus/erase): such a refusal
// names the input's subject and never carries its payload, which the
// delete removed everywhere else.
var ErrDeleted = errors.New("the session was deleted")
