package ingest

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/joinery/joinery/internal/bearer"
	"github.com/joinery/joinery/internal/utf8json"
	"github.com/joinery/joinery/sinks/deadletter/reason"
)

// Defaults for Config.
const (
	DefaultMaxBodyBytes = 1 << 20
	DefaultMaxInflight  = 64
	DefaultBodyTimeout  = 10 * time.Second
)

// Reasons a record of a request is refused (RecordError.Reason), in the
// vocabulary of the node's dead letters and its joinery_rejected_total.
const (
	// ReasonBadUTF8: the record holds bytes that are not UTF-8, or a \u
	// escape of an unpaired UTF-16 surrogate (a key would be silently
	// rewritten to U+FFFD by a JSON decoder, merging distinct keys).
	ReasonBadUTF8 = string(reason.BadUTF8)
	// ReasonDuplicateField: an object of the record names a field twice
	// (decoders disagree on which one wins).
	ReasonDuplicateField = string(reason.DuplicateField)
)

// RecordError is why one record of a request was refused; the request is
// answered 400 with {"error", "reason", "record"} and nothing is appended.
type RecordError struct {
	Record int // 1-based, among the request's records
	Reason string
	Msg    string
}

func (e *RecordError) Error() string {
	return fmt.Sprintf("ingest: record %d: %s: %s", e.Record, e.Reason, e.Msg)
}

// Content types accepted.
const (
	ContentTypeJSON   = "application/json"
	ContentTypeNDJSON = "application/x-ndjson"
)

// RetryAfterSeconds is the Retry-After of 429 and 503 answers.
const RetryAfterSeconds = 1

// Appender appends entries to a log.
type Appender interface {
	// Append appends one entry per value, in order, and returns nil only
	// once the log acknowledged all of them. On error a prefix may have been
	// appended. It may be called concurrently. values and their bytes are
	// not retained after it returns.
	Append(ctx context.Context, values [][]byte) error
}

// Config configures Handler. The zero value of an optional field means its
// default.
type Config struct {
	// Appender receives the entries. Required.
	Appender Appender
	// MaxBodyBytes bounds a request body. Default DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// MaxInflight bounds the requests being appended at once; more are
	// refused with 429. A request takes its slot only once its whole body
	// is read and checked, so slow clients cannot hold slots. Default
	// DefaultMaxInflight.
	MaxInflight int
	// BodyTimeout bounds reading one request's body; a client slower than
	// that gets 408. Default DefaultBodyTimeout.
	BodyTimeout time.Duration
	// Token, when set, is the bearer token every request must carry
	// ("Authorization: Bearer <Token>", the scheme in any case); others,
	// a bare token without the scheme included, get 401.
	Token string
	// OnRefused, when set, is called once per request refused for its
	// contents, with the reason: ReasonBadUTF8, ReasonDuplicateField or
	// ReasonNotJSON (a node counts them in joinery_rejected_total).
	OnRefused func(reason string)
}

// ReasonNotJSON is OnRefused's reason for a body that is not valid JSON
// (the decoder's not-json).
const ReasonNotJSON = string(reason.NotJSON)

// Validate reports every problem with c at once, naming each field.
func (c Config) Validate() error {
	var errs []error
	if c.Appender == nil {
		errs = append(errs, errors.New("ingest: Appender is required"))
	}
	if c.MaxBodyBytes < 0 {
		errs = append(errs, fmt.Errorf("ingest: MaxBodyBytes %d is negative", c.MaxBodyBytes))
	}
	if c.MaxInflight < 0 {
		errs = append(errs, fmt.Errorf("ingest: MaxInflight %d is negative", c.MaxInflight))
	}
	if c.BodyTimeout < 0 {
		errs = append(errs, fmt.Errorf("ingest: BodyTimeout %v is negative", c.BodyTimeout))
	}
	return errors.Join(errs...)
}

// handler serves ingest requests.
type handler struct {
	cfg      Config
	inflight chan struct{} // one token per request in progress
}

// Handler returns the ingest HTTP handler (see the package doc for the
// protocol). It is safe for concurrent use. Call cfg.Validate first: a
// handler built from an invalid Config answers every request with 500.
func Handler(cfg Config) http.Handler {
	if err := cfg.Validate(); err != nil {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			writeError(w, http.StatusInternalServerError, err.Error())
		})
	}
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.MaxInflight == 0 {
		cfg.MaxInflight = DefaultMaxInflight
	}
	if cfg.BodyTimeout == 0 {
		cfg.BodyTimeout = DefaultBodyTimeout
	}
	return &handler{cfg: cfg, inflight: make(chan struct{}, cfg.MaxInflight)}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", ContentTypeJSON)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, "ingest: use POST")
		return
	}
	mediaType, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || (mediaType != ContentTypeJSON && mediaType != ContentTypeNDJSON) {
		writeError(w, http.StatusUnsupportedMediaType,
			fmt.Sprintf("ingest: Content-Type %q: want %s or %s", r.Header.Get("Content-Type"), ContentTypeJSON, ContentTypeNDJSON))
		return
	}
	if h.cfg.Token != "" {
		if subtle.ConstantTimeCompare([]byte(bearer.Token(r)), []byte(h.cfg.Token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="joinery-ingest"`)
			writeError(w, http.StatusUnauthorized, "ingest: missing or wrong bearer token")
			return
		}
	}
	// The body is read (under a deadline) and checked before an in-flight
	// slot is taken: a client that sends headers and then nothing holds a
	// goroutine and a connection for BodyTimeout at most, never a slot.
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(h.cfg.BodyTimeout)) // unsupported writers (tests) read without one
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.cfg.MaxBodyBytes))
	_ = rc.SetReadDeadline(time.Time{})
	if err != nil {
		var tooBig *http.MaxBytesError
		var ne net.Error
		switch {
		case errors.As(err, &tooBig):
			writeError(w, http.StatusRequestEntityTooLarge,
				fmt.Sprintf("ingest: body over %d bytes", h.cfg.MaxBodyBytes))
		case errors.As(err, &ne) && ne.Timeout(), errors.Is(err, os.ErrDeadlineExceeded):
			w.Header().Set("Connection", "close")
			writeError(w, http.StatusRequestTimeout, fmt.Sprintf("ingest: body not received within %v", h.cfg.BodyTimeout))
		default:
			writeError(w, http.StatusBadRequest, "ingest: read body: "+err.Error())
		}
		return
	}
	var values [][]byte
	if mediaType == ContentTypeNDJSON {
		values, err = SplitNDJSON(body)
	} else {
		values, err = SplitJSON(body)
	}
	if err == nil {
		err = CheckRecords(values)
	}
	if err != nil {
		var re *RecordError
		if h.cfg.OnRefused != nil {
			reason := ReasonNotJSON
			if errors.As(err, &re) {
				reason = re.Reason
			}
			h.cfg.OnRefused(reason)
		}
		if errors.As(err, &re) {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": err.Error(), "reason": re.Reason, "record": re.Record})
			return
		}
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	select {
	case h.inflight <- struct{}{}:
		defer func() { <-h.inflight }()
	default:
		w.Header().Set("Retry-After", strconv.Itoa(RetryAfterSeconds))
		writeError(w, http.StatusTooManyRequests,
			fmt.Sprintf("ingest: %d requests in progress, retry later", h.cfg.MaxInflight))
		return
	}
	if len(values) > 0 {
		if err := h.cfg.Appender.Append(r.Context(), values); err != nil {
			w.Header().Set("Retry-After", strconv.Itoa(RetryAfterSeconds))
			writeError(w, http.StatusServiceUnavailable, "ingest: append: "+err.Error())
			return
		}
	}
	writeJSON(w, http.StatusAccepted, map[string]int{"appended": len(values)})
}

// lineOf returns the 1-based line of byte offset off in b.
func lineOf(b []byte, off int64) int {
	off = min(max(off, 0), int64(len(b)))
	return bytes.Count(b[:off], []byte("\n")) + 1
}

// SplitJSON splits an application/json body into entries: the elements of a
// top-level array, or else the one value. Entries are subslices of body. It
// fails, naming the line, for invalid JSON or data after the value.
func SplitJSON(body []byte) ([][]byte, error) {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	var raw json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&raw); err != nil {
		return nil, jsonError(body, dec, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("ingest: line %d: data after the JSON value", lineOf(body, dec.InputOffset()))
	}
	if len(trimmed) == 0 || trimmed[0] != '[' {
		return [][]byte{bytes.TrimSpace(body)}, nil
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	values := make([][]byte, len(elems))
	for i, e := range elems {
		values[i] = e
	}
	return values, nil
}

// jsonError names the line of a decoding error.
func jsonError(body []byte, dec *json.Decoder, err error) error {
	var syn *json.SyntaxError
	switch {
	case errors.As(err, &syn):
		return fmt.Errorf("ingest: line %d: invalid JSON: %v", lineOf(body, syn.Offset), err)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("ingest: line %d: invalid JSON: unexpected end of input", lineOf(body, int64(len(body))))
	}
	return fmt.Errorf("ingest: line %d: invalid JSON: %v", lineOf(body, dec.InputOffset()), err)
}

// SplitNDJSON splits an application/x-ndjson body into entries, one per
// non-blank line (a trailing \r is dropped). Entries are subslices of body.
// It fails, naming the line, when a line is not one valid JSON value.
func SplitNDJSON(body []byte) ([][]byte, error) {
	var values [][]byte
	for n := 1; len(body) > 0; n++ {
		line, rest, _ := bytes.Cut(body, []byte("\n"))
		body = rest
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if !json.Valid(line) {
			return nil, fmt.Errorf("ingest: line %d: invalid JSON", n)
		}
		values = append(values, line)
	}
	return values, nil
}

// CheckRecords refuses the first record that is not UTF-8 or escapes an
// unpaired UTF-16 surrogate in a string (\ud800k; ReasonBadUTF8, see
// internal/utf8json) or whose objects repeat a field (ReasonDuplicateField), as a
// *RecordError. values are valid JSON (SplitJSON, SplitNDJSON).
func CheckRecords(values [][]byte) error {
	for i, v := range values {
		if err := utf8json.Check(v); err != nil {
			return &RecordError{Record: i + 1, Reason: ReasonBadUTF8, Msg: "the record is not valid UTF-8 once decoded: " + err.Error()}
		}
		if field, dup := duplicateField(v); dup {
			return &RecordError{Record: i + 1, Reason: ReasonDuplicateField, Msg: fmt.Sprintf("field %q appears twice in one object", field)}
		}
	}
	return nil
}

// duplicateField reports the first field that appears twice in one object
// of the JSON value v (names compared after unescaping).
func duplicateField(v []byte) (string, bool) {
	if bytes.IndexByte(v, '{') < 0 {
		return "", false
	}
	dec := json.NewDecoder(bytes.NewReader(v))
	// One entry per open container: the field names seen (nil for an
	// array) and whether the next string token is a field name.
	type frame struct {
		names  map[string]bool
		expect bool
	}
	var stack []frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", false // io.EOF; v was checked to be valid JSON
		}
		top := len(stack) - 1
		if top >= 0 && stack[top].names != nil && stack[top].expect {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:top]
				continue
			}
			name, _ := tok.(string)
			if stack[top].names[name] {
				return name, true
			}
			stack[top].names[name] = true
			stack[top].expect = false
			continue
		}
		if top >= 0 && stack[top].names != nil {
			stack[top].expect = true // this token is a value; a name comes next
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, frame{names: map[string]bool{}, expect: true})
		case json.Delim('['):
			stack = append(stack, frame{})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:top]
		}
	}
}
