package fronts

import (
	"context"
	"fmt"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/modelapi"
	"github.com/poppydesk/poppydesk/app"
)

// ActivityEntry is one request the model made, for the Inspector's "what your model asked" list.
// It holds no arguments and nothing a Company wrote.
type ActivityEntry struct {
	Seq        int64  `json:"seq"`
	Tool       string `json:"tool"`
	Company    string `json:"company"`
	At         string `json:"at"` // RFC 3339, UTC
	Status     string `json:"status"`
	DurationMS int64  `json:"durationMs"`
	ApprovalID string `json:"approvalId"`
}

// ActivityInfo says where the model interface listens, for the Inspector's header.
type ActivityInfo struct {
	// Socket is the Unix socket MCP clients reach through `poppydesk mcp` ("" when off).
	Socket string `json:"socket"`
	// Listening is false when the model interface could not start; Problem then says why.
	Listening bool   `json:"listening"`
	Problem   string `json:"problem"`
}

// Activity is the bound service that lists the model's requests (the Host's agentcore/modelapi
// ring; the Host emits [app.EventActivity] when one is added) and the reports of tasks sent to
// Companies. It decides nothing and changes nothing.
type Activity struct{ h *app.Host }

// FeedbackReport is one report of a task Poppydesk could not do, as it was sent to a Company
// (spec 9.3), for the Inspector: the text exactly as sent, after Poppydesk removed identifiers,
// contact details and secrets.
type FeedbackReport struct {
	Company     string `json:"company"`
	Task        string `json:"task"`
	Description string `json:"description"`
	// Status is "sending", "accepted" or "alternative" (the Company answered with another way).
	Status string `json:"status"`
	At     string `json:"at"` // RFC 3339, UTC
}

// Reports lists every report sent to a Company, newest first.
func (a *Activity) Reports() ([]FeedbackReport, error) {
	out := []FeedbackReport{}
	if a.h == nil || a.h.Coverage() == nil {
		return out, nil
	}
	ctx, cancel := context.WithTimeout(a.h.Context(), 10*time.Second)
	defer cancel()
	rs, err := a.h.Coverage().Reports(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("reading the reports sent to Companies failed: %w", err)
	}
	for _, r := range rs {
		out = append(out, FeedbackReport{Company: r.Company, Task: r.Task, Description: r.Description, Status: r.Status,
			At: r.Created.UTC().Format(time.RFC3339)})
	}
	return out, nil
}

// List returns up to limit entries, newest first (limit <= 0 or > 500: 200).
func (a *Activity) List(limit int) []ActivityEntry {
	ring := a.h.Activity()
	if ring == nil {
		return []ActivityEntry{}
	}
	return activityList(ring, limit)
}

// activityList converts up to limit entries of ring, newest first.
func activityList(ring *modelapi.Activity, limit int) []ActivityEntry {
	if limit <= 0 || limit > modelapi.DefaultActivitySize {
		limit = 200
	}
	src := ring.List(limit)
	out := make([]ActivityEntry, 0, len(src))
	for _, e := range src {
		out = append(out, ActivityEntry{Seq: e.Seq, Tool: e.Tool, Company: e.Company, At: e.At.UTC().Format(time.RFC3339),
			Status: e.Status, DurationMS: e.DurationMS, ApprovalID: e.ApprovalID})
	}
	return out
}

// Info says where the model interface listens.
func (a *Activity) Info() ActivityInfo {
	socket, err := a.h.ModelSocket()
	info := ActivityInfo{Socket: socket, Listening: a.h != nil && a.h.Socket() != ""}
	if err != nil {
		info.Problem = err.Error()
	}
	return info
}
