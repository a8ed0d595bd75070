package approvals

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/poppydesk/poppydesk/agentcore/engine"
	"github.com/poppydesk/poppydesk/agentcore/headers"
	"github.com/poppydesk/poppydesk/agentcore/inspect"
)

// StatusCompanyError is the Outcome status of a call the Company answered against the
// protocol's rules in a way that leaves nothing for the user to decide, such as an operation
// returned to a request that did not declare the Operations extension (Operations 2). Nothing
// was performed as far as Poppydesk can tell, nothing was stored and the user was not asked.
const StatusCompanyError = "company_error"

// MessageUndeclaredOperation is Poppydesk's message when the Company asked for an approval it
// may not ask for here (Operations 2). It quotes nothing from the Company.
const MessageUndeclaredOperation = "not performed and nothing to approve: the Company answered with an operation that asks for the user's approval, " +
	"but this request did not declare the Operations extension version 2 (Poppydesk declares it only when the Company lists that version in its poppy.json, " +
	"and this Company lists no such version), so the Company may not ask for an approval here (Operations 2). " +
	"This is the Company's error, not yours: Poppydesk did not show it to the user and sends no approval for it. " +
	"The Company has to handle the approval itself (on its website or in a Direct Conversation) or refuse with extension_required; " +
	"tell the user that this Company could not do it through Poppydesk"

// operationsExtension is the extension and version whose declaration allows operations.
var operationsExtension = struct{ name, version string }{"operations", "2"}

// declaresOperations reports whether a Poppy-Extensions value declares the Operations extension
// version 2 (spec 3.4; a value that fails to parse declares nothing).
func declaresOperations(header string) bool {
	return header != "" && headers.Declares([]string{header}, operationsExtension.name, operationsExtension.version)
}

// clientDeclaresOperations reports whether the Session of cl declares the Operations extension
// version 2.
func clientDeclaresOperations(cl *engine.Client) bool {
	return cl.Declares(operationsExtension.name, operationsExtension.version)
}

// undeclared is the Outcome of an operation returned to a request that did not declare the
// extension, logged: the Company's answer as data, Poppydesk's words as the message, nothing
// stored.
func (q *Queue) undeclared(ctx context.Context, company, iface string, httpStatus int, body json.RawMessage, text string) *Outcome {
	q.logUndeclared(ctx, company, iface)
	return undeclaredOutcome(httpStatus, body, text)
}

func (q *Queue) logUndeclared(ctx context.Context, company, iface string) {
	q.log.WarnContext(ctx, "approvals: the Company returned an operation to a request that did not declare the Operations extension version 2; it is not offered for approval (Operations 2)",
		"company", company, "interface", iface)
	f := inspect.NewFinding(inspect.RuleOpsUndeclared, "the Company returned an operation through its "+iface+" interface to a request whose Poppy-Extensions did not declare \"operations\";v=\"2\"; Poppydesk did not offer it for approval")
	f.Company = company
	q.cfg.Reporter.Report(ctx, f)
}

// undeclaredOutcome is that Outcome.
func undeclaredOutcome(httpStatus int, body json.RawMessage, text string) *Outcome {
	o := &Outcome{Status: StatusCompanyError, HTTPStatus: httpStatus, Text: text, Message: MessageUndeclaredOperation}
	if json.Valid(body) {
		o.Body = body
	}
	return o
}

// errUndeclaredSession is why an approval is not sent in a Session that does not declare the
// extension (Operations 2: the extension is used only when the request declares it).
var errUndeclaredSession = fmt.Errorf("the Session Poppydesk would send the approval in does not declare the Operations extension version 2 " +
	"(the Company no longer lists that version in its poppy.json), so no approval may be sent in it (Operations 2)")
