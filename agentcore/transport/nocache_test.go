package transport_test

import "github.com/poppydesk/poppydesk/agentcore/discovery"

func discoveryNoCache() discovery.Option { return discovery.NoCache() }
