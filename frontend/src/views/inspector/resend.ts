// Edit and resend (developer mode): one exchange's request in a form — method, URL (path and
// query), headers, body — sent again through Poppydesk's signed-request pipeline, which makes
// the Session JWT, the token's Authorization and the DPoP proof anew; the Company's answer is
// then shown beside the original. The form starts from the stored request, whose secrets the
// log masked: a masked value left in it is refused by Go in words.

import { type InspectorAPI, type InspectorEntry, type InspectorHeader, type InspectorResent, describeError } from "../../api";
import { el } from "../../dom";

// REMADE are the headers the pipeline makes for every request (app.ResendRemade): not editable.
export const REMADE = [
  "poppy-session",
  "dpop",
  "authorization",
  "poppy-version",
  "poppy-extensions",
  "host",
  "content-length",
  "connection",
  "transfer-encoding",
  "te",
  "upgrade",
  "keep-alive",
  "proxy-connection",
  "accept-encoding",
];

// headerLines is the editable headers as "Name: value" lines.
export function headerLines(hs: readonly InspectorHeader[] | null): string {
  return (hs ?? [])
    .filter((h) => !REMADE.includes(h.name.toLowerCase()))
    .map((h) => `${h.name}: ${h.value}`)
    .join("\n");
}

// parseHeaderLines reads "Name: value" lines; a line without a colon is an error in words.
export function parseHeaderLines(text: string): InspectorHeader[] {
  const out: InspectorHeader[] = [];
  for (const [i, raw] of text.split("\n").entries()) {
    const line = raw.trim();
    if (!line) continue;
    const at = line.indexOf(":");
    if (at <= 0) throw new Error(`Header line ${i + 1} (“${line}”) is not “Name: value”.`);
    out.push({ name: line.slice(0, at).trim(), value: line.slice(at + 1).trim() });
  }
  return out;
}

// resendForm is the editor of exchange e; onSent gets the Company's answer.
export function resendForm(backend: Pick<InspectorAPI, "resend">, e: InspectorEntry, onSent: (r: InspectorResent) => void): HTMLElement {
  const method = el("input", { id: "insp-rs-method", "aria-label": "Method", value: e.row.method, size: 7 });
  const url = el("input", { id: "insp-rs-url", "aria-label": "URL", value: e.row.url, class: "insp-rs-url" });
  const headers = el("textarea", { id: "insp-rs-headers", "aria-label": "Headers, one “Name: value” a line", rows: 5, class: "insp-export" });
  headers.value = headerLines(e.request_headers);
  const body = el("textarea", { id: "insp-rs-body", "aria-label": "Body", rows: 6, class: "insp-export" });
  body.value = e.request_body;
  const send = el("button", { type: "submit", id: "insp-rs-send", class: "btn btn-primary" }, "Send again");
  const problem = el("p", { id: "insp-rs-error", class: "problem", role: "alert", hidden: true });
  const form = el(
    "form",
    { class: "insp-resend", id: "insp-resend", "aria-label": `Edit and resend exchange ${e.row.id}` },
    el("h4", {}, `Edit and resend exchange ${e.row.id}`),
    el("p", { class: "insp-summary" }, "Poppydesk signs it anew: a fresh Session JWT, the account’s current token and a new DPoP proof. Poppy-Session, DPoP, Authorization, Poppy-Version and Poppy-Extensions are not yours to edit; values the log masked must be typed again or removed."),
    el("div", { class: "insp-rs-line" }, method, url),
    el("label", { class: "insp-rs-label" }, "Headers", headers),
    el("label", { class: "insp-rs-label" }, "Body", body),
    el("div", {}, send),
    problem,
  );
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    problem.hidden = true;
    let hs: InspectorHeader[];
    try {
      hs = parseHeaderLines(headers.value);
    } catch (err) {
      problem.textContent = describeError(err);
      problem.hidden = false;
      return;
    }
    send.disabled = true;
    backend.resend({ of: e.row.id, method: method.value, url: url.value, headers: hs, body: body.value }).then(
      (r) => {
        send.disabled = false;
        onSent(r);
      },
      (err) => {
        send.disabled = false;
        problem.textContent = `Not sent: ${describeError(err)}`;
        problem.hidden = false;
      },
    );
  });
  return form;
}
