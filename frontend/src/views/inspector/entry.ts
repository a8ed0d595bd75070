// One exchange opened: its cause, request and response headers and bodies (secrets masked by
// the engine), the JWTs it carried decoded (headers and claims; never a signature or a token),
// its findings and the curl command.

import type { Finding, InspectorEntry, InspectorHeader } from "../../api";
import { el } from "../../dom";

function headers(title: string, hs: readonly InspectorHeader[] | null): HTMLElement {
  const dl = el("dl", { class: "insp-headers" });
  for (const h of hs ?? []) dl.append(el("dt", {}, h.name), el("dd", {}, h.value));
  return el("details", { open: true }, el("summary", {}, title), dl);
}

function body(title: string, text: string): HTMLElement | null {
  if (!text) return null;
  let shown = text;
  try {
    shown = JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    // not JSON: as it is
  }
  return el("details", {}, el("summary", {}, title), el("pre", { class: "insp-pre" }, shown));
}

// TIME_CLAIMS are the JWT claims that hold a time as seconds since 1970 (RFC 7519 4.1, OpenID
// Connect's auth_time).
const TIME_CLAIMS = new Set(["iat", "exp", "nbf", "auth_time"]);

// claimsText shows a token's claims (indented JSON) with each time claim followed by the time it
// stands for, in the user's locale: "exp": 1791487200 (8 Oct 2026, 19:20:00).
export function claimsText(claims: string): string {
  return claims.replace(/^(\s*"([a-z_]+)":\s*)(\d{9,11})(,?)$/gm, (line, head: string, name: string, secs: string, comma: string) => {
    if (!TIME_CLAIMS.has(name)) return line;
    const d = new Date(Number(secs) * 1000);
    return Number.isNaN(d.getTime()) ? line : `${head}${secs}${comma}  (${d.toLocaleString()})`;
  });
}

export function findingView(f: Finding): HTMLElement {
  return el(
    "li",
    { class: `insp-finding ${f.level === "MUST" ? "must" : f.level === "SHOULD" ? "should" : "note"}` },
    el("p", { class: "insp-finding-head" }, el("strong", {}, `${f.level} · ${f.section}`), ` ${f.title}`),
    el("p", {}, `Seen: ${f.seen}`),
    el("p", {}, `Expected: ${f.expected}`),
    el("p", { class: "insp-fix" }, `Fix: ${f.fix}`),
  );
}

export function entryView(e: InspectorEntry): HTMLElement {
  const r = e.row;
  const tokens = (e.tokens ?? []).map((t) =>
    el(
      "section",
      { class: "insp-token" },
      el("h4", {}, t.where),
      t.note ? el("p", {}, t.note) : null,
      t.header ? el("pre", { class: "insp-pre", "aria-label": `${t.where} header` }, t.header) : null,
      t.claims ? el("pre", { class: "insp-pre", "aria-label": `${t.where} claims` }, claimsText(t.claims)) : null,
    ),
  );
  return el(
    "article",
    { class: "insp-entry", id: `insp-entry-${r.id}` },
    el("h3", {}, `${r.method} ${r.url}`),
    el(
      "p",
      { class: "insp-meta" },
      `HTTP ${r.status || "— (no response)"} · ${r.duration_ms.toFixed(1)} ms${r.cause ? ` · caused by ${r.cause}` : ""}${r.sid ? ` · Session ${r.sid}` : ""}`,
    ),
    (e.findings ?? []).length > 0 ? el("ul", { class: "insp-findings" }, ...(e.findings ?? []).map(findingView)) : null,
    tokens.length > 0 ? el("div", { class: "insp-tokens" }, el("h4", {}, "Decoded tokens (no signatures, no values)"), ...tokens) : null,
    headers("Request headers", e.request_headers),
    body("Request body", e.request_body),
    headers("Response headers", e.response_headers),
    body("Response body", e.response_body),
    el("details", {}, el("summary", {}, "As curl"), el("pre", { class: "insp-pre" }, e.curl)),
  );
}
