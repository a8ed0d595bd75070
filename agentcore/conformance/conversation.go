package conformance

// The conversation probes (spec 8, ActionConversation), signed out, in the run's Session: a
// conversation starts with a message that asks nothing (context only), and the same message
// sent again must get the original response (8.3). A stream of its events is opened (8.6) and a
// message that asks for a long answer is sent: the stream must be a stream (SHOULD), and its
// text-delta pieces, the cut of a stream before the reply and their pace are noted. A read with
// a cursor just given (8.5) and a stream resumed with Last-Event-ID (8.6) follow, and every
// event is checked for types and values of this version (8.5, 8.7). The conversation is closed
// at the end (8.12).

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/headers"
	"github.com/poppydesk/poppydesk/agentcore/identity"
	"github.com/poppydesk/poppydesk/agentcore/inspect"
	"github.com/poppydesk/poppydesk/agentcore/operations"
)

const (
	convRetry   = "conversations: a retried message gets the original response"
	convSSE     = "conversations: a read asking for a stream is streamed"
	convCut     = "conversations: a stream stays open until the reply is done"
	convSlow    = "conversations: text deltas arrive promptly"
	convCursor  = "conversations: a cursor just given is accepted"
	convResume  = "conversations: a resumed stream sends only later events"
	convUnknown = "conversations: event types and values of this version"
	convFields  = "conversations: responses and messages carry their fields"
	convOwner   = "conversations: another User gets conversation_not_found"
	convInvite  = "conversations: a made-up user_requested_event_id is refused"

	// slowGap is the median gap between text-delta pieces above which the pace is noted.
	slowGap = 20 * time.Millisecond
)

var convProbes = [][2]string{{convRetry, inspect.RuleConvRetrySameID}, {convSSE, inspect.RuleConvNoSSE}, {convCut, inspect.RuleConvStreamCut},
	{convSlow, inspect.RuleConvSlowStream}, {convCursor, inspect.RuleConvCursorExpired}, {convResume, inspect.RuleConvDuplicateEvents},
	{convUnknown, inspect.RuleConvUnknownValues}, {convFields, inspect.RuleConvFields}, {convInvite, inspect.RuleConvUserRequested},
	{convOwner, inspect.RuleConvOwner}}

// sseEvent is one event of a stream: its SSE id and type, data, and when it arrived.
type sseEvent struct {
	id, typ string
	data    json.RawMessage
	at      time.Time
}

// stream is an open event stream (spec 8.6).
type stream struct {
	resp   *http.Response
	cancel context.CancelFunc
	events chan sseEvent
	ended  chan error // the stream's end (nil: the Company closed it)
	ctype  string
	status int
}

func (s *stream) close() { s.cancel(); s.resp.Body.Close() }

// openStream GETs the events of conversation id with Accept: text/event-stream, from
// Last-Event-ID last ("": the start), and reads it in the background.
func (r *run) openStream(ctx context.Context, eventsURL, last string) (*stream, answer) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout+20*time.Second)
	u, _ := url.Parse(eventsURL)
	req, err := http.NewRequestWithContext(inspect.WithCause(ctx, inspect.Cause{Kind: inspect.CauseCheck, Name: "poppydesk check"}), http.MethodGet, eventsURL, nil)
	if err != nil {
		cancel()
		return nil, answer{err: err}
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set(headers.Session, r.dlg.sign(r.claimsIn(r.sessionFor(r.extHeader()), http.MethodGet, u), sessionHeader()))
	req.Header.Set(headers.Version, r.co.Version)
	if r.listsOperations() {
		req.Header.Set(headers.Extensions, operations.ExtensionsHeader)
	}
	if last != "" {
		req.Header.Set("Last-Event-ID", last)
	}
	resp, err := r.hc.Do(req)
	if err != nil {
		cancel()
		return nil, answer{err: err}
	}
	s := &stream{resp: resp, cancel: cancel, events: make(chan sseEvent, 256), ended: make(chan error, 1), ctype: resp.Header.Get("Content-Type"), status: resp.StatusCode}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(s.ctype, "text/event-stream") {
		b := make([]byte, 64<<10)
		n, _ := resp.Body.Read(b)
		s.close()
		return s, answer{status: resp.StatusCode, header: resp.Header, body: b[:n]}
	}
	go func() {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		var ev sseEvent
		var data []string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if len(data) > 0 {
					ev.data, ev.at = json.RawMessage(strings.Join(data, "\n")), time.Now()
					s.events <- ev
				}
				ev, data = sseEvent{}, nil
			case strings.HasPrefix(line, "id:"):
				ev.id = strings.TrimSpace(strings.TrimPrefix(line, "id:"))
			case strings.HasPrefix(line, "event:"):
				ev.typ = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
			case strings.HasPrefix(line, "data:"):
				data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
			}
		}
		s.ended <- sc.Err()
		close(s.events)
	}()
	return s, answer{status: resp.StatusCode, header: resp.Header}
}

// event is the part of a conversation event the probes read.
type event struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	Status    string          `json:"status"`
	Responder string          `json:"responder"`
	Message   json.RawMessage `json:"message"`
}

// authorType is the message's author.type ("" when it has none).
func (e event) authorType() string {
	var m struct {
		Author struct {
			Type string `json:"type"`
		} `json:"author"`
	}
	json.Unmarshal(e.Message, &m)
	return m.Author.Type
}

func (e event) role() string {
	var m struct {
		Role string `json:"role"`
	}
	json.Unmarshal(e.Message, &m)
	return m.Role
}

var (
	knownTypes      = []string{"message", "state", "authorization", "user_requested", "direct_opened", "direct_closed"}
	knownStatuses   = []string{"working", "idle", "queued", "closed"}
	knownResponders = []string{"agent", "human"}
)

func (r *run) conversationProbes(ctx context.Context) {
	why := r.need(true)
	var endpoint string
	switch {
	case why != "":
	case !r.cfg.allows(ActionConversation):
		why = "starting a conversation with the Company Agent is an action: allow it with --allow-actions " + ActionConversation
	case r.dlg == nil:
		why = "no delegation from the identity"
	}
	if why == "" {
		if r.co.Channels.Agent != nil {
			for _, p := range r.co.Channels.Agent.Protocols {
				if p.Type == "poppy" && endpoint == "" && p.Access != "signed_in" {
					endpoint = p.Endpoint
				}
			}
		}
		if endpoint == "" {
			why = "poppy.json lists no poppy conversation protocol open to signed-out Sessions"
		}
	}
	if why != "" {
		r.skipAll(why, convProbes...)
		return
	}
	ext := ""
	if r.listsOperations() {
		ext = operations.ExtensionsHeader
	}
	post := func(u string, msg map[string]any) answer {
		b, _ := json.Marshal(map[string]any{"message": msg})
		return r.do(ctx, call{method: http.MethodPost, url: u, body: b, contentType: "application/json", signed: true, extensions: ext})
	}
	first := map[string]any{"id": "msg_" + identity.NewID(12), "author": map[string]any{"type": "agent"},
		"context": map[string]any{"user_available": false, "locale": "en-US"}}
	a := post(endpoint, first)
	var started struct {
		ID string `json:"conversation_id"`
	}
	if a.status != http.StatusCreated || json.Unmarshal(a.body, &started) != nil || started.ID == "" {
		r.skipAll("starting a conversation got "+a.words()+", not 201 with a conversation_id", convProbes...)
		return
	}
	var missing []string // fields the Company left out (spec 8.5, 8.7)
	missing = append(missing, inspect.ConversationProblems("the answer that started the conversation", a.body, false)...)
	base := strings.TrimSuffix(endpoint, "/") + "/" + url.PathEscape(started.ID)
	defer r.do(ctx, call{method: http.MethodPost, url: base + "/close", body: []byte("{}"), contentType: "application/json", signed: true, extensions: ext, noRetry: true})
	again := post(endpoint, first)
	var re struct {
		ID string `json:"conversation_id"`
	}
	json.Unmarshal(again.body, &re)
	if again.status/100 == 2 && re.ID == started.ID {
		r.add(convRetry, inspect.RuleConvRetrySameID, Pass, "the same message sent again got conversation "+re.ID+" again")
	} else {
		r.add(convRetry, inspect.RuleConvRetrySameID, Fail, fmt.Sprintf("the first message sent again with the same ID and content got %s (conversation %q), not the original response for conversation %s", again.words(), re.ID, started.ID))
	}

	var seen []event
	note := func(raw json.RawMessage) {
		var e event
		if json.Unmarshal(raw, &e) == nil && e.ID != "" && !slices.ContainsFunc(seen, func(x event) bool { return x.ID == e.ID }) {
			seen = append(seen, e)
		}
	}
	s, sa := r.openStream(ctx, base+"/events", "")
	streamed := s != nil && sa.status == http.StatusOK && strings.HasPrefix(s.ctype, "text/event-stream")
	if !streamed {
		r.add(convSSE, inspect.RuleConvNoSSE, Fail, fmt.Sprintf("a read with Accept: text/event-stream got %s (Content-Type %q), not a stream; replies then come only by polling", sa.words(), sa.header.Get("Content-Type")))
		r.skipAll("the Company does not stream", [2]string{convCut, inspect.RuleConvStreamCut}, [2]string{convSlow, inspect.RuleConvSlowStream},
			[2]string{convResume, inspect.RuleConvDuplicateEvents})
		r.ask(ctx, post, base, nil, note)
	} else {
		r.add(convSSE, inspect.RuleConvNoSSE, Pass, "text/event-stream")
		cut, gaps, why := r.ask(ctx, post, base, s, note)
		s.close()
		switch {
		case why != "":
			r.add(convCut, inspect.RuleConvStreamCut, Skip, why)
		case cut != "":
			r.add(convCut, inspect.RuleConvStreamCut, Fail, cut)
		default:
			r.add(convCut, inspect.RuleConvStreamCut, Pass, "the stream stayed open until the reply's message event")
		}
		if len(gaps) < 2 {
			r.add(convSlow, inspect.RuleConvSlowStream, Skip, "the stream carried fewer than three text-delta pieces of one message")
		} else {
			sort.Slice(gaps, func(i, j int) bool { return gaps[i] < gaps[j] })
			med := gaps[len(gaps)/2]
			if med > slowGap {
				r.add(convSlow, inspect.RuleConvSlowStream, Fail, fmt.Sprintf("text-delta pieces came %s apart (the median of %d gaps); the User watches the reply appear slowly", med.Round(time.Millisecond), len(gaps)))
			} else {
				r.add(convSlow, inspect.RuleConvSlowStream, Pass, fmt.Sprintf("text-delta pieces came %s apart (median)", med.Round(time.Millisecond)))
			}
		}
	}

	// spec 8.5: a read from a cursor just given.
	if len(seen) == 0 {
		r.skipAll("no event of the conversation was read", [2]string{convCursor, inspect.RuleConvCursorExpired}, [2]string{convResume, inspect.RuleConvDuplicateEvents})
	} else {
		c := r.do(ctx, call{method: http.MethodGet, url: base + "/events?cursor=" + url.QueryEscape(seen[0].ID), signed: true, extensions: ext})
		var rd struct {
			Events []json.RawMessage `json:"events"`
		}
		switch {
		case c.status == http.StatusGone || c.code == "cursor_expired":
			r.add(convCursor, inspect.RuleConvCursorExpired, Fail, fmt.Sprintf("a read from the cursor %s, an event just read, got %s: a Personal Agent then reads the whole conversation again", seen[0].ID, c.words()))
		case c.status == http.StatusOK && json.Unmarshal(c.body, &rd) == nil:
			r.add(convCursor, inspect.RuleConvCursorExpired, Pass, fmt.Sprintf("HTTP 200 with %d event(s)", len(rd.Events)))
			missing = append(missing, inspect.ConversationProblems("a read from a cursor", c.body, true)...)
			for _, e := range rd.Events {
				note(e)
			}
		default:
			r.add(convCursor, inspect.RuleConvCursorExpired, Skip, "the read from a cursor got "+c.words())
		}
		if streamed {
			r.resumeProbe(ctx, base, seen)
		}
	}
	for _, e := range seen {
		if e.Type == "message" && e.role() == "company" && !slices.Contains(knownResponders, e.authorType()) {
			p := fmt.Sprintf("the Company message %s has author.type %q, not agent or human", e.ID, e.authorType())
			if !slices.Contains(missing, p) { // a JSON read may have named it already
				missing = append(missing, p)
			}
		}
	}
	if len(seen) == 0 && len(missing) == 0 {
		r.add(convFields, inspect.RuleConvFields, Skip, "no event of the conversation was read")
	} else {
		r.check(convFields, inspect.RuleConvFields, joinBad(missing, "a Personal Agent must not guess what a missing field says"),
			"the answers read have status and responder, the reads every field of spec 8.5, and the Company messages author.type")
	}
	var odd []string
	for _, e := range seen {
		switch {
		case !slices.Contains(knownTypes, e.Type):
			odd = append(odd, fmt.Sprintf("event %s has the type %q", e.ID, e.Type))
		case e.Type == "state" && !slices.Contains(knownStatuses, e.Status):
			odd = append(odd, fmt.Sprintf("state event %s has the status %q", e.ID, e.Status))
		case e.Type == "state" && !slices.Contains(knownResponders, e.Responder):
			odd = append(odd, fmt.Sprintf("state event %s has the responder %q", e.ID, e.Responder))
		}
	}
	r.check(convUnknown, inspect.RuleConvUnknownValues, joinBad(odd, "a Personal Agent of this version skips them (spec 8.5, 8.7)"), fmt.Sprintf("%d event(s), each of a type and with values of version %s", len(seen), r.co.Version))
	r.inviteProbe(ctx, endpoint, started.ID, ext)
	r.ownerProbe(ctx, endpoint, base, started.ID, ext)
}

// inviteProbe starts a Direct Conversation under the run's conversation naming an event it
// does not have as its user_requested_event_id: spec 8.10 says the Company MUST reject it with
// invalid_request.
func (r *run) inviteProbe(ctx context.Context, endpoint, parent, ext string) {
	made := "evt_" + identity.NewID(12)
	b, _ := json.Marshal(map[string]any{"parent_conversation_id": parent, "user_requested_event_id": made,
		"message": map[string]any{"id": "msg_" + identity.NewID(12), "author": map[string]any{"type": "human"}, "text": "This is poppydesk check; the event this names does not exist."}})
	a := r.do(ctx, call{method: http.MethodPost, url: endpoint, body: b, contentType: "application/json", signed: true, extensions: ext, noRetry: true})
	if a.status == http.StatusBadRequest && a.code == "invalid_request" {
		r.addSaid(convInvite, inspect.RuleConvUserRequested, Pass, a.words(), a.said())
		return
	}
	r.addSaid(convInvite, inspect.RuleConvUserRequested, Fail, fmt.Sprintf("a start with parent_conversation_id %s and user_requested_event_id %s, an event that conversation does not have, got %s; it must get HTTP 400 invalid_request (spec 8.10)", parent, made, a.words()), a.said())
}

// ownerProbe sends, in a Session of another User of the same Personal Agent, a read of the
// run's conversation and a start of a Direct Conversation under it: spec 8.2 and 8.10 say the
// Company MUST answer both with conversation_not_found.
func (r *run) ownerProbe(ctx context.Context, endpoint, base, id, ext string) {
	other := newProbeSession()
	read := r.do(ctx, call{method: http.MethodGet, url: base + "/events", signed: true, session: &other, extensions: ext, noRetry: true})
	b, _ := json.Marshal(map[string]any{"parent_conversation_id": id,
		"message": map[string]any{"id": "msg_" + identity.NewID(12), "author": map[string]any{"type": "human"}, "text": "This is poppydesk check, as another User."}})
	direct := r.do(ctx, call{method: http.MethodPost, url: endpoint, body: b, contentType: "application/json", signed: true, session: &other, extensions: ext, noRetry: true})
	var bad []string
	for _, x := range []struct {
		what string
		a    answer
	}{{"a read of its events", read}, {"a Direct Conversation started under it", direct}} {
		if x.a.status != http.StatusNotFound || x.a.code != "conversation_not_found" {
			bad = append(bad, fmt.Sprintf("%s got %s", x.what, x.a.words()))
		}
	}
	if len(bad) > 0 {
		said := read.said()
		if read.status == http.StatusNotFound && read.code == "conversation_not_found" {
			said = direct.said()
		}
		r.addSaid(convOwner, inspect.RuleConvOwner, Fail, fmt.Sprintf("in a Session of another User (%s) of the same Personal Agent, conversation %s (of %s): %s; both must get HTTP 404 conversation_not_found (spec 8.2, 8.10)", other.sub, id, r.flow.sub, strings.Join(bad, "; ")), said)
		return
	}
	r.addSaid(convOwner, inspect.RuleConvOwner, Pass, "another User's read and Direct Conversation start: "+read.words(), read.said())
}

// ask sends messages that ask for a long answer and reads the reply from s (nil: by JSON reads
// with wait). It returns why the stream was cut before the reply ("" when it wasn't), the gaps
// between the text-delta pieces of one message, and why the stream could not be judged. The
// message is sent again (up to three times) while the stream carried no piece at all, since a
// reply written before the stream woke may come as a whole message.
func (r *run) ask(ctx context.Context, post func(string, map[string]any) answer, base string, s *stream, note func(json.RawMessage)) (cut string, gaps []time.Duration, why string) {
	text := "This is poppydesk check, a conformance check of the Company's side of the protocol. Please describe the warmest jacket, in a long answer."
	if s != nil {
		// Wait for the first event, so the stream is open before the reply is written.
		select {
		case ev, ok := <-s.events:
			if !ok {
				return "", nil, "the stream ended before its first event"
			}
			note(ev.data)
		case <-time.After(r.cfg.Timeout):
			return "", nil, "the stream sent no event within " + r.cfg.Timeout.String()
		}
	}
	for try := 0; try < 3; try++ {
		a := post(base+"/messages", map[string]any{"id": "msg_" + identity.NewID(12), "author": map[string]any{"type": "agent"}, "text": text})
		if a.status/100 != 2 {
			return "", nil, "sending a message got " + a.words()
		}
		if s == nil {
			r.pollReply(ctx, base, note)
			return "", nil, ""
		}
		var arrivals []time.Time
		msgID := ""
		deadline := time.After(r.cfg.Timeout + 10*time.Second)
	read:
		for {
			select {
			case ev, ok := <-s.events:
				if !ok {
					if len(arrivals) > 0 {
						return fmt.Sprintf("the stream was closed after %d text-delta piece(s), before the reply's message event (spec 8.6 allows it; the Personal Agent reconnects with Last-Event-ID and drops the pieces)", len(arrivals)), nil, ""
					}
					return "the stream was closed before the reply's message event", nil, ""
				}
				if ev.typ == "text-delta" {
					var d struct {
						MessageID string `json:"message_id"`
					}
					json.Unmarshal(ev.data, &d)
					if msgID == "" || d.MessageID == msgID {
						msgID = d.MessageID
						arrivals = append(arrivals, ev.at)
					}
					continue
				}
				if ev.typ != "" && ev.typ != "message" {
					continue
				}
				note(ev.data)
				var e event
				if json.Unmarshal(ev.data, &e) == nil && e.Type == "message" && e.role() == "company" {
					break read
				}
			case <-deadline:
				return "", nil, "no reply came on the stream within " + (r.cfg.Timeout + 10*time.Second).String()
			}
		}
		if len(arrivals) == 0 {
			continue // the reply came whole: ask again for one to watch
		}
		for i := 1; i < len(arrivals); i++ {
			gaps = append(gaps, arrivals[i].Sub(arrivals[i-1]))
		}
		return "", gaps, ""
	}
	return "", nil, ""
}

// pollReply reads the conversation with wait until a Company message arrives (no stream).
func (r *run) pollReply(ctx context.Context, base string, note func(json.RawMessage)) {
	cursor := ""
	for i := 0; i < 5; i++ {
		u := base + "/events?wait=2"
		if cursor != "" {
			u += "&cursor=" + url.QueryEscape(cursor)
		}
		a := r.do(ctx, call{method: http.MethodGet, url: u, signed: true, extensions: r.extHeader()})
		var rd struct {
			Events []json.RawMessage `json:"events"`
			Cursor string            `json:"cursor"`
		}
		if a.status != http.StatusOK || json.Unmarshal(a.body, &rd) != nil {
			return
		}
		done := false
		for _, raw := range rd.Events {
			note(raw)
			var e event
			if json.Unmarshal(raw, &e) == nil && e.Type == "message" && e.role() == "company" {
				done = true
			}
		}
		if done {
			return
		}
		cursor = rd.Cursor
	}
}

func (r *run) extHeader() string {
	if r.listsOperations() {
		return operations.ExtensionsHeader
	}
	return ""
}

// resumeProbe resumes the stream with Last-Event-ID set to the next-to-last event read: a
// Company that resends only later events sends the last one first (spec 8.6).
func (r *run) resumeProbe(ctx context.Context, base string, seen []event) {
	if len(seen) < 2 {
		r.add(convResume, inspect.RuleConvDuplicateEvents, Skip, "fewer than two events were read")
		return
	}
	from := seen[len(seen)-2]
	s, a := r.openStream(ctx, base+"/events", from.ID)
	if s == nil || a.status != http.StatusOK {
		r.add(convResume, inspect.RuleConvDuplicateEvents, Skip, "resuming the stream got "+a.words())
		return
	}
	defer s.close()
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				r.add(convResume, inspect.RuleConvDuplicateEvents, Skip, "the resumed stream ended without an event")
				return
			}
			if ev.typ != "" && ev.typ != "message" {
				continue
			}
			var e event
			json.Unmarshal(ev.data, &e)
			i := slices.IndexFunc(seen, func(x event) bool { return x.ID == e.ID })
			if i >= 0 && i <= len(seen)-2 {
				r.add(convResume, inspect.RuleConvDuplicateEvents, Fail, fmt.Sprintf("the stream resumed with Last-Event-ID %s sent event %s again, which came at or before it (spec 8.5 lets a Personal Agent skip it; the resend costs a round of events)", from.ID, e.ID))
			} else {
				r.add(convResume, inspect.RuleConvDuplicateEvents, Pass, fmt.Sprintf("resumed after %s with %s", from.ID, e.ID))
			}
			return
		case <-time.After(r.cfg.Timeout):
			r.add(convResume, inspect.RuleConvDuplicateEvents, Skip, "the resumed stream sent no event within "+r.cfg.Timeout.String())
			return
		}
	}
}
