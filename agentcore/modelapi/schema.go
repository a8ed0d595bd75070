package modelapi

// The tools' output schemas (MCP Tool.outputSchema): every structuredContent a tool returns
// follows its schema, and the tests validate each one they produce with a JSON Schema validator.
// Poppydesk's own keys are closed (additionalProperties false): a key added to a reply without
// its schema fails the tests. The data inside the untrusted envelope is the Company's, so its
// schema names what Poppydesk puts there and allows more.
//
// The keywords used are those that JSON Schema draft-07 and 2020-12 share (type, properties,
// required, additionalProperties, items, enum, minimum), so clients that validate with either
// (the TypeScript SDK uses Ajv's draft-07 default) read them alike.

import (
	"encoding/json"
	"slices"
)

// js is a JSON Schema under construction.
type js = map[string]any

func str(desc string) js { return js{"type": "string", "description": desc} }
func integer(desc string) js {
	return js{"type": "integer", "description": desc}
}
func boolean(desc string) js { return js{"type": "boolean", "description": desc} }
func arrayOf(items js, desc string) js {
	return js{"type": "array", "items": items, "description": desc}
}
func stringList(desc string) js { return arrayOf(js{"type": "string"}, desc) }

// closed is an object with exactly these properties.
func closed(props js, required ...string) js {
	s := js{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

// open is an object with these properties and possibly more (Company content).
func open(props js) js { return js{"type": "object", "properties": props} }

// anyJSON is any JSON value.
func anyJSON(desc string) js {
	return js{"type": []string{"object", "array", "string", "number", "boolean", "null"}, "description": desc}
}

// companyErrorData is what an error reply puts in the envelope: the Company's own words
// (classifyError).
func companyErrorData() js {
	return js{
		"http_status":             integer("The HTTP status the Company answered."),
		"error":                   str("The error code the Company gave (its words)."),
		"error_description":       str("The Company's description of the error (its words)."),
		"extension":               str("The extension the Company requires (its words)."),
		"oauth_error":             str("The authorization server's error code."),
		"oauth_error_description": str("The authorization server's description."),
		"jsonrpc_error":           open(js{"error_number": integer("The JSON-RPC error code."), "message": str("The MCP server's message."), "data": str("Its data, as JSON text.")}),
		"check_detail":            str("What failed in the Company's documents (quotes them)."),
		"redirect_location":       str("Where the Company's redirect pointed."),
	}
}

// outcomeData is the envelope data of a call's or an approval's outcome (outcomeReply).
func outcomeData() js {
	return js{
		"body":                           anyJSON("The Company's response body, or the structured content of its MCP tool result."),
		"body_text":                      str("The Company's response body when it is not JSON."),
		"text":                           str("The Company's words: the text of its tool result or error."),
		"content":                        arrayOf(contentBlock(), "The content blocks of the Company's MCP tool result other than text, in order; images, audio and binary resources follow as content parts of the result."),
		"queue_detail_may_quote_company": str("Poppydesk's description of the Company's answer (a malformed operation, an error it wrote), which can quote the Company."),
	}
}

// contentBlock describes one content block of a Company tool result (apis.Content).
func contentBlock() js {
	return open(js{
		"type":        js{"type": "string", "enum": []string{"text", "image", "audio", "resource", "resource_link"}},
		"text":        str("Text, or the text of an embedded resource."),
		"mime_type":   str("The media type."),
		"bytes":       integer("The size of the image, audio or binary resource."),
		"uri":         str("The resource's URI."),
		"name":        str("The resource's name."),
		"title":       str("The resource's title."),
		"description": str("The resource's description."),
		"size":        integer("The size the Company gives for a linked resource."),
		"part":        integer("Which content part of this result (counted from 0) holds the image, audio or resource."),
		"omitted":     boolean("True when Poppydesk left this block out or cut it: the result budget was used up."),
		"note":        str("Poppydesk's words about what was cut or left out."),
	})
}

// commonFields are Poppydesk's fields that any tool's error reply can carry.
func commonFields() js {
	return js{
		"detail":              str("Poppydesk's own technical detail of an error (never the Company's words)."),
		"http_status":         integer("The HTTP status of the Company's answer."),
		"scopes":              stringList("The scopes involved (what the Company asked for, or what was requested)."),
		"retry_after_seconds": integer("When to try again, for rate_limited."),
	}
}

// output is a tool's outputSchema: status (one of statuses plus the common ones), Poppydesk's
// message and fields, and the untrusted envelope with data as described.
func output(statuses []string, fields js, data js) json.RawMessage {
	all := slices.Clone(statuses)
	for _, s := range commonStatuses {
		if !slices.Contains(all, s) {
			all = append(all, s)
		}
	}
	props := js{
		"status":      js{"type": "string", "enum": all, "description": "What happened, in one word to branch on (see the tool's description and the server's instructions)."},
		"message":     str("Poppydesk's own words: what happened and what to do next."),
		"approval_id": str("The approval handle, when an approval is involved."),
	}
	for k, v := range commonFields() {
		props[k] = v
	}
	for k, v := range fields {
		props[k] = v
	}
	dataProps := companyErrorData()
	for k, v := range data {
		dataProps[k] = v
	}
	props[EnvelopeKey] = closed(js{
		"company":            str("The Company's name as it gives it (its words)."),
		"company_identifier": str("The Company's identifier (https://...), as Poppydesk verified it."),
		"data":               open(dataProps),
	}, "company", "company_identifier", "data")
	b, err := json.Marshal(closed(props, "status", "message"))
	if err != nil {
		panic("modelapi: an output schema does not encode: " + err.Error())
	}
	return b
}

// Fields of the call tools' replies (callAPI, callTool, waitForSignIn).
func callFields() js {
	return js{
		"account":    str("The account label the call used (\"\" signed out)."),
		"request_id": str("The sign-in request Poppydesk recorded for the user (waiting_for_sign_in)."),
	}
}

// organization is the Company's organization as poppy.json gives it.
func organization() js {
	return open(js{"name": str("The organization's name."), "domain": str("Its domain.")})
}
