package bus

import "errors"

// ErrTemporary marks an error that can pass (a store that did not answer in
// time, a lease in doubt): the input it stopped is tried again later instead
// of being rejected. Wrap an error with Temporary.
var ErrTemporary = errors.New("temporary")

// Temporary marks err as one that can pass: errors.Is(Temporary(err),
// ErrTemporary) holds, and errors.Is and As still see err.
func Temporary(err error) error { return &temporaryError{err} }

type temporaryError struct{ err error }

func (e *temporaryError) Error() string   { return e.err.Error() }
func (e *temporaryError) Unwrap() []error { return []error{ErrTemporary, e.err} }
