package sqstest

import (
	"context"
	"crypto/md5"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Limits of the emulated service (those of Amazon SQS).
const (
	MaxMessageSize    = 256 << 10 // bytes of a message body
	maxRequestSize    = 1 << 20   // bytes of a request body
	maxWaitSeconds    = 20        // ReceiveMessage WaitTimeSeconds
	maxReceiveCount   = 10        // ReceiveMessage MaxNumberOfMessages
	defaultVisibility = 30 * time.Second
	accountID         = "000000000000"
	targetPrefix      = "AmazonSQS."
	jsonContentType   = "application/x-amz-json-1.0"
)

// queueName is the shape of a standard queue's name.
var queueName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,80}$`)

// Config configures a Server. The zero value works.
type Config struct {
	// AccessKeyID, when set, must be the access key id in every request's
	// Authorization header; other requests fail with
	// UnrecognizedClientException.
	AccessKeyID string
	// Listener, if set, is where the server serves (it closes it on
	// Close) instead of a new loopback port: a test that needs the server
	// at another address, or in another network namespace, opens it
	// there.
	Listener net.Listener
	// TLS, if set, makes the server speak HTTPS with this configuration's
	// certificates; URL then starts with https://.
	TLS *tls.Config
}

// MessageAttribute is an SQS message attribute, as on the wire.
type MessageAttribute struct {
	DataType    string
	StringValue string `json:",omitempty"`
	BinaryValue []byte `json:",omitempty"`
}

// Message is a snapshot of a message in a queue.
type Message struct {
	ID         string
	Body       string
	Attributes map[string]MessageAttribute
	Received   int // times it was received
}

// Server is a running SQS emulator. Create it with New and Close it when
// done. It is safe for concurrent use.
type Server struct {
	// URL is the endpoint to point an SDK client at (its BaseEndpoint),
	// e.g. http://127.0.0.1:41234, without a trailing slash.
	URL string

	cfg       Config
	srv       *httptest.Server
	done      chan struct{} // closed by Close: ends long polls
	closeOnce sync.Once

	mu      sync.Mutex // guards the fields below
	changed chan struct{}
	queues  map[string]*queue
	faults  map[string]int // action → failures left (negative: all)
	calls   map[string]int
	nextID  uint64
}

type queue struct {
	attrs    map[string]string
	created  time.Time
	modified time.Time
	msgs     []*message // in send order, visible or in flight
}

type message struct {
	id        string
	body      string
	md5       string
	attrs     map[string]MessageAttribute
	sent      time.Time
	receipt   string    // receipt handle of the latest receive
	invisible time.Time // not receivable before this
	received  int
}

// New starts a Server on a loopback port, or on Config.Listener.
func New(cfg Config) *Server {
	s := &Server{
		cfg:     cfg,
		done:    make(chan struct{}),
		changed: make(chan struct{}),
		queues:  make(map[string]*queue),
		faults:  make(map[string]int),
		calls:   make(map[string]int),
	}
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	if cfg.Listener != nil {
		s.srv.Listener.Close()
		s.srv.Listener = cfg.Listener
	}
	if cfg.TLS != nil {
		s.srv.TLS = cfg.TLS
		s.srv.StartTLS()
	} else {
		s.srv.Start()
	}
	s.URL = s.srv.URL
	return s
}

// Close ends pending long polls and shuts the server down. It is
// idempotent.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.done)
		s.srv.Close()
	})
}

// QueueURL returns the URL of the queue called name (whether it exists or
// not).
func (s *Server) QueueURL(name string) string {
	return s.URL + "/" + accountID + "/" + name
}

// CreateQueue creates a queue directly (no request) and returns its URL.
func (s *Server) CreateQueue(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.queues[name]; !ok {
		now := time.Now()
		s.queues[name] = &queue{attrs: map[string]string{}, created: now, modified: now}
		s.changedLocked()
	}
	return s.QueueURL(name)
}

// Send adds a message to an existing queue directly (no request). It
// reports whether the queue exists.
func (s *Server) Send(name, body string, attrs map[string]MessageAttribute) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, ok := s.queues[name]
	if !ok {
		return false
	}
	s.addLocked(q, body, attrs)
	return true
}

// Queues returns the names of the queues, sorted.
func (s *Server) Queues() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, 0, len(s.queues))
	for n := range s.queues {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Messages returns the messages in a queue (visible or in flight), oldest
// first, and whether the queue exists.
func (s *Server) Messages(name string) ([]Message, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, ok := s.queues[name]
	if !ok {
		return nil, false
	}
	out := make([]Message, len(q.msgs))
	for i, m := range q.msgs {
		out[i] = Message{ID: m.id, Body: m.body, Attributes: m.attrs, Received: m.received}
	}
	return out, true
}

// Calls returns how many requests for action (e.g. "CreateQueue") arrived,
// failed ones included.
func (s *Server) Calls(action string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[action]
}

// Fail makes the next n requests for action fail with a non-retryable
// error (UnsupportedOperation); n < 0 makes all of them fail, n = 0 stops
// failing.
func (s *Server) Fail(action string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n == 0 {
		delete(s.faults, action)
		return
	}
	s.faults[action] = n
}

// SetLastModified sets a queue's creation and last-modified time (as
// GetQueueAttributes reports them) and reports whether the queue exists.
func (s *Server) SetLastModified(name string, t time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, ok := s.queues[name]
	if ok {
		q.created, q.modified = t, t
	}
	return ok
}

// WaitUntil calls cond after every change of the server's state (a request
// counted, a queue or message added or removed) until it returns true, and
// returns nil then, or ctx's error. cond must not block; it may call the
// Server's methods.
func (s *Server) WaitUntil(ctx context.Context, cond func() bool) error {
	for {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		if cond() {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// changedLocked wakes WaitUntil and long polls.
func (s *Server) changedLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *Server) addLocked(q *queue, body string, attrs map[string]MessageAttribute) *message {
	s.nextID++
	sum := md5.Sum([]byte(body))
	m := &message{
		id:    fmt.Sprintf("00000000-0000-4000-8000-%012d", s.nextID),
		body:  body,
		md5:   hex.EncodeToString(sum[:]),
		attrs: attrs,
		sent:  time.Now(),
	}
	q.msgs = append(q.msgs, m)
	s.changedLocked()
	return m
}

// apiError is an error response.
type apiError struct {
	typ     string // __type without the namespace
	ns      string // namespace of __type
	query   string // x-amzn-query-error code
	message string
}

func errNoQueue() *apiError {
	return &apiError{typ: "QueueDoesNotExist", ns: "com.amazonaws.sqs", query: "AWS.SimpleQueueService.NonExistentQueue", message: "The specified queue does not exist."}
}

func errInvalid(format string, args ...any) *apiError {
	return &apiError{typ: "InvalidParameterValue", ns: "com.amazonaws.sqs", query: "InvalidParameterValue", message: fmt.Sprintf(format, args...)}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	action, ok := strings.CutPrefix(r.Header.Get("X-Amz-Target"), targetPrefix)
	if r.Method != http.MethodPost || r.URL.Path != "/" || !ok {
		writeError(w, &apiError{typ: "UnknownOperationException", ns: "com.amazon.coral.service", message: "unknown operation"})
		return
	}
	s.mu.Lock()
	s.calls[action]++
	fault := s.faults[action]
	if fault > 0 {
		s.faults[action]--
	}
	s.changedLocked()
	s.mu.Unlock()
	if fault != 0 {
		writeError(w, &apiError{typ: "UnsupportedOperation", ns: "com.amazonaws.sqs", query: "AWS.SimpleQueueService.UnsupportedOperation", message: "injected fault"})
		return
	}
	if s.cfg.AccessKeyID != "" && !strings.Contains(r.Header.Get("Authorization"), "Credential="+s.cfg.AccessKeyID+"/") {
		writeError(w, &apiError{typ: "UnrecognizedClientException", ns: "com.amazon.coral.service", message: "The security token included in the request is invalid."})
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestSize))
	if err != nil {
		writeError(w, errInvalid("cannot read request"))
		return
	}
	var out any
	var aerr *apiError
	switch action {
	case "CreateQueue":
		out, aerr = s.createQueue(body)
	case "GetQueueUrl":
		out, aerr = s.getQueueURL(body)
	case "ListQueues":
		out, aerr = s.listQueues(body)
	case "GetQueueAttributes":
		out, aerr = s.getQueueAttributes(body)
	case "DeleteQueue":
		out, aerr = s.deleteQueue(body)
	case "SendMessage":
		out, aerr = s.sendMessage(body)
	case "ReceiveMessage":
		out, aerr = s.receiveMessage(r.Context(), body)
	case "DeleteMessage":
		out, aerr = s.deleteMessage(body)
	default:
		aerr = &apiError{typ: "UnknownOperationException", ns: "com.amazon.coral.service", message: "unknown operation " + action}
	}
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	w.Header().Set("Content-Type", jsonContentType)
	_ = json.NewEncoder(w).Encode(out)
}

func writeError(w http.ResponseWriter, e *apiError) {
	h := w.Header()
	h.Set("Content-Type", jsonContentType)
	if e.query != "" {
		h.Set("X-Amzn-Query-Error", e.query+";Sender")
	}
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": e.ns + "#" + e.typ, "message": e.message})
}

func decode(body []byte, v any) *apiError {
	if err := json.Unmarshal(body, v); err != nil {
		return errInvalid("malformed request")
	}
	return nil
}

// queueLocked finds the queue a QueueUrl names (its last path segment).
func (s *Server) queueLocked(url string) (string, *queue, *apiError) {
	i := strings.LastIndexByte(url, '/')
	name := url[i+1:]
	q, ok := s.queues[name]
	if !ok {
		return name, nil, errNoQueue()
	}
	return name, q, nil
}

func (s *Server) createQueue(body []byte) (any, *apiError) {
	var in struct {
		QueueName  string
		Attributes map[string]string
	}
	if e := decode(body, &in); e != nil {
		return nil, e
	}
	if !queueName.MatchString(in.QueueName) {
		return nil, errInvalid("invalid queue name")
	}
	for k, v := range in.Attributes {
		switch k {
		case "MessageRetentionPeriod", "VisibilityTimeout", "ReceiveMessageWaitTimeSeconds", "DelaySeconds", "MaximumMessageSize":
			if _, err := strconv.ParseUint(v, 10, 32); err != nil {
				return nil, errInvalid("invalid value for %s", k)
			}
		default:
			return nil, &apiError{typ: "InvalidAttributeName", ns: "com.amazonaws.sqs", query: "InvalidAttributeName", message: "unknown attribute " + k}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if q, ok := s.queues[in.QueueName]; ok {
		for k, v := range in.Attributes {
			if q.attrs[k] != v {
				return nil, &apiError{typ: "QueueNameExists", ns: "com.amazonaws.sqs", query: "QueueAlreadyExists", message: "A queue already exists with the same name and a different value for attribute " + k}
			}
		}
		return map[string]string{"QueueUrl": s.QueueURL(in.QueueName)}, nil
	}
	now := time.Now()
	attrs := make(map[string]string, len(in.Attributes))
	for k, v := range in.Attributes {
		attrs[k] = v
	}
	s.queues[in.QueueName] = &queue{attrs: attrs, created: now, modified: now}
	s.changedLocked()
	return map[string]string{"QueueUrl": s.QueueURL(in.QueueName)}, nil
}

func (s *Server) getQueueURL(body []byte) (any, *apiError) {
	var in struct{ QueueName string }
	if e := decode(body, &in); e != nil {
		return nil, e
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.queues[in.QueueName]; !ok {
		return nil, errNoQueue()
	}
	return map[string]string{"QueueUrl": s.QueueURL(in.QueueName)}, nil
}

func (s *Server) listQueues(body []byte) (any, *apiError) {
	var in struct {
		QueueNamePrefix string
		MaxResults      *int
		NextToken       string
	}
	if e := decode(body, &in); e != nil {
		return nil, e
	}
	limit := 1000
	if in.MaxResults != nil {
		if *in.MaxResults < 1 || *in.MaxResults > 1000 {
			return nil, errInvalid("MaxResults must be 1 to 1000")
		}
		limit = *in.MaxResults
	}
	names := s.Queues()
	var urls []string
	next := ""
	for _, n := range names {
		if !strings.HasPrefix(n, in.QueueNamePrefix) || (in.NextToken != "" && n <= in.NextToken) {
			continue
		}
		if len(urls) == limit {
			if in.MaxResults != nil {
				next = urls[len(urls)-1]
				next = next[strings.LastIndexByte(next, '/')+1:]
			}
			break
		}
		urls = append(urls, s.QueueURL(n))
	}
	out := map[string]any{}
	if len(urls) > 0 {
		out["QueueUrls"] = urls
	}
	if next != "" {
		out["NextToken"] = next
	}
	return out, nil
}

func (s *Server) getQueueAttributes(body []byte) (any, *apiError) {
	var in struct {
		QueueUrl       string
		AttributeNames []string
	}
	if e := decode(body, &in); e != nil {
		return nil, e
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, q, e := s.queueLocked(in.QueueUrl)
	if e != nil {
		return nil, e
	}
	all := map[string]string{
		"CreatedTimestamp":            strconv.FormatInt(q.created.Unix(), 10),
		"LastModifiedTimestamp":       strconv.FormatInt(q.modified.Unix(), 10),
		"ApproximateNumberOfMessages": strconv.Itoa(len(q.msgs)),
	}
	for k, v := range q.attrs {
		all[k] = v
	}
	out := map[string]string{}
	for _, n := range in.AttributeNames {
		if n == "All" {
			out = all
			break
		}
		if v, ok := all[n]; ok {
			out[n] = v
		}
	}
	return map[string]any{"Attributes": out}, nil
}

func (s *Server) deleteQueue(body []byte) (any, *apiError) {
	var in struct{ QueueUrl string }
	if e := decode(body, &in); e != nil {
		return nil, e
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	name, _, e := s.queueLocked(in.QueueUrl)
	if e != nil {
		return nil, e
	}
	delete(s.queues, name)
	s.changedLocked()
	return struct{}{}, nil
}

func (s *Server) sendMessage(body []byte) (any, *apiError) {
	var in struct {
		QueueUrl          string
		MessageBody       string
		MessageAttributes map[string]MessageAttribute
	}
	if e := decode(body, &in); e != nil {
		return nil, e
	}
	if in.MessageBody == "" || len(in.MessageBody) > MaxMessageSize {
		return nil, errInvalid("message body must be 1 to %d bytes", MaxMessageSize)
	}
	for name, a := range in.MessageAttributes {
		if name == "" || (!strings.HasPrefix(a.DataType, "String") && !strings.HasPrefix(a.DataType, "Number") && !strings.HasPrefix(a.DataType, "Binary")) {
			return nil, errInvalid("invalid message attribute %q", name)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, q, e := s.queueLocked(in.QueueUrl)
	if e != nil {
		return nil, e
	}
	m := s.addLocked(q, in.MessageBody, in.MessageAttributes)
	return map[string]string{"MessageId": m.id, "MD5OfMessageBody": m.md5}, nil
}

// wireMessage is a message in a ReceiveMessage response.
type wireMessage struct {
	MessageId         string
	ReceiptHandle     string
	MD5OfBody         string
	Body              string
	Attributes        map[string]string           `json:",omitempty"`
	MessageAttributes map[string]MessageAttribute `json:",omitempty"`
}

func (s *Server) receiveMessage(ctx context.Context, body []byte) (any, *apiError) {
	var in struct {
		QueueUrl                    string
		MaxNumberOfMessages         *int
		WaitTimeSeconds             *int
		VisibilityTimeout           *int
		MessageAttributeNames       []string
		AttributeNames              []string
		MessageSystemAttributeNames []string
	}
	if e := decode(body, &in); e != nil {
		return nil, e
	}
	max, wait, visibility := 1, 0, defaultVisibility
	if in.MaxNumberOfMessages != nil {
		if max = *in.MaxNumberOfMessages; max < 1 || max > maxReceiveCount {
			return nil, errInvalid("MaxNumberOfMessages must be 1 to %d", maxReceiveCount)
		}
	}
	if in.WaitTimeSeconds != nil {
		if wait = *in.WaitTimeSeconds; wait < 0 || wait > maxWaitSeconds {
			return nil, errInvalid("WaitTimeSeconds must be 0 to %d", maxWaitSeconds)
		}
	}
	if in.VisibilityTimeout != nil {
		if *in.VisibilityTimeout < 0 {
			return nil, errInvalid("negative VisibilityTimeout")
		}
		visibility = time.Duration(*in.VisibilityTimeout) * time.Second
	}
	system := append(in.AttributeNames, in.MessageSystemAttributeNames...)
	deadline := time.Now().Add(time.Duration(wait) * time.Second)
	for {
		s.mu.Lock()
		_, q, e := s.queueLocked(in.QueueUrl)
		if e != nil {
			s.mu.Unlock()
			return nil, e
		}
		now := time.Now()
		var out []wireMessage
		next := deadline // when something may change without a request
		for _, m := range q.msgs {
			if len(out) == max {
				break
			}
			if now.Before(m.invisible) {
				if m.invisible.Before(next) {
					next = m.invisible
				}
				continue
			}
			s.nextID++
			m.received++
			m.invisible = now.Add(visibility)
			m.receipt = fmt.Sprintf("%s#%d", m.id, s.nextID)
			out = append(out, wireMessage{
				MessageId:         m.id,
				ReceiptHandle:     m.receipt,
				MD5OfBody:         m.md5,
				Body:              m.body,
				Attributes:        systemAttributes(m, system),
				MessageAttributes: selectAttributes(m.attrs, in.MessageAttributeNames),
			})
		}
		ch := s.changed
		s.mu.Unlock()
		if len(out) > 0 || !now.Before(deadline) {
			if len(out) == 0 {
				return struct{}{}, nil
			}
			return map[string]any{"Messages": out}, nil
		}
		t := time.NewTimer(next.Sub(now))
		select {
		case <-ch:
		case <-t.C:
		case <-ctx.Done():
		case <-s.done:
		}
		t.Stop()
		select {
		case <-ctx.Done():
			return struct{}{}, nil
		case <-s.done:
			return struct{}{}, nil
		default:
		}
	}
}

func systemAttributes(m *message, names []string) map[string]string {
	out := map[string]string{}
	for _, n := range names {
		if n == "All" || n == "SentTimestamp" {
			out["SentTimestamp"] = strconv.FormatInt(m.sent.UnixMilli(), 10)
		}
		if n == "All" || n == "ApproximateReceiveCount" {
			out["ApproximateReceiveCount"] = strconv.Itoa(m.received)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// selectAttributes returns the attributes that names asks for ("All",
// ".*", a name, or a prefix ending in ".*").
func selectAttributes(attrs map[string]MessageAttribute, names []string) map[string]MessageAttribute {
	out := map[string]MessageAttribute{}
	for k, v := range attrs {
		for _, n := range names {
			prefix, wild := strings.CutSuffix(n, ".*")
			if n == "All" || n == ".*" || n == k || (wild && strings.HasPrefix(k, prefix+".")) {
				out[k] = v
				break
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func (s *Server) deleteMessage(body []byte) (any, *apiError) {
	var in struct {
		QueueUrl      string
		ReceiptHandle string
	}
	if e := decode(body, &in); e != nil {
		return nil, e
	}
	if in.ReceiptHandle == "" {
		return nil, &apiError{typ: "ReceiptHandleIsInvalid", ns: "com.amazonaws.sqs", query: "ReceiptHandleIsInvalid", message: "empty receipt handle"}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, q, e := s.queueLocked(in.QueueUrl)
	if e != nil {
		return nil, e
	}
	// As in SQS, deleting with a stale receipt handle succeeds quietly.
	q.msgs = slices.DeleteFunc(q.msgs, func(m *message) bool { return m.receipt == in.ReceiptHandle })
	s.changedLocked()
	return struct{}{}, nil
}
