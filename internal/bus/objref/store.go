package objref

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/agentfleet/agentfleet"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
)

// DefaultBucket is the Object Store bucket of the fleet's payloads.
const DefaultBucket = "agentfleet_objects"

// Config configures a Store; the zero value means the defaults.
type Config struct {
	// Bucket is the Object Store bucket; default DefaultBucket.
	Bucket string
	// Replicas of the bucket when this Store creates it; default 1.
	Replicas int
	// Limits bound what calls put in it.
	Limits Limits
}

// Store is the fleet's payload bucket. It is safe for concurrent use.
type Store struct {
	js     jetstream.JetStream
	obs    jetstream.ObjectStore
	bucket string
	lim    Limits
	// replicas of the buckets this Store creates; erasedKV the bucket of
	// the runs of deleted sessions (erased.go).
	replicas int
	erasedKV erasedKV
}

// ErrNoJetStream is returned by OpenOn when the server has no JetStream:
// there is no object store, and large payloads cannot travel.
var ErrNoJetStream = errors.New("the NATS server has no JetStream, so no object store for large payloads")

// ErrNotFound is wrapped by the errors of an object that does not exist,
// or whose upload did not finish.
var ErrNotFound = jetstream.ErrObjectNotFound

// OpenOn opens the bucket on nc, creating it when it does not exist; it
// returns ErrNoJetStream when the server has no JetStream.
func OpenOn(ctx context.Context, nc *nats.Conn, cfg Config) (*Store, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("object store: %w", err)
	}
	return Open(ctx, js, cfg)
}

// Open opens the bucket through js, creating it when it does not exist.
func Open(ctx context.Context, js jetstream.JetStream, cfg Config) (*Store, error) {
	if cfg.Bucket == "" {
		cfg.Bucket = DefaultBucket
	}
	if cfg.Replicas < 1 {
		cfg.Replicas = 1
	}
	obs, err := js.ObjectStore(ctx, cfg.Bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		obs, err = js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{
			Bucket: cfg.Bucket, Description: "agentfleet: large payloads of tool calls",
			Storage: jetstream.FileStorage, Replicas: cfg.Replicas,
		})
		if errors.Is(err, jetstream.ErrBucketExists) {
			obs, err = js.ObjectStore(ctx, cfg.Bucket)
		}
	}
	switch {
	case errors.Is(err, jetstream.ErrJetStreamNotEnabled), errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount):
		return nil, ErrNoJetStream
	case err != nil:
		return nil, fmt.Errorf("object store %s: %w", cfg.Bucket, err)
	}
	return &Store{js: js, obs: obs, bucket: cfg.Bucket, lim: cfg.Limits.WithDefaults(), replicas: cfg.Replicas}, nil
}

// Bucket returns the bucket's name.
func (s *Store) Bucket() string { return s.bucket }

// Limits returns the limits the Store applies.
func (s *Store) Limits() Limits { return s.lim }

// SessionPrefix is the prefix of the names of the objects of a session.
func SessionPrefix(agent, session string) string { return agent + "/" + session + "/" }

// Meta says what an object holds.
type Meta struct {
	// Agent and Session own the object: it is counted against the
	// session's limit and deleted with it.
	Agent, Session string
	// MIMEType is what the bytes are; default application/octet-stream.
	MIMEType string
	// Name is what the bytes are called (a file name), optionally.
	Name string
	// CallID is the tool call that made it, for whoever reads the bucket.
	CallID string
}

// Put streams r into a new object of the session, at most max bytes (the
// room the limits leave, see Limits.Room), and returns the ref block of
// it. limit names the bound in the error of an object larger than max,
// which wraps ErrTooLarge; nothing of such an object, or of one whose
// reader failed, stays readable.
func (s *Store) Put(ctx context.Context, meta Meta, r io.Reader, max int64, limit string) (agentfleet.Content, error) {
	if meta.MIMEType == "" {
		meta.MIMEType = "application/octet-stream"
	}
	name := SessionPrefix(meta.Agent, meta.Session) + nuid.Next()
	cr := &capped{r: r, left: max}
	info, err := s.obs.Put(ctx, jetstream.ObjectMeta{
		Name: name, Description: meta.Name,
		Metadata: map[string]string{"mime_type": meta.MIMEType, "file_name": meta.Name, "call_id": meta.CallID},
	}, cr)
	if cr.over {
		return agentfleet.Content{}, fmt.Errorf("object of more than %d bytes, over %s: %w", max, limit, ErrTooLarge)
	}
	if err != nil {
		return agentfleet.Content{}, fmt.Errorf("object store %s: put %s: %w", s.bucket, name, err)
	}
	sha, err := hexDigest(info.Digest)
	if err != nil {
		return agentfleet.Content{}, err
	}
	return agentfleet.RefBlock(agentfleet.RefScheme+s.bucket+"/"+name, int64(info.Size), sha, meta.MIMEType, meta.Name), nil
}

// Info is what the store says of an object: its size and SHA-256 (hex),
// read from the object's info, not from whoever sent its reference.
type Info struct {
	Name     string
	Size     int64
	SHA256   string
	MIMEType string
	FileName string
}

// Stat returns the info of the object of ref, which must be in this
// Store's bucket; an object whose upload did not finish is not found.
func (s *Store) Stat(ctx context.Context, ref string) (Info, error) {
	name, err := s.name(ref)
	if err != nil {
		return Info{}, err
	}
	oi, err := s.obs.GetInfo(ctx, name)
	if err != nil {
		return Info{}, fmt.Errorf("object %s: %w", ref, err)
	}
	return infoOf(oi)
}

// Open returns a reader of the object of ref, streamed chunk by chunk; its
// Read fails at the end when the bytes do not match the object's digest.
func (s *Store) Open(ctx context.Context, ref string) (io.ReadCloser, Info, error) {
	name, err := s.name(ref)
	if err != nil {
		return nil, Info{}, err
	}
	res, err := s.obs.Get(ctx, name)
	if err != nil {
		return nil, Info{}, fmt.Errorf("object %s: %w", ref, err)
	}
	oi, err := res.Info()
	if err != nil {
		res.Close()
		return nil, Info{}, fmt.Errorf("object %s: %w", ref, err)
	}
	info, err := infoOf(oi)
	if err != nil {
		res.Close()
		return nil, Info{}, err
	}
	return res, info, nil
}

// Head returns the first n bytes of the object of ref (fewer when it is
// smaller), read chunk by chunk from the bucket's stream, and the object's
// info: it fetches only the chunks that hold them, where Open streams the
// whole object to the reader. The digest is not checked, since it covers
// the whole object.
func (s *Store) Head(ctx context.Context, ref string, n int64) ([]byte, Info, error) {
	name, err := s.name(ref)
	if err != nil {
		return nil, Info{}, err
	}
	oi, err := s.obs.GetInfo(ctx, name)
	if err != nil {
		return nil, Info{}, fmt.Errorf("object %s: %w", ref, err)
	}
	info, err := infoOf(oi)
	if err != nil {
		return nil, Info{}, err
	}
	n = min(n, info.Size)
	stream, err := s.js.Stream(ctx, "OBJ_"+s.bucket)
	if err != nil {
		return nil, Info{}, fmt.Errorf("object store %s: %w", s.bucket, err)
	}
	head := make([]byte, 0, n) // n is the caller's bound, at most the object's size
	subject := "$O." + s.bucket + ".C." + oi.NUID
	for seq := uint64(1); int64(len(head)) < n; {
		m, err := stream.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(subject))
		if err != nil {
			return nil, Info{}, fmt.Errorf("object %s: chunk after %d bytes: %w", ref, len(head), err)
		}
		head = append(head, m.Data[:min(int64(len(m.Data)), n-int64(len(head)))]...)
		seq = m.Sequence + 1
	}
	return head, info, nil
}

// SessionBytes returns the bytes the objects of a session hold.
func (s *Store) SessionBytes(ctx context.Context, agent, session string) (int64, error) {
	var n int64
	err := s.each(ctx, SessionPrefix(agent, session), func(oi *jetstream.ObjectInfo) error {
		n += int64(oi.Size)
		return nil
	})
	return n, err
}

// DeleteSession deletes every object of a session and returns how many
// it deleted. It is what deleting a session calls: its history goes, and
// so do the payloads its tools returned.
func (s *Store) DeleteSession(ctx context.Context, agent, session string) (int, error) {
	n := 0
	err := s.each(ctx, SessionPrefix(agent, session), func(oi *jetstream.ObjectInfo) error {
		if err := s.obs.Delete(ctx, oi.Name); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
			return fmt.Errorf("object store %s: delete %s: %w", s.bucket, oi.Name, err)
		}
		n++
		return nil
	})
	return n, err
}

// each calls f for each object whose name starts with prefix.
func (s *Store) each(ctx context.Context, prefix string, f func(*jetstream.ObjectInfo) error) error {
	list, err := s.obs.List(ctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("object store %s: list: %w", s.bucket, err)
	}
	for _, oi := range list {
		if !oi.Deleted && strings.HasPrefix(oi.Name, prefix) {
			if err := f(oi); err != nil {
				return err
			}
		}
	}
	return nil
}

// name returns the object name of ref, which must be in s's bucket.
func (s *Store) name(ref string) (string, error) {
	bucket, name, err := agentfleet.ParseRef(ref)
	if err != nil {
		return "", err
	}
	if bucket != s.bucket {
		return "", fmt.Errorf("$ref %s: bucket %q is not the fleet's, %q", ref, bucket, s.bucket)
	}
	return name, nil
}

func infoOf(oi *jetstream.ObjectInfo) (Info, error) {
	sha, err := hexDigest(oi.Digest)
	if err != nil {
		return Info{}, fmt.Errorf("object %s: %w", oi.Name, err)
	}
	return Info{Name: oi.Name, Size: int64(oi.Size), SHA256: sha, MIMEType: oi.Metadata["mime_type"], FileName: oi.Metadata["file_name"]}, nil
}

// hexDigest turns the Object Store's digest ("SHA-256=<base64url>") into
// lowercase hex.
func hexDigest(d string) (string, error) {
	b, err := jetstream.DecodeObjectDigest(d)
	if err != nil || len(b) != 32 {
		return "", fmt.Errorf("digest %q is not a SHA-256", d)
	}
	return hex.EncodeToString(b), nil
}

// capped reads r until left bytes are read; one more byte sets over and
// fails the read, so that the Object Store purges what it stored.
type capped struct {
	r    io.Reader
	left int64
	over bool
}

func (c *capped) Read(p []byte) (int, error) {
	if int64(len(p)) > c.left+1 {
		p = p[:c.left+1]
	}
	n, err := c.r.Read(p)
	if int64(n) > c.left {
		c.over = true
		return 0, ErrTooLarge
	}
	c.left -= int64(n)
	return n, err
}
