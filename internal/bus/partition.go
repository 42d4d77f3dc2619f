package bus

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
)

// Partitions is the number of partitions the sessions of a fleet are spread
// over. It is fixed: the input stream's subject transform and the stored
// subjects depend on it, so changing it would strand stored input.
const Partitions = 64

// Partition returns the partition of a session: FNV-1a (32 bits) of the
// agent and session tokens, modulo Partitions. It is the hash of the NATS
// server's partition() subject mapping, which computes the same number when
// it stores input, so every orchestrator and the server agree.
func Partition(agent, session string) int {
	h := fnv.New32a()
	h.Write([]byte(agent))
	h.Write([]byte(session))
	return int(h.Sum32() % Partitions)
}

// InputTransform returns the source and destination of the input stream's
// subject transform: <prefix>.<kind>.<agent>.<session> is stored as
// <prefix>.<kind>.<partition>.<agent>.<session>.
func (s Subjects) InputTransform() (src, dest string) {
	return s.Prefix + ".*.*.*", s.Prefix + ".{{wildcard(1)}}.{{partition(" + strconv.Itoa(Partitions) + ",2,3)}}.{{wildcard(2)}}.{{wildcard(3)}}"
}

// ApproveTransform returns the source and destination of the transform
// under which the input stream sources the stream of approval decisions:
// <prefix>.approve.<agent>.<session> is stored as
// <prefix>.approve.<partition>.<agent>.<session>, the partition the input
// transform gives the session.
func (s Subjects) ApproveTransform() (src, dest string) {
	return s.ClientWildcard(KindApprove), s.Prefix + "." + KindApprove + ".{{partition(" + strconv.Itoa(Partitions) + ",1,2)}}.{{wildcard(1)}}.{{wildcard(2)}}"
}

// StoredPartition returns the filter of the stored input of one partition.
func (s Subjects) StoredPartition(p int) string {
	return s.Prefix + ".*." + strconv.Itoa(p) + ".*.*"
}

// StoredSession returns the filter of the stored input of one session.
func (s Subjects) StoredSession(agent, session string) string {
	return s.Prefix + ".*." + strconv.Itoa(Partition(agent, session)) + "." + agent + "." + session
}

// ParseStored splits a stored input subject into kind, agent and session,
// and checks that its partition token is the session's.
func (s Subjects) ParseStored(subject string) (kind, agent, session string, err error) {
	rest, ok := strings.CutPrefix(subject, s.Prefix+".")
	if !ok {
		return "", "", "", fmt.Errorf("subject %q is not under prefix %q", subject, s.Prefix)
	}
	parts := strings.Split(rest, ".")
	if len(parts) != 4 {
		return "", "", "", fmt.Errorf("stored subject %q: want %s.<kind>.<partition>.<agent>.<session>", subject, s.Prefix)
	}
	kind, agent, session, err = s.ParseClient(s.Prefix + "." + parts[0] + "." + parts[2] + "." + parts[3])
	if err != nil {
		return "", "", "", err
	}
	if want := strconv.Itoa(Partition(agent, session)); parts[1] != want {
		return "", "", "", fmt.Errorf("stored subject %q: partition %s, the session's is %s", subject, parts[1], want)
	}
	return kind, agent, session, nil
}
