package coverage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/apis"
	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/engine"
	"github.com/poppydesk/poppydesk/agentcore/store"
)

// SettingFeedbackReports is the state setting that turns feedback reports (spec 9.3) off when
// its value is "off". Any other value, or none, leaves them on.
const SettingFeedbackReports = "coverage.feedback_reports"

// Engine is what task coverage needs of agentcore/engine's *Engine: public documents through the
// discovery cache, the Client of one Session per (Company, account) to send reports and list
// what a Company's APIs offer, and the exchange log written out.
type Engine interface {
	FetchPublic(ctx context.Context, rawURL, accept string, limit int, opts ...discovery.Option) (discovery.Public, error)
	Client(ctx context.Context, company, account string) (*engine.Client, error)
	FlushExchanges(ctx context.Context) error
}

// Config configures a [Service].
type Config struct {
	// Engine fetches public documents and sends reports in a Session (*engine.Engine). Required.
	Engine Engine
	// Reports remembers the reports sent (the state database). Required.
	Reports store.FeedbackReports
	// Settings holds SettingFeedbackReports. Required.
	Settings store.Settings
	// Seen holds the identifiers seen in each Company's responses (nil: an empty one, which
	// learns only what is given to its Observe).
	Seen *Seen
	// Accounts lists the account labels the user signed in with at a Company, which a report
	// never names (nil: none).
	Accounts func(ctx context.Context, company string) ([]string, error)
	// Held lists every secret Poppydesk holds (tokens, keys and codes of every account and
	// Company: store.HeldSecrets and the sign-ins in flight), which a report never carries, even
	// another Company's (nil: none).
	Held func(ctx context.Context) ([]string, error)
	// Lister checks alternatives' references (nil: the engine's descriptions and tool lists).
	Lister Lister
	Now    func() time.Time
	Logger *slog.Logger
}

// Service is task coverage over the engine (spec 9). Safe for concurrent use.
type Service struct {
	cfg    Config
	lister Lister
	seen   *Seen

	mu      sync.Mutex
	retryAt map[string]time.Time // Company identifier → no report before then (spec 5.6)
}

// New returns a Service.
func New(cfg Config) (*Service, error) {
	if cfg.Engine == nil || cfg.Reports == nil || cfg.Settings == nil {
		return nil, errors.New("coverage: Config needs the Engine, the Reports store and the Settings (the state database)")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Service{cfg: cfg, lister: cfg.Lister, seen: cfg.Seen, retryAt: map[string]time.Time{}}
	if s.lister == nil {
		s.lister = engineLister{cfg.Engine}
	}
	if s.seen == nil {
		s.seen = NewSeen(0)
	}
	return s, nil
}

// Seen is the Service's memory of identifiers in Companies' responses.
func (s *Service) Seen() *Seen { return s.seen }

// ReportsEnabled reports whether the user lets Poppydesk send feedback reports.
func (s *Service) ReportsEnabled(ctx context.Context) (bool, error) {
	v, err := s.cfg.Settings.GetSetting(ctx, SettingFeedbackReports)
	if errors.Is(err, store.ErrNotFound) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading whether feedback reports are on: %w", err)
	}
	return v != "off", nil
}

// SetReportsEnabled turns feedback reports on or off (a user's setting).
func (s *Service) SetReportsEnabled(ctx context.Context, on bool) error {
	v := "off"
	if on {
		v = "on"
	}
	if err := s.cfg.Settings.SetSetting(ctx, SettingFeedbackReports, v); err != nil {
		return fmt.Errorf("saving the feedback reports setting: %w", err)
	}
	return nil
}

// Reports lists the reports sent to company ("" for every Company), newest first.
func (s *Service) Reports(ctx context.Context, company string) ([]store.FeedbackReport, error) {
	return s.cfg.Reports.ListFeedbackReports(ctx, company)
}

// engineLister is the Lister over the engine: an OpenAPI description fetched without
// credentials (agentcore/apis), an MCP server's tools listed in the signed-out Session.
type engineLister struct{ e Engine }

// apis is the agentcore/apis Client of the Company's signed-out Session.
func (l engineLister) apis(ctx context.Context, co *discovery.Company) (*apis.Client, error) {
	cl, err := l.e.Client(ctx, co.Identifier, "")
	if err != nil {
		return nil, err
	}
	return cl.APIs()
}

func (l engineLister) OperationIDs(ctx context.Context, co *discovery.Company, api discovery.API) ([]string, error) {
	ac, err := l.apis(ctx, co)
	if err != nil {
		return nil, err
	}
	d, err := ac.FetchOpenAPI(ctx, api)
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(d.Operations))
	for _, o := range d.Operations {
		ids = append(ids, o.ID)
	}
	return ids, nil
}

func (l engineLister) ToolNames(ctx context.Context, co *discovery.Company, api discovery.API) ([]string, error) {
	ac, err := l.apis(ctx, co)
	if err != nil {
		return nil, err
	}
	ms, err := ac.ConnectMCP(ctx, api)
	if err != nil {
		return nil, err
	}
	defer ms.Close()
	tools, err := ms.ListTools(ctx)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(tools))
	for _, t := range tools {
		names = append(names, t.Name)
	}
	return names, nil
}
