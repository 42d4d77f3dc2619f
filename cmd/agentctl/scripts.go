package main

// The subcommands of tools that manage the fleet's scripted tools:
// export, import, history and delete. They work on the KV bucket of
// scriptfleet.Store directly; import stores a definition with script.Write,
// which is what write_tool does.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/scriptfleet"
	"github.com/agentfleet/agentfleet/internal/script"
	"github.com/agentfleet/agentfleet/internal/tools"
)

// maxDefinitionBytes bounds a definition file; the KV bucket refuses values
// much larger than this anyway.
const maxDefinitionBytes = 4 << 20

// withScripts opens the store of scripted tools and runs f with it. A
// permission violation ends f and is its error; an interrupt ends it
// without one.
func (m *Main) withScripts(ctx context.Context, f func(ctx context.Context, store *scriptfleet.Store) error) error {
	ctx, done := m.conn.UntilDenied(ctx)
	defer done()
	store, err := scriptfleet.OpenStore(ctx, m.conn.NATS())
	if err == nil {
		err = f(ctx, store)
	}
	if err != nil && ctx.Err() != nil {
		if cause := context.Cause(ctx); errors.Is(cause, context.Canceled) {
			return nil // interrupted
		} else if !errors.Is(cause, context.DeadlineExceeded) {
			return cause // refused by the server
		}
	}
	return err
}

// exportTool prints the current definition of a scripted tool, or the
// revision --revision names, as indented JSON.
func (m *Main) exportTool(ctx context.Context) error {
	return m.withScripts(ctx, func(ctx context.Context, store *scriptfleet.Store) error {
		name := m.pos[0]
		var def *script.Definition
		if m.Revision == 0 {
			d, err := store.Get(ctx, name)
			if errors.Is(err, script.ErrNotFound) {
				return m.notStored(ctx, store, name)
			}
			if err != nil {
				return err
			}
			def = d
		} else {
			hist, err := store.History(ctx, name)
			if errors.Is(err, script.ErrNotFound) {
				return m.notStored(ctx, store, name)
			}
			if err != nil {
				return err
			}
			i := slices.IndexFunc(hist, func(r scriptfleet.Revision) bool { return r.Revision == m.Revision })
			switch {
			case i < 0:
				kept := make([]string, len(hist))
				for i, r := range hist {
					kept[i] = strconv.FormatUint(r.Revision, 10)
				}
				return fmt.Errorf("tool %s has no revision %d: the bucket keeps its revisions %s (revisions are numbered across all the tools of the bucket; see agentctl tools history %s)", name, m.Revision, strings.Join(kept, ", "), name)
			case hist[i].Deleted:
				return fmt.Errorf("revision %d of tool %s is its deletion, which has no definition; see agentctl tools history %s", m.Revision, name, name)
			}
			def = hist[i].Definition
		}
		return writeJSON(m.Stdout, exported(def))
	})
}

// exported returns def as export prints it: without the fields that the
// store sets, so that exporting the same definition twice gives the same
// file, and importing it back gives the same definition.
func exported(def *script.Definition) *script.Definition {
	d := *def
	d.Revision, d.Updated, d.Replace = 0, time.Time{}, false
	return &d
}

// writeJSON writes v as indented JSON, with <, > and & as they are, since
// the scripts are read by people.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// notStored explains why the store has no current definition of name:
// deleted, not a scripted tool, or unknown.
func (m *Main) notStored(ctx context.Context, store *scriptfleet.Store, name string) error {
	if hist, err := store.History(ctx, name); err == nil && len(hist) > 0 {
		last := hist[len(hist)-1]
		return fmt.Errorf("the scripted tool %s was deleted (revision %d, %s); agentctl tools history %s lists its earlier revisions", name, last.Revision, formatTime(last.Time), name)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if found, err := m.discover(ctx); err == nil {
		if t, ok := found[name]; ok {
			return fmt.Errorf("tool %s is not a scripted tool (it is served by %s): only the tools written with write_tool or agentctl tools import are stored", name, plural(len(t.Workers), "worker"))
		}
	}
	return fmt.Errorf("there is no scripted tool named %s", name)
}

// importTool reads a definition file and stores it as write_tool would.
func (m *Main) importTool(ctx context.Context) error {
	file := m.pos[0]
	var (
		data []byte
		err  error
	)
	if file == "-" {
		file = "standard input"
		data, err = io.ReadAll(io.LimitReader(m.Stdin, maxDefinitionBytes+1))
	} else {
		data, err = os.ReadFile(file)
	}
	if err != nil {
		return err
	}
	if len(data) > maxDefinitionBytes {
		return fmt.Errorf("%s: more than %d bytes: not a tool definition", file, maxDefinitionBytes)
	}
	def, err := decodeDefinitionFile(data)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	def.Replace = def.Replace || m.Replace
	return m.withScripts(ctx, func(ctx context.Context, store *scriptfleet.Store) error {
		// script.Write refuses this too; saying it here names the flag.
		existing, err := store.Get(ctx, def.Name)
		switch {
		case errors.Is(err, script.ErrNotFound):
			existing = nil
		case err != nil:
			return err
		case !def.Replace:
			return fmt.Errorf("%s: a scripted tool named %s already exists (revision %d of %s); give --replace, or \"replace\": true in the file, to replace it", file, def.Name, existing.Revision, formatTime(existing.Updated))
		}
		found, err := m.discover(ctx)
		if err != nil {
			return err
		}
		if len(found) == 0 {
			fmt.Fprintf(m.Stderr, "warning: no tool worker of prefix %q answered $SRV.INFO, so the name %s was checked against the scripted tools only, and no worker serves it yet\n", m.subjects.Prefix, def.Name)
		}
		fleet := func() []agentfleet.ToolDef {
			defs := make([]agentfleet.ToolDef, 0, len(found))
			for _, n := range slices.Sorted(maps.Keys(found)) {
				defs = append(defs, found[n].ToolDef)
			}
			return defs
		}
		// agentctl is the operator's own process, not the orchestrator:
		// it may run the dry run itself, under the default limits, and
		// so import works before any script worker runs.
		w, err := script.Write(ctx, store, fleet, script.LocalDryRun(script.Env{}), def)
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			msg := strings.TrimPrefix(err.Error(), script.WriteToolName+": ")
			if ex := scriptExcerpt(def, msg); ex != "" {
				msg += "\n" + ex
			}
			return fmt.Errorf("%s: %s", file, msg)
		}
		// Stored is not served: say so when no worker runs scripts.
		warning := m.scriptWorkerWarning(ctx, def.Name)
		if warning != "" {
			fmt.Fprintf(m.Stderr, "warning: %s\n", warning)
		}
		if m.JSON {
			out := struct {
				Name     string `json:"name"`
				Revision uint64 `json:"revision"`
				Replaced uint64 `json:"replaced,omitempty"`
				Note     string `json:"note,omitempty"`
				Warning  string `json:"warning,omitempty"`
			}{Name: def.Name, Revision: w.Revision, Note: w.Note, Warning: warning}
			if existing != nil && w.Replaced {
				out.Replaced = existing.Revision
			}
			return writeJSON(m.Stdout, out)
		}
		if warning != "" {
			fmt.Fprintf(m.Stdout, "Tool %s imported (revision %d), stored but not served: no script worker\n", def.Name, w.Revision)
		} else {
			fmt.Fprintf(m.Stdout, "Tool %s imported (revision %d)\n", def.Name, w.Revision)
		}
		if w.Note != "" {
			fmt.Fprintf(m.Stderr, "note: %s\n", w.Note)
		}
		return nil
	})
}

// decodeDefinitionFile reads a definition as write_tool takes it: a JSON
// object that write_tool's input schema accepts. The fields that the store
// sets (revision, updated), which an export never holds, are ignored. An
// input_schema object keeps the order of its keys.
func decodeDefinitionFile(data []byte) (*script.Definition, error) {
	var obj map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&obj); err != nil {
		if se, ok := errors.AsType[*json.SyntaxError](err); ok {
			return nil, fmt.Errorf("%s: not JSON: %v", jsonPosition(data, se.Offset), err)
		}
		if errors.Is(err, io.EOF) {
			return nil, errors.New("empty: want a tool definition, a JSON object")
		}
		if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok && te.Field == "" {
			return nil, fmt.Errorf("not a tool definition: want a JSON object, got %s %s", article(te.Value), te.Value)
		}
		return nil, fmt.Errorf("not a tool definition: want a JSON object: %v", err)
	}
	if dec.More() {
		return nil, errors.New("holds more than one JSON value: want one tool definition")
	}
	if obj == nil {
		return nil, errors.New("not a tool definition: want a JSON object, got null")
	}
	delete(obj, "revision")
	delete(obj, "updated")
	schema, err := tools.CompileSchema(script.WriteTool(nil, nil, nil).InputSchema)
	if err != nil {
		return nil, err
	}
	if err := schema.Validate(obj); err != nil {
		return nil, fmt.Errorf("not a tool definition as write_tool takes it: %s", strings.TrimPrefix(err.Error(), "arguments invalid: "))
	}
	def, err := script.DecodeDefinition(obj)
	if err != nil {
		return nil, err
	}
	var raw struct {
		InputSchema json.RawMessage `json:"input_schema"`
	}
	var compact bytes.Buffer
	if json.Unmarshal(data, &raw) == nil && bytes.HasPrefix(bytes.TrimSpace(raw.InputSchema), []byte("{")) && json.Compact(&compact, raw.InputSchema) == nil {
		def.InputSchema = compact.Bytes()
	}
	return def, nil
}

// article returns "an" before a vowel, else "a".
func article(word string) string {
	if word != "" && strings.ContainsRune("aeiou", rune(word[0])) {
		return "an"
	}
	return "a"
}

// jsonPosition returns the line and column of a byte offset in data, as
// "line 3, column 14".
func jsonPosition(data []byte, offset int64) string {
	offset = min(max(offset, 0), int64(len(data)))
	before := data[:offset]
	line := bytes.Count(before, []byte("\n")) + 1
	col := utf8.RuneCount(before[bytes.LastIndexByte(before, '\n')+1:]) + 1
	return fmt.Sprintf("line %d, column %d", line, col)
}

// scriptPosRE finds the first script position in an error of script.Write:
// "code:3:7".
var scriptPosRE = regexp.MustCompile(`\b(code|validate_code|prepare_code):(\d+):(\d+)\b`)

// scriptExcerpt returns the line of def's script that the error message
// msg points at, with a caret under the column, or "" when msg names no
// position. In the file the script is one JSON string, where line numbers
// are hard to follow. A blank line (where a script that ends too early
// fails) comes with the line before it.
func scriptExcerpt(def *script.Definition, msg string) string {
	mm := scriptPosRE.FindStringSubmatch(msg)
	if mm == nil {
		return ""
	}
	src := map[string]string{"code": def.Code, "validate_code": def.ValidateCode, "prepare_code": def.PrepareCode}[mm[1]]
	line, _ := strconv.Atoi(mm[2])
	col, _ := strconv.Atoi(mm[3])
	lines := strings.Split(src, "\n")
	if line < 1 || line > len(lines) {
		return ""
	}
	text := strings.TrimRight(lines[line-1], "\r")
	head := fmt.Sprintf("  %s line %d: ", mm[1], line)
	out := head + text
	if strings.TrimSpace(text) == "" && line > 1 {
		prev := fmt.Sprintf("  %s line %d: ", mm[1], line-1)
		out = prev + strings.Repeat(" ", len(head)-len(prev)) + strings.TrimRight(lines[line-2], "\r") + "\n" + out
	}
	if col >= 1 && col <= utf8.RuneCountInString(text)+1 {
		// Keep the tabs of the line, so that the caret lines up.
		var pad strings.Builder
		pad.WriteString(strings.Repeat(" ", len(head)))
		for i, r := range []rune(text) {
			if i == col-1 {
				break
			}
			if r == '\t' {
				pad.WriteByte('\t')
			} else {
				pad.WriteByte(' ')
			}
		}
		out += "\n" + pad.String() + "^"
	}
	return out
}

// toolHistory lists the revisions of a scripted tool that the bucket
// keeps, oldest first.
func (m *Main) toolHistory(ctx context.Context) error {
	return m.withScripts(ctx, func(ctx context.Context, store *scriptfleet.Store) error {
		name := m.pos[0]
		hist, err := store.History(ctx, name)
		if errors.Is(err, script.ErrNotFound) {
			return m.notStored(ctx, store, name)
		}
		if err != nil {
			return err
		}
		if m.JSON {
			type revision struct {
				Revision   uint64             `json:"revision"`
				Time       time.Time          `json:"time"`
				Deleted    bool               `json:"deleted,omitempty"`
				Definition *script.Definition `json:"definition,omitempty"`
			}
			out := make([]revision, len(hist))
			for i, r := range hist {
				out[i] = revision{Revision: r.Revision, Time: r.Time.UTC(), Deleted: r.Deleted}
				if r.Definition != nil {
					out[i].Definition = exported(r.Definition)
				}
			}
			return writeJSON(m.Stdout, out)
		}
		width := len(strconv.FormatUint(hist[len(hist)-1].Revision, 10))
		for i, r := range hist {
			what := "deleted"
			if !r.Deleted {
				what = describeDefinition(r.Definition)
				if i == len(hist)-1 {
					what += "  (current)"
				}
			}
			fmt.Fprintf(m.Stdout, "%*d  %s  %s\n", width, r.Revision, formatTime(r.Time), what)
		}
		return nil
	})
}

// describeDefinition says in one short line what a revision is.
func describeDefinition(d *script.Definition) string {
	s := d.Label
	if d.Description != "" {
		if s != "" {
			s += ": "
		}
		s += d.Description
	}
	s = shorten(oneLine(s), 80)
	lines := strings.Count(strings.TrimRight(d.Code, "\n"), "\n") + 1
	return fmt.Sprintf("%s [%s of code]", s, plural(lines, "line"))
}

// formatTime formats a time of the store in the local time zone.
func formatTime(t time.Time) string {
	return t.Local().Format("2006-01-02 15:04:05 MST")
}

// deleteTool deletes a scripted tool; the workers stop serving it within a
// second, and its revisions stay in the bucket's history.
func (m *Main) deleteTool(ctx context.Context) error {
	return m.withScripts(ctx, func(ctx context.Context, store *scriptfleet.Store) error {
		name := m.pos[0]
		cur, err := store.Get(ctx, name)
		if errors.Is(err, script.ErrNotFound) {
			return m.notStored(ctx, store, name)
		}
		if err != nil {
			return err
		}
		if err := store.Delete(ctx, name); err != nil {
			if errors.Is(err, script.ErrConflict) {
				return fmt.Errorf("the scripted tool %s was changed by someone else just now (it was at revision %d); look at agentctl tools history %s and delete it again", name, cur.Revision, name)
			}
			return err
		}
		if m.JSON {
			return writeJSON(m.Stdout, map[string]any{"name": name, "deleted_revision": cur.Revision})
		}
		fmt.Fprintf(m.Stdout, "Tool %s deleted (its last revision was %d)\n", name, cur.Revision)
		return nil
	})
}
